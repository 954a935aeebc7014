"""The pilot executor on the real Slurm, with the real flux-core inside the pilot: one
Slurm job on this machine's single node running ``flux start`` (one broker). What it
exercises: the pilot's life (start, jobs queued before it runs, close), its faults
(cancelled with scancel, its broker killed, the client gone and a fresh one attached),
and the refusal of jobs that do not fit. Multi-node pilots are not exercised here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from pilot_support import WAIT, pilot_config

from hpcjobs import InvalidJobException, SubmitException, Job, JobAttributes, JobExecutor, JobSpec, JobState
from hpcjobs import ResourceSpecV1
from hpcjobs.executors.pilot import PilotJobExecutor

pytestmark = pytest.mark.slurm

MakePilot = Callable[..., PilotJobExecutor]


def flux_env(ex: PilotJobExecutor) -> dict[str, str]:
    """The environment of a ``flux`` command run against the pilot's instance."""
    uri_file = next(Path(ex.work_directory).glob("pilot-*/uri"))
    return {**os.environ, "FLUX_URI": uri_file.read_text().split("\n")[0]}


def running(ex: PilotJobExecutor, count: int) -> list[Job]:
    """``count`` jobs of ``sleep 300`` in the pilot, each seen ACTIVE (Flux sees the
    machine's real cores, two here: no more than that run at once)."""
    jobs = [Job(JobSpec("/bin/sleep", ["300"])) for _ in range(count)]
    for job in jobs:
        ex.submit(job)
    for job in jobs:
        job.wait(timeout=WAIT, target_states=JobState.ACTIVE)
    return jobs


def test_jobs_wait_for_the_pilot_then_run(make_pilot: MakePilot) -> None:
    """Jobs submitted before the pilot runs are QUEUED waiting for it, then run in it
    with their true exit codes; close() ends the pilot's batch job as COMPLETED."""
    ex = make_pilot()
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {code}"])) for code in (0, 3)]
    queued = []
    for job in jobs:
        ex.submit(job)
        queued.append(job.status)
    assert all(s.state is JobState.QUEUED for s in queued)
    # the pilot cannot be running yet in the same instant on a loaded machine; when it
    # already is, the job went straight to Flux (its Flux metadata instead)
    assert any((s.metadata or {}).get("reason_pending") == "waiting for the pilot"
               or "native_state" in (s.metadata or {}) for s in queued)
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 3)]
    assert all(job.native_id and job.native_id.startswith("ƒ") for job in jobs)
    ex.close()
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


def test_a_job_that_does_not_fit_is_refused(make_pilot: MakePilot) -> None:
    """More nodes than the pilot has, or a duration beyond its walltime: refused at
    submit, nothing sent; in a submit_many, before any of its jobs is taken."""
    ex = make_pilot()
    too_wide = Job(JobSpec("/bin/true", resources=ResourceSpecV1(node_count=2)))
    with pytest.raises(InvalidJobException, match="node_count.*pilot has 1"):
        ex.submit(too_wide)
    too_long = Job(JobSpec("/bin/true", attributes=JobAttributes(duration=timedelta(hours=1))))
    with pytest.raises(InvalidJobException, match="longer than the pilot's walltime"):
        ex.submit(too_long)
    assert too_wide.status.state is JobState.NEW and too_long.status.state is JobState.NEW
    fits = Job(JobSpec("/bin/true"))
    with pytest.raises(InvalidJobException, match="node_count.*pilot has 1"):
        ex.submit_many([fits, too_wide])
    assert fits.status.state is JobState.NEW and fits.executor is None


def test_cancelled_from_outside(make_pilot: MakePilot) -> None:
    """scancel of the pilot while jobs run: each ends FAILED saying the pilot was
    cancelled from outside, none reads COMPLETED or CANCELED by the user."""
    ex = make_pilot()
    jobs = running(ex, 2)
    subprocess.run(["scancel", str(ex.pilot_native_id)], check=True, timeout=60)
    for job in jobs:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.FAILED, status
        assert status.message is not None and "cancelled from outside hpcjobs" in status.message
    with pytest.raises(SubmitException, match="the pilot has ended"):
        ex.submit(Job(JobSpec("/bin/true")))


def test_broker_killed(make_pilot: MakePilot) -> None:
    """The pilot's Flux broker killed with SIGKILL while jobs run: every job ends
    FAILED saying the pilot ended, nothing hangs."""
    ex = make_pilot()
    jobs = running(ex, 2)
    pid = subprocess.run(["flux", "getattr", "broker.pid"], env=flux_env(ex), check=True,
                         capture_output=True, text=True, timeout=60).stdout
    os.kill(int(pid), signal.SIGKILL)
    for job in jobs:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.FAILED, status
        assert status.message is not None and status.message.startswith(
            f"the pilot (slurm job {ex.pilot_native_id}) ended"), status.message


_CLIENT = textwrap.dedent("""
    import sys
    from hpcjobs import Job, JobExecutor, JobSpec, JobState
    ex = JobExecutor.get_instance("pilot", config=CONFIG)
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 8; exit {code}"])) for code in (0, 5)]
    for job in jobs:
        ex.submit(job)
    for job in jobs:
        job.wait(target_states=JobState.ACTIVE)
    print(ex.pilot_native_id, *(job.native_id for job in jobs), flush=True)
    sys.stdin.read()  # killed here
""")


def test_a_fresh_process_attaches(make_pilot: MakePilot, tmp_path: Path) -> None:
    """A client starts a pilot and two jobs, then is killed (SIGKILL); a fresh process
    attaches to the pilot by its Slurm job id and to the jobs by theirs: they end with
    their true exit codes, and closing it ends the pilot."""
    config = pilot_config(tmp_path, on_close="detach")
    code = _CLIENT.replace("CONFIG", repr(config).replace("PosixPath", "__import__('pathlib').Path")
                           .replace("datetime.timedelta", "__import__('datetime').timedelta"))
    client = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None
        pilot_id, *job_ids = client.stdout.readline().split()
    finally:
        client.kill()
        client.wait()
    ex = make_pilot(attach=pilot_id)
    assert ex.pilot_native_id == pilot_id
    jobs = [Job() for _ in job_ids]
    for job, native_id in zip(jobs, job_ids):
        ex.attach(job, native_id)
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 5)]
    ex.close()
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


def test_close_cancels_or_waits(make_pilot: MakePilot) -> None:
    """close() with on_close='cancel' cancels the jobs (CANCELED), with 'wait' lets them
    end by themselves (their exit code); either way the pilot then ends."""
    cancelling = make_pilot()
    waiting = make_pilot(on_close="wait")
    cancelled = running(cancelling, 1)[0]
    awaited = Job(JobSpec("/bin/sh", ["-c", "sleep 3; exit 7"]))
    waiting.submit(awaited)
    awaited.wait(timeout=WAIT, target_states=JobState.ACTIVE)
    cancelling.close()
    waiting.close()
    assert cancelled.status.state is JobState.CANCELED, cancelled.status
    assert (awaited.status.state, awaited.status.exit_code) == (JobState.FAILED, 7)
    for ex in (cancelling, waiting):
        assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


@pytest.mark.slow
def test_walltime_reached(make_pilot: MakePilot) -> None:
    """The pilot's walltime (1 minute: Slurm's least, enforced 77-87 s after the start)
    runs out while a job runs in it that had waited for cores: it ends FAILED saying
    the pilot ended and why, nothing hangs. The two that held the cores end by their
    own time limit (55 s), which every job in a pilot has shorter than the pilot's."""
    ex = make_pilot(walltime=timedelta(minutes=1))
    limit = JobAttributes(duration=timedelta(seconds=55))
    first = [Job(JobSpec("/bin/sleep", ["300"], attributes=limit)) for _ in range(2)]
    last = Job(JobSpec("/bin/sleep", ["300"], attributes=limit))
    for job in [*first, last]:
        ex.submit(job)
    for job in first:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.FAILED, status
        assert status.message is not None and status.message.startswith(
            "walltime exceeded: the job's time limit expired"), status
    status = last.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    assert status.message is not None and status.message.startswith(
        ("the pilot", f"walltime exceeded: the pilot (slurm job {ex.pilot_native_id})")), status
    assert "walltime" in status.message, status
