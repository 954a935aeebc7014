"""``Job.wait()`` returns a final status only after the job's callbacks for it returned.

Users write "set a callback, submit, wait, look at what the callback recorded"; the
callbacks run on the executor's dispatcher thread, so without this promise that script
sees 0 to 3 of the 3 calls depending on thread timing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState, JobStatus

from recording import RecordingExecutor

S = JobState
#: the states a job that ran passes through before its final one
RAN = [S.QUEUED, S.STAGE_IN, S.ACTIVE, S.STAGE_OUT, S.CLEANUP]


@pytest.fixture
def local(tmp_path: Path) -> Iterator[JobExecutor]:
    ex = JobExecutor.get_instance("local", config={"work_directory": tmp_path / "work"})
    yield ex
    ex.close()


@pytest.mark.parametrize("where", ["job", "executor"])
def test_wait_sees_every_callback_of_a_real_job(local: JobExecutor, where: str) -> None:
    """The user's script, on real processes; a slow final callback makes the race
    certain instead of occasional."""
    for executable, final_state in (("/bin/false", S.FAILED), ("/bin/true", S.COMPLETED)):
        seen: list[S] = []

        def record(job: Job, status: JobStatus) -> None:
            if status.state.final:
                time.sleep(0.3)  # the dispatcher is still in here when the state is final
            seen.append(status.state)

        job = Job(JobSpec(executable))
        (job if where == "job" else local).set_job_status_callback(record)
        local.submit(job)
        status = job.wait(timeout=60)
        assert status is not None and status.state is final_state
        assert seen == RAN + [final_state]


def test_wait_returns_once_the_final_callback_returns() -> None:
    ex = RecordingExecutor()
    inside, release = threading.Event(), threading.Event()

    def blocking(job: Job, status: JobStatus) -> None:
        if status.state.final:
            inside.set()
            release.wait(30)

    job = Job(JobSpec("/bin/true"))
    job.set_job_status_callback(blocking)
    ex.submit(job)
    ex._set_job_status(job, JobStatus(S.COMPLETED, exit_code=0))
    assert inside.wait(10)
    assert job.status.state is S.COMPLETED
    assert job.wait(timeout=0.2) is None  # final, but its callback has not returned
    threading.Timer(0.1, release.set).start()
    status = job.wait(timeout=30)
    assert status is not None and status.state is S.COMPLETED
    ex.close()


def test_a_closed_executor_never_makes_wait_hang() -> None:
    """Once the dispatcher is stopped, a late final report queues no callback, so
    nothing is left for wait() to wait for."""
    ex = RecordingExecutor()
    ex.set_job_status_callback(lambda j, s: None)
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)
    ex.close()
    ex._set_job_status(job, JobStatus(S.FAILED, exit_code=1))
    status = job.wait(timeout=10)
    assert status is not None and status.state is S.FAILED


def test_a_callback_waiting_on_its_final_job_gets_the_status() -> None:
    """Inside the final callback its own batch is still running: wait() returns the
    final status at once instead of waiting for itself."""
    ex = RecordingExecutor()
    got: list[object] = []
    job = Job(JobSpec("/bin/true"))
    job.set_job_status_callback(lambda j, s: got.append(j.wait()) if s.state.final else None)
    ex.submit(job)
    ex._set_job_status(job, JobStatus(S.CANCELED))
    status = job.wait(timeout=10)
    assert status is not None and status.state is S.CANCELED
    assert got == [status]
    ex.close()


def test_a_callback_calling_sys_exit_neither_ends_delivery_nor_hangs_wait() -> None:
    ex = RecordingExecutor()
    seen: list[S] = []

    def exits(job: Job, status: JobStatus) -> None:
        seen.append(status.state)
        raise SystemExit(3)

    first, second = Job(JobSpec("/bin/true")), Job(JobSpec("/bin/true"))
    ex.set_job_status_callback(exits)
    for job in (first, second):
        ex.submit(job)
        ex._set_job_status(job, JobStatus(S.COMPLETED, exit_code=0))
    for job in (first, second):
        status = job.wait(timeout=10)
        assert status is not None and status.state is S.COMPLETED
    assert seen == (RAN + [S.COMPLETED]) * 2
    ex.close()
