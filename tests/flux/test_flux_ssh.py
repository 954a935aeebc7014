"""The Flux executor over ssh: ``url='ssh://login/<socket>'`` drives a real Flux instance
owned by the test login node's user (remote_flux.py), through the real sshd of the
login node (tests/ssh_login.py). The jobs run as that user, not as this one: the
tests read it in their output. Faults: the ssh sessions killed while jobs run, an
unreachable host, a refused login, a changed host key, no flux and no instance there.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import remote_flux
from real_flux import IN_CI, require_flux
from ssh_login import Login, find_login, find_node, relays_through

from hpcjobs import Job, JobExecutor, JobSpec, JobState, JobStatus, ResourceSpecV1
from hpcjobs.errors import BulkSubmitException, InvalidJobException, SubmitException
from hpcjobs.remote import HostKeyError, HostUnreachableError, LoginError

#: generous bound for a job or a connection (a deadline guard, never a timing assertion)
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def login() -> Login:
    return find_login()


@pytest.fixture(scope="module")
def instance(login: Login) -> Iterator[remote_flux.RemoteFluxInstance]:
    require_flux()
    why = remote_flux.unavailable()
    if why is not None:
        if IN_CI:
            pytest.fail(f"{why} (CI=true: the Flux tests over ssh must run)")
        pytest.skip(why)
    flux_instance = remote_flux.RemoteFluxInstance(login.user)
    yield flux_instance
    flux_instance.stop()


def options(login: Login, config: Path | None = None, **more: Any) -> dict[str, Any]:
    return {"ssh_options": ["-F", str(config or login.config)], "connect_timeout": 10, **more}


def url(login: Login, instance: remote_flux.RemoteFluxInstance, port: int | None = None) -> str:
    return f"ssh://{login.host}{f':{port}' if port else ''}{instance.socket}"


@pytest.fixture
def executor(login: Login, instance: remote_flux.RemoteFluxInstance) -> Iterator[JobExecutor]:
    ex = JobExecutor.get_instance("flux", url=url(login, instance), config=options(login))
    yield ex
    ex.close()


def wait(job: Job) -> JobStatus:
    status = job.wait(timeout=TIMEOUT)
    assert status is not None and status.final, f"job {job.native_id} did not end: {job.status}"
    return status


def test_a_job_runs_as_the_remote_user_in_the_remote_home(
        executor: JobExecutor, instance: remote_flux.RemoteFluxInstance, login: Login) -> None:
    out = instance.shared_dir() / "out"
    states: list[JobState] = []
    job = Job(JobSpec("/bin/sh", ["-c", 'id -un; pwd; printf "%s\\n" "$HOME"'],
                      stdout_path=out))
    job.set_job_status_callback(lambda j, s: states.append(s.state))
    executor.submit(job)
    status = wait(job)
    assert status.state is JobState.COMPLETED and status.exit_code == 0, status
    home = os.path.expanduser(f"~{login.user}")
    assert out.read_text() == f"{login.user}\n{home}\n{home}\n"
    assert states[0] is JobState.QUEUED and states[-1] is JobState.COMPLETED
    assert JobState.ACTIVE in states


def test_exit_codes_list_and_cancel(executor: JobExecutor) -> None:
    failing = Job(JobSpec("/bin/sh", ["-c", "exit 3"]))
    sleeper = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(failing)
    executor.submit(sleeper)
    assert sleeper.native_id in executor.list()
    executor.cancel(sleeper)
    assert wait(sleeper).state is JobState.CANCELED
    status = wait(failing)
    assert status.state is JobState.FAILED and status.exit_code == 3


def test_a_job_flux_refuses_is_an_invalid_job(executor: JobExecutor) -> None:
    job = Job(JobSpec("/bin/true"))
    job.spec.attributes.queue_name = "no-such-queue"
    with pytest.raises(InvalidJobException, match="no-such-queue"):
        executor.submit(job)


def test_a_fresh_executor_attaches_by_native_id(
        executor: JobExecutor, login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "sleep 2; exit 5"]))
    executor.submit(job)
    executor.close()  # as a client that went away
    other = JobExecutor.get_instance("flux", url=url(login, instance), config=options(login))
    try:
        attached = Job()
        other.attach(attached, str(job.native_id))
        status = wait(attached)
        assert status.state is JobState.FAILED and status.exit_code == 5
    finally:
        other.close()


def test_a_burst_is_a_few_round_trips(executor: JobExecutor) -> None:
    """submit_many over ssh: the jobs go in round trips of 1, 2, 4, ... jobs (a ``flux
    job submit`` each there), not one each; one Flux refuses fails alone
    (BulkSubmitException, NEW again), the others run with their exit codes."""
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {code}"])) for code in range(4)]
    refused = Job(JobSpec("/bin/true"))
    refused.spec.attributes.queue_name = "no-such-queue"
    connection = executor.ssh_connection  # type: ignore[attr-defined]
    before = connection.round_trips
    with pytest.raises(BulkSubmitException) as e:
        executor.submit_many([*jobs[:2], refused, *jobs[2:]])
    assert connection.round_trips == before + 3  # 1, 2, 2 of the 5 jobs
    assert [job for job, _ in e.value.failures] == [refused]
    assert "no-such-queue" in str(e.value.failures[0][1])
    assert refused.status.state is JobState.NEW and refused.native_id is None
    statuses = [wait(job) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses] == [
        (JobState.COMPLETED, 0), *((JobState.FAILED, code) for code in (1, 2, 3))]


@pytest.mark.parametrize("side", ["client", "server"])
def test_jobs_end_in_their_true_state_when_the_ssh_sessions_are_killed(
        executor: JobExecutor, instance: remote_flux.RemoteFluxInstance, side: str) -> None:
    """While the jobs run, the relay sessions and the master are killed here, or the
    server's process serving them there (the parent of ``flux relay``): the executor
    reconnects (a new master, new relays) and every job ends with its exit code."""
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 3; exit {code}"])) for code in (0, 4)]
    for job in jobs:
        executor.submit(job)
    remote = executor._remote  # type: ignore[attr-defined]
    deadline = time.monotonic() + TIMEOUT
    while not all(j.status.state is JobState.ACTIVE for j in jobs):
        assert time.monotonic() < deadline, [j.status for j in jobs]
        time.sleep(0.05)
    if side == "client":
        killed = [*remote.tunnel.session_pids, remote.connection.master_pid]
        assert len(killed) >= 2 and None not in killed  # the executor's relays, the master
    else:
        killed = sorted({p.info["ppid"] for p in psutil.process_iter(["ppid", "cmdline"])
                         if (p.info["cmdline"] or [])[-2:] == ["relay", instance.socket]})
        # (the relays of this test's instance only: no one else's sessions)
        assert killed and all(psutil.Process(pid).name() == "sshd" for pid in killed)
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    statuses = [wait(j) for j in jobs]
    assert [(s.state, s.exit_code) for s in statuses] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 4)]
    # and it goes on working, on new sessions: the executor's own handle too (list)
    after = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(after)
    assert after.native_id in executor.list()
    executor.cancel(after)
    assert wait(after).state is JobState.CANCELED
    assert not set(remote.tunnel.session_pids) & set(killed)


# -- what cannot work says so -------------------------------------------------------------
def test_an_unreachable_host_raises_a_clear_error(
        login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    unused = subprocess.run(["python3", "-c", "import socket; s = socket.socket(); "
                             "s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with pytest.raises(HostUnreachableError, match=f"ssh://{login.host}:{unused}") as e:
        JobExecutor.get_instance("flux", url=url(login, instance, int(unused)),
                                 config=options(login))
    assert e.value.transient


def test_a_refused_login_raises_a_clear_error(
        login: Login, instance: remote_flux.RemoteFluxInstance, tmp_path: Path) -> None:
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    config = login.config_with(tmp_path, IdentityFile=str(key))
    with pytest.raises(LoginError, match=f"ssh://{login.host}"):
        JobExecutor.get_instance("flux", url=url(login, instance),
                                 config=options(login, config))


def test_a_changed_host_key_is_refused(
        login: Login, instance: remote_flux.RemoteFluxInstance, tmp_path: Path) -> None:
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{login.port} "
                     + " ".join(Path(f"{other}.pub").read_text().split()[:2]) + "\n")
    config = login.config_with(tmp_path, UserKnownHostsFile=str(known))
    with pytest.raises(HostKeyError, match=f"ssh://{login.host}") as e:
        JobExecutor.get_instance("flux", url=url(login, instance),
                                 config=options(login, config))
    assert "CHANGED" in e.value.stderr


def test_no_flux_on_the_remote_host_is_named(
        login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    with pytest.raises(SubmitException, match="no flux command.*flux_command"):
        JobExecutor.get_instance("flux", url=url(login, instance),
                                 config=options(login, flux_command="/no/such/flux"))


def test_no_instance_at_the_path_is_named(login: Login, instance: remote_flux.RemoteFluxInstance,
                                          ) -> None:
    with pytest.raises(SubmitException, match="/tmp/no-such-dir/local-0 is not a socket"):
        JobExecutor.get_instance("flux", url=f"ssh://{login.host}/tmp/no-such-dir/local-0",
                                 config=options(login, flux_command=os.path.join(
                                     os.path.dirname(instance.socket), "bin", "flux")))


def test_without_a_path_the_system_instance_is_meant(
        login: Login, instance: remote_flux.RemoteFluxInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The socket flux-core's commands use there by default (``rundir`` of its build,
    ``/local``); this machine runs no system instance. The flux command comes from
    $FLUX_SSH_RCMD, as flux-core's own ssh connector takes it."""
    monkeypatch.setenv("FLUX_SSH_RCMD", os.path.join(os.path.dirname(instance.socket),
                                                     "bin", "flux"))
    rundir = subprocess.run(["flux", "config", "builtin", "rundir"], capture_output=True,
                            text=True, check=True).stdout.strip()
    with pytest.raises(SubmitException, match=f"{rundir}/local is not a socket.*system"):
        JobExecutor.get_instance("flux", url=f"ssh://{login.host}", config=options(login))


@pytest.mark.parametrize("bad", ["ssh://login/tmp/a b", "ssh://login/tmp/$(id)",
                                 "ssh://login/tmp/x?y=1", "ssh://u:pw@login/tmp/s"])
def test_a_url_flux_cannot_use_is_refused_before_any_connection(bad: str) -> None:
    require_flux()
    with pytest.raises(ValueError, match="executor 'flux'"):
        JobExecutor.get_instance("flux", url=bad)


def test_a_flux_command_the_shell_would_read_otherwise_is_refused(
        login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    with pytest.raises(ValueError, match="flux command"):
        JobExecutor.get_instance("flux", url=url(login, instance),
                                 config=options(login, flux_command="flux; rm -rf ~"))


# -- what the job reads on the remote host: this package's files shipped there ------------
def test_the_multiple_launcher_and_the_directory_check_work_there(
        executor: JobExecutor, instance: remote_flux.RemoteFluxInstance) -> None:
    """Both read files of this package (ranks.sh, cwd.lua): their copies on the remote
    host, in the remote user's home."""
    shared = instance.shared_dir()
    ranks = Job(JobSpec("/bin/sh", ["-c", 'echo "$PSIJ_RANK $(id -un)"'], launcher="multiple",
                        resources=ResourceSpecV1(process_count=2), stdout_path=shared / "ranks"))
    executor.submit(ranks)
    assert wait(ranks).state is JobState.COMPLETED, ranks.status
    assert sorted((shared / "ranks").read_text().splitlines()) == [
        f"{r} {instance.user}" for r in (0, 1)]
    lost = Job(JobSpec("/bin/pwd", directory=shared / "missing"))
    executor.submit(lost)
    status = wait(lost)
    assert (status.state, status.exit_code) == (JobState.FAILED, None), status
    assert f"cannot use the job's directory {shared / 'missing'}" in str(status.message)


def test_hold_and_release(executor: JobExecutor, instance: remote_flux.RemoteFluxInstance) -> None:
    mark = instance.shared_dir() / "started"
    job = Job(JobSpec("/bin/touch", [str(mark)]))
    executor.submit(job, hold=True)
    assert job.wait(timeout=3, target_states=[JobState.ACTIVE]) is None
    assert job.status.state is JobState.QUEUED and not mark.exists()
    executor.release(job)
    assert wait(job).state is JobState.COMPLETED and mark.exists()


def test_jobs_of_an_instance_that_shuts_down_end(login: Login, instance: Any) -> None:
    private = remote_flux.RemoteFluxInstance(login.user)
    ex = JobExecutor.get_instance("flux", url=url(login, private), config=options(login))
    try:
        job = Job(JobSpec("/bin/sleep", ["300"]))
        ex.submit(job)
        assert job.wait(timeout=TIMEOUT, target_states=[JobState.ACTIVE]) is not None
        private.stop()
        status = wait(job)
        # Flux cancels the jobs of an instance that shuts down; if the connection went
        # first, the end is unknown and the job says so
        assert status.state is JobState.CANCELED or (
            status.state is JobState.FAILED and "unknown" in str(status.message)), status
    finally:
        ex.close()
        private.stop()


def test_submits_from_many_threads_all_end_in_their_state(executor: JobExecutor) -> None:
    """Remote submits run side by side (not under the executor's lock): a job's events
    that come before its submit returns are kept and replayed, none is lost."""
    import concurrent.futures

    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i % 3}"])) for i in range(24)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(executor.submit, jobs))
    for i, job in enumerate(jobs):
        status = wait(job)
        assert status.exit_code == i % 3, status
        assert status.state is (JobState.COMPLETED if i % 3 == 0 else JobState.FAILED)


@pytest.mark.parametrize("config, words", [
    ({"ssh_options": "-F cfg"}, "ssh_options"), ({"ssh_options": ["-F", 3]}, "ssh_options"),
    ({"flux_command": ""}, "flux_command"), ({"connect_timeout": 0}, "connect_timeout"),
    ({"no_such_field": 1}, "no_such_field")])
def test_a_bad_setting_is_refused_by_name(config: dict[str, Any], words: str) -> None:
    require_flux()
    with pytest.raises((TypeError, ValueError), match=words):
        JobExecutor.get_instance("flux", url="ssh://login/tmp/s", config=config)


def test_an_instance_that_never_answers_is_an_error_not_a_hang(
        login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    """A socket that takes connections and never answers (a frozen broker): the relay
    logs in and waits for ever; the executor ends its session and says so."""
    shared = instance.shared_dir()
    mute = shared / "sock"
    listener = subprocess.Popen(
        ["su", "-s", "/bin/sh", instance.user, "-c", "exec python3 -c 'import socket, sys, time\n"
         "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)\n"
         "print(flush=True); time.sleep(600)' " + str(mute)], stdout=subprocess.PIPE)
    try:
        assert listener.stdout is not None and listener.stdout.readline() == b"\n"
        with pytest.raises(ConnectionError, match=f"relay {mute} did not answer"):
            JobExecutor.get_instance("flux", url=f"ssh://{login.host}{mute}", config=options(
                login, connect_timeout=1, flux_command=os.path.join(
                    os.path.dirname(instance.socket), "bin", "flux")))
    finally:
        for process in psutil.Process(listener.pid).children(recursive=True):
            process.kill()  # the listener su started: su reaps it and exits
        try:
            listener.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            listener.kill()
            listener.wait()


HOSTILE = ["a'b\"c", "$HOME `id` $(id)", "tab\there", "new\nline", "back\\slash", "*?[x]", ""]


def test_hostile_arguments_and_environment_arrive_exactly(
        executor: JobExecutor, instance: remote_flux.RemoteFluxInstance) -> None:
    """The jobspec travels as data (stdin of ``flux job submit``): no remote shell
    reads an argument or a value. The job's environment is the remote login's (its
    HOME) plus the spec's."""
    out = instance.shared_dir() / "out"
    job = Job(JobSpec("/bin/sh", ["-c", 'printf "%s\\0" "$@" "$V" "$HOME"', "sh", *HOSTILE],
                      environment={"V": HOSTILE[1]}, stdout_path=out))
    executor.submit(job)
    assert wait(job).state is JobState.COMPLETED, job.status
    home = os.path.expanduser(f"~{instance.user}")
    assert out.read_text().split("\0")[:-1] == [*HOSTILE, HOSTILE[1], home]


# -- an instance on a node behind the login node (FluxConfig.node) --------------------------
def test_an_instance_on_a_node_behind_the_login_node(
        login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    """FluxConfig.node names the node (the test's node is this machine again under
    another name, reached by a second, real ssh login from the login node): submits go
    through flux-core's ssh connector there, events through ``ssh node flux relay`` run
    there (node_ssh.sh: one shared connection to the node); exit codes and a cancel
    arrive, and the relay is seen going through the node."""
    node = find_node(login)
    ex = JobExecutor.get_instance("flux", url=url(login, instance),
                                  config=options(login, node=node))
    try:
        done, sleeper = Job(JobSpec("/bin/sh", ["-c", "exit 7"])), Job(JobSpec("/bin/sleep", ["600"]))
        ex.submit(done)
        ex.submit(sleeper)
        sleeper.wait(timeout=TIMEOUT, target_states=JobState.ACTIVE)
        assert relays_through(node, login.user), "no relay session through the node"
        # the logins to the node share one connection, its socket in the user's directory
        shared = Path(f"/tmp/hpcjobs-node-ssh-{pwd.getpwnam(login.user).pw_uid}")
        assert any(path.is_socket() for path in shared.iterdir()), list(shared.iterdir())
        ex.cancel(sleeper)
        assert wait(sleeper).state is JobState.CANCELED
        status = wait(done)
        assert status.state is JobState.FAILED and status.exit_code == 7, status
    finally:
        ex.close()


def test_a_node_the_login_node_cannot_reach_is_named(
        login: Login, instance: remote_flux.RemoteFluxInstance) -> None:
    with pytest.raises(SubmitException, match="no-such-node.*FluxConfig.node"):
        JobExecutor.get_instance("flux", url=url(login, instance),
                                 config=options(login, node="no-such-node.invalid"))


@pytest.mark.parametrize("node, words", [("-oProxyCommand=id", "FluxConfig.node"),
                                         ("a b", "FluxConfig.node"), ("", "FluxConfig.node")])
def test_a_node_ssh_could_misread_is_refused_before_any_connection(node: str, words: str) -> None:
    require_flux()
    with pytest.raises((TypeError, ValueError), match=words):
        JobExecutor.get_instance("flux", url="ssh://login/tmp/s", config={"node": node})


def test_a_node_without_a_socket_path_is_refused() -> None:
    require_flux()
    with pytest.raises(ValueError, match="names no socket"):
        JobExecutor.get_instance("flux", url="ssh://login", config={"node": "n1"})
