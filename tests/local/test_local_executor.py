"""The local executor's own promises, beyond the conformance suite: direct exec, process
groups, the nanny's life, spawn failures, records on disk, attach via the watcher."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

import psutil
import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState, JobStatus
from hpcjobs.executors.local import LocalJobExecutor
from hpcjobs.executors.local.journal import Journal

TIMEOUT = 60.0


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path / "work"


@pytest.fixture
def ex(work: Path) -> Iterator[LocalJobExecutor]:
    e = JobExecutor.get_instance("local", config={"work_directory": work,
                                                  "cancel_grace_period": 2.0})
    assert isinstance(e, LocalJobExecutor)
    yield e
    e.close()


def final(job: Job) -> JobStatus:
    status = job.wait(timeout=TIMEOUT)
    assert status is not None and status.state.final, job.status
    return status


def eventually(what: str, probe: Callable[[], Optional[object]]) -> object:
    """Poll ``probe`` until it returns something truthy (a bound, not a timing assertion)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


def records(work: Path, job: Job) -> list[list[str]]:
    """The nanny's records of ``job``, as fields (see nanny.py)."""
    path = work / "nannies" / f"{str(job.native_id)[:8]}.records"
    lines = path.read_text().split("\n")[:-1] if path.exists() else []
    return [line.split() for line in lines if line.split()[1] == job.native_id]


def pid_of(work: Path, job: Job) -> int:
    found = eventually(f"pid record of {job.native_id}",
                       lambda: [r for r in records(work, job) if r[0] == "P"])
    return int(found[0][2])  # type: ignore[index]


def test_no_process_or_thread_before_the_first_submit(work: Path) -> None:
    threads = threading.active_count()
    children = psutil.Process().children(recursive=True)
    e = JobExecutor.get_instance("local", config={"work_directory": work})
    try:
        assert e.list() == []
        assert threading.active_count() == threads
        assert psutil.Process().children(recursive=True) == children
    finally:
        e.close()


def test_single_execs_the_executable_in_its_own_session(ex: LocalJobExecutor, work: Path) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    ex.submit(job)
    p = psutil.Process(pid_of(work, job))
    assert p.cmdline() == ["/bin/sleep", "600"]  # no shell in between
    assert os.getpgid(p.pid) == p.pid and os.getsid(p.pid) == p.pid
    assert "nanny.py" in " ".join(p.parent().cmdline())
    job.cancel()
    assert final(job).state is JobState.CANCELED


def test_cancel_kills_the_whole_process_group(ex: LocalJobExecutor, tmp_path: Path) -> None:
    child = tmp_path / "child"
    job = Job(JobSpec("/bin/sh", ["-c", f"sleep 600 & echo $! > '{child}'; wait"]))
    ex.submit(job)
    text = eventually("child pid", lambda: child.exists() and child.read_text().strip())
    grandchild = psutil.Process(int(str(text)))
    job.cancel()
    status = final(job)
    assert status.state is JobState.CANCELED and status.message == "cancelled; killed by signal 15 (SIGTERM)", status
    grandchild.wait(timeout=TIMEOUT)  # raises if it survives
    assert not grandchild.is_running()


def test_cancel_after_grace_period_uses_sigkill(ex: LocalJobExecutor, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    job = Job(JobSpec("/bin/sh", ["-c", f"trap '' TERM; touch '{ready}'; while :; do sleep 1; done"]))
    ex.submit(job)
    eventually("trap set", ready.exists)
    job.cancel()
    status = final(job)
    assert status.state is JobState.CANCELED
    assert status.exit_code == -signal.SIGKILL


def test_signal_exit_names_the_signal(ex: LocalJobExecutor) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "kill -TERM $$"]))
    ex.submit(job)
    status = final(job)
    assert status.state is JobState.FAILED
    assert status.exit_code == -15
    assert status.message == "killed by signal 15 (SIGTERM)"
    assert status.metadata == {"signal": 15}


@pytest.mark.parametrize("field, value, words", [
    ("directory", "/nonexistent/hpcjobs-dir", ["hpcjobs-dir"]),
    ("stdin_path", "/nonexistent/hpcjobs-in", ["stdin_path", "hpcjobs-in"]),
    ("stdout_path", "/nonexistent/hpcjobs-out", ["stdout_path", "hpcjobs-out"]),
    ("executable", "hpcjobs-not-on-path", ["hpcjobs-not-on-path"]),
])
def test_spawn_failures_end_failed_with_a_clear_message(ex: LocalJobExecutor, field: str,
                                                        value: str, words: list[str]) -> None:
    spec = JobSpec("/bin/true")
    setattr(spec, field, value)
    states: list[JobState] = []
    job = Job(spec)
    job.set_job_status_callback(lambda j, s: states.append(s.state))
    ex.submit(job)
    status = final(job)
    assert status.state is JobState.FAILED and status.exit_code is None
    assert status.message and all(w in status.message for w in words), status.message
    eventually("callbacks", lambda: JobState.FAILED in states)
    assert states == [JobState.QUEUED, JobState.FAILED]  # it never ran


def test_relative_stream_paths_are_relative_to_the_job_directory(ex: LocalJobExecutor,
                                                                 tmp_path: Path) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "echo out; echo err >&2"], directory=tmp_path,
                      stdout_path="both.txt", stderr_path="both.txt"))
    ex.submit(job)
    assert final(job).state is JobState.COMPLETED
    assert sorted((tmp_path / "both.txt").read_text().splitlines()) == ["err", "out"]


def test_launcher_scripts_get_the_job_directory(ex: LocalJobExecutor, work: Path,
                                                tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = Job(JobSpec("/bin/sh", ["-c", 'printf %s "$HPCJOBS_JOB_DIR"'], stdout_path=out,
                      launcher="multiple"))
    ex.submit(job)
    assert final(job).state is JobState.COMPLETED
    assert out.read_text() == str(work / "jobs" / str(job.native_id))


def test_direct_exec_gets_exactly_the_job_environment(ex: LocalJobExecutor,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "env"
    job = Job(JobSpec("/usr/bin/env", ["-0"], inherit_environment=False,
                      environment={"A": "1"}, stdout_path=out))
    ex.submit(job)
    assert final(job).state is JobState.COMPLETED
    assert out.read_bytes() == b"A=1\0"


def test_environment_changes_between_jobs_reach_each_job(
        ex: LocalJobExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the nanny only receives the environment when it changes: check it does change
    seen = []
    for value in ["one", "two", "two", None]:
        if value is None:
            monkeypatch.delenv("HPCJOBS_VARYING")
        else:
            monkeypatch.setenv("HPCJOBS_VARYING", value)
        out = tmp_path / f"env{len(seen)}"
        job = Job(JobSpec("/bin/sh", ["-c", 'printf %s "${HPCJOBS_VARYING-unset}"'],
                          stdout_path=out))
        ex.submit(job)
        assert final(job).state is JobState.COMPLETED
        seen.append(out.read_text())
    assert seen == ["one", "two", "two", "unset"]


def test_exit_record_is_written_for_any_process_to_read(ex: LocalJobExecutor, work: Path) -> None:
    job = Job(JobSpec("/bin/sh", ["-c", "sleep 0.5; exit 9"]))
    ex.submit(job)
    status = final(job)
    started, ended = records(work, job)  # written before they were reported
    assert started[:2] == ["P", job.native_id]
    _, _, code, when, canceled = ended
    assert (int(code), canceled) == (9, "0")
    assert float(when) == pytest.approx(status.time)


def test_jobs_survive_close_and_can_be_attached_later(work: Path) -> None:
    first = JobExecutor.get_instance("local", config={"work_directory": work})
    job = Job(JobSpec("/bin/sh", ["-c", "sleep 1; exit 6"]))
    first.submit(job)
    first.close()
    second = JobExecutor.get_instance("local", config={"work_directory": work})
    try:
        assert str(job.native_id) in second.list()
        twin = Job()
        second.attach(twin, str(job.native_id))
        status = final(twin)
    finally:
        second.close()
    assert (status.state, status.exit_code) == (JobState.FAILED, 6)


def test_nanny_exits_once_closed_and_its_jobs_are_done(work: Path) -> None:
    e = JobExecutor.get_instance("local", config={"work_directory": work})
    job = Job(JobSpec("/bin/sleep", ["1"]))
    e.submit(job)
    assert isinstance(e, LocalJobExecutor) and e._threads.link is not None
    nanny = psutil.Process(e._threads.link.pid)
    e.close()
    nanny.wait(timeout=TIMEOUT)  # raises if it stays
    record = Journal(work).exit_status(str(job.native_id))
    assert record is not None and record.state is JobState.COMPLETED


def test_nanny_death_leaves_the_exit_status_unknown(ex: LocalJobExecutor, tmp_path: Path) -> None:
    go = tmp_path / "go"
    job = Job(JobSpec("/bin/sh", ["-c", f"while [ ! -e '{go}' ]; do sleep 0.05; done"]))
    ex.submit(job)
    assert job.wait(timeout=TIMEOUT, target_states=JobState.ACTIVE) is not None
    assert ex._threads.link is not None
    nanny = psutil.Process(ex._threads.link.pid)
    nanny.kill()
    nanny.wait(timeout=TIMEOUT)
    go.touch()  # the job ends with nobody left to collect its exit status
    status = final(job)
    assert status.state is JobState.FAILED and status.exit_code is None
    assert status.message and "exit status is unknown" in status.message
    # and the executor starts a new nanny for the next job
    again = Job(JobSpec("/bin/true"))
    ex.submit(again)
    assert final(again).state is JobState.COMPLETED


def test_cancel_from_another_executor(ex: LocalJobExecutor, work: Path) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    ex.submit(job)
    pid_of(work, job)
    other = JobExecutor.get_instance("local", config={"work_directory": work})
    try:
        twin = Job()
        other.attach(twin, str(job.native_id))
        assert twin.status.state is JobState.ACTIVE  # known at once, no poll delay
        twin.cancel()
        assert final(twin).state is JobState.CANCELED
    finally:
        other.close()
    assert final(job).state is JobState.CANCELED


def test_attach_to_unknown_ids(ex: LocalJobExecutor) -> None:
    known = Job(JobSpec("/bin/true"))
    ex.submit(known)
    final(known)
    unknown_seq = f"{str(known.native_id)[:8]}-999"  # a live nanny's token, an unused number
    for native_id in ["0123abcd-7", "../../etc", "x", unknown_seq]:
        job = Job()
        ex.attach(job, native_id)
        status = final(job)
        assert status.state is JobState.FAILED
        assert status.message == f"no such local job: {native_id!r}"


def test_purge_removes_a_gone_nannys_records_once_its_jobs_ended(ex: LocalJobExecutor,
                                                                  work: Path) -> None:
    done = Job(JobSpec("/bin/true"))
    ex.submit(done)
    final(done)
    running = Job(JobSpec("/bin/sleep", ["600"]))
    ex.submit(running)
    journal = Journal(work)
    journal.purge(older_than=-1)  # the nanny is alive: nothing goes
    assert {str(done.native_id), str(running.native_id)} <= set(ex.list())
    running.cancel()
    final(running)
    token = str(running.native_id)[:8]
    assert sorted(p.name for p in (work / "nannies").iterdir()) == [
        token, f"{token}.jobs", f"{token}.log", f"{token}.records"]
    assert ex._threads.link is not None
    nanny = psutil.Process(ex._threads.link.pid)
    ex.close()  # the nanny exits once its last job has ended
    nanny.wait(timeout=TIMEOUT)
    journal.purge(older_than=3600)  # ended too recently
    assert str(done.native_id) in ex.list()
    journal.purge(older_than=-1)
    assert ex.list() == []
    assert list((work / "nannies").iterdir()) == [] and list((work / "jobs").iterdir()) == []
    job = Job()
    ex2 = JobExecutor.get_instance("local", config={"work_directory": work})
    try:
        ex2.attach(job, str(done.native_id))
        assert final(job).message == f"no such local job: {str(done.native_id)!r}"
    finally:
        ex2.close()


def test_a_forgotten_executor_ends_its_threads(ex: LocalJobExecutor, work: Path) -> None:
    running = Job(JobSpec("/bin/sleep", ["600"]))
    ex.submit(running)
    pid_of(work, running)

    def use_and_forget() -> str:
        e = JobExecutor.get_instance("local", config={"work_directory": work})
        job = Job(JobSpec("/bin/true"))
        e.submit(job)  # a nanny and its reader
        final(job)
        e.attach(Job(), str(running.native_id))  # a watcher, following a live job
        return f"hpcjobs-local-{e._instance}"  # type: ignore[attr-defined]
    prefix = use_and_forget()
    gc.collect()
    eventually("threads ended", lambda: not [t for t in threading.enumerate()
                                              if t.name.startswith(prefix + "-")])
    running.cancel()
    assert final(running).state is JobState.CANCELED


def test_a_directory_made_anew_is_the_new_one(ex: LocalJobExecutor, tmp_path: Path) -> None:
    work = tmp_path / "again"
    for round in ("first", "second"):
        work.mkdir()
        job = Job(JobSpec("/bin/sh", ["-c", f"echo {round} > here"], directory=work))
        ex.submit(job)
        assert final(job).state is JobState.COMPLETED
        assert (work / "here").read_text() == f"{round}\n"
        if round == "first":
            (work / "here").unlink()
            work.rmdir()


def test_a_directory_under_home_is_expanded(ex: LocalJobExecutor, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "sub dir").mkdir()
    job = Job(JobSpec("/bin/pwd", directory="~/sub dir", stdout_path="~/sub dir/out"))
    ex.submit(job)
    assert final(job).state is JobState.COMPLETED
    assert (tmp_path / "sub dir" / "out").read_text() == f"{tmp_path}/sub dir\n"


def test_cancel_from_another_executor_kills_the_whole_group(ex: LocalJobExecutor, work: Path,
                                                            tmp_path: Path) -> None:
    child = tmp_path / "child"
    # the leader ends on SIGTERM; its child ignores it and must still go
    job = Job(JobSpec("/bin/sh", ["-c", f"(trap '' TERM; exec sleep 600) & echo $! > '{child}'; wait"]))
    ex.submit(job)
    text = eventually("child pid", lambda: child.exists() and child.read_text().strip())
    grandchild = psutil.Process(int(str(text)))
    other = JobExecutor.get_instance("local", config={"work_directory": work})
    try:
        twin = Job()
        other.attach(twin, str(job.native_id))
        twin.cancel()
        assert final(twin).state is JobState.CANCELED
    finally:
        other.close()
    assert final(job).state is JobState.CANCELED
    grandchild.wait(timeout=TIMEOUT)
