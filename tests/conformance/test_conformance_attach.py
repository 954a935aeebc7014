"""Conformance: attach by native id — from the same executor, from a new executor, and
from a new process after the submitting process was killed with SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest

from hpcjobs import InvalidJobException, Job, JobExecutor, JobSpec, JobState, JobStatus

WaitFinal = Callable[[Job], JobStatus]
TIMEOUT = 120.0


@pytest.mark.requires("attach", "cancel")
def test_attach_from_the_same_executor(executor: JobExecutor, wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    assert job.native_id is not None
    twin = Job()
    executor.attach(twin, job.native_id)
    assert twin.native_id == job.native_id
    assert twin.wait(timeout=TIMEOUT, target_states=JobState.QUEUED) is not None
    job.cancel()
    assert wait_final(job).state is JobState.CANCELED
    assert wait_final(twin).state is JobState.CANCELED


@pytest.mark.requires("attach")
def test_attach_from_a_new_executor(backend: ModuleType, executor: JobExecutor, tmp_path: Path,
                                   wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/sleep", ["1"]))
    executor.submit(job)
    assert job.native_id is not None
    other = backend.make_executor(tmp_path / "work")
    try:
        twin = Job()
        other.attach(twin, job.native_id)
        assert twin.native_id == job.native_id
        assert wait_final(twin).state is JobState.COMPLETED
    finally:
        other.close()
    assert wait_final(job).state is JobState.COMPLETED


@pytest.mark.requires("attach", "exit_code")
def test_attach_to_an_ended_job_reports_how_it_ended(backend: ModuleType, executor: JobExecutor,
                                                    tmp_path: Path, wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/false"))
    executor.submit(job)
    assert wait_final(job).exit_code == 1
    assert job.native_id is not None
    other = backend.make_executor(tmp_path / "work")
    try:
        twin = Job()
        other.attach(twin, job.native_id)
        status = wait_final(twin)
    finally:
        other.close()
    assert status.state is JobState.FAILED, status
    assert status.exit_code == 1


@pytest.mark.requires("attach")
def test_attach_to_an_unknown_id_fails(executor: JobExecutor, wait_final: WaitFinal) -> None:
    job = Job()
    try:
        executor.attach(job, "999999999")
    except InvalidJobException:
        return
    status = wait_final(job)
    assert status.state is JobState.FAILED, status
    assert status.message


def test_attach_needs_a_new_job(executor: JobExecutor, wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/true"))
    executor.submit(job)
    assert job.native_id is not None
    with pytest.raises(InvalidJobException):
        executor.attach(job, job.native_id)
    wait_final(job)


_SUBMIT_THEN_DIE = textwrap.dedent("""
    import importlib.util, os, signal, sys
    from pathlib import Path
    import hpcjobs as psij

    spec = importlib.util.spec_from_file_location("provider", sys.argv[1])
    provider = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provider)
    ex = provider.make_executor(Path(sys.argv[2]))
    ids = []
    for script in sys.argv[3:]:
        job = psij.Job(psij.JobSpec("/bin/sh", ["-c", script]))
        ex.submit(job)
        ids.append(job.native_id)
    print(" ".join(ids), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.requires("attach_after_client_death", "executes", "exit_code")
def test_attach_after_the_submitter_was_killed(backend: ModuleType, tmp_path: Path,
                                              wait_final: WaitFinal) -> None:
    # one job still running when we attach, one most likely over already
    scripts = ["sleep 3; exit 7", "exit 4"]
    p = subprocess.run([sys.executable, "-c", _SUBMIT_THEN_DIE, backend.__file__,
                        str(tmp_path / "work"), *scripts],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == -9, p.stderr
    native_ids = p.stdout.split()
    assert len(native_ids) == 2, (p.stdout, p.stderr)
    ex = backend.make_executor(tmp_path / "work")
    try:
        jobs = [Job() for _ in native_ids]
        for job, native_id in zip(jobs, native_ids):
            ex.attach(job, native_id)
        statuses = [wait_final(job) for job in jobs]
    finally:
        ex.close()
    assert [(s.state, s.exit_code) for s in statuses] == [(JobState.FAILED, 7),
                                                         (JobState.FAILED, 4)], statuses
