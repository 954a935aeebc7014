"""Hold and release on the real OpenPBS (qsub -h, qhold, qrls): a job submitted held,
or held while queued, does not start until released; the status says held with PBS's
words; a running job refuses, also when our status lags behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState
from hpcjobs.errors import InvalidJobStateError

from pbs_helpers import WAIT, qstat, running_blocker, wait_until

#: how long a held job is watched not starting, 30 s (PBS runs an eligible job at once when
#: its node is free: qsub, qrls and a job's end start a scheduling cycle)
HELD_WAIT = 30.0


def marker_job(tmp_path: Path) -> tuple[Job, Path]:
    mark = tmp_path / "started"
    return Job(JobSpec("/bin/sh", ["-c", f'touch "{mark}"'])), mark


def held(job: Job) -> bool:
    metadata = job.status.metadata or {}
    return metadata.get("held") is True and metadata.get("native_state") == "H" \
        and bool(metadata.get("reason_pending"))


def test_a_job_submitted_held_starts_only_when_released(executor: JobExecutor,
                                                        tmp_path: Path) -> None:
    job, mark = marker_job(tmp_path)
    executor.submit(job, hold=True)
    assert (job.status.metadata or {}).get("held") is True  # at once
    wait_until(lambda: held(job), "PBS's hold in the status")
    assert (job.status.metadata or {})["reason_pending"] == "held (Hold_Types u)"
    assert job.wait(timeout=HELD_WAIT, target_states=[JobState.ACTIVE]) is None
    assert qstat(str(job.native_id))["job_state"] == "H" and not mark.exists()
    executor.release(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.COMPLETED and mark.exists()


def test_a_queued_job_held_waits_for_its_release(executor: JobExecutor,
                                                 tmp_path: Path) -> None:
    blocker = running_blocker(executor)
    job, mark = marker_job(tmp_path)
    executor.submit(job)
    executor.hold(job)
    wait_until(lambda: held(job), "PBS's hold in the status")
    assert "held by" in str((job.status.metadata or {})["reason_pending"])  # qhold's comment
    blocker.cancel()  # the node is free: a job not held would start now
    assert blocker.wait(timeout=WAIT) is not None
    assert job.wait(timeout=HELD_WAIT, target_states=[JobState.ACTIVE]) is None
    assert not mark.exists()
    executor.release(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.COMPLETED and mark.exists()


def test_a_running_job_refuses_hold(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["300"]))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    with pytest.raises(InvalidJobStateError, match="has started"):
        executor.hold(job)
    with pytest.raises(InvalidJobStateError, match="pbs state R"):
        executor._hold_job(job)  # type: ignore[attr-defined]
    job.cancel()
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.CANCELED


def test_account_and_project_reach_pbs_as_two_fields(executor: JobExecutor) -> None:
    """-A and -P (docs/decisions.md): the server keeps both; held, so it never runs."""
    job = Job(JobSpec("/bin/true", attributes=JobAttributes(account="acct-1",
                                                            project_name="proj-1")))
    executor.submit(job, hold=True)
    record = qstat(str(job.native_id))
    assert (record["Account_Name"], record["project"]) == ("acct-1", "proj-1")
    job.cancel()
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.CANCELED
