"""The Slurm executor's job life cycle against the real cluster: cancel (pending and
running), deaths by signal, a script killed before it could record its exit code,
attach to jobs submitted with plain sbatch, list() and status metadata."""

from __future__ import annotations

import time
from pathlib import Path

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState, JobStatus

from slurm_helpers import WAIT, sbatch, wait_until


def recorded(job: Job) -> list[JobStatus]:
    """Every status the job's callback receives, in order."""
    seen: list[JobStatus] = []
    job.set_job_status_callback(lambda _job, status: seen.append(status))
    return seen


def states(seen: list[JobStatus]) -> list[JobState]:
    return [s.state for s in seen]


def test_exit_code_and_states_in_order(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "exit 7"]))
    seen = recorded(job)
    executor.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED
    assert status.exit_code == 7 and "exited with code 7" in (status.message or "")
    wait_until(lambda: len(seen) == 6, "the FAILED callback")
    assert states(seen) == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                            JobState.STAGE_OUT, JobState.CLEANUP, JobState.FAILED]


def test_cancel_a_pending_held_job(executor: JobExecutor) -> None:
    spec = JobSpec("/bin/true", attributes=JobAttributes(custom_attributes={"slurm.hold": True}))
    job = Job(spec)
    seen = recorded(job)
    executor.submit(job)
    # the first status query (soon after submit) tells why the job waits
    wait_until(lambda: (job.status.metadata or {}).get("reason_pending") == "JobHeldUser",
               "squeue's pending reason JobHeldUser in the status metadata")
    assert job.status.metadata is not None and job.status.metadata["native_state"] == "PENDING"
    job.cancel()
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED, status
    assert "cancelled" in (status.message or "")
    wait_until(lambda: len(seen) == 2, "the CANCELED callback")
    assert states(seen) == [JobState.QUEUED, JobState.CANCELED]  # it never ran


def test_cancel_a_running_job(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    assert job.status.state is JobState.ACTIVE
    job.cancel()
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED, status
    assert "cancelled" in (status.message or "") and "SIGTERM" in (status.message or "")


def test_a_job_killed_by_a_signal(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "kill -s KILL $$"]))
    executor.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED
    assert status.exit_code == -9
    # a plain signal: not confused with what Slurm's reasons (out of memory, ...) add
    assert status.message == "killed by signal 9 (SIGKILL)", status


def test_script_killed_before_recording_its_exit_code(executor: JobExecutor) -> None:
    # the job SIGKILLs its own batch script (its parent): no trap can run, no exit-code
    # file is written; Slurm's view (FAILED, signal 9) must reach the user, and say so
    job = Job(JobSpec("/bin/sh", ["-c", "kill -s KILL $PPID; sleep 60"]))
    executor.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    message = status.message or ""
    assert "killed before it could record an exit code" in message, message
    assert "SIGKILL" in message and "Slurm state FAILED" in message, message
    assert status.exit_code == -9


def test_attach_to_jobs_submitted_with_plain_sbatch(executor: JobExecutor) -> None:
    running = sbatch("--wrap", "sleep 3; exit 4")
    finished = sbatch("--wrap", "exit 0")
    wait_until(lambda: Path("/dev/null").exists() and True, "nothing")  # no-op: ids exist
    a, b = Job(), Job()
    seen = recorded(a)
    executor.attach(a, running)
    executor.attach(b, finished)
    sa = a.wait(timeout=WAIT)
    sb = b.wait(timeout=WAIT)
    assert sa is not None and sa.state is JobState.FAILED and sa.exit_code == 4, sa
    assert "Slurm state FAILED" in (sa.message or "")
    assert sb is not None and sb.state is JobState.COMPLETED and sb.exit_code == 0, sb
    assert a.native_id == running
    wait_until(lambda: len(seen) >= 3, "the callbacks of the attached job")
    assert states(seen)[-1] is JobState.FAILED and JobState.ACTIVE in states(seen)


def test_attach_is_polled_at_once(executor: JobExecutor) -> None:
    native_id = sbatch("--wrap", "sleep 30")
    job = Job()
    executor.attach(job, native_id)
    # psij-python users see an attached job read NEW for 30 s; here the first query is
    # immediate (bounded generously: this is not a timing assertion)
    assert job.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    metadata = job.status.metadata or {}
    assert metadata.get("native_state") == "RUNNING" and metadata.get("nodes")
    job.cancel()
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED


def test_list_has_the_submitted_jobs(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["30"]))
    executor.submit(job)
    try:
        assert job.native_id in executor.list()
    finally:
        job.cancel()
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED


def test_attach_from_another_executor_reads_the_job_files(executor: JobExecutor,
                                                          work_dir: Path) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "sleep 2; exit 3"]))
    executor.submit(job)
    assert job.native_id is not None
    other = JobExecutor.get_instance("slurm", config={"work_directory": work_dir})
    try:
        copy = Job()
        other.attach(copy, job.native_id)
        status = copy.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.FAILED
        assert status.exit_code == 3 and status.message == "exited with code 3"
    finally:
        other.close()
    time.sleep(0)  # (the original job ends on its own)
    assert job.wait(timeout=WAIT) is not None
