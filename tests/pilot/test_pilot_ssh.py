"""The pilot executor over ``ssh://``: the pilot's batch job submitted through the test
login node (tests/ssh_login.py, a real sshd on a loopback port) to the real Slurm or
OpenPBS behind it, as that node's user ``hpcjobs-remote`` (not the user running the
tests), with the real flux-core inside; its URI read back over ssh, and the jobs in it
run through the Flux executor over the same ssh connection.

What it exercises: the pilot's node is the login node itself (one machine), so its
Flux socket is reached by ``flux relay`` run on the login node. A pilot on a node behind
the login node is exercised by naming the node otherwise (``PilotConfig.node_name``: the
test node of tests/ssh_login.py, this machine again under another name): the client
then goes on from the login node by a second, real ssh login, as it would to a compute
node; what stays untested is a node that is another machine (its own sshd, /tmp and
name resolution).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest
from pilot_support import CORES, WAIT, flux_problem, pbs_command
from ssh_login import IN_CI, Login, find_login, find_node, relays_through

from hpcjobs import Job, JobExecutor, JobSpec, JobState
from hpcjobs.errors import BulkSubmitException
from hpcjobs.executors.pilot import PilotJobExecutor
from hpcjobs.remote import SshConnection
from hpcjobs.remote.ops import Op, ReadFile, Result, Run

pytestmark = pytest.mark.remote

BACKENDS = [pytest.param("slurm", marks=pytest.mark.slurm),
            pytest.param("pbs", marks=pytest.mark.pbs)]
#: the pilot's id -> the command that cancels it from outside (as root, here)
CANCEL = {"slurm": ["scancel"], "pbs": [pbs_command("qdel")]}
#: prints the user the job runs as, then exits with $1
WHO = 'id -un; exit "$1"'


@pytest.fixture(scope="module")
def login() -> Login:
    return find_login()


@pytest.fixture(scope="module")
def remote_flux(login: Login) -> str:
    """The flux command as the login node's user runs it (this machine's: the login
    node is this machine; not on that user's PATH, so given as PilotConfig.flux)."""
    problem = flux_problem()
    if problem:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: pilot tests must run, not skip)")
        pytest.skip(problem)
    flux = shutil.which("flux")
    assert flux is not None
    return flux


@pytest.fixture
def remote_dir(login: Login) -> Iterator[str]:
    """A fresh directory, relative to the remote user's home, removed afterwards."""
    name = f"hpcjobs-pilot-test-{uuid.uuid4().hex[:8]}"
    yield name
    with login.connection() as conn:
        conn.run(["sh", "-c", 'rm -rf "$HOME/$1"', "sh", name])


def require(backend: str, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("slurm_cluster" if backend == "slurm" else "pbs_server")


def config(login: Login, flux: str, work: str, backend: str, **more: Any) -> dict[str, Any]:
    return {"backend": backend, "cores_per_node": CORES, "walltime": timedelta(minutes=30),
            "ssh_options": ["-F", str(login.config)], "flux": flux,
            "work_directory": f"{work}/pilot", "backend_config": {"work_directory": f"{work}/{backend}"},
            **more}


MakePilot = Callable[..., PilotJobExecutor]


@pytest.fixture
def make_pilot(login: Login, remote_flux: str, remote_dir: str) -> Iterator[MakePilot]:
    """Makes pilot executors over ssh; closes them afterwards (a detached pilot is
    cancelled)."""
    made: list[tuple[PilotJobExecutor, str]] = []

    def make(backend: str, **more: Any) -> PilotJobExecutor:
        ex = JobExecutor.get_instance("pilot", url=f"ssh://{login.host}", config=config(
            login, remote_flux, remote_dir, backend, **more))
        assert isinstance(ex, PilotJobExecutor)
        made.append((ex, backend))
        return ex

    yield make
    for ex, backend in made:
        ex.close()
        if not ex.pilot_status.state.final and ex.pilot_native_id:
            subprocess.run([*CANCEL[backend], ex.pilot_native_id], timeout=60, check=False)


def home(login: Login) -> str:
    return os.path.expanduser(f"~{login.user}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_jobs_run_in_a_pilot_over_ssh(backend: str, request: pytest.FixtureRequest,
                                      make_pilot: MakePilot, login: Login,
                                      remote_dir: str) -> None:
    """Jobs submitted at once wait for the pilot, then run in it as the remote user with
    their true exit codes; one login carries it all; close() ends the pilot's batch job
    COMPLETED."""
    require(backend, request)
    ex = make_pilot(backend)
    assert str(ex.work_directory) == f"{home(login)}/{remote_dir}/pilot"
    outs = [f"{home(login)}/{remote_dir}/out-{code}" for code in (0, 4)]
    jobs = [Job(JobSpec("/bin/sh", ["-c", WHO, "sh", str(code)], stdout_path=out))
            for code, out in zip((0, 4), outs)]
    for job in jobs:
        ex.submit(job)
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 4)]
    assert all(job.native_id and job.native_id.startswith("ƒ") for job in jobs)
    connection = ex.ssh_connection
    assert connection is not None and connection.logins == 1  # batch job and Flux: one
    read = connection.batch([ReadFile(out) for out in outs])
    assert [r.stdout for r in read] == [f"{login.user}\n".encode()] * 2  # ran there, as them
    ex.close()
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancelled_from_outside(backend: str, request: pytest.FixtureRequest,
                                make_pilot: MakePilot) -> None:
    """The pilot cancelled with scancel / qdel while a job runs: the job ends FAILED
    saying the pilot was cancelled from outside; submitting then is refused."""
    require(backend, request)
    ex = make_pilot(backend)
    job = Job(JobSpec("/bin/sleep", ["300"]))
    ex.submit(job)
    job.wait(timeout=WAIT, target_states=JobState.ACTIVE)
    subprocess.run([*CANCEL[backend], str(ex.pilot_native_id)], check=True, timeout=60)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    assert status.message is not None and status.message.startswith("the pilot"), status
    # (PBS may report the end later than the pilot's grace, under load: then the
    # message says what is known, the instance gone and the batch state so far)
    assert "cancelled from outside hpcjobs" in status.message \
        or "ended by its batch scheduler" in status.message \
        or "does not answer any more" in status.message, status


def test_the_connection_killed_while_jobs_run(request: pytest.FixtureRequest,
                                              make_pilot: MakePilot) -> None:
    """The ssh master killed (and with it every session through it: the Flux relay,
    a round trip in flight) while jobs run in the pilot: it logs in again, and the jobs
    end in their true state with their exit codes, not FAILED for the lost link."""
    require("slurm", request)
    ex = make_pilot("slurm")
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 6; exit {code}"])) for code in (0, 6)]
    for job in jobs:
        ex.submit(job)
    for job in jobs:
        job.wait(timeout=WAIT, target_states=JobState.ACTIVE)
    connection = ex.ssh_connection
    assert connection is not None and connection.master_pid is not None
    os.kill(connection.master_pid, signal.SIGKILL)
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 6)], statuses
    assert connection.logins >= 2
    ex.close()
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


def test_broker_killed(request: pytest.FixtureRequest, make_pilot: MakePilot, login: Login,
                       remote_flux: str) -> None:
    """The pilot's Flux broker killed with SIGKILL (by the remote user, over ssh) while
    a job runs: the job ends FAILED saying the pilot ended; the pilot's state was asked
    over ssh (flux uptime there), nothing hangs."""
    require("slurm", request)
    ex = make_pilot("slurm")
    job = Job(JobSpec("/bin/sleep", ["300"]))
    ex.submit(job)
    job.wait(timeout=WAIT, target_states=JobState.ACTIVE)
    kill = ('FLUX_URI=$(head -n 1 "$1"/pilot-*/uri) && export FLUX_URI && '
            'kill -KILL "$("$2" getattr broker.pid)"')
    with login.connection() as conn:
        conn.run(["sh", "-c", kill, "sh", str(ex.work_directory), remote_flux], check=True)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    assert status.message is not None and status.message.startswith(
        f"the pilot (slurm job {ex.pilot_native_id}) ended"), status.message


class SubmitRoundTrips:
    """Counts the round trips of the real connection that carry ``flux job submit``s
    (the pilot's own polls go through it too, some four a second), and runs
    ``at_start(n)`` as the n-th begins. Not a double: every round trip still goes."""

    def __init__(self, connection: SshConnection,
                 at_start: Callable[[int], None] = lambda n: None) -> None:
        self.connection, self.at_start, self.count = connection, at_start, 0

    def __enter__(self) -> "SubmitRoundTrips":
        real = self.connection.batch

        def batch(ops: Sequence[Op], **options: Any) -> list[Result]:
            if any(isinstance(op, Run) and "submit" in op.argv for op in ops):
                self.count += 1
                self.at_start(self.count)
            return real(ops, **options)

        self.connection.batch = batch  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.connection.batch  # (the class's method again)


def running_pilot(make_pilot: MakePilot) -> tuple[PilotJobExecutor, SshConnection]:
    """A Slurm pilot over ssh that has run a job (its Flux is reached), its connection."""
    ex = make_pilot("slurm")
    first = Job(JobSpec("/bin/true"))
    ex.submit(first)
    status = first.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.COMPLETED, status
    assert ex.ssh_connection is not None
    return ex, ex.ssh_connection


def test_a_burst_to_a_running_pilot_is_a_few_round_trips(
        request: pytest.FixtureRequest, make_pilot: MakePilot) -> None:
    """submit_many once the pilot runs: 31 jobs go in 5 round trips of ``flux job
    submit``s (1, 2, 4, 8, 16), not 31; the one Flux refuses fails alone (NEW again,
    Flux's reason), the others end with their exit codes."""
    require("slurm", request)
    ex, connection = running_pilot(make_pilot)
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {k % 4}"])) for k in range(30)]
    refused = Job(JobSpec("/bin/true"))
    refused.spec.attributes.queue_name = "no-such-queue"  # type: ignore[union-attr]
    with SubmitRoundTrips(connection) as trips, pytest.raises(BulkSubmitException) as e:
        ex.submit_many([*jobs[:3], refused, *jobs[3:]])
    assert trips.count == 5
    assert [job for job, _why in e.value.failures] == [refused]
    assert "no-such-queue" in str(e.value.failures[0][1])
    assert refused.status.state is JobState.NEW and refused.native_id is None
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0) if k % 4 == 0 else (JobState.FAILED, k % 4)
        for k in range(30)]


def test_the_connection_killed_during_a_burst_loses_no_job(
        request: pytest.FixtureRequest, make_pilot: MakePilot, login: Login,
        remote_flux: str) -> None:
    """The ssh master killed while the 5th round trip of a 40-job burst is under way:
    the jobs of the round trips before and after it (on a new login) run and end with
    their exit codes; those whose fate the broken round trip did not tell fail in
    BulkSubmitException, NEW again, saying they may have been submitted or not. Flux
    has each job once at most: none submitted twice, none it runs unknown here but those."""
    require("slurm", request)
    ex, connection = running_pilot(make_pilot)
    master = connection.master_pid
    assert master is not None

    def kill_in_the_fifth(n: int) -> None:
        if n == 5:  # (16 jobs, some 1 s of 'flux job submit's there: killed in flight)
            threading.Timer(0.3, os.kill, (master, signal.SIGKILL)).start()

    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {k % 3}"])) for k in range(40)]
    unknown: list[Job] = []
    with SubmitRoundTrips(connection, kill_in_the_fifth) as trips:
        try:
            ex.submit_many(jobs)
        except BulkSubmitException as e:
            unknown = [job for job, _why in e.failures]
            assert all("may have been submitted or not" in str(why) for _job, why in e.failures)
    assert trips.count == 6 and connection.logins >= 2
    assert all(job.status.state is JobState.NEW and job.native_id is None for job in unknown)
    went = [(k, job) for k, job in enumerate(jobs) if job not in unknown]
    statuses = [job.wait(timeout=WAIT) for _k, job in went]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0) if k % 3 == 0 else (JobState.FAILED, k % 3) for k, _ in went]
    listed = ('FLUX_URI=$(head -n 1 "$1"/pilot-*/uri) && export FLUX_URI && '
              '"$2" jobs -a -n -o "{id.f58}"')
    with login.connection() as conn:
        in_flux = conn.run(["sh", "-c", listed, "sh", str(ex.work_directory), remote_flux],
                           check=True).text.split()
    assert len(in_flux) == len(set(in_flux))
    ours = {job.native_id for _k, job in went}
    assert ours <= set(in_flux)
    # the first job, ours, and at most one each for those whose fate is unknown
    assert len(ours) + 1 <= len(in_flux) <= len(ours) + 1 + len(unknown), (in_flux, unknown)


_CLIENT = textwrap.dedent("""
    import json, sys, datetime
    from hpcjobs import Job, JobExecutor, JobSpec, JobState
    url, config = json.loads(sys.argv[1])
    config["walltime"] = datetime.timedelta(minutes=30)
    ex = JobExecutor.get_instance("pilot", url=url, config=config)
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep {t}; exit {code}"]))
            for t, code in ((8, 0), (8, 5), (300, 0))]
    for job in jobs:
        ex.submit(job)
    for job in jobs:
        job.wait(target_states=JobState.ACTIVE)
    ex.close()  # on_close='detach': jobs and pilot go on
    print(ex.pilot_native_id, *(job.native_id for job in jobs), flush=True)
""")


def test_a_fresh_process_attaches_over_ssh(request: pytest.FixtureRequest, login: Login,
                                           remote_flux: str, remote_dir: str,
                                           make_pilot: MakePilot) -> None:
    """A client starts a Slurm pilot over ssh and three jobs, and closes with
    on_close='detach'; a fresh process attaches to the pilot by its Slurm id and to the
    jobs by theirs, over ssh: two end with their true exit codes, and close() (cancel)
    cancels the third and ends the pilot COMPLETED."""
    require("slurm", request)
    settings = config(login, remote_flux, remote_dir, "slurm", on_close="detach")
    del settings["walltime"]
    import json
    client = subprocess.run([sys.executable, "-c", _CLIENT,
                             json.dumps([f"ssh://{login.host}", settings])],
                            capture_output=True, text=True, timeout=WAIT)
    assert client.returncode == 0, client.stderr[-3000:]
    pilot_id, *job_ids = client.stdout.split()
    ex = make_pilot("slurm", attach=pilot_id)
    assert ex.pilot_native_id == pilot_id
    jobs = [Job() for _ in job_ids]
    for job, native_id in zip(jobs, job_ids):
        ex.attach(job, native_id)
    statuses = [job.wait(timeout=WAIT) for job in jobs[:2]]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 5)]
    assert jobs[2].status.state is JobState.ACTIVE, jobs[2].status
    ex.close()
    assert jobs[2].status.state is JobState.CANCELED, jobs[2].status
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


def test_no_flux_there_is_refused_before_anything_is_submitted(
        request: pytest.FixtureRequest, login: Login, remote_flux: str, remote_dir: str) -> None:
    """The login node's user has no flux on their PATH: without PilotConfig.flux, a
    clear FileNotFoundError, and no batch job."""
    require("slurm", request)
    settings = config(login, remote_flux, remote_dir, "slurm")
    del settings["flux"]
    with pytest.raises(FileNotFoundError, match="has no 'flux' command.*PilotConfig.flux"):
        JobExecutor.get_instance("pilot", url=f"ssh://{login.host}", config=settings)
    with login.connection() as conn:
        listed = conn.run(["sh", "-c", 'ls "$HOME/$1/pilot"', "sh", remote_dir]).text.split()
    assert not [name for name in listed if name.startswith("slurm-")], listed


@pytest.mark.parametrize("url, message", [
    ("ssh://login/tmp/socket", "no path"),
    ("http://login", "cannot serve url"),
])
def test_a_url_it_cannot_serve_is_refused(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JobExecutor.get_instance("pilot", url=url, config={"backend": "slurm"})


def test_a_pilot_on_a_node_behind_the_login_node(request: pytest.FixtureRequest,
                                                 make_pilot: MakePilot, login: Login,
                                                 remote_dir: str) -> None:
    """The pilot's node is named otherwise than the login node (PilotConfig.node_name):
    its Flux is reached from the login node by ssh to that name (flux-core's connector
    for submits and for stopping it, ``ssh node flux relay`` for events); jobs run with
    their exit codes, a relay through the node is seen, close() ends the pilot
    COMPLETED (asked to stop through the node)."""
    require("slurm", request)
    node = find_node(login)
    ex = make_pilot("slurm", node_name=node)
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 2; exit {code}"])) for code in (0, 3)]
    for job in jobs:
        ex.submit(job)
    jobs[0].wait(timeout=WAIT, target_states=JobState.ACTIVE)
    assert relays_through(node, login.user), "no relay session through the node"
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 3)], statuses
    ex.close()
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


def test_a_node_the_login_node_cannot_reach(request: pytest.FixtureRequest,
                                            make_pilot: MakePilot) -> None:
    """The pilot's node named by a name the login node cannot reach: the pilot is
    cancelled and its waiting job ends FAILED saying its Flux cannot be reached, no hang."""
    require("slurm", request)
    ex = make_pilot("slurm", node_name="no-such-node.invalid")
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    assert "cannot be reached" in (status.message or "") \
        and "no-such-node.invalid" in (status.message or ""), status.message
    deadline = time.monotonic() + WAIT  # (a guard: the cancel reaches the scheduler)
    while not ex.pilot_status.state.final and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ex.pilot_status.state is JobState.CANCELED, ex.pilot_status


def test_a_node_name_ssh_could_misread_is_refused() -> None:
    with pytest.raises(ValueError, match="PilotConfig.node_name"):
        JobExecutor.get_instance("pilot", url="ssh://login",
                                 config={"backend": "slurm", "node_name": "-oProxyCommand=id"})
