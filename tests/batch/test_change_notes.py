"""Change notes (executors/batch/changes.py): job scripts append their job directory's
name to their host's notes file, and the monitor looks at those jobs' files only.

The scripts here are the real rendered batch scripts, run by real ``sh`` (dash on
Debian) and ``bash`` processes: ``RunningBackend`` is the fake backend of
test_batch_base.py whose submit command starts the script in the background, a
scheduler of one line. Its ledger never hears of the jobs' ends, so a job that ends
was ended by its notes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import Job, JobSpec, JobState
from hpcjobs.executors.batch import LOCAL, JobDir
from hpcjobs.executors.batch.changes import ChangeNotes

from fake_scheduler import Fake, FakeExecutor, Ledger
from test_batch_base import WAIT, running as make

SHELLS = [s for s in ("sh", "bash") if shutil.which(s)]


class Running(Fake):
    """Runs each job's script at once, in the background, with ``shell``; or, with
    ``ahead``, to its end before the submit command prints the id and returns."""

    shell = "sh"
    ahead = False

    def submit_command(self, job_dir: JobDir) -> list[str]:
        run = '"$1" "$2" >"$3" 2>&1 </dev/null'
        # (ahead: the monitor ticks every 0.02 s while the submit command sleeps)
        run += "; sleep 0.3; " if self.ahead else " & "
        return ["sh", "-c", run + 'echo "$4"', "submit", self.shell, str(job_dir.script),
                str(job_dir.batch_output), self.ledger.new_id()]


@pytest.fixture(params=SHELLS)
def running(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeExecutor]:
    Running.ledger = Ledger()
    Running.shell = request.param
    Running.ahead = False
    # (queries far away: only the notes can end a job within the test)
    ex = make(Running, work_directory=tmp_path / "work", file_poll_interval=0.02,
              min_query_interval=3600, burst_window=0)
    with ex:
        yield ex


def test_jobs_end_through_their_notes(running: FakeExecutor) -> None:
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i}"])) for i in range(4)]
    for job in jobs:
        running.submit(job)
    for i, job in enumerate(jobs):
        status = job.wait(timeout=WAIT)
        assert status is not None, f"job {i} did not end through its notes"
        assert status.state is (JobState.COMPLETED if i == 0 else JobState.FAILED)
        assert status.exit_code == i
    assert Running.ledger.queries == []
    assert all(s is JobState.QUEUED for s in Running.ledger.states.values())
    notes = running.monitor.notes_directory()
    files = list(notes.iterdir())
    assert len(files) == 1  # this host's
    lines = files[0].read_text().splitlines()
    assert sorted(lines) == sorted(2 * [job.id for job in jobs])  # started, then ended
    assert files[0].stat().st_mode & 0o777 == 0o600


def test_notes_read_before_the_submit_returned_are_read_again(running: FakeExecutor,
                                                             tmp_path: Path) -> None:
    # a job that runs until told, so that the monitor runs during the second submit
    go = tmp_path / "go"
    first = Job(JobSpec("/bin/sh", ["-c", 'while [ ! -e "$1" ]; do sleep 0.05; done', "-",
                                    str(go)]))
    running.submit(first)
    Running.ahead = True
    job = Job(JobSpec("/bin/sh", ["-c", "exit 3"]))
    running.submit(job)
    go.touch()
    status = job.wait(timeout=WAIT)
    assert status is not None, "the notes of a job that ended before its submit returned were lost"
    assert status.state is JobState.FAILED and status.exit_code == 3
    assert first.wait(timeout=WAIT) is not None
    assert Running.ledger.queries == []


def test_a_cancelled_job_whose_step_exited_nonzero_first_is_cancelled(
        running: FakeExecutor, tmp_path: Path) -> None:
    # (Slurm may kill an srun step, which exits 1, before it signals the script's shell:
    # the record says 1 with no SIGTERM caught; the scheduler says CANCELLED)
    go = tmp_path / "go"
    job = Job(JobSpec("/bin/sh", ["-c", 'while [ ! -e "$1" ]; do sleep 0.05; done; exit 1',
                                  "-", str(go)]))
    running.submit(job)
    assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    job.cancel()  # (the fake scheduler kills nothing: the job exits 1 by itself)
    go.touch()
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED, status
    assert status.exit_code == 1


@pytest.mark.parametrize("shell", SHELLS)
def test_a_script_whose_executor_closed_runs_and_leaves_no_note(
        tmp_path: Path, shell: str) -> None:
    Fake.ledger = Ledger()
    ex = FakeExecutor(config={"work_directory": tmp_path / "work", "burst_window": 0})
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)  # (the fake scheduler never runs it)
    job_dir = tmp_path / "work" / job.id
    changes = tmp_path / "work" / "changes"
    ex.close()
    assert list(changes.iterdir()) == []  # its notes directory went with it
    run = subprocess.run([shell, str(job_dir / "job.sh")], capture_output=True, text=True,
                         timeout=WAIT)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert (job_dir / "exitcode").read_text() == "0 - -\n"
    assert list(changes.iterdir()) == []


def test_a_line_is_taken_once_whole(tmp_path: Path) -> None:
    notes = ChangeNotes(tmp_path, LOCAL)
    host = notes.directory() / "node1"
    assert notes.take() == []
    with open(host, "ab", buffering=0) as f:
        f.write(b"a\nb\nc")  # c: being written
        assert notes.take() == ["a", "b"]
        assert notes.take() == []
        f.write(b"\nb\n")
        assert notes.take() == ["c", "b"]


def test_each_hosts_file_is_read_and_each_name_taken_once(tmp_path: Path) -> None:
    notes = ChangeNotes(tmp_path, LOCAL)
    (notes.directory() / "node1").write_bytes(b"a\nb\na\n")
    (notes.directory() / "node2").write_bytes(b"b\nc\n")
    assert sorted(notes.take()) == ["a", "b", "c"]
    assert notes.take() == []


def test_a_name_read_too_early_is_taken_again(tmp_path: Path) -> None:
    notes = ChangeNotes(tmp_path, LOCAL)
    (notes.directory() / "node1").write_bytes(b"a\n")
    assert notes.take() == ["a"]
    notes.again("a")
    assert notes.take() == ["a"]
    assert notes.take() == []


def test_a_file_replaced_from_outside_is_read_from_its_start(tmp_path: Path) -> None:
    notes = ChangeNotes(tmp_path, LOCAL)
    host = notes.directory() / "node1"
    host.write_bytes(b"a\nb\n")
    assert notes.take() == ["a", "b"]
    replacement = host.with_name("new")
    replacement.write_bytes(b"c\nd\ne\n")
    os.replace(replacement, host)
    assert notes.take() == ["c", "d", "e"]


def test_a_notes_directory_removed_from_outside_is_made_again(tmp_path: Path) -> None:
    notes = ChangeNotes(tmp_path, LOCAL)
    (notes.directory() / "node1").write_bytes(b"a\n")
    shutil.rmtree(notes.path)
    assert notes.take() == []
    (notes.directory() / "node1").write_bytes(b"b\n")
    assert notes.take() == ["b"]
    notes.remove()
    assert not notes.path.exists()
