"""Hold and release on the local executor: a job submitted held does not start until
released (its nanny keeps it, on record); a running job refuses; a held job is
cancelled cleanly, and one whose executor closes ends saying nobody could release it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState
from hpcjobs.errors import InvalidJobStateError
from hpcjobs.executors.local import LocalJobExecutor

TIMEOUT = 60.0
#: how long a held job is watched not starting (a local job starts within milliseconds)
HELD_WAIT = 3.0


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path / "work"


@pytest.fixture
def ex(work: Path) -> Iterator[LocalJobExecutor]:
    e = JobExecutor.get_instance("local", config={"work_directory": work})
    assert isinstance(e, LocalJobExecutor)
    yield e
    e.close()


def marker_job(tmp_path: Path, name: str = "started") -> tuple[Job, Path]:
    """A job that leaves a file when it starts, and exits 7."""
    mark = tmp_path / name
    return Job(JobSpec("/bin/sh", ["-c", f'touch "{mark}"; exit 7'])), mark


def test_a_job_submitted_held_starts_only_when_released(ex: LocalJobExecutor,
                                                        tmp_path: Path) -> None:
    job, mark = marker_job(tmp_path)
    states: list[JobState] = []
    job.set_job_status_callback(lambda j, s: states.append(s.state))
    ex.submit(job, hold=True)
    status = job.status
    assert status.state is JobState.QUEUED and status.metadata is not None
    assert status.metadata["held"] is True and "held" in status.metadata["reason_pending"]
    assert job.wait(timeout=HELD_WAIT, target_states=[JobState.ACTIVE]) is None
    assert not mark.exists() and job.status.state is JobState.QUEUED
    ex.hold(job)  # held already: nothing changes
    ex.release(job)
    assert not (job.status.metadata or {}).get("held")
    end = job.wait(timeout=TIMEOUT)
    assert end is not None and end.state is JobState.FAILED and end.exit_code == 7
    assert mark.exists()
    assert states == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                      JobState.STAGE_OUT, JobState.CLEANUP, JobState.FAILED]
    with pytest.raises(InvalidJobStateError, match="has ended"):
        ex.release(job)


def test_a_running_job_refuses_hold(ex: LocalJobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["30"]))
    ex.submit(job)
    assert job.wait(timeout=TIMEOUT, target_states=[JobState.ACTIVE]) is not None
    with pytest.raises(InvalidJobStateError, match=r"has started \(ACTIVE\): only a queued"):
        ex.hold(job)
    ex.cancel(job)
    end = job.wait(timeout=TIMEOUT)
    assert end is not None and end.state is JobState.CANCELED
    with pytest.raises(InvalidJobStateError, match="not a job of this local executor"):
        ex.hold(Job(JobSpec("/bin/true")))


def test_a_held_job_cancelled_never_starts(ex: LocalJobExecutor, tmp_path: Path) -> None:
    job, mark = marker_job(tmp_path)
    ex.submit(job, hold=True)
    ex.cancel(job)
    end = job.wait(timeout=TIMEOUT)
    assert end is not None and end.state is JobState.CANCELED
    assert end.message == "cancelled: while held, before it started"
    assert not mark.exists()


def test_attach_sees_a_held_job_and_its_end_after_the_executor_closed(
        work: Path, tmp_path: Path) -> None:
    first = JobExecutor.get_instance("local", config={"work_directory": work})
    job, mark = marker_job(tmp_path)
    first.submit(job, hold=True)
    native_id = job.native_id
    assert native_id is not None
    records = work / "nannies" / f"{native_id.split('-')[0]}.records"
    deadline = time.monotonic() + TIMEOUT  # the nanny records the hold as it gets it
    while f"H {native_id}\n" not in (records.read_text() if records.exists() else ""):
        assert time.monotonic() < deadline, "the nanny never recorded the hold"
        time.sleep(0.02)
    other = JobExecutor.get_instance("local", config={"work_directory": work})
    try:
        seen = Job()
        other.attach(seen, native_id)  # through the journal: another executor's job
        assert seen.status.state is JobState.QUEUED
        assert (seen.status.metadata or {}).get("held") is True
        with pytest.raises(InvalidJobStateError, match="only be released by the executor"):
            other.release(seen)
        first.close()  # nobody can release it now: it ends, saying so
        end = seen.wait(timeout=TIMEOUT)
        assert end is not None and end.state is JobState.CANCELED
        assert "only that executor could release it" in str(end.message)
        time.sleep(0.1)
        assert not mark.exists()
    finally:
        first.close()
        other.close()
