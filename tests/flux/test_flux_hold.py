"""Hold and release on a real Flux instance (urgency 0 holds, flux-job(1)): a job
submitted held, or held while queued, does not start until released; a running job
refuses, in our check and in Flux's own answer; the events say held."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import real_flux

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState, ResourceSpecV1
from hpcjobs.errors import InvalidJobStateError
from hpcjobs.executors.flux.events import HELD_REASON, JobEvents

WAIT = 60.0  # generous bound for waits; never a timing assertion
#: how long a held job is watched not starting, 30 s (a free Flux starts one within a second)
HELD_WAIT = 30.0


def marker_job(tmp_path: Path) -> tuple[Job, Path]:
    mark = tmp_path / "started"
    return Job(JobSpec("/bin/sh", ["-c", f'touch "{mark}"'])), mark


def eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def is_held(job: Job) -> bool:
    metadata = job.status.metadata or {}
    return metadata.get("held") is True and metadata.get("reason_pending") == HELD_REASON


def test_a_job_submitted_held_starts_only_when_released(executor: JobExecutor,
                                                        tmp_path: Path) -> None:
    job, mark = marker_job(tmp_path)
    executor.submit(job, hold=True)
    assert job.wait(timeout=HELD_WAIT, target_states=[JobState.ACTIVE]) is None
    assert job.status.state is JobState.QUEUED and is_held(job) and not mark.exists()
    executor.release(job)
    assert not is_held(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.COMPLETED and mark.exists()


def test_the_events_flux_sends_before_submit_returns_are_kept(executor: JobExecutor) -> None:
    # The journal often delivers a job's first events (submit .. priority) before the
    # submit request returns its id; they wait for it rather than being dropped. Held
    # jobs stop at the last of them: each says held (the submit event's urgency 0) and
    # SCHED (the priority event), or the test fails at the deadline.
    jobs = [Job(JobSpec("/bin/true")) for _ in range(10)]
    for job in jobs:
        executor.submit(job, hold=True)
    for job in jobs:
        eventually(lambda: is_held(job)
                   and (job.status.metadata or {}).get("native_state") == "SCHED")
    for job in jobs:
        job.cancel()


def test_a_queued_job_held_waits_for_its_release(executor: JobExecutor,
                                                 tmp_path: Path) -> None:
    # the whole instance busy, so that the job queues
    blocker = Job(JobSpec("/bin/sleep", ["300"], resources=ResourceSpecV1(
        process_count=real_flux.CORES_PER_NODE * len(real_flux.NODES)),
                          attributes=JobAttributes(duration=timedelta(seconds=120))))
    executor.submit(blocker)
    assert blocker.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    job, mark = marker_job(tmp_path)
    executor.submit(job)
    executor.hold(job)
    assert (job.status.metadata or {}).get("held") is True  # at once
    eventually(lambda: is_held(job))  # and Flux's urgency event, with the reason
    blocker.cancel()  # the resources are free: a job not held would start now
    assert blocker.wait(timeout=WAIT) is not None
    assert job.wait(timeout=HELD_WAIT, target_states=[JobState.ACTIVE]) is None
    assert job.status.state is JobState.QUEUED and is_held(job) and not mark.exists()
    executor.release(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.COMPLETED and mark.exists()


def test_a_running_job_refuses_hold(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["300"]))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    with pytest.raises(InvalidJobStateError, match="has started"):
        executor.hold(job)
    # and when our status lags behind (the check passes), Flux's own refusal says so
    with pytest.raises(InvalidJobStateError, match="urgency cannot be changed"):
        executor._hold_job(job)  # type: ignore[attr-defined]
    job.cancel()


def test_urgency_events_say_held_and_released() -> None:
    events = JobEvents("ƒtest")
    submitted = events.apply("submit", 1.0, {"urgency": 0, "userid": 0})
    assert submitted.status is not None and submitted.status.metadata is not None
    assert submitted.status.metadata["held"] is True
    assert submitted.status.metadata["reason_pending"] == HELD_REASON
    # the scheduler's annotations do not drop the hold's reason
    annotated = events.apply("annotations", 2.0, {"annotations": None})
    assert annotated.metadata is None or annotated.metadata["held"] is True
    assert events.metadata["reason_pending"] == HELD_REASON
    released = events.apply("urgency", 3.0, {"urgency": 16, "userid": 0})
    assert released.metadata is not None
    assert "held" not in released.metadata and "reason_pending" not in released.metadata
