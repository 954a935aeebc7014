"""hpcjobs.external.run, the one way hpcjobs runs sbatch, squeue, qsub...: real
processes, their output whole, their failures as CommandError, a deadline that kills."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from hpcjobs.errors import CommandError
from hpcjobs.external import run


def test_output_and_exit_code() -> None:
    result = run(["/bin/sh", "-c", 'echo out; echo err >&2; printf "\\377\\n"'])
    assert (result.returncode, result.stdout, result.stderr) == (0, "out\n\ufffd\n", "err\n")


def test_more_output_than_a_pipe_holds_on_both_streams() -> None:
    result = run(["/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"])
    assert (len(result.stdout), len(result.stderr)) == (300000, 200000)


def test_stdin_is_empty() -> None:
    assert run(["/bin/cat"], timeout=10).stdout == ""


def test_a_failure_carries_code_and_output() -> None:
    with pytest.raises(CommandError) as e:
        run(["/bin/sh", "-c", "echo partial; echo 'no such job' >&2; exit 3"])
    assert (e.value.returncode, e.value.stdout, e.value.stderr) == (3, "partial\n", "no such job\n")
    assert run(["/bin/sh", "-c", "exit 3"], check=False).returncode == 3


def test_a_missing_program() -> None:
    with pytest.raises(CommandError) as e:
        run(["/nonexistent/sbatch"])
    assert e.value.returncode is None and "not found" in str(e.value)


def test_a_command_past_its_deadline_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    start = time.monotonic()
    with pytest.raises(CommandError) as e:
        run(["/bin/sh", "-c", f'echo $$ > {pid_file}; echo before; exec sleep 60'], timeout=1)
    assert time.monotonic() - start < 30  # a deadline guard, not a timing claim
    assert e.value.returncode is None and "timed out after 1 s" in str(e.value)
    assert e.value.stdout == "before\n"  # what it printed before the deadline is kept
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # killed and reaped


def test_a_command_that_exits_while_a_child_holds_its_output() -> None:
    # the pipes stay open after the command exits (its background child has them):
    # the deadline still ends the wait
    with pytest.raises(CommandError) as e:
        run(["/bin/sh", "-c", "sleep 30 & echo started"], timeout=1)
    assert "timed out" in str(e.value) and e.value.stdout == "started\n"


def test_a_command_that_closes_its_output_before_it_exits() -> None:
    # the pipes close first, the exit comes later: waited for, up to the deadline
    result = run(["/bin/sh", "-c", "exec >&- 2>&-; sleep 0.5; exit 4"], check=False, timeout=30)
    assert result.returncode == 4
    with pytest.raises(CommandError) as e:
        run(["/bin/sh", "-c", "exec >&- 2>&-; sleep 30"], timeout=1)
    assert "timed out" in str(e.value)


def test_meanwhile_runs_while_the_command_does_and_its_error_loses_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    gate = tmp_path / "gate"
    seen: list[bool] = []

    def meanwhile() -> None:
        seen.append(True)
        gate.write_text("go")  # the command waits for it: so it ran while the command did
        raise RuntimeError("a bug in meanwhile")

    script = f'while [ ! -e "{gate}" ]; do sleep 0.01; done; echo done'
    result = run(["sh", "-c", script], timeout=30, meanwhile=meanwhile)
    assert seen == [True] and result.stdout == "done\n"
    assert "a bug in meanwhile" in caplog.text


def program(directory: Path, says: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / "hj-prog").write_text(f"#!/bin/sh\necho {says}\n")
    (directory / "hj-prog").chmod(0o755)


def test_a_program_on_path_is_looked_up_again_when_path_or_the_file_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the lookup is remembered per PATH value (as a shell's command hash): a new PATH
    # looks again, and so does a remembered file that is gone
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    program(a, "a")
    monkeypatch.setenv("PATH", f"{a}:{c}:{os.environ['PATH']}")
    assert run(["hj-prog"]).stdout == "a\n"
    program(b, "b")
    monkeypatch.setenv("PATH", f"{b}:{a}:{c}:{os.environ['PATH']}")
    assert run(["hj-prog"]).stdout == "b\n"
    monkeypatch.setenv("PATH", f"{a}:{c}:{os.environ['PATH'].split(':', 3)[3]}")
    assert run(["hj-prog"]).stdout == "a\n"
    (a / "hj-prog").unlink()
    program(c, "c")
    assert run(["hj-prog"]).stdout == "c\n"
    (c / "hj-prog").unlink()
    with pytest.raises(CommandError) as e:
        run(["hj-prog"])
    assert e.value.returncode is None and "not found" in str(e.value)
