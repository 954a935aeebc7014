"""The real ``hpcjobs`` command, run as a subprocess against the real local executor.

Every call gets ``--config work_directory=<tmp>`` and ``HOME=<tmp>``, so nothing touches
the user's ~/.hpcjobs; status and cancel run in processes of their own, as a user's
would.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import pytest

from hpcjobs import Job, JobSpec, JobState
from hpcjobs.serialize import dumps, loads

HPCJOBS = str(Path(sys.executable).with_name("hpcjobs"))
Cli = Callable[..., "subprocess.CompletedProcess[str]"]


def _argv(tmp_path: Path, args: tuple[str, ...]) -> list[str]:
    # --config belongs to the subcommand, so it goes right after it
    return [HPCJOBS, args[0], "--config", f"work_directory={tmp_path / 'work'}", *args[1:]]


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return dict(os.environ, HOME=str(home))


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    def run(*args: str, stdin: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(_argv(tmp_path, args), cwd=tmp_path, env=_env(tmp_path),
                              input=stdin, capture_output=True, text=True, timeout=120)
    return run


@pytest.mark.parametrize("script,code", [
    ("exit 0", 0), ("exit 3", 3), ("kill -KILL $$", 128 + 9), ("kill -TERM $$", 128 + 15),
])
def test_run_exits_with_the_jobs_exit_code(cli: Cli, script: str, code: int) -> None:
    p = cli("run", "/bin/sh", "-c", script)
    assert p.returncode == code, p.stderr
    if code:
        assert "FAILED (exit code" in p.stderr and len(p.stderr.splitlines()) == 1


def test_run_shows_the_jobs_output(cli: Cli, tmp_path: Path) -> None:
    p = cli("run", "/bin/sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 4")
    assert p.returncode == 4
    assert p.stdout == "out\n"
    assert p.stderr.startswith("err\n") and "FAILED (exit code 4)" in p.stderr
    assert not list((tmp_path / "work").glob("run-*")), "capture folder left behind"
    q = cli("run", "--stdout", "kept", "/bin/echo", "to a file")  # redirected: not shown
    assert q.stdout == "" and (tmp_path / "kept").read_text() == "to a file\n"


def test_hostile_arguments_reach_the_job_byte_exact(cli: Cli, tmp_path: Path) -> None:
    hostile = ["a'b", '"q"', "$HOME", "`id`", "$(id)", "two words", "line\nbreak", "é漢🙂",
               "*", "~", "-n", "${X}/${UNSET}."]
    p = cli("run", "--stdout", "out", "--env", "X=x val", "/bin/printf", "%s\\0", *hostile)
    assert p.returncode == 0, p.stderr
    printed = (tmp_path / "out").read_bytes().split(b"\0")[:-1]
    # only ${NAME} is substituted (the spec's rule); nothing else is interpreted
    assert [b.decode() for b in printed] == hostile[:-1] + ["x val/."]


def test_environment_and_directory_options(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    p = cli("run", "--no-inherit-env", "--env", "A=1", "--env", "B=${A}2",
            "--cwd", "sub", "--stdout", "env.txt", "/bin/sh", "-c", "pwd; env | sort")
    assert p.returncode == 0, p.stderr
    # relative --stdout is relative to where the command was typed, like any shell tool
    lines = (tmp_path / "env.txt").read_text().splitlines()
    assert lines[0] == str(tmp_path / "sub")
    assert "A=1" in lines and "B=12" in lines and not any(x.startswith("HOME=") for x in lines)


def test_submit_status_list_cancel_from_separate_processes(cli: Cli) -> None:
    p = cli("submit", "/bin/sleep", "120")
    assert p.returncode == 0, p.stderr
    native_id = p.stdout.strip()
    assert native_id and "\n" not in native_id

    p = cli("status", native_id)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() in ([native_id, "QUEUED"], [native_id, "ACTIVE"])

    p = cli("list", "--json")
    assert p.returncode == 0 and native_id in json.loads(p.stdout)

    p = cli("cancel", native_id)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{native_id} CANCELED")

    p = cli("status", "--json", native_id)
    record = loads(p.stdout)
    assert isinstance(record, Job)
    assert record.native_id == native_id and record.status.state is JobState.CANCELED
    assert record.status.message


def test_status_of_an_unknown_id_reports_it_failed(cli: Cli) -> None:
    p = cli("status", "no-such-job")
    assert p.returncode == 0
    assert p.stdout.startswith("no-such-job FAILED: ")


def test_run_count_ends_with_the_final_counts(cli: Cli) -> None:
    p = cli("run", "--count", "3", "/bin/true")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[-1] == "3 jobs: 3 COMPLETED"
    assert "\r" not in p.stderr  # not a terminal: plain lines


def test_run_count_exits_like_the_first_failure(cli: Cli) -> None:
    p = cli("run", "--count", "2", "/bin/sh", "-c", "exit 5")
    assert p.returncode == 5
    assert "2 jobs: 2 FAILED" in p.stderr.splitlines()
    assert p.stderr.count("FAILED (exit code 5)") == 2


def test_run_count_redraws_in_place_on_a_terminal(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    with subprocess.Popen(_argv(tmp_path, ("run", "--count", "2", "/bin/true")),
                          cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
                          stderr=slave) as proc:
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=120) == 0
    os.close(master)
    text = out.decode()
    assert "\r2 jobs: " in text and "\x1b[K" in text
    assert text.rstrip("\r\n").endswith("\r2 jobs: 2 COMPLETED\x1b[K")


def test_json_output_is_job_documents(cli: Cli) -> None:
    p = cli("run", "--json", "--count", "2", "/bin/true")
    assert p.returncode == 0, p.stderr
    records = [loads(line) for line in p.stdout.splitlines()]
    assert len(records) == 2
    for record in records:
        assert isinstance(record, Job) and record.native_id
        assert record.status.state is JobState.COMPLETED and record.status.exit_code == 0
        assert record.spec is not None and record.spec.executable == "/bin/true"


def test_file_runs_a_saved_spec_and_options_override_it(cli: Cli, tmp_path: Path) -> None:
    spec = JobSpec("/bin/printf", ["%s", "from a file $HOME"], stdout_path=tmp_path / "a")
    (tmp_path / "job.json").write_text(dumps(spec))
    assert cli("run", "--file", "job.json").returncode == 0
    assert (tmp_path / "a").read_text() == "from a file $HOME"
    p = cli("run", "--file", "-", "--stdout", "b", stdin=dumps(spec))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "b").read_text() == "from a file $HOME"


def test_a_job_that_fails_without_exit_code_exits_1_with_the_message(cli: Cli) -> None:
    p = cli("run", "/no/such/program")
    assert p.returncode == 1
    assert p.stderr.startswith("hpcjobs: job ") and "/no/such/program" in p.stderr


def test_run_timeout_leaves_the_job_running(cli: Cli) -> None:
    p = cli("run", "--timeout", "0.5", "/bin/sleep", "120")
    assert p.returncode == 124
    assert "still running" in p.stderr
    native_id = p.stderr.split()[-1]
    assert cli("status", native_id).stdout.split()[1] == "ACTIVE"
    assert cli("cancel", native_id).returncode == 0


def test_interrupt_cancels_the_jobs_of_run(tmp_path: Path, cli: Cli,
                                           default_signals: Callable[[], None]) -> None:
    proc = subprocess.Popen(_argv(tmp_path, ("run", "--stdout", "started", "/bin/sh", "-c",
                                             "echo up; exec sleep 120")),
                            cwd=tmp_path, env=_env(tmp_path), stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
    try:
        # the job's own output says it runs (no sleep-and-hope)
        while not (tmp_path / "started").exists() or not (tmp_path / "started").read_text():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.01)  # polling a condition, not timing anything
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted: canceled 1 job(s)" in stderr
    (native_id,) = cli("list").stdout.split()
    assert cli("status", native_id).stdout.split()[1] == "CANCELED"


@pytest.mark.parametrize("args,code,message", [
    (("run", "-x", "no-such", "/bin/true"), 125, "no executor named 'no-such'"),
    (("run", "-N", "0", "/bin/true"), 125, "ResourceSpecV1.node_count must be >= 1"),
    (("run", "--cwd", "/tmp", "--env", "1BAD=x", "/bin/true"), 125, "'1BAD' is not a valid"),
    (("run", "--launcher", "nope", "/bin/true"), 125, "JobSpec.launcher"),
    (("run", "--file", "missing.json"), 125, "missing.json"),
    (("run", "--time", "10", "/bin/true"), 2, "add a unit"),
    (("run", "--memory", "lots", "/bin/true"), 2, "not a size"),
    (("run",), 2, "no command to run"),
    (("submit", "--config", "bogus=1", "/bin/true"), 2, "no setting 'bogus'"),
    (("status",), 2, "required: ID"),
    (("submit", "--hold", "/bin/true"), 125, "only from the process that submitted it"),
])
def test_errors_are_one_clear_line(cli: Cli, args: tuple[str, ...], code: int,
                                   message: str) -> None:
    p = cli(*args)
    assert p.returncode == code
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith("hpcjobs")
    assert message in p.stderr and "Traceback" not in p.stderr


def test_debug_adds_the_traceback(cli: Cli) -> None:
    p = cli("run", "--debug", "-N", "0", "/bin/true")
    assert p.returncode == 125
    assert "Traceback" in p.stderr and "InvalidJobException" in p.stderr


def test_a_closed_output_pipe_ends_quietly(cli: Cli, tmp_path: Path) -> None:
    assert cli("submit", "/bin/true").returncode == 0  # something for list to print
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written (`| head -0`)
    try:
        p = subprocess.run(_argv(tmp_path, ("list",)), cwd=tmp_path, env=_env(tmp_path),
                           stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert p.returncode == 128 + signal.SIGPIPE
    assert p.stderr == ""


def _slurm_unavailable() -> Optional[str]:
    # the conformance suite's Slurm provider knows whether the test cluster is up
    path = Path(__file__).resolve().parents[1] / "conformance" / "backends" / "slurm.py"
    spec = importlib.util.spec_from_file_location("hpcjobs_cli_tests_slurm_provider", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reason: Optional[str] = module.unavailable()
    return reason


@pytest.mark.slurm
def test_the_same_commands_drive_slurm(cli: Cli, tmp_path: Path) -> None:
    reason = _slurm_unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must test the CLI on Slurm: {reason}")
        pytest.skip(reason)
    p = cli("run", "-x", "slurm", "-t", "2m", "--stdout", "out", "/bin/sh", "-c",
            "echo job $SLURM_JOB_ID; exit 3")
    assert p.returncode == 3, p.stderr
    assert (tmp_path / "out").read_text().startswith("job ")

    native_id = cli("submit", "-x", "slurm", "-t", "5m", "/bin/sleep", "300").stdout.strip()
    assert native_id.isdigit()
    p = cli("status", "-x", "slurm", native_id)  # a new process: attach by native id
    assert p.stdout.split()[:2] in ([native_id, "QUEUED"], [native_id, "ACTIVE"]), p.stderr
    p = cli("cancel", "-x", "slurm", "--timeout", "120", native_id)
    assert p.returncode == 0 and p.stdout.startswith(f"{native_id} CANCELED"), p.stderr

    # held, then released, each from a process of its own
    native_id = cli("submit", "-x", "slurm", "--hold", "/bin/true").stdout.strip()
    assert native_id.isdigit()
    p = cli("status", "-x", "slurm", native_id)
    assert p.stdout.startswith(f"{native_id} QUEUED (held: JobHeld"), (p.stdout, p.stderr)
    p = cli("release", "-x", "slurm", native_id)
    assert p.returncode == 0 and "held" not in p.stdout, (p.stdout, p.stderr)
    p = cli("cancel", "-x", "slurm", "--timeout", "120", native_id)
    assert p.returncode == 0, p.stderr


def test_a_url_the_executor_cannot_serve_is_refused(cli: Cli, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    p = cli("run", "--url", "http://login.example.org", "/usr/bin/touch", str(marker))
    assert p.returncode != 0 and not marker.exists()
    assert "'http://login.example.org'" in p.stderr and "executor 'local'" in p.stderr


def test_an_unreachable_url_is_never_this_machine(cli: Cli, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    p = cli("run", "--url", "ssh://login.invalid", "--config",
            'ssh_options=["-o", "ConnectTimeout=5"]', "/usr/bin/touch", str(marker))
    assert p.returncode == 125 and not marker.exists()
    assert "cannot connect to ssh://login.invalid" in p.stderr
