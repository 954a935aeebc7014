"""The batch executors over ``ssh://``: Slurm, OpenPBS and the local executor's shell
backend (executors/shell) reached through the test login node (scripts/sshd.sh), where
jobs run as its user ``hpcjobs-remote``, not as the user
running these tests. What the conformance suite's ``*_ssh`` providers cannot see from
here: the job's own output (read back over ssh), hostile strings through two shells,
the connection killed while jobs run, and the errors of a host that cannot serve."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssh_login import Login
from hpcjobs import Job, JobExecutor, JobSpec, JobState
from hpcjobs.errors import SubmitException
from hpcjobs.remote import HostKeyError, HostUnreachableError, SshConnection
from hpcjobs.remote.ops import ReadFile

WAIT = 180.0
# quotes, $, backquotes, a backslash, a tab, a newline, non-ASCII and a non-UTF-8 byte
# (as Python's file-system encoding carries it): each a second round of interpretation
# in the remote shell, were it not quoted
HOSTILE = "it's \"q\" $HOME `id` $(id) \\ ; & | * ~ %j é\tx\nline2 \udcff"
PRINT = 'for a in "$@"; do printf "%s\\0" "$a"; done; printf "%s\\0" "$V"; id -un'

BACKENDS = [pytest.param("slurm", marks=pytest.mark.slurm),
            pytest.param("pbs", marks=pytest.mark.pbs), "local"]
pytestmark = pytest.mark.remote


def _require(name: str) -> None:
    """Skip (fail under CI=true) when the scheduler behind the login node is absent."""
    import importlib.util
    import sys
    here = Path(__file__).resolve().parents[1] / "conformance" / "backends" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_remote_gate_{name}", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    why = module.unavailable()
    if why is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why} (needed under CI=true)")
        pytest.skip(why)


@pytest.fixture
def remote_dir(conn: SshConnection) -> Iterator[str]:
    """A fresh directory in the remote user's home, removed afterwards."""
    home = conn.run(["sh", "-c", 'printf %s "$HOME"'], check=True).text
    d = f"{home}/hpcjobs-test-{uuid.uuid4().hex[:8]}"
    conn.run(["mkdir", "-m", "700", d], check=True)
    yield d
    conn.run(["rm", "-rf", d])


def executor(name: str, login: Login, work: str, **config: object) -> JobExecutor:
    return JobExecutor.get_instance(name, url=f"ssh://{login.host}", config={
        "ssh_options": ["-F", str(login.config)], "work_directory": f"{work}/work", **config})


@pytest.mark.parametrize("name", BACKENDS)
def test_hostile_strings_reach_the_remote_job_byte_for_byte(
        name: str, login: Login, conn: SshConnection, remote_dir: str) -> None:
    _require(name)
    run_dir = f"{remote_dir}/dir 'a' $b"
    conn.run(["mkdir", run_dir], check=True)
    args = [HOSTILE, "$HOME", "${NO_SUCH_VARIABLE}", "", "-n", "a\\nb"]
    spec = JobSpec("/bin/sh", ["-c", PRINT, "sh", *args], directory=run_dir,
                   environment={"V": HOSTILE}, stdout_path="out 'x' $y")
    with executor(name, login, remote_dir) as ex:
        job = Job(spec)
        ex.submit(job)
        status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.COMPLETED, status
    out = conn.batch([ReadFile(f"{run_dir}/out 'x' $y")])[0]
    assert out.ok, out
    *fields, user = out.stdout.split(b"\0")
    expected = [HOSTILE, "$HOME", "", "", "-n", "a\\nb", HOSTILE]
    assert [os.fsdecode(f) for f in fields] == expected
    assert user.strip() == login.user.encode()  # it ran there, as the remote user


@pytest.mark.parametrize("name", BACKENDS)
def test_jobs_end_in_their_true_state_when_the_connection_is_killed(
        name: str, login: Login, conn: SshConnection, remote_dir: str) -> None:
    _require(name)
    with executor(name, login, remote_dir) as ex:
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 4; exit {i}"])) for i in range(4)]
        ex.submit_many(jobs)
        first = ex.host.connection.master_pid  # type: ignore[attr-defined]
        assert first is not None
        time.sleep(1)
        os.kill(first, signal.SIGKILL)  # the master, and with it every session through it
        statuses = [job.wait(timeout=WAIT) for job in jobs]
        logins = ex.host.connection.logins  # type: ignore[attr-defined]
    for i, status in enumerate(statuses):
        assert status is not None, jobs[i]
        assert status.exit_code == i, status
        assert status.state is (JobState.COMPLETED if i == 0 else JobState.FAILED), status
    assert logins >= 2  # it logged in again


@pytest.mark.parametrize("name", BACKENDS)
def test_a_fresh_executor_attaches_over_ssh(name: str, login: Login, remote_dir: str) -> None:
    _require(name)
    with executor(name, login, remote_dir) as first:
        job = Job(JobSpec("/bin/sh", ["-c", "sleep 2; exit 5"]))
        first.submit(job)
        native_id = job.native_id
        assert native_id is not None
        assert native_id in first.list()
    with executor(name, login, remote_dir) as second:  # (the first is closed: its connection too)
        again = Job()
        second.attach(again, native_id)
        status = again.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED and status.exit_code == 5


def test_a_missing_submit_command_is_a_clear_submit_error(login: Login, remote_dir: str) -> None:
    _require("pbs")
    with executor("pbs", login, remote_dir, bin_directory="/no/such/pbs/bin") as ex:
        job = Job(JobSpec("/bin/true"))
        t0 = time.monotonic()
        with pytest.raises(SubmitException, match="not found on ssh://"):
            ex.submit(job)
        assert time.monotonic() - t0 < 60
        assert job.status.state is JobState.NEW


def test_unreachable_host_and_changed_key_are_refused_at_once(login: Login, tmp_path: Path) -> None:
    closed = login.config_with(tmp_path, Port="1")  # nothing listens on port 1
    with pytest.raises(HostUnreachableError, match="cannot connect"):
        JobExecutor.get_instance("slurm", url=f"ssh://{login.host}",
                                 config={"ssh_options": ["-F", str(closed)]})
    other_key = tmp_path / "known_hosts"
    other_key.write_text(f"[127.0.0.1]:{login.port} ssh-ed25519 "
                         "AAAAC3NzaC1lZDI1NTE5AAAAIPc0rNUZ1S0xzDyi6vs2Nf4F5YSjUBzQ3qWDCSsFPhjf\n")
    changed = login.config_with(tmp_path, UserKnownHostsFile=str(other_key))
    with pytest.raises(HostKeyError):
        JobExecutor.get_instance("pbs", url=f"ssh://{login.host}",
                                 config={"ssh_options": ["-F", str(changed)]})


@pytest.mark.parametrize("url", ["ssh://login/path", "ssh://a b", "ssh://host:port"])
def test_a_malformed_url_is_refused_before_connecting(url: str) -> None:
    with pytest.raises(ValueError, match="executor 'slurm'"):
        JobExecutor.get_instance("slurm", url=url)


@pytest.mark.parametrize("url", ["http://login", "login"])
def test_a_url_of_another_kind_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="cannot serve url"):
        JobExecutor.get_instance("pbs", url=url)


def test_the_cli_runs_and_follows_jobs_over_ssh(login: Login, remote_dir: str,
                                                tmp_path: Path) -> None:
    _require("pbs")
    hpcjobs = str(Path(sys.executable).with_name("hpcjobs"))
    common = ["-x", "pbs", "--url", f"ssh://{login.host}", "--config",
              f'ssh_options=["-F", "{login.config}"]', "--config",
              f"work_directory={remote_dir}/work"]

    def cli(command: str, *args: str) -> "subprocess.CompletedProcess[str]":
        # (from a directory the remote side does not have: nothing may depend on it)
        return subprocess.run([hpcjobs, command, *common, *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=WAIT)

    p = cli("run", "/bin/sh", "-c", "id -un; echo to-stderr >&2; exit 3")
    assert p.returncode == 3, p.stderr
    assert p.stdout == f"{login.user}\n" and p.stderr.startswith("to-stderr\n"), p
    p = cli("submit", "/bin/sleep", "120")
    assert p.returncode == 0, p.stderr
    native_id = p.stdout.strip()
    p = cli("status", native_id)
    assert p.stdout.split() in ([native_id, "QUEUED"], [native_id, "ACTIVE"]), p
    assert native_id in cli("list").stdout.split()
    p = cli("cancel", native_id)
    assert p.returncode == 0 and p.stdout.startswith(f"{native_id} CANCELED"), p


@pytest.mark.parametrize("name", BACKENDS)
def test_a_burst_of_distinct_jobs_is_one_round_trip(name: str, login: Login, remote_dir: str) -> None:
    _require(name)
    from datetime import timedelta
    from hpcjobs import JobAttributes
    with executor(name, login, remote_dir) as ex:
        ex.submit(Job(JobSpec("/bin/true")))  # (the work directory and launchers made)
        # distinct walltimes: no two can share an array, every job has its own submit
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i}"], attributes=JobAttributes(
            duration=timedelta(minutes=10 + i)))) for i in range(20)]
        connection = ex.host.connection  # type: ignore[attr-defined]
        before = connection.round_trips
        ex.submit_many(jobs)
        trips = connection.round_trips - before
        statuses = [job.wait(timeout=WAIT) for job in jobs]
    # one for the burst; the monitor's status ticks meanwhile (each one round trip, four a
    # second) may add a few, never one per job
    assert trips <= 5, trips
    assert len({job.native_id for job in jobs}) == len(jobs)
    assert [s.exit_code if s else None for s in statuses] == list(range(20))


@pytest.mark.parametrize("name", BACKENDS[:2])
def test_a_refused_job_in_a_burst_gets_its_own_error(name: str, login: Login, remote_dir: str) -> None:
    # the submits of a burst run side by side there: each keeps its own answer
    _require(name)
    from datetime import timedelta
    from hpcjobs import JobAttributes
    from hpcjobs.errors import BulkSubmitException
    refused = {2, 9, 10}
    with executor(name, login, remote_dir) as ex:
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i}"], attributes=JobAttributes(
            duration=timedelta(minutes=10 + i),
            queue_name="no-such-queue" if i in refused else None))) for i in range(21)]
        with pytest.raises(BulkSubmitException) as e:
            ex.submit_many(jobs)
        assert {job.id for job, _ in e.value.failures} == {jobs[i].id for i in refused}
        for _, error in e.value.failures:
            assert "queue" in str(error).lower() or "partition" in str(error).lower(), error
        for i, job in enumerate(jobs):
            if i in refused:
                assert job.status.state is JobState.NEW and job.native_id is None
        accepted = [job for i, job in enumerate(jobs) if i not in refused]
        assert len({job.native_id for job in accepted}) == len(accepted)
        statuses = [job.wait(timeout=WAIT) for job in accepted]
    assert [s.exit_code if s else None for s in statuses] == [i for i in range(21) if i not in refused]


@pytest.mark.parametrize("name", ["slurm", "local"])
def test_a_burst_whose_shared_files_cannot_be_written_submits_nothing(
        name: str, login: Login, conn: SshConnection, remote_dir: str) -> None:
    # the notes directory's place holds a file: the files every job shares (sent while
    # the scripts are rendered) fail, and the whole burst with them, though the jobs'
    # own files could be written
    if name == "slurm":
        _require(name)
    work = f"{remote_dir}/work"  # (the executor's, as executor() sets it)
    conn.run(["sh", "-c", 'mkdir -p "$1" && touch "$1/changes"', "-", work], check=True)
    with executor(name, login, remote_dir) as ex:
        jobs = [Job(JobSpec("/bin/true")) for _ in range(5)]
        with pytest.raises(SubmitException, match="changes"):
            ex.submit_many(jobs)
    assert [job.status.state for job in jobs] == [JobState.NEW] * 5
    assert all(job.native_id is None for job in jobs)


def _running_until(ex: JobExecutor, go: str) -> list[Job]:
    """Three jobs, running once this returns, that exit 0, 1 and 2 when ``go`` exists."""
    jobs = [Job(JobSpec("/bin/sh", ["-c", 'while [ ! -e "$1" ]; do sleep 0.1; done; exit $2',
                                    "-", go, str(i)])) for i in range(3)]
    ex.submit_many(jobs)
    for job in jobs:
        assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    return jobs


@pytest.mark.parametrize("name", BACKENDS)
def test_a_status_tick_that_sees_jobs_change_is_one_round_trip(
        name: str, login: Login, conn: SshConnection, remote_dir: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Jobs wait for a file, then end at once: the ticks that take their notes (the
    # read of the notes, then the look at the jobs' files) are counted by a spy on
    # those two calls of the real monitor, and must cost one round trip each.
    _require(name)
    from hpcjobs.executors.batch.changes import ChangeNotes
    from hpcjobs.executors.batch.monitor import StatusMonitor
    go = f"{remote_dir}/go"
    # (no status query within the test: the jobs' ends come through their notes)
    with executor(name, login, remote_dir, min_query_interval=3600) as ex:
        jobs = _running_until(ex, go)
        connection = ex.host.connection  # type: ignore[attr-defined]
        ticks: list[tuple[int, int]] = []  # per tick that took notes: (names, round trips)
        taking: dict[str, tuple[int, int]] = {}
        take, check = ChangeNotes.take_and_read, StatusMonitor.check_files

        def spy_take(self: ChangeNotes, *args: Any) -> Any:
            before = connection.round_trips
            names, read = take(self, *args)
            taking["tick"] = (len(names), before)
            return names, read

        def spy_check(self: StatusMonitor, *args: Any) -> Any:
            ended = check(self, *args)
            names, before = taking.pop("tick", (0, 0))
            if names:
                ticks.append((names, connection.round_trips - before))
            return ended

        monkeypatch.setattr(ChangeNotes, "take_and_read", spy_take)
        monkeypatch.setattr(StatusMonitor, "check_files", spy_check)
        conn.run(["touch", go], check=True)  # (another connection: not counted)
        statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [s.exit_code if s else None for s in statuses] == [0, 1, 2]
    assert sum(names for names, _ in ticks) >= len(jobs), ticks  # their ends, by their notes
    assert all(trips == 1 for _, trips in ticks), ticks


@pytest.mark.parametrize("name", BACKENDS)
def test_a_status_tick_that_also_queries_the_scheduler_is_one_round_trip(
        name: str, login: Login, conn: SshConnection, remote_dir: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Queries come due every half second while jobs wait for a file, then the jobs end:
    # each tick of the real monitor is counted (its round trips, and the scheduler
    # commands it ran), and one that ran a query must have cost one round trip in all,
    # the query's command having gone with the read of the notes.
    _require(name)
    from hpcjobs.executors.batch.monitor import StatusMonitor
    from hpcjobs.remote.host import SshHost
    go = f"{remote_dir}/go"
    ticks: list[tuple[list[str], int]] = []  # per tick counted: (commands run, round trips)
    runs: list[str] = []
    counting = threading.Event()
    tick, run = StatusMonitor.tick, SshHost.run

    def spy_tick(self: StatusMonitor) -> Any:
        runs.clear()
        before = self.host.connection.round_trips  # type: ignore[attr-defined]
        try:
            return tick(self)
        finally:
            if counting.is_set():
                ticks.append((list(runs), self.host.connection.round_trips - before))  # type: ignore[attr-defined]

    def spy_run(self: SshHost, argv: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append(" ".join(map(str, argv))[:60])
        return run(self, argv, *args, **kwargs)

    # (before the executor: its monitor's thread holds the bound method)
    monkeypatch.setattr(StatusMonitor, "tick", spy_tick)
    monkeypatch.setattr(SshHost, "run", spy_run)
    with executor(name, login, remote_dir, min_query_interval=0.5,
                  max_query_interval=0.5) as ex:
        jobs = _running_until(ex, go)
        counting.set()
        time.sleep(4.0)
        conn.run(["touch", go], check=True)  # (another connection: not counted)
        statuses = [job.wait(timeout=WAIT) for job in jobs]
        counting.clear()
    assert [s.exit_code if s else None for s in statuses] == [0, 1, 2]
    querying = [(commands, trips) for commands, trips in ticks if commands]
    assert len(querying) >= 3, ticks
    assert all(trips == 1 for _, trips in querying), [q for q in querying if q[1] != 1]


@pytest.mark.parametrize("delay", [0.3, 0.9])  # (in its file changes; in its commands)
def test_no_job_is_lost_when_the_connection_drops_during_a_burst(
        login: Login, conn: SshConnection, remote_dir: str, delay: float) -> None:
    # The master is killed while one round trip starts 60 jobs: each job is then either
    # refused (NEW again, and not running there) or followed to its true end. A
    # start whose answer was lost is found by its script among the user's processes.
    import threading
    from datetime import timedelta
    from hpcjobs import JobAttributes
    from hpcjobs.errors import BulkSubmitException
    with executor("local", login, remote_dir) as ex:
        ex.submit(Job(JobSpec("/bin/true")))
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 1; exit {i % 7}"], attributes=JobAttributes(
            duration=timedelta(minutes=10 + i)))) for i in range(60)]
        master = ex.host.connection.master_pid  # type: ignore[attr-defined]
        assert master is not None
        killer = threading.Timer(delay, os.kill, (master, signal.SIGKILL))
        killer.start()
        refused: set[str] = set()
        try:
            ex.submit_many(jobs)
        except BulkSubmitException as e:
            refused = {job.id for job, _ in e.failures}
        killer.join()
        for i, job in enumerate(jobs):
            if job.id in refused:
                assert job.status.state is JobState.NEW and job.native_id is None
                continue
            status = job.wait(timeout=WAIT)
            assert status is not None and status.exit_code == i % 7, (i, status)
    running = conn.run(["ps", "-u", login.user, "-o", "args="], check=True).text
    for job in jobs:
        if job.id in refused:
            assert job.id not in running, f"refused job {job.id} runs"
