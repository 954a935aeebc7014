"""The CLI's option parsing: text -> durations, sizes, JobSpec fields (no executor needed)."""

from __future__ import annotations

import argparse
import io
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hpcjobs import Job, JobAttributes, JobSpec, JobState, JobStatus, ResourceSpecV1
from hpcjobs.cli import build_parser
from hpcjobs.cli.options import build_spec, duration, key_value, memory
from hpcjobs.cli.commands import describe
from hpcjobs.cli.progress import Progress
from hpcjobs.serialize import SerializationError, dumps


@pytest.mark.parametrize("text,expected", [
    ("90s", timedelta(seconds=90)), ("10m", timedelta(minutes=10)),
    ("1h30m", timedelta(minutes=90)), ("2d", timedelta(days=2)), ("1.5h", timedelta(minutes=90)),
    ("01:30:00", timedelta(minutes=90)), ("05:00", timedelta(minutes=5)),
    ("1-00:00:10", timedelta(days=1, seconds=10)), ("2-12", timedelta(days=2, hours=12)),
    ("1-02:30", timedelta(days=1, hours=2, minutes=30)),
])
def test_durations(text: str, expected: timedelta) -> None:
    assert duration(text) == expected


@pytest.mark.parametrize("text,message", [
    ("10", "add a unit"), ("1h30", "not a duration"), ("1:2:3:4", "not a duration"),
    ("soon", "not a duration"), ("", "not a duration"),
])
def test_ambiguous_or_bad_durations_are_refused(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        duration(text)


@pytest.mark.parametrize("text,expected", [
    ("1048576", 2**20), ("512M", 512 * 2**20), ("2g", 2 * 2**30), ("1.5GiB", 3 * 2**29),
    ("4KB", 4096),
])
def test_memory_sizes_are_binary(text: str, expected: int) -> None:
    assert memory(text) == expected


def test_bad_memory_and_pairs_are_refused() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        memory("lots")
    with pytest.raises(argparse.ArgumentTypeError, match="not KEY=VALUE"):
        key_value("novalue")
    assert key_value("A=b=c") == ("A", "b=c")
    assert key_value("A=") == ("A", "")


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", *argv])


def test_options_become_spec_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    spec = build_spec(parse(
        "--name", "n 1", "--cwd", "sub", "--stdout", "o", "--stdin", "/dev/null",
        "--env", "A=1", "--env", "B=${A}x", "--no-inherit-env", "--launcher", "multiple",
        "-N", "2", "--processes-per-node", "3", "-c", "4", "--gpus-per-process", "0",
        "--memory", "1G", "--exclusive", "-t", "2h", "-q", "debug", "--account", "p", "-P", "pr",
        "--reservation", "r", "--attr", "slurm.constraint=a b", "--attr-json",
        'batsim.profile={"type": "delay", "delay": 5}',
        "/bin/echo", "-n", "$HOME", "--nodes", "9"))
    assert spec.executable == "/bin/echo"
    assert spec.arguments == ["-n", "$HOME", "--nodes", "9"]  # after the command: the job's
    assert spec.name == "n 1" and spec.launcher == "multiple"
    assert spec.directory == tmp_path / "sub" and spec.stdout_path == tmp_path / "o"
    assert spec.stdin_path == Path("/dev/null")
    assert spec.environment == {"A": "1", "B": "${A}x"} and spec.inherit_environment is False
    assert spec.resources == ResourceSpecV1(node_count=2, processes_per_node=3,
                                            cpu_cores_per_process=4, gpu_cores_per_process=0,
                                            memory=2**30, exclusive_node_use=True)
    assert spec.attributes == JobAttributes(
        duration=timedelta(hours=2), queue_name="debug", account="p", project_name="pr",
        reservation_id="r",
        custom_attributes={"slurm.constraint": "a b",
                           "batsim.profile": {"type": "delay", "delay": 5}})


def test_default_directory_is_the_current_one(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert build_spec(parse("true")).directory == tmp_path
    assert build_spec(parse("--cwd", "~/x", "true")).directory == Path("~/x")


def test_file_is_the_base_and_options_override_it(tmp_path: Path) -> None:
    saved = JobSpec("/bin/echo", ["saved"], environment={"A": "1"}, stdout_path="/o",
                    resources=ResourceSpecV1(process_count=4, memory=10),
                    attributes=JobAttributes(queue_name="q1", custom_attributes={"k": [1]}))
    path = tmp_path / "job.json"
    path.write_text(dumps(saved))
    spec = build_spec(parse("--file", str(path)))
    assert spec == saved  # no option given: the saved spec as is (no directory added)
    spec = build_spec(parse("--file", str(path), "--env", "B=2", "-n", "2", "-q", "q2",
                            "/bin/printf", "x"))
    assert (spec.executable, spec.arguments) == ("/bin/printf", ["x"])
    assert spec.environment == {"A": "1", "B": "2"}
    assert spec.resources == ResourceSpecV1(process_count=2, memory=10)
    assert spec.attributes.queue_name == "q2"
    assert spec.attributes.custom_attributes == {"k": [1]}


def test_file_may_hold_a_saved_job(tmp_path: Path) -> None:
    job = Job(JobSpec("/bin/true", ["x"]))
    path = tmp_path / "job.json"
    path.write_text(dumps(job))
    assert build_spec(parse("--file", str(path))) == job.spec


def test_bad_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text('{"format": "hpcjobs.job", "version": 9}')
    with pytest.raises(SerializationError, match=r"job.json: job document version 9"):
        build_spec(parse("--file", str(path)))


@pytest.mark.parametrize("document, kind", [
    ('{"state": 6, "time": 1.0, "exit_code": 0}', "JobStatus"),
    ('{"node_count": 2, "__version": 1}', "ResourceSpecV1"),
    ('{"queue_name": "debug"}', "JobAttributes"),
])
def test_a_file_holding_no_spec_is_refused_naming_what_it_holds(
        tmp_path: Path, document: str, kind: str) -> None:
    path = tmp_path / "status.json"
    path.write_text(document)
    with pytest.raises(SerializationError, match=f"status.json: a {kind} document, not a job"):
        build_spec(parse("--file", str(path)))


def test_no_command_and_no_file_is_a_usage_error() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="no command"):
        build_spec(parse())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _feed(progress: Progress, jobs: list[Job], *states: JobState) -> None:
    for job in jobs:
        for state in states:
            job._status = JobStatus(state)
            progress.job_status_changed(job, job.status)


def test_progress_redraws_in_place_on_a_terminal() -> None:
    jobs = [Job(), Job()]
    out = _Terminal()
    progress = Progress(jobs, out)
    _feed(progress, jobs[:1], JobState.QUEUED)
    assert out.getvalue() == "\r2 jobs: 1 NEW, 1 QUEUED\x1b[K"
    _feed(progress, jobs, JobState.QUEUED, JobState.ACTIVE, JobState.COMPLETED)
    progress.finish(jobs)
    assert "\n" not in out.getvalue()[:-1]  # one line, redrawn
    assert out.getvalue().endswith("\r2 jobs: 2 COMPLETED\x1b[K\n")


def test_progress_writes_plain_lines_elsewhere() -> None:
    jobs = [Job(), Job(), Job()]
    out = io.StringIO()
    progress = Progress(jobs, out)
    _feed(progress, jobs, JobState.QUEUED, JobState.ACTIVE)
    jobs[0]._status = JobStatus(JobState.COMPLETED)
    jobs[1]._status = JobStatus(JobState.FAILED)
    jobs[2]._status = JobStatus(JobState.CANCELED)
    progress.finish(jobs)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert lines[0] == "3 jobs: 2 NEW, 1 QUEUED"  # at most one line a second until the end
    assert lines[-1] == "3 jobs: 1 COMPLETED, 1 FAILED, 1 CANCELED"


def test_status_line_says_why_a_job_waits() -> None:
    job = Job()
    job._native_id = "42"
    job._status = JobStatus(JobState.QUEUED, metadata={
        "reason_pending": "Priority", "t_estimate": 1e9, "native_state": "PENDING"})
    start = datetime.fromtimestamp(1e9).isoformat(" ", "seconds")
    assert describe(job) == f"42 QUEUED (pending: Priority, estimated start {start})"
    job._status = JobStatus(JobState.FAILED, exit_code=-9, message="killed by\nsignal 9")
    assert describe(job) == "42 FAILED (exit code -9): killed by signal 9"
