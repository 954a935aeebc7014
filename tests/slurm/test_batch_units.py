"""The pieces of the batch machinery and the Slurm backend that need no cluster: the
single escape function (checked through a real bash), exit records, wait statuses, and
the reading of Slurm's squeue/sacct fields."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import InvalidJobException, JobExecutor, JobSpec, JobState
from hpcjobs.executors.batch import ExitRecord, Expandable, JobDir, shell_quote
from hpcjobs.final_status import decode_wait_status
from hpcjobs.executors.batch.script import directive_value
from hpcjobs.executors.batch.script import safe_job_name, walltime
from hpcjobs.executors.slurm.executor import SlurmJobExecutor, _native, _sacct_exit

HOSTILE = ["", " ", "a b", "'", "''", '"', "$HOME", "${HOME}", "`id`", "$(id)", "\\", "\\'",
           "a\nb", "\t", "é ü 日本", "*", "~", "-n", "%j", "!", "#", ";&|<>()", "${A-b}"]


def bash_words(words: list[str], env: dict[str, str] | None = None) -> list[str]:
    """What bash makes of the quoted words: each printed NUL-terminated."""
    script = "printf '%s\\0' " + " ".join(shell_quote(w) for w in words)
    out = subprocess.run(["bash", "-c", script], capture_output=True, env=env, check=True).stdout
    return [w.decode() for w in out.split(b"\0")[:-1]]


def test_shell_quote_is_read_back_byte_for_byte() -> None:
    assert bash_words(HOSTILE) == HOSTILE


def test_expandable_expands_only_braced_names() -> None:
    words = [Expandable("${A}"), Expandable("x${A}y$A`id`${B}"), Expandable("${A-b}'\\")]
    assert bash_words(words, env={"A": "a'\" $B", "B": "b"}) == \
        ["a'\" $B", "xa'\" $By$A`id`b", "${A-b}'\\"]


def test_directive_values_that_sbatch_would_misread_are_refused() -> None:
    assert directive_value("f", "a b'c\"#") == "a b'c\"#"
    for bad in ("a\nb", "a\\b", "a\rb"):
        with pytest.raises(InvalidJobException, match="^f contains"):
            directive_value("f", bad)


@pytest.mark.parametrize("text, state, code, message", [
    ("0 -", JobState.COMPLETED, 0, None),
    ("3 -", JobState.FAILED, 3, "exited with code 3"),
    ("137 -", JobState.FAILED, -9, "killed by signal 9 (SIGKILL)"),
    ("143 TERM", JobState.FAILED, -15, "killed by signal 15 (SIGTERM)"),
    ("3 - -", JobState.FAILED, 3, "exited with code 3"),  # the third field since
    ("143 TERM -", JobState.FAILED, -15, "killed by signal 15 (SIGTERM)"),
])
def test_exit_records(tmp_path: Path, text: str, state: JobState, code: int,
                      message: str | None) -> None:
    job_dir = JobDir.create(tmp_path, "job")
    assert job_dir.exit_record() is None
    (job_dir.path / "exitcode").write_text(text + "\n")
    record = job_dir.exit_record()
    assert isinstance(record, ExitRecord)
    assert record.caught == ("TERM" if "TERM" in text else None)
    status = record.final_status()
    assert (status.state, status.exit_code, status.message) == (state, code, message)
    assert job_dir.path.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("field", ["directory", "stdin_path", "stdout_path", "stderr_path"])
def test_a_record_names_the_field_the_script_could_not_use(tmp_path: Path, field: str) -> None:
    job_dir = JobDir.create(tmp_path, "job")
    (job_dir.path / "exitcode").write_text(f"1 - {field}\n")
    record = job_dir.exit_record()
    assert record is not None and (record.status, record.caught, record.unusable) == (1, None, field)


@pytest.mark.parametrize("partial", ["", "1", "137", "143 TE"])
def test_a_record_being_written_is_not_there_yet(tmp_path: Path, partial: str) -> None:
    # (the script writes its line in one write, no rename: a reader between the
    # file's creation and the write's end must not take "1" of "137 TERM" for an exit)
    job_dir = JobDir.create(tmp_path, "job")
    (job_dir.path / "exitcode").write_text(partial)
    assert job_dir.exit_record() is None
    (job_dir.path / "exitcode").write_text("137 TERM\n")
    record = job_dir.exit_record()
    assert record is not None and (record.status, record.caught) == (137, "TERM")


def test_wait_statuses_and_sacct_exit_codes() -> None:
    assert [decode_wait_status(w) for w in (0, 768, 9, 15, 125)] == [0, 3, -9, -15, -125]
    assert [_sacct_exit(t) for t in ("0:0", "3:0", "0:9", "", "x")] == [0, 3, -9, None, None]


@pytest.mark.parametrize("state, psij, words", [
    ("PENDING", JobState.QUEUED, None),
    ("COMPLETING", JobState.ACTIVE, None),
    ("COMPLETED", JobState.COMPLETED, None),
    ("TIMEOUT", JobState.FAILED, ["walltime exceeded", "Slurm state TIMEOUT"]),
    ("OUT_OF_MEMORY", JobState.FAILED, ["out of memory", "Slurm state OUT_OF_MEMORY"]),
    ("NODE_FAIL", JobState.FAILED, ["node failure"]),
    ("PREEMPTED", JobState.FAILED, ["preempted"]),
    ("CANCELLED by 0", JobState.CANCELED, ["cancelled: by root (uid 0)"]),
    ("DEADLINE", JobState.FAILED, ["deadline"]),
    ("BOOT_FAIL", JobState.FAILED, ["boot failure"]),
])
def test_slurm_state_table(state: str, psij: JobState, words: list[str] | None) -> None:
    ns = _native("42", state, "None", -125)
    assert ns.state is psij and ns.metadata["native_state"] == state.split()[0]
    message = ns.final(-9).message if ns.state is not None and ns.state.final else None
    for word in words or ():
        assert word in (message or ""), message
    if state.startswith("CANCELLED"):
        assert ns.exit_code is None  # Slurm's 0:0 of a cancelled job is no exit status


def test_unknown_states_map_to_nothing() -> None:
    ns = _native("42", "WARPING", "None", None)
    assert ns.state is None and ns.native_state == "WARPING"


def test_squeue_fields_become_metadata() -> None:
    ex = JobExecutor.get_instance("slurm")
    assert isinstance(ex, SlurmJobExecutor)
    pending = ex.scheduler.native("7", "7  |PENDING|Priority|0|2026-11-22T05:03:46||")
    assert pending.metadata["reason_pending"] == "Priority"
    assert isinstance(pending.metadata["t_estimate"], float)
    running = ex.scheduler.native("7", "7|RUNNING|None|0|2026-11-22T05:03:46|n[1-2]|")
    assert running.metadata == {"native_state": "RUNNING", "nodes": "n[1-2]"}
    failed = ex.scheduler.native("7", "7|FAILED |NonZeroExitCode|768|N/A|n1 |")
    assert failed.exit_code == 3 and failed.message == "failed (Slurm state FAILED, reason NonZeroExitCode)"


def test_walltime_and_job_names() -> None:
    assert walltime(timedelta(seconds=5)) == "0:00:05"
    assert walltime(timedelta(hours=26, seconds=61)) == "26:01:01"
    assert safe_job_name(JobSpec("/usr/bin/my prog"), 128) == "my_prog"
    assert safe_job_name(JobSpec("/bin/true", name="a'b\n$c é"), 128) == "a_b__c__"
    assert safe_job_name(JobSpec("/bin/true", name="-N x" * 100), 236) == "_N_x" + "-N_x" * 58
