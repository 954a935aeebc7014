"""The batch base's own logic, with no scheduler daemon: a small in-memory scheduler
(``Ledger``, a test double named as such) behind a backend written from the public
contract alone (fake_scheduler.py, from docs/writing-a-backend.md). What is tested is the base: vanished jobs, back-off after a failing status
command, the doubling query interval, chunking, accounting probed once, and what
backends share through it (native ids by pattern, transient refusals by their words,
settings read once, a timed-out submit found by its script, few ids asked by id and
many by a listing, a status command's word on unknown ids).

Jobs here never run (no script is executed), so only the scheduler's word moves them;
submits go through a real process (``echo <id>``), as a backend's submit command would.
"""

from __future__ import annotations

import gc
import json
import logging
import re
import shutil
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState
from hpcjobs.errors import (CommandError, InvalidJobException, InvalidJobStateError,
                           SubmitException)
from hpcjobs.exec_limits import MAX_ARG_STRLEN
from hpcjobs.executors.batch import JobDir, NativeStatus, local_time
from hpcjobs.executors.batch.jobdir import exports

from fake_scheduler import Fake, FakeExecutor, Ledger

WAIT = 30.0  # upper bound for any wait (never a timing assertion)


def running(scheduler: type[Fake], **config: Any) -> FakeExecutor:
    """An executor of the fake scheduler ``scheduler`` (a subclass, for a test that
    changes one of its facts or methods)."""
    class Executor(FakeExecutor):
        scheduler_class = scheduler
    return Executor(config=config)


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def executor(tmp_path: Path, ledger: Ledger) -> Iterator[FakeExecutor]:
    Fake.ledger = ledger
    ex = FakeExecutor(config={"work_directory": tmp_path / "work", "file_poll_interval": 0.02,
                              "min_query_interval": 0.05, "max_query_interval": 0.4,
                              "blind_query_interval": 0.4, "query_chunk_size": 3,
                              "burst_window": 0})
    try:
        yield ex
    finally:
        ex.close()


def wait_until(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def submitted(executor: JobExecutor, n: int) -> list[Job]:
    jobs = [Job(JobSpec("/bin/true")) for _ in range(n)]
    for job in jobs:
        executor.submit(job)
    return jobs


def test_the_scheduler_word_moves_jobs(executor: FakeExecutor, ledger: Ledger) -> None:
    job, = submitted(executor, 1)
    assert job.native_id is not None
    ledger.states[job.native_id] = JobState.ACTIVE
    wait_until(lambda: job.status.state is JobState.ACTIVE, "ACTIVE from the status query")
    ledger.states[job.native_id] = JobState.COMPLETED
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.COMPLETED


def test_a_vanished_job_fails_saying_its_exit_status_is_unknown(executor: FakeExecutor,
                                                                 ledger: Ledger) -> None:
    jobs = submitted(executor, 2)
    for job in jobs:
        del ledger.states[job.native_id or ""]  # gone without a trace (purged)
    for job in jobs:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.FAILED, status
        assert "exit status is unknown" in (status.message or "")
        assert status.exit_code is None
    # no accounting: probed once for both, then remembered
    assert ledger.accounting_asked == 1


def test_a_failing_status_command_changes_nothing_and_backs_off(executor: FakeExecutor,
                                                                 ledger: Ledger) -> None:
    job, = submitted(executor, 1)
    wait_until(lambda: len(ledger.queries) >= 1, "a first query")
    ledger.failing = True
    del ledger.states[job.native_id or ""]  # would be "vanished" if a failure were believed
    wait_until(lambda: len(ledger.queries) >= 4, "queries while failing")
    assert job.status.state is JobState.QUEUED
    times = [t for t, _ in ledger.queries]
    gaps = [b - a for a, b in zip(times[1:], times[2:])]
    # backed off (to at least 5 s, here capped by max_query_interval), never sooner;
    # (lower bounds only: a loaded machine makes gaps longer, never shorter)
    assert min(gaps) >= 0.4 * 0.95, gaps
    ledger.failing = False
    status = job.wait(timeout=WAIT)  # the truth, once the scheduler answers again
    assert status is not None and status.state is JobState.FAILED


def test_the_query_interval_doubles_up_to_the_maximum(executor: FakeExecutor,
                                                       ledger: Ledger) -> None:
    submitted(executor, 1)
    wait_until(lambda: len(ledger.queries) >= 6, "six queries")
    times = [t for t, _ in ledger.queries[:6]]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # 0.05 s after the submit, then 0.1, 0.2, 0.4 and the cap 0.4: never sooner (lower
    # bounds only: a loaded machine makes gaps longer, never shorter)
    expected = [0.1, 0.2, 0.4, 0.4, 0.4]
    assert all(gap >= 0.95 * e for gap, e in zip(gaps, expected)), gaps


def test_many_jobs_are_asked_in_chunks(executor: FakeExecutor, ledger: Ledger) -> None:
    jobs = submitted(executor, 7)
    ids = {job.native_id for job in jobs}
    wait_until(lambda: ids <= {i for _, q in ledger.queries for i in q}, "every job asked")
    assert all(len(q) <= 3 for _, q in ledger.queries), ledger.queries
    assert len(ledger.queries) < 3 * len(jobs)  # bulk: not one command per job


def test_a_cancel_is_reconciled_soon(executor: FakeExecutor, ledger: Ledger) -> None:
    job, = submitted(executor, 1)
    job.cancel()
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED


def test_this_clients_cancel_is_canceled_when_the_scheduler_names_no_cause(
        executor: FakeExecutor, ledger: Ledger) -> None:
    # a scheduler whose only word for an end is "ended" (Torque's C): the job this client
    # cancelled, which recorded no exit code, was cancelled; another end stays FAILED
    ledger.cancelled_state = JobState.FAILED
    cancelled, other = submitted(executor, 2)
    cancelled.cancel()
    status = cancelled.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED, status
    assert "this client" in (status.message or "")
    with ledger.lock:
        ledger.states[other.native_id or ""] = JobState.FAILED
    status = other.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status


def bursting(tmp_path: Path, ledger: Ledger, hold: float) -> FakeExecutor:
    """An executor whose jobs are due a query 0.05 s after their submit, for whom a
    burst lasts while submits come less than 0.5 s apart (file_poll_interval)."""
    Fake.ledger = ledger
    return FakeExecutor(config={"work_directory": tmp_path / "work", "file_poll_interval": 0.5,
                                "min_query_interval": 0.05, "max_query_hold": hold,
                                "burst_window": 0})


def burst(executor: FakeExecutor, seconds: float,
          midway: Any = None) -> tuple[float, float, list[Job]]:
    """Submit for ``seconds``, calling ``midway(job)`` once halfway; the burst's start
    and end (monotonic) and its jobs."""
    jobs: list[Job] = []
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        jobs += submitted(executor, 1)
        if midway is not None and time.monotonic() > start + seconds / 2:
            midway(jobs[-1])
            midway = None
    return start, time.monotonic(), jobs


def test_routine_queries_wait_for_a_burst_of_submits_to_end(tmp_path: Path,
                                                           ledger: Ledger) -> None:
    ex = bursting(tmp_path, ledger, hold=60.0)
    try:
        start, end, jobs = burst(ex, 1.0)
        # due 0.05 s after each submit, yet none asked while the submits go on
        assert [q for q in ledger.queries if start < q[0] < end] == []
        with ledger.lock:
            for job in jobs:
                ledger.states[job.native_id or ""] = JobState.ACTIVE
        wait_until(lambda: all(job.status.state is JobState.ACTIVE for job in jobs),
                   "every job asked once the burst ended")
    finally:
        ex.close()


def test_a_query_waits_for_a_burst_at_most_max_query_hold(tmp_path: Path,
                                                         ledger: Ledger) -> None:
    ex = bursting(tmp_path, ledger, hold=0.2)
    try:
        start, end, _ = burst(ex, 1.5)
        assert [q for q in ledger.queries if start < q[0] < end], "no query in 1.5 s"
    finally:
        ex.close()


def test_a_cancel_is_reconciled_in_the_middle_of_a_burst(tmp_path: Path,
                                                        ledger: Ledger) -> None:
    cancelled: list[Job] = []

    def cancel(job: Job) -> None:
        job.cancel()
        cancelled.append(job)

    ex = bursting(tmp_path, ledger, hold=60.0)
    try:
        start, end, _ = burst(ex, 2.0, midway=cancel)
        # the query the cancel asked for did not wait for the burst (only it could run)
        assert [q for q in ledger.queries if start < q[0] < end], "the cancel waited"
        status = cancelled[0].wait(timeout=WAIT)
        assert status is not None and status.state is JobState.CANCELED
    finally:
        ex.close()


class Linking(Fake):
    links_at_submit = True


def test_a_backend_linking_at_submit_has_the_link_when_submit_returns(
        tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    Linking.ledger = ledger
    work = tmp_path / "work"
    ex = running(Linking, work_directory=work, burst_window=0)
    linked_before_follow = []
    follow = ex.monitor.follow

    def following(job: Job, native_id: str, job_dir: JobDir, linked: bool) -> None:
        # (before follow the monitor does not know the job: only submit can link it)
        linked_before_follow.append(JobDir.find(work, native_id) is not None and linked)
        follow(job, native_id, job_dir, linked)

    monkeypatch.setattr(ex.monitor, "follow", following)
    try:
        job, = submitted(ex, 1)
        # a submitter killed as submit() returns leaves the link behind
        assert linked_before_follow == [True]
        found = JobDir.find(work, job.native_id or "")
        assert found is not None and found.path.name == job.id
    finally:
        ex.close()


@pytest.mark.parametrize("name", ["work", "it's a \"$HOME\" `id` é\nline2 #x"])
def test_a_jobs_directory_is_found_by_its_id_from_a_hard_link_to_its_script(
        tmp_path: Path, ledger: Ledger, name: str) -> None:
    # the link makes no inode (a symlink costs 60-70 us of CPU after mass deletions);
    # the script names its directory, whatever characters the work directory has
    Linking.ledger = ledger
    work = tmp_path / name
    with running(Linking, work_directory=work, burst_window=0) as ex:
        job, = submitted(ex, 1)
    link = work / "ids" / str(job.native_id)
    assert not link.is_symlink() and link.samefile(work / job.id / "job.sh")
    found = JobDir.find(work, str(job.native_id))
    assert found is not None and found.path == work / job.id
    # the work directory moved (the script still names the old one): found where it is
    moved = tmp_path / "moved"
    work.rename(moved)
    found = JobDir.find(moved, str(job.native_id))
    assert found is not None and found.path == moved / job.id
    # a link to any other file is no job's: not found
    link = moved / "ids" / str(job.native_id)
    link.unlink()
    link.write_text((moved / job.id / "job.sh").read_text())
    assert JobDir.find(moved, str(job.native_id)) is None


def test_an_earlier_versions_symlink_to_a_jobs_directory_is_still_read(
        tmp_path: Path, ledger: Ledger) -> None:
    Linking.ledger = ledger
    work = tmp_path / "work"
    with running(Linking, work_directory=work, burst_window=0) as ex:
        job, = submitted(ex, 1)
    link = work / "ids" / str(job.native_id)
    link.unlink()
    link.symlink_to(Path("..") / job.id)
    found = JobDir.find(work, str(job.native_id))
    assert found is not None and found.path.resolve() == (work / job.id).resolve()


def test_a_script_is_refused_for_what_a_submit_is(executor: FakeExecutor, tmp_path: Path) -> None:
    # render_script shows what submit would send, so it checks as submit does, up to
    # the limit of execve(2) on one argument, which every backend that starts programs shares
    spec = JobSpec("/bin/true", ["a" * MAX_ARG_STRLEN])
    with pytest.raises(InvalidJobException, match=r"JobSpec\.arguments\[0\] is"):
        executor.render_script(spec, tmp_path / "job")
    spec.arguments = ["a" * (MAX_ARG_STRLEN - 1)]
    assert "a" * (MAX_ARG_STRLEN - 1) in executor.render_script(spec, tmp_path / "job")


def spares(work: Path) -> list[Path]:
    return sorted(work.glob(".spare-*"))


def test_a_lone_jobs_directory_is_made_while_the_previous_submit_command_runs(
        executor: FakeExecutor) -> None:
    work = executor.work_directory
    first, = submitted(executor, 1)
    spare, = spares(work)  # made while the first job's submit command ran
    assert spare.stat().st_mode & 0o777 == 0o700
    assert (spare / "batch.out").stat().st_mode & 0o777 == 0o600
    assert (spare / "batch.out").read_bytes() == b""
    assert (spare / "job.sh").stat().st_mode & 0o777 == 0o700  # empty, written when taken
    assert (spare / "job.sh").read_bytes() == b""
    inode = spare.stat().st_ino
    second, = submitted(executor, 1)
    assert (work / second.id).stat().st_ino == inode  # the second job took it
    for job in (first, second):  # whole scripts, each naming its own directory
        script = (work / job.id / "job.sh").read_text()
        assert script.startswith("#!/bin/sh\n") and script.endswith('exit "$_hj_status"\n')
        assert f"_hj_dir={work / job.id}\n" in script
    assert len(spares(work)) == 1 and spares(work) != [spare]  # and the next is ready
    executor.close()
    assert spares(work) == []


def test_a_spare_directory_removed_by_someone_else_costs_nothing(executor: FakeExecutor) -> None:
    submitted(executor, 1)
    spare, = spares(executor.work_directory)
    shutil.rmtree(spare)
    job, = submitted(executor, 1)
    assert job.native_id is not None
    assert (executor.work_directory / job.id / "batch.out").is_file()


def test_a_forgotten_executor_leaves_no_spare_directory(tmp_path: Path, ledger: Ledger) -> None:
    Fake.ledger = ledger
    ex = FakeExecutor(config={"work_directory": tmp_path / "work", "burst_window": 0})
    submitted(ex, 1)
    assert len(spares(tmp_path / "work")) == 1
    del ex  # (its monitor thread may hold it a moment longer)
    wait_until(lambda: gc.collect() >= 0 and spares(tmp_path / "work") == [],
               "the forgotten executor's spare directory removed")


def test_the_captured_environment_follows_every_change(tmp_path: Path) -> None:
    # (the environment file's text is remembered between submits: never a stale one)
    env = {"A": "it's", "PBS_JOBID": "reserved", "1BAD": "x"}
    texts = []
    for i, change in enumerate([{}, {"A": "changed"}, {"B": "new"}, {}]):
        env.update(change)
        job_dir = JobDir.create(tmp_path, f"job{i}")
        job_dir.write_environment(exports(env, ("PBS_",)))
        texts.append(job_dir.environment_file.read_text())
        assert job_dir.environment_file.stat().st_mode & 0o777 == 0o600
    assert texts[0] == "export A='it'\"'\"'s'\n"
    assert texts[1] == "export A=changed\n"
    assert texts[2] == texts[3] == "export A=changed\nexport B=new\n"


class Capturing(Fake):
    exports_environment = False  # (as OpenPBS: the base captures the environment)


def test_a_spare_directorys_environment_is_the_one_of_the_submit(
        tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    Capturing.ledger = ledger
    ex = running(Capturing, work_directory=tmp_path / "work", burst_window=0)
    try:
        monkeypatch.setenv("HPCJOBS_SPARE_TEST", "first")
        first, = submitted(ex, 1)
        spare, = spares(tmp_path / "work")  # its environment written ahead, with "first"
        assert "HPCJOBS_SPARE_TEST=first" in (spare / "environment").read_text()
        monkeypatch.setenv("HPCJOBS_SPARE_TEST", "second")
        second, = submitted(ex, 1)
        lone = Job(JobSpec("/bin/true", inherit_environment=False))
        ex.submit(lone)
        work = tmp_path / "work"
        assert "HPCJOBS_SPARE_TEST=first" in (work / first.id / "environment").read_text()
        assert "HPCJOBS_SPARE_TEST=second" in (work / second.id / "environment").read_text()
        assert (work / second.id / "environment").stat().st_mode & 0o777 == 0o600
        assert not (work / lone.id / "environment").exists()
        assert (work / lone.id / "batch.out").is_file()
    finally:
        ex.close()


# -- what backends share through the base ------------------------------------------------
def test_native_ids_are_checked_against_the_declared_pattern(executor: FakeExecutor,
                                                             ledger: Ledger) -> None:
    for bad in ("12x", "x12", "", "12_", "12\n"):
        with pytest.raises(InvalidJobException, match="is not a fake job id"):
            executor.attach(Job(), bad)
    assert executor.scheduler.parse_submit(" 12_3\n") == "12_3"
    with pytest.raises(ValueError, match="not a fake job id"):
        executor.scheduler.parse_submit("Submitted batch job 12\n")


def test_list_runs_the_list_command(executor: FakeExecutor, ledger: Ledger) -> None:
    jobs = submitted(executor, 2)
    assert executor.list() == [job.native_id for job in jobs]


class Refusing(Fake):
    said = "Server busy, try again"

    def submit_command(self, job_dir: JobDir) -> list[str]:
        return ["sh", "-c", 'echo "$0" >&2; exit 1', self.said]


@pytest.mark.parametrize("said, transient", [
    ("fake: SERVER BUSY, try again", True),  # the declared words, in any case
    ("fake: Unknown queue", False),
])
def test_a_refusal_is_transient_when_it_says_a_declared_word(
        tmp_path: Path, ledger: Ledger, said: str, transient: bool) -> None:
    Refusing.ledger, Refusing.said = ledger, said
    with running(Refusing, work_directory=tmp_path, burst_window=0) as ex:
        job = Job(JobSpec("/bin/true"))
        with pytest.raises(SubmitException, match=said) as refused:
            ex.submit(job)
        assert refused.value.transient is transient
        assert job.status.state is JobState.NEW


class Hanging(Fake):
    """Its submit command hangs past the timeout, having submitted the job (or not)."""

    shown: list[tuple[str, str]] = []  # what the scheduler shows: (id, submit command line)
    script = ""

    def submit_command(self, job_dir: JobDir) -> list[str]:
        Hanging.script = str(job_dir.script)
        return ["sleep", "10"]

    def submit_lines(self) -> Iterable[tuple[str, str]]:
        if not self.shown:
            raise CommandError(["fake-qstat"], 1, "", "server down")
        return [(i, line.replace("SCRIPT", self.script)) for i, line in self.shown]


@pytest.mark.parametrize("shown, native_id", [
    ([("7", "-o /elsewhere/job.sh /elsewhere/job.sh"), ("8", "-o x SCRIPT")], "8"),
    ([("9_3", "-J 0-3 SCRIPT")], "9"),  # a task of an array: the array's id
])
def test_a_timed_out_submit_is_found_by_its_script(tmp_path: Path, ledger: Ledger,
                                                   shown: list[tuple[str, str]],
                                                   native_id: str) -> None:
    Hanging.ledger, Hanging.shown = ledger, shown
    ex = running(Hanging, work_directory=tmp_path, burst_window=0, command_timeout=0.3)
    try:
        job = Job(JobSpec("/bin/true"))
        ex.submit(job)
        assert job.native_id == native_id and job.status.state is JobState.QUEUED
    finally:
        ex.close()


def test_a_timed_out_submit_not_found_is_a_transient_failure(
        tmp_path: Path, ledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    Hanging.ledger = ledger
    for shown in ([("7", "-o x /elsewhere/job.sh")], []):  # not there; cannot ask
        Hanging.shown = shown
        ex = running(Hanging, work_directory=tmp_path, burst_window=0, command_timeout=0.3)
        try:
            with pytest.raises(SubmitException, match="timed out") as failed:
                ex.submit(Job(JobSpec("/bin/true")))
            assert failed.value.transient
        finally:
            ex.close()
    assert "cannot look for a job submitted despite the error" in caplog.text


class Showing(Fake):
    """Its submit command hangs past the timeout having submitted the job, which its
    records show with the command line that submitted it (``cmd``), so that the base's
    own ``submit_lines`` finds it. ``recent`` is what ``recent_ids`` lists (None: the
    listing of every job has them); ``asked`` the ids of every status command."""

    submit_line_field = "cmd"
    recent: Optional[list[str]] = None
    lines: dict[str, str] = {}
    asked: list[list[str]] = []

    def submit_command(self, job_dir: JobDir) -> list[str]:
        self.lines[self.ledger.new_id()] = f"-o x {job_dir.script}"
        return ["sleep", "10"]

    def recent_ids(self, since: float) -> Optional[list[str]]:
        return None if self.recent is None else list(self.recent)

    def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        self.asked.append(list(native_ids))
        return {i: {"cmd": self.lines.get(i, "-o y /elsewhere/job.sh")}
                for i in (native_ids or self.lines)}


@pytest.mark.parametrize("recent, asked", [
    (None, [[]]),  # from the listing of every job
    # 250 others made in the window, then ours: newest first, by number ("99" sorts
    # after "1000" as text), 100 ids a command, stopping where it is found
    ([str(i) for i in range(1, 251)] + ["1000"], [["1000"] + [str(i) for i in range(250, 151, -1)]]),
])
def test_a_timed_out_submit_is_found_in_the_records_newest_first(
        tmp_path: Path, ledger: Ledger, recent: Optional[list[str]],
        asked: list[list[str]]) -> None:
    ledger.next_id = 999
    Showing.ledger, Showing.recent = ledger, recent
    Showing.lines, Showing.asked = {}, []
    with running(Showing, work_directory=tmp_path, burst_window=0, command_timeout=0.3) as ex:
        job = Job(JobSpec("/bin/true"))
        ex.submit(job)
        assert job.native_id == "1000" and job.status.state is JobState.QUEUED
        assert Showing.asked[:len(asked)] == asked


class Picky(Fake):
    unusable_in_paths = (re.compile(r"[:\n]"), "the fake scheduler reads it as a host's end")


@pytest.mark.parametrize("name", ["a:b", "a\nb"])
def test_a_work_directory_the_scheduler_cannot_take_is_refused_before_submitting(
        tmp_path: Path, ledger: Ledger, name: str) -> None:
    Picky.ledger = ledger
    with running(Picky, work_directory=tmp_path / name, burst_window=0) as ex:
        job = Job(JobSpec("/bin/true"))
        with pytest.raises(InvalidJobException, match=r"work_directory .* contains '[:\\]"
                                                      r".*': the fake scheduler reads"):
            ex.submit(job)
    assert job.status.state is JobState.NEW and ledger.next_id == 100


class Withdrawing(Fake):
    """Its scheduler keeps the jobs of ``never`` queued, saying it will never run them."""

    never: set[str] = set()

    def native(self, native_id: str, record: JobState) -> NativeStatus:
        ns = super().native(native_id, record)
        if native_id in self.never and record is JobState.QUEUED:
            ns.state, ns.withdraw, ns.message = JobState.FAILED, True, "it can never run"
        return ns


def test_a_job_that_can_never_run_is_cancelled_only_if_it_is_ours(tmp_path: Path,
                                                                   ledger: Ledger) -> None:
    Withdrawing.ledger = ledger
    with running(Withdrawing, work_directory=tmp_path, burst_window=0,
                 min_query_interval=0.05) as ex:
        ours, attached = Job(JobSpec("/bin/true")), Job()
        Withdrawing.never = {str(ledger.next_id + 1), str(ledger.next_id + 2)}
        ex.submit(ours)
        ex.attach(attached, ledger.new_id())  # (submitted by someone else)
        for job in (ours, attached):
            status = job.wait(timeout=WAIT)
            assert status is not None and status.state is JobState.FAILED
            assert "it can never run" in (status.message or "")
        # cancelled so that it does not wait forever; the other user's job left alone
        assert ledger.states[str(ours.native_id)] is JobState.CANCELED
        assert ledger.states[str(attached.native_id)] is JobState.QUEUED


def test_a_scheduler_setting_is_read_once(executor: FakeExecutor,
                                          caplog: pytest.LogCaptureFixture) -> None:
    reads: list[str] = []

    def read() -> int:
        reads.append("limit")
        return 42

    def unreadable() -> int:
        reads.append("broken")
        raise CommandError(["fake-config"], 1, "", "no such server")

    assert [executor.scheduler.read_once("the limit", read, 7) for _ in range(3)] == [42] * 3
    with caplog.at_level(logging.WARNING):
        assert [executor.scheduler.read_once("the other", unreadable, 7) for _ in range(3)] == [7] * 3
    assert reads == ["limit", "broken"]  # a failure is not retried either
    assert "cannot read the other (assuming 7)" in caplog.text


class Listing(Fake):
    few_ids = 2


@pytest.fixture
def listing(tmp_path: Path, ledger: Ledger) -> Iterator[Fake]:
    Listing.ledger = ledger
    Listing.has_history = True
    ex = running(Listing, work_directory=tmp_path, burst_window=0)
    try:
        yield ex.scheduler
    finally:
        ex.close()


def test_few_jobs_are_asked_by_id(listing: Fake, ledger: Ledger) -> None:
    ledger.states.update({"1": JobState.ACTIVE, "2": JobState.COMPLETED})
    found = listing.query(["2", "9"])  # (9: unknown, left out)
    assert {i: ns.state for i, ns in found.items()} == {"2": JobState.COMPLETED}
    assert [ids for _, ids in ledger.queries] == [["2", "9"]]


def test_many_jobs_are_listed_and_only_those_not_listed_asked_by_id(
        listing: Fake, ledger: Ledger) -> None:
    ledger.states.update({"1": JobState.ACTIVE, "2": JobState.COMPLETED, "3": JobState.QUEUED,
                          "4_0": JobState.FAILED, "4_1": JobState.COMPLETED,
                          "5": JobState.ACTIVE})  # (5: another of the user's jobs)
    asked = ["1", "2", "3", "4_0", "4_1", "6"]  # 6: gone, even from the history
    found = listing.query(asked)
    assert {i: ns.state for i, ns in found.items()} == {
        "1": JobState.ACTIVE, "2": JobState.COMPLETED, "3": JobState.QUEUED,
        "4_0": JobState.FAILED, "4_1": JobState.COMPLETED}
    # one listing, then the history of the others: an array's tasks through the array
    assert [ids for _, ids in ledger.queries] == [[], ["2", "4", "6"]]
    ledger.queries.clear()
    Listing.has_history = False  # a scheduler that forgets a job as it ends
    found = listing.query(asked)
    assert set(found) == {"1", "3"} and [ids for _, ids in ledger.queries] == [[]]


@pytest.mark.parametrize("stderr, code, unknown_exit, good", [
    ("", 0, (), True),
    ("qstat: Unknown Job Id 5\nqstat: Unknown Job Id 6", 153, (), True),  # its word only
    ("qstat: Unknown Job Id 5", 1, (), True),
    ("", 153, (), False),  # a failure nothing explains
    ("", 153, (153,), True),  # ... unless the backend says the status means unknown ids
    ("qstat: Unknown Job Id 5", 1, (153,), False),  # ... and then no other status does
    ("qstat: cannot connect to server", 0, (), False),  # any other complaint
    ("qstat: Unknown Job Id 5\nConnection refused", 153, (153,), False),
])
def test_a_status_commands_word_on_unknown_ids(executor: FakeExecutor, stderr: str, code: int,
                                               unknown_exit: tuple[int, ...],
                                               good: bool) -> None:
    argv = ["sh", "-c", 'echo "{}"; printf "%s" "$0" >&2; exit $1', stderr, str(code)]
    unknown = re.compile(r"^qstat: Unknown Job Id")
    if good:
        assert executor.scheduler.run_status(argv, unknown, json.loads, unknown_exit) == {}
    else:
        with pytest.raises(CommandError):
            executor.scheduler.run_status(argv, unknown, json.loads, unknown_exit)


def test_a_status_answer_that_cannot_be_read_is_a_failed_query(executor: FakeExecutor) -> None:
    # what qstat printed, cut short: no job may be judged on it
    with pytest.raises(CommandError, match="exited with code 0"):
        executor.scheduler.run_status(["echo", '{"Jobs": {'], re.compile("^$"), json.loads)


def test_a_native_status_carries_its_native_state_and_why_it_waits() -> None:
    ns = NativeStatus("1", "PD", JobState.QUEUED)
    ns.waiting("", None)
    assert ns.metadata == {"native_state": "PD"}  # (no reason, no estimate: none)
    estimate = local_time("2026-11-23T13:17:42", "%Y-%m-%dT%H:%M:%S")
    assert estimate is not None and local_time("N/A", "%Y-%m-%dT%H:%M:%S") is None
    ns.waiting("Priority", estimate)
    assert ns.status().metadata == {"native_state": "PD", "reason_pending": "Priority",
                                    "t_estimate": estimate}


def test_a_burst_goes_out_as_arrays_of_the_schedulers_size(executor: FakeExecutor,
                                                          ledger: Ledger) -> None:
    # 6 jobs of one shape, the fake's arrays take 4: an array of 4, then one of 2, each
    # task a job that the scheduler's word moves like any other
    jobs = [Job(JobSpec("/bin/true", name="same")) for _ in range(6)]
    executor.submit_many(jobs)
    ids = [job.native_id for job in jobs]
    assert ids == ["101_0", "101_1", "101_2", "101_3", "102_0", "102_1"], ids
    arrays = sorted(executor.work_directory.glob("array-*"))
    assert len(arrays) == 2
    script = (arrays[0] / "job.sh").read_text()
    assert "#FAKE --name=same\n" in script and "FAKE_ARRAY_INDEX" in script
    with ledger.lock:
        for native_id in ids:
            ledger.states[str(native_id)] = JobState.COMPLETED
    for job in jobs:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.COMPLETED


def test_a_scheduler_without_holds_says_so_before_anything_is_submitted(
        executor: FakeExecutor, ledger: Ledger) -> None:
    job = Job(JobSpec("/bin/true"))
    with pytest.raises(NotImplementedError, match="fake executor cannot hold"):
        executor.submit(job, hold=True)
    assert job.status.state is JobState.NEW and not ledger.states
    executor.submit(job)
    with pytest.raises(NotImplementedError, match="cannot hold"):
        executor.hold(job)
    with pytest.raises(NotImplementedError, match="cannot release"):
        executor.release(job)


class Holding(Fake):
    """A scheduler with holds: its hold and release commands mark the ledger."""

    hold_submit_option = "-e"  # (sh's: the submit command below runs the same with it)
    held: set[str] = set()

    def submit_command(self, job_dir: JobDir) -> list[str]:
        return ["sh", "-c", 'echo "$0"', self.ledger.new_id()]

    def hold_command(self, native_id: str) -> list[str]:
        return self._mark(native_id, True)

    def release_command(self, native_id: str) -> list[str]:
        return self._mark(native_id, False)

    def _mark(self, native_id: str, held: bool) -> list[str]:
        with self.ledger.lock:
            if self.ledger.states[native_id].final:
                return ["sh", "-c", "echo 'job has ended' >&2; exit 1"]
            (self.held.add if held else self.held.discard)(native_id)
        return ["true"]


def test_hold_and_release_run_the_schedulers_commands(tmp_path: Path, ledger: Ledger) -> None:
    Holding.ledger, Holding.held = ledger, set()
    with running(Holding, work_directory=tmp_path, burst_window=0,
                 min_query_interval=0.05) as ex:
        job = Job(JobSpec("/bin/true"))
        ex.submit(job, hold=True)  # (the option went to sh: the id came back all the same)
        assert job.status.state is JobState.QUEUED
        assert (job.status.metadata or {}).get("held") is True
        ex.hold(job)
        assert Holding.held == {job.native_id}
        ex.release(job)
        assert not Holding.held and "held" not in (job.status.metadata or {})
        # a job that started meanwhile: its hold is undone, and hold() says why
        ledger.states[job.native_id or ""] = JobState.ACTIVE
        with pytest.raises(InvalidJobStateError, match="has started"):
            ex.hold(job)
        assert not Holding.held
        ledger.states[job.native_id or ""] = JobState.COMPLETED
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.COMPLETED


def test_first_command_names_what_a_query_would_run_and_runs_nothing() -> None:
    # The monitor sends a due query's first command ahead with its read of the notes
    # (a host over ssh: one round trip): the call stops at that command, nothing runs,
    # and a command run by another thread meanwhile is not stopped.
    import threading
    from hpcjobs.executors.batch import BatchConfig
    from hpcjobs.executors.batch.host import Host
    from hpcjobs.external import CommandResult
    ran: list[list[str]] = []

    class Recording(Host):  # (a test double: records the commands it is asked to run)
        def run(self, argv: Sequence[str], *, timeout: float, check: bool = True,
                meanwhile: Any = None) -> CommandResult:
            ran.append(list(argv))
            return CommandResult(list(argv), 0, "", "")

    class TwoCommands(Fake):
        def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
            self.run(["stat", *native_ids])
            self.run(["more"])
            return {}

    scheduler = TwoCommands(BatchConfig(), Recording())

    def query_while_another_thread_runs() -> None:
        other = threading.Thread(target=scheduler.run, args=(["other"],))
        other.start()
        other.join()
        scheduler.query(["1", "2"])

    assert scheduler.first_command(query_while_another_thread_runs) == ["stat", "1", "2"]
    assert ran == [["other"]]
    assert scheduler.first_command(lambda: scheduler.query([])) is None  # (no command)
    scheduler.query(["3"])
    assert ran == [["other"], ["stat", "3"], ["more"]]


def test_partials_render_as_pystache_renders_them(tmp_path: Path) -> None:
    # standalone partials are inlined once before parsing; indented, nested, and one
    # that changes the delimiters (left to the renderer: its change ends with it) render
    # as the renderer itself renders them
    import pystache
    from hpcjobs.executors.batch.script import render
    (tmp_path / "inner.mustache").write_text("in {{a}}\n\nend\n")
    (tmp_path / "outer.mustache").write_text("o {{a}}\n  {{> inner}}\n")
    (tmp_path / "delims.mustache").write_text("{{=<% %>=}}\nd <%a%>\n")
    (tmp_path / "t.mustache").write_text(
        "top {{a}}\n{{> outer}}\n{{> delims}}\nafter {{a}} {{> inner}}\n")
    context = {"a": "x"}
    expected = pystache.Renderer(escape=lambda s: s, search_dirs=[str(tmp_path)],
                                 file_extension="mustache").render(
        (tmp_path / "t.mustache").read_text(), context)
    assert render(tmp_path / "t.mustache", context) == expected
