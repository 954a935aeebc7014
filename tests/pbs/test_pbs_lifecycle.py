"""The PBS executor's job life cycle against a real OpenPBS: exit codes, signals, the
walltime kill, cancel (queued and running), a job PBS can never run, attach to jobs
submitted with plain qsub (by root and by the non-root pbsuser), list() and metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import (Job, JobAttributes, JobExecutor, JobSpec, JobState, JobStatus,
                     ResourceSpecV1)

from pbs_helpers import WAIT, qstat, qsub, run, running_blocker, wait_until, whole_node


def recorded(job: Job) -> list[JobStatus]:
    """Every status the job's callback receives, in order."""
    seen: list[JobStatus] = []
    job.set_job_status_callback(lambda _job, status: seen.append(status))
    return seen


def finished(job: Job) -> JobStatus:
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state.final, status
    return status


@pytest.mark.parametrize("command, state, code, words", [
    ("exit 0", JobState.COMPLETED, 0, ""),
    ("exit 7", JobState.FAILED, 7, "exited with code 7"),
    ("kill -KILL $$", JobState.FAILED, -9, "SIGKILL"),
])
def test_exit_codes_and_states_in_order(executor: JobExecutor, command: str, state: JobState,
                                        code: int, words: str) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", command]))
    seen = recorded(job)
    executor.submit(job)
    status = finished(job)
    assert (status.state, status.exit_code) == (state, code), status
    assert words in (status.message or "")
    wait_until(lambda: len(seen) == 6, "the final callback")
    assert [s.state for s in seen] == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                                       JobState.STAGE_OUT, JobState.CLEANUP, state]


def test_walltime_kill_ends_failed_saying_walltime(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["120"],
                      attributes=JobAttributes(duration=timedelta(seconds=3))))
    executor.submit(job)
    status = finished(job)
    assert status.state is JobState.FAILED, status
    assert "walltime" in (status.message or ""), status
    assert qstat(job.native_id or "")["Exit_status"] == -29  # PBS's own record agrees


def test_cancel_a_queued_job(executor: JobExecutor) -> None:
    blocker = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(blocker)
    # held by a dependency on a job that is still running: queued (H) until cancelled
    spec = JobSpec("/bin/true", attributes=JobAttributes(
        custom_attributes={"pbs.depend": f"afterok:{blocker.native_id}"}))
    job = Job(spec)
    seen = recorded(job)
    executor.submit(job)
    wait_until(lambda: (job.status.metadata or {}).get("native_state") == "H",
               "qstat's job_state H in the status metadata")
    job.cancel()
    status = finished(job)
    assert status.state is JobState.CANCELED, status
    assert [s.state for s in seen if s.state is not JobState.QUEUED] == [JobState.CANCELED]
    blocker.cancel()
    assert finished(blocker).state is JobState.CANCELED


def test_cancel_a_running_job(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    job.cancel()
    status = finished(job)
    assert status.state is JobState.CANCELED, status
    assert status.exit_code == -15 and "cancelled: by" in (status.message or ""), status


def test_output_is_in_place_while_the_job_runs(executor: JobExecutor, work_dir: Path) -> None:
    # PBS would otherwise spool it on the node and copy it after the job ended, racing
    # the exit code the job leaves in its directory (a wait() could return before it)
    job = Job(JobSpec("/bin/sh", ["-c", "echo started; exec sleep 600"]))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    output = work_dir / job.id / "batch.out"
    wait_until(lambda: output.exists() and output.read_text() == "started\n",
               "the running job's output in its batch.out")
    job.cancel()
    assert finished(job).state is JobState.CANCELED


def test_a_job_that_can_never_run_fails_with_pbs_note(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/true", resources=ResourceSpecV1(process_count=1,
                                                            cpu_cores_per_process=999)))
    executor.submit(job)
    status = finished(job)
    assert status.state is JobState.FAILED, status
    assert "Can Never Run" in (status.message or "") and "ncpus" in (status.message or "")
    # hpcjobs deleted it: PBS no longer keeps it queued
    wait_until(lambda: qstat(job.native_id or "").get("job_state") == "F", "the job deleted")


def test_pending_reason_from_pbs_comment(executor: JobExecutor) -> None:
    blocker = running_blocker(executor)
    job = Job(JobSpec("/bin/true", resources=whole_node()))
    executor.submit(job)
    wait_until(lambda: "Not Running" in str((job.status.metadata or {}).get("reason_pending")),
               "PBS's comment as the pending reason")
    assert job.status.state is JobState.QUEUED
    for j in (job, blocker):
        j.cancel()
        assert finished(j).state is JobState.CANCELED


@pytest.mark.parametrize("user", [None, "pbsuser"])
def test_attach_to_a_job_submitted_with_plain_qsub(pbs_server: None, work_dir: Path,
                                                   user: str | None) -> None:
    native_id = qsub("-l", "walltime=00:01:00", "--", "/bin/sh", "-c", "sleep 2; exit 5",
                     user=user)
    if user is None:
        ex = JobExecutor.get_instance("pbs", config={"work_directory": work_dir})
        try:
            job = Job()
            ex.attach(job, native_id)
            status = finished(job)
        finally:
            ex.close()
        state, code = status.state, status.exit_code
    else:  # the executor runs as that user too, in its own process
        program = ("import json, sys\nfrom datetime import timedelta\nimport hpcjobs\n"
                   "ex = hpcjobs.JobExecutor.get_instance('pbs', config={'work_directory': "
                   "'/tmp/hpcjobs-pbsuser-test'})\njob = hpcjobs.Job()\n"
                   "ex.attach(job, sys.argv[1])\n"
                   "s = job.wait(timeout=timedelta(seconds=170))\n"
                   "print(json.dumps([s.state.name, s.exit_code]))\nex.close()\n")
        p = subprocess.run(["runuser", "-u", user, "--", *as_other_user(), "-c", program,
                            native_id], capture_output=True, text=True, timeout=WAIT,
                           cwd="/tmp", env={**os.environ, "HOME": "/tmp",
                                            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        assert p.returncode == 0, p.stderr
        name, code = json.loads(p.stdout.splitlines()[-1])
        state = JobState[name]
    # no job files: PBS's Exit_status is the only witness
    assert (state, code) == (JobState.FAILED, 5)


def as_other_user() -> list[str]:
    """A Python another user can run with this one's packages (this interpreter may live
    in root's private home): the system's, if it is the same version. Skips when
    pbsuser cannot read this checkout at all (it sits in a private directory)."""
    path = os.pathsep.join(p for p in sys.path if p)
    for python in (sys.executable, "/usr/bin/python3"):
        p = subprocess.run(["runuser", "-u", "pbsuser", "--", python, "-c",
                            "import sys, hpcjobs; print(sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=60, cwd="/tmp",
                           env={**os.environ, "HOME": "/tmp", "PYTHONPATH": path})
        if p.returncode == 0 and p.stdout.strip() == str(sys.version_info[:2]):
            return [python]
    pytest.skip("pbsuser cannot run this checkout's hpcjobs with this Python version "
                "(the checkout or its interpreter is in a directory private to this user)")


def test_list_has_the_submitted_jobs(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    try:
        assert job.native_id in executor.list()
    finally:
        job.cancel()
    finished(job)


def test_running_job_reports_its_nodes(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    wait_until(lambda: "nodes" in (job.status.metadata or {}), "exec_host in the metadata")
    job.cancel()
    finished(job)


def test_jobs_submitted_one_after_another_are_all_followed(pbs_server: None,
                                                           work_dir: Path) -> None:
    # each job ends before the monitor's second look at the files (file_poll_interval
    # apart), the tick after the one that held the status queries for the submit: the
    # monitor then went idle still holding, and the next submit did not wake it
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir,
                                                 "file_poll_interval": 10.0}) as ex:
        for code in (0, 3, 4):
            job = Job(JobSpec("/bin/sh", ["-c", f"exit {code}"]))
            ex.submit(job)
            assert finished(job).exit_code == code


def test_cancel_after_the_job_ended_unseen_is_no_error(pbs_server: None,
                                                       work_dir: Path) -> None:
    # a blind job (attached, no job files) ends between two status queries; the cancel
    # comes in between: qdel says "Job has finished" (exit 35), and the job keeps its
    # own end, as PSI/J's cancel() allows
    native_id = qsub("--", "/bin/sh", "-c", "sleep 2; exit 6")
    slow = {"min_query_interval": 120.0, "blind_query_interval": 300.0,
            "max_query_interval": 300.0}  # (no query between the attach's and the cancel)
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir, **slow}) as ex:
        job = Job()
        ex.attach(job, native_id)
        assert job.wait(timeout=WAIT, target_states=JobState.QUEUED) is not None
        wait_until(lambda: qstat(native_id).get("job_state") == "F", "PBS to finish the job")
        assert not job.status.state.final
        job.cancel()
        status = finished(job)
    assert (status.state, status.exit_code) == (JobState.FAILED, 6), status


def test_processes_per_node_alone_asks_for_them_on_one_node(executor: JobExecutor) -> None:
    # 2 processes on one node (with that node's memory), not 2 chunks placed freely
    res = ResourceSpecV1(processes_per_node=2, memory=2**30)
    job = Job(JobSpec("/bin/true", resources=res))
    executor.submit(job)
    assert finished(job).state is JobState.COMPLETED
    asked = qstat(job.native_id or "")["Resource_List"]
    assert (asked["select"], asked["nodect"]) == ("1:ncpus=2:mpiprocs=2:mem=1048576kb", 1)
