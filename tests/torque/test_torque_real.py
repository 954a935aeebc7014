"""The Torque flavour against Debian's Torque-style wrappers over the real Slurm (see
conftest.py): exit codes from the job's own files (the wrappers show none), cancel of a
running and of a queued job, attach (with and without job files), qsub's refusals,
list(), the launchers' node file, and the flavour's detection."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Callable

import pytest

from hpcjobs import (Job, JobAttributes, JobExecutor, JobSpec, JobState, JobStatus,
                     ResourceSpecV1, SubmitException)
from hpcjobs.executors.pbs import TorqueJobExecutor

WAIT = 180.0  # upper bound for any wait (never a timing assertion)


def finished(job: Job) -> JobStatus:
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state.final, status
    return status


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def raw_qsub(wrappers: Path, tmp_path: Path, body: str, *options: str) -> str:
    """A job submitted with the wrapper's qsub by hand (no hpcjobs files)."""
    script = tmp_path / f"raw-{time.monotonic_ns()}.sh"
    script.write_text(f"#!/bin/bash\n#PBS -l walltime=0:05:00\n{body}\n")
    p = subprocess.run([str(wrappers / "qsub"), *options, "-o", f"{script}.out", "-j", "oe",
                        str(script)], capture_output=True, text=True, timeout=60, check=True)
    return p.stdout.strip()


@pytest.mark.parametrize("command, state, code", [
    ("echo out; exit 0", JobState.COMPLETED, 0),
    ("exit 3", JobState.FAILED, 3),
    ("kill -KILL $$", JobState.FAILED, -9),
])
def test_exit_codes_come_from_the_job_files(executor: JobExecutor, tmp_path: Path,
                                            command: str, state: JobState, code: int) -> None:
    out = tmp_path / "out.txt"
    job = Job(JobSpec("/bin/sh", ["-c", command], stdout_path=out))
    executor.submit(job)
    assert job.native_id is not None and job.native_id.isdigit()  # Slurm's bare id
    status = finished(job)
    assert (status.state, status.exit_code) == (state, code), status
    if code == 0:
        assert out.read_text() == "out\n"


@pytest.mark.slow
def test_walltime_kill_ends_failed_saying_walltime(executor: JobExecutor) -> None:
    # (the wrappers' walltimes are whole minutes: 1 s is Slurm's 1 minute, so this test
    # takes one; the wrappers show no exit status: the run's length against the limit
    # is their only sign of it)
    job = Job(JobSpec("/bin/sleep", ["300"],
                      attributes=JobAttributes(duration=timedelta(seconds=1))))
    executor.submit(job)
    status = finished(job)
    assert status.state is JobState.FAILED, status
    assert "walltime" in (status.message or "") and status.exit_code == -15, status


def test_cancel_running_ends_canceled(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["120"]))
    executor.submit(job)
    job.wait(target_states=[JobState.ACTIVE], timeout=WAIT)
    assert job.native_id in executor.list()
    executor.cancel(job)
    status = finished(job)
    assert status.state is JobState.CANCELED, status
    assert "this client" in (status.message or "")


def test_cancel_queued_ends_canceled_never_active(executor: JobExecutor,
                                                  torque_wrappers: Path,
                                                  tmp_path: Path) -> None:
    # a job wanting the whole node waits while our blocker holds a cpu of it
    blocker = raw_qsub(torque_wrappers, tmp_path, "sleep 120")
    try:
        seen: list[JobState] = []
        job = Job(JobSpec("/bin/true", resources=ResourceSpecV1(process_count=16)))
        job.set_job_status_callback(lambda _j, s: seen.append(s.state))
        executor.submit(job)
        time.sleep(3)  # (a status query or two while it waits)
        assert job.status.state is JobState.QUEUED
        executor.cancel(job)
        status = finished(job)
        assert status.state is JobState.CANCELED, status
        assert JobState.ACTIVE not in seen
    finally:
        subprocess.run([str(torque_wrappers / "qdel"), blocker], timeout=60)


def test_attach_with_and_without_job_files(executor: JobExecutor, torque_wrappers: Path,
                                           tmp_path: Path) -> None:
    ours = Job(JobSpec("/bin/sh", ["-c", "sleep 2; exit 5"]))
    executor.submit(ours)
    plain = raw_qsub(torque_wrappers, tmp_path, "sleep 2; exit 4")
    other = JobExecutor.get_instance("torque", config=executor.config)
    try:
        attached, blind = Job(), Job()
        other.attach(attached, ours.native_id or "")
        other.attach(blind, plain)
        status = finished(attached)
        assert (status.state, status.exit_code) == (JobState.FAILED, 5), status
        # the wrappers show no exit status and this job has no files: said, not guessed
        status = finished(blind)
        assert status.state is JobState.FAILED and status.exit_code is None, status
        assert "no exit status" in (status.message or "")
    finally:
        other.close()


def test_qsub_refusal_is_a_submit_exception(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/true", attributes=JobAttributes(queue_name="nosuchq")))
    with pytest.raises(SubmitException, match="invalid partition"):
        executor.submit(job)
    assert job.status.state is JobState.NEW


def test_multiple_launcher_fills_the_node_file(executor: JobExecutor, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    job = Job(JobSpec("/bin/sh", ["-c", 'echo "$PMIX_RANK$OMPI_COMM_WORLD_RANK" ran'],
                      launcher="multiple", stdout_path=out,
                      resources=ResourceSpecV1(process_count=2)))
    executor.submit(job)
    status = finished(job)
    assert status.state is JobState.COMPLETED, status
    assert out.read_text().count("ran") == 2


def test_pbs_on_the_wrappers_is_detected_as_torque(torque_wrappers: Path,
                                                   tmp_path: Path) -> None:
    ex = JobExecutor.get_instance("pbs", config={"bin_directory": torque_wrappers,
                                                 "work_directory": tmp_path})
    try:
        assert isinstance(ex, TorqueJobExecutor) and ex.name == "torque"
    finally:
        ex.close()
