"""What the files cannot tell and Slurm forgets: walltime kills, out of memory, jobs purged from the
queue (short MinJobAge on the test cluster), accounting that is disabled, a status
command that fails, native states nobody knows."""

from __future__ import annotations

import logging
import os
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState, ResourceSpecV1

from slurm_helpers import WAIT, sbatch, shim, squeue_state, wait_until


@pytest.mark.slow
def test_walltime_kill_ends_failed_with_a_walltime_message(executor: JobExecutor) -> None:
    # Slurm limits are whole minutes, checked every ~30 s: this takes ~1.5 min
    spec = JobSpec("/bin/sleep", ["600"], attributes=JobAttributes(duration=timedelta(seconds=5)))
    job = Job(spec)
    executor.submit(job)
    status = job.wait(timeout=WAIT + 120)
    assert status is not None and status.state is JobState.FAILED, status
    message = status.message or ""
    assert "walltime exceeded" in message and "Slurm state TIMEOUT" in message, message
    assert "SIGTERM" in message and status.exit_code == -15


def test_out_of_memory_is_not_a_plain_sigkill(executor: JobExecutor) -> None:
    # the cluster's cgroup (ConstrainRAMSpace) kills the job with SIGKILL at 100 MiB: its
    # own record says only "killed by signal 9", Slurm says OUT_OF_MEMORY
    fill = "import sys; block = b'x' * (2 << 30); sys.exit(0)"
    job = Job(JobSpec(sys.executable, ["-c", fill],
                      resources=ResourceSpecV1(memory=100 * 1024 * 1024)))
    executor.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    message = status.message or ""
    assert message.startswith("out of memory") and "Slurm state OUT_OF_MEMORY" in message, message
    assert status.exit_code == -9 and "killed by signal 9 (SIGKILL)" in message, status


@pytest.mark.slow
def test_jobs_purged_from_the_queue_end_in_their_true_state(
        executor: JobExecutor, work_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    ours = Job(JobSpec("/bin/sh", ["-c", "exit 5"]))
    executor.submit(ours)
    executor.close()  # nobody watches the job while it runs, ends and is purged
    foreign = sbatch("--wrap", "exit 6")
    assert ours.native_id is not None
    for native_id in (ours.native_id, foreign):
        wait_until(lambda: squeue_state(native_id) == "", f"Slurm to purge job {native_id}")

    later = JobExecutor.get_instance("slurm", config={"work_directory": work_dir})
    try:
        a, b = Job(), Job()
        later.attach(a, ours.native_id)   # its exit-code file tells
        later.attach(b, foreign)          # no job files: accounting (sacct) tells
        sa, sb = a.wait(timeout=WAIT), b.wait(timeout=WAIT)
        assert sa is not None and sa.state is JobState.FAILED and sa.exit_code == 5, sa
        assert sb is not None and sb.state is JobState.FAILED and sb.exit_code == 6, sb
        assert "Slurm state FAILED" in (sb.message or "")
    finally:
        later.close()

    # without accounting, a purged job without files ends FAILED, saying it is unknown
    # (after Slurm's retention time, MinJobAge)
    fake = shim(tmp_path / "bin", "sacct",
                'echo "sacct: error: Slurm accounting storage is disabled" >&2; exit 1')
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    blind = JobExecutor.get_instance("slurm", config={"work_directory": work_dir})
    try:
        c = Job()
        blind.attach(c, foreign)
        sc = c.wait(timeout=WAIT)
        assert sc is not None and sc.state is JobState.FAILED and sc.exit_code is None, sc
        assert "exit status is unknown" in (sc.message or ""), sc
    finally:
        blind.close()


def test_a_failing_status_command_changes_no_job(executor: JobExecutor, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    counter = tmp_path / "calls"
    fake = shim(tmp_path / "bin", "squeue", f"""
n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo "$n" > {counter}
if [ $((n % 2)) = 1 ]; then echo "squeue: error: Socket timed out on send/recv" >&2; exit 1; fi
exec "$REAL" "$@"
""")
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    held = JobAttributes(custom_attributes={"slurm.hold": True})
    jobs = {
        "ok": Job(JobSpec("/bin/sh", ["-c", "sleep 1"])),
        "exit2": Job(JobSpec("/bin/sh", ["-c", "sleep 1; exit 2"])),
        "held": Job(JobSpec("/bin/true", attributes=held)),
        "killed": Job(JobSpec("/bin/sh", ["-c", "kill -s KILL $PPID; sleep 60"])),
    }
    for job in jobs.values():
        executor.submit(job)
    wait_until(lambda: (jobs["held"].status.metadata or {}).get("reason_pending") == "JobHeldUser",
               "a successful status query of the held job")
    jobs["held"].cancel()
    final = {name: job.wait(timeout=WAIT) for name, job in jobs.items()}
    calls = int(counter.read_text())
    assert calls >= 2, "the status command was never run twice, so it never failed"
    assert final["ok"] is not None and final["ok"].state is JobState.COMPLETED
    assert final["exit2"] is not None and final["exit2"].exit_code == 2
    assert final["held"] is not None and final["held"].state is JobState.CANCELED
    killed = final["killed"]
    assert killed is not None and killed.state is JobState.FAILED
    assert "killed before it could record an exit code" in (killed.message or "")


def test_unknown_native_states_are_logged_and_ignored(executor: JobExecutor, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    fake = shim(tmp_path / "bin", "squeue",
                '"$REAL" "$@" | sed "s/RUNNING/WARPING/"')
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    native_id = sbatch("--wrap", "sleep 4")
    wait_until(lambda: squeue_state(native_id) == "WARPING", "the job to run")
    job = Job()
    with caplog.at_level(logging.WARNING, logger="hpcjobs.executors.batch.monitor"):
        executor.attach(job, native_id)
        status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.COMPLETED, status
    assert any("unknown native state 'WARPING'" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("prints_id", [True, False])
def test_a_submit_that_times_out_after_submitting_is_not_lost(
        slurm_cluster: str, work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        prints_id: bool) -> None:
    # sbatch submits, then hangs past the executor's command timeout, having printed the
    # job id or not (then the job is found in squeue by its script's path)
    out = "" if prints_id else " >/dev/null"
    fake = shim(tmp_path / "bin", "sbatch", f'"$REAL" "$@"{out}; status=$?; sleep 5; exit $status')
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    config = {"work_directory": work_dir, "command_timeout": 2.0}
    with JobExecutor.get_instance("slurm", config=config) as executor:
        job = Job(JobSpec("/bin/sh", ["-c", "exit 4"]))
        executor.submit(job)  # submitted after all: not an error
        assert job.native_id is not None and squeue_state(job.native_id) != ""
        status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED and status.exit_code == 4
