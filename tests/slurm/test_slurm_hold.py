"""Hold and release on the real Slurm (sbatch --hold, scontrol hold/release): a job
submitted held, or held while pending, does not start until released; the status says
held with Slurm's reason; a running job refuses, also when our status lags behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState
from hpcjobs.errors import InvalidJobStateError

from slurm_helpers import WAIT, squeue_state, wait_until

#: how long a held job is watched not starting, 30 s (an eligible job starts within seconds
#: here: batch_sched_delay=0, the node idle between tests)
HELD_WAIT = 30.0


def marker_job(tmp_path: Path, **attributes: object) -> tuple[Job, Path]:
    mark = tmp_path / "started"
    return Job(JobSpec("/bin/sh", ["-c", f'touch "{mark}"'],
                       attributes=JobAttributes(**attributes))), mark  # type: ignore[arg-type]


def held_reason(job: Job) -> object:
    metadata = job.status.metadata or {}
    return metadata.get("held") and metadata.get("reason_pending")


def test_a_job_submitted_held_starts_only_when_released(executor: JobExecutor,
                                                        tmp_path: Path) -> None:
    job, mark = marker_job(tmp_path)
    executor.submit(job, hold=True)
    assert (job.status.metadata or {}).get("held") is True  # at once
    wait_until(lambda: held_reason(job) in ("JobHeldUser", "JobHeldAdmin"),
               "Slurm's hold reason in the status")
    assert job.wait(timeout=HELD_WAIT, target_states=[JobState.ACTIVE]) is None
    assert squeue_state(str(job.native_id)) == "PENDING" and not mark.exists()
    executor.release(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.COMPLETED and mark.exists()


def test_a_pending_job_held_waits_for_its_release(executor: JobExecutor,
                                                  tmp_path: Path) -> None:
    # pending until its begin time; once held, made eligible at once: held, it waits
    job, mark = marker_job(tmp_path, custom_attributes={"slurm.begin": "now+300"})
    executor.submit(job)
    executor.hold(job)
    wait_until(lambda: held_reason(job) in ("JobHeldUser", "JobHeldAdmin"), "the hold")
    subprocess.run(["scontrol", "update", f"JobId={job.native_id}", "StartTime=now"],
                   check=True, capture_output=True, timeout=60)
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
    # our status lagging behind: scontrol takes the hold of a running job; it is undone
    with pytest.raises(InvalidJobStateError, match="slurm state RUNNING"):
        executor._hold_job(job)  # type: ignore[attr-defined]
    job.cancel()
    end = job.wait(timeout=WAIT)
    assert end is not None and end.state is JobState.CANCELED
    with pytest.raises(InvalidJobStateError, match="has ended"):
        executor.release(job)
