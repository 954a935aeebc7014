"""Per-launcher behaviour: rank variables and exit code of ``multiple``, stdin, the
``single`` fast path, and signals reaching the ranks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from launcher_helpers import TIMEOUT, RunLauncher, launch_command, need_openmpi


def test_multiple_rank_variables(run_launcher: RunLauncher) -> None:
    r = run_launcher("multiple", n=4)
    assert r.returncode == 0, r.stderr
    assert sorted(r.records) == [0, 1, 2, 3]
    for rank, rec in r.records.items():
        env = rec["env"]
        assert env["PSIJ_RANK"] == str(rank)
        assert env["PSIJ_SIZE"] == "4"
        assert env["_PSI_J_PROCESS_INDEX_"] == str(rank + 1)  # psij-python: 1-based
        assert env["_PSI_J_PROCESS_COUNT_"] == "4"


def test_multiple_exit_code_is_lowest_failing_rank(run_launcher: RunLauncher) -> None:
    # rank 1 fails last (slow) and rank 3 first: the lowest rank's code wins, not the first
    r = run_launcher("multiple", n=4, codes={1: 3, 3: 5}, env={"PROBE_SLOW": "1"})
    assert r.returncode == 3
    assert sorted(r.records) == [0, 1, 2, 3]  # every rank ran to the end


def test_multiple_stdin_goes_to_rank_0_only(run_launcher: RunLauncher) -> None:
    r = run_launcher("multiple", n=3, stdin=b"line 1\nline 2\n", env={"PROBE_STDIN": "1"})
    assert r.returncode == 0, r.stderr
    assert r.records[0]["stdin"] == "line 1\nline 2\n"
    assert r.records[1]["stdin"] == "" and r.records[2]["stdin"] == ""


def test_single_script_keeps_stdin(run_launcher: RunLauncher, workdir: Path) -> None:
    (workdir / "pre.sh").write_text(":\n")
    r = run_launcher("single", pre=str(workdir / "pre.sh"), stdin=b"data\n",
                     env={"PROBE_STDIN": "1"})
    assert r.returncode == 0, r.stderr
    assert r.records[0]["stdin"] == "data\n"


def test_single_runs_one_process_whatever_the_count(run_launcher: RunLauncher,
                                                    workdir: Path) -> None:
    (workdir / "pre.sh").write_text(":\n")
    r = run_launcher("single", pre=str(workdir / "pre.sh"), n=4)
    assert r.returncode == 0, r.stderr
    assert list(r.records) == [0]
    assert len(r.records[0]["nodes"]) == 4  # the node file still describes the job


def test_single_without_pre_post_is_the_bare_command() -> None:
    argv = [sys.executable, "-c", "pass", "$(x)"]
    assert launch_command("single", argv) == argv


def test_single_runs_the_program_not_a_shell_builtin(run_launcher: RunLauncher,
                                                     workdir: Path) -> None:
    # dash's builtin echo would turn "a\nb" into two lines; /bin/echo prints it as is
    (workdir / "pre.sh").write_text(":\n")
    r = run_launcher("single", pre=str(workdir / "pre.sh"), argv=["echo", "a\\nb", "-x"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "a\\nb -x\n"


def test_missing_executable_is_127(run_launcher: RunLauncher, workdir: Path) -> None:
    r = run_launcher("multiple", n=2, argv=[str(workdir / "no such program")])
    assert r.returncode == 127
    assert "no such program" in r.stderr


def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (not yet reaped by init) has ended too
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("launcher", ["multiple", "mpirun"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_stops_every_rank_and_skips_post_launch(
        tmp_path: Path, sig: int, launcher: str, default_signals: Callable[[], None]) -> None:
    if launcher == "mpirun":
        need_openmpi()
    pids = tmp_path / "pids"
    pids.mkdir()
    post = tmp_path / "post.sh"
    post.write_text(f"touch '{tmp_path}/post_ran'\n")
    rank = [sys.executable, "-c",
            "import os, sys, time\n"
            "rank = os.environ.get('PSIJ_RANK') or os.environ['OMPI_COMM_WORLD_RANK']\n"
            "open(os.path.join(sys.argv[1], rank), 'w').write(str(os.getpid()))\n"
            "time.sleep(300)\n", str(pids)]
    argv = launch_command(launcher, rank, post=str(post), n=3)
    # its own session, as executors start jobs: the signal goes to the launcher only
    proc = subprocess.Popen(argv, cwd=tmp_path, start_new_session=True,
                            preexec_fn=default_signals)
    try:
        _wait_for(lambda: len([p for p in pids.iterdir() if p.read_text()]) == 3, "3 ranks")
        rank_pids = [int(p.read_text()) for p in pids.iterdir()]
        proc.send_signal(sig)
        assert proc.wait(timeout=TIMEOUT) == -sig  # the launcher re-raises what it got
        _wait_for(lambda: not any(_alive(p) for p in rank_pids), "the ranks to end")
        assert not (tmp_path / "post_ran").exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_cancel_during_pre_launch_starts_no_rank(tmp_path: Path) -> None:
    # executors signal the job's whole process group: the pre-launch command ends, then
    # the launcher ends by the same signal without starting a rank
    pre = tmp_path / "pre.sh"
    pre.write_text(f"echo \"$PSIJ_NODEFILE\" > '{tmp_path}/nodefile'\nsleep 300\n")
    argv = launch_command("multiple", ["/bin/sh", "-c", f"touch '{tmp_path}/rank_ran'"],
                          pre=str(pre), n=2)
    proc = subprocess.Popen(argv, cwd=tmp_path, start_new_session=True)
    try:
        _wait_for(lambda: (tmp_path / "nodefile").exists(), "pre-launch to start")
        _wait_for(lambda: any(_alive(p) and _comm(p) == "sleep" for p in _children(proc.pid)),
                  "pre-launch's sleep")
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == -signal.SIGTERM
        assert not (tmp_path / "rank_ran").exists()
        # the temporary node file went with the launcher
        assert not Path((tmp_path / "nodefile").read_text().strip()).exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except FileNotFoundError:
        return []


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""
