"""What the monitor does per submit and per tick, counted on the real Slurm (issue 17:
the thousandth submit must cost what the first did). No timing: the counts are of
monitor ticks, of the jobs whose files a tick looks at, and of status queries.

``CountingSlurm`` is the real Slurm executor with counters around its monitor's ticks
and looks at job files and its backend's status queries.
"""

from __future__ import annotations

import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import pytest

from hpcjobs import Job, JobAttributes, JobSpec, JobState
from hpcjobs.executors.batch import NativeStatus
from hpcjobs.executors.batch.monitor import StatusMonitor
from hpcjobs.executors.slurm.executor import Slurm, SlurmJobExecutor

from slurm_helpers import WAIT

HELD = JobAttributes(custom_attributes={"slurm.hold": True})


class CountingScheduler(Slurm):
    """Slurm's backend, counting the ids of each status query and how each squeue chose
    its jobs (--jobs or --user)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.queries: list[list[str]] = []
        self.squeues: list[str] = []

    def query(self, native_ids: Sequence[str]) -> dict[str, NativeStatus]:
        self.queries.append(list(native_ids))
        return super().query(native_ids)

    def records(self, native_ids: Sequence[str]) -> dict[str, str]:
        self.squeues.append("--jobs" if native_ids else "--user")
        return super().records(native_ids)


class CountingMonitor(StatusMonitor):
    """The monitor, counting its ticks and the looks at each job's files."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.ticks = 0
        self.looked: Counter[str] = Counter()  # native id -> looks at its files
        self.ticked = threading.Condition()

    def tick(self) -> Optional[float]:
        wait = super().tick()
        with self.ticked:
            self.ticks += 1
            self.ticked.notify_all()
        return wait

    def check_files(self, jobs: Sequence[Any], *read: Any) -> set[str]:
        self.looked.update(t.native_id for t in jobs)
        return super().check_files(jobs, *read)


class CountingSlurm(SlurmJobExecutor):
    """The real Slurm executor, with the counting monitor and backend above."""

    scheduler_class = CountingScheduler
    scheduler: CountingScheduler

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.monitor.stop()  # (never started: replaced before any job)
        self.monitor = self.counting = CountingMonitor(
            self.name, self._instance, self.scheduler, self.config, self.work_directory,
            self._set_job_status)

    @property
    def ticks(self) -> int:
        return self.counting.ticks

    @property
    def looked(self) -> Counter[str]:
        return self.counting.looked

    @property
    def queries(self) -> list[list[str]]:
        return self.scheduler.queries

    @property
    def squeues(self) -> list[str]:
        return self.scheduler.squeues

    def wait_ticks(self, n: int) -> None:
        """Wait for ``n`` more ticks."""
        with self.counting.ticked:
            target = self.ticks + n
            assert self.counting.ticked.wait_for(lambda: self.ticks >= target, WAIT), "no ticks"


def held_jobs(ex: CountingSlurm, n: int) -> list[Job]:
    jobs = [Job(JobSpec("/bin/true", attributes=HELD)) for _ in range(n)]
    for job in jobs:
        ex.submit(job)
    return jobs


@pytest.fixture
def counting(slurm_cluster: str, work_dir: Path) -> Iterator[Any]:
    """Makes CountingSlurm executors; cancels their jobs (held ones would stay) and
    closes them after the test."""
    made: list[CountingSlurm] = []

    def make(cls: type[CountingSlurm] = CountingSlurm, **config: Any) -> CountingSlurm:
        made.append(cls(config={"work_directory": work_dir, **config}))
        return made[-1]

    yield make
    for ex in made:
        ids = ex.monitor.native_ids
        if ids:
            subprocess.run(["scancel", *ids], check=False, timeout=60)
        ex.close()


def test_submits_do_not_wake_the_monitor(counting: Any) -> None:
    # the monitor's own period and the first query are far away: any tick during the
    # burst beyond the one that starts the monitor would be a submit's doing
    ex = counting(file_poll_interval=600, min_query_interval=3600)
    held_jobs(ex, 20)
    assert ex.ticks <= 1
    assert ex.queries == []


def test_a_tick_looks_only_at_the_jobs_that_changed(counting: Any) -> None:
    ex = counting(file_poll_interval=0.05, min_query_interval=3600)
    jobs = held_jobs(ex, 20)
    ex.wait_ticks(10)
    assert ex.looked == Counter()  # nothing happened to any of them
    # one job runs: its script's notes, not a status query, tell the monitor
    released = str(jobs[0].native_id)
    subprocess.run(["scontrol", "release", released], check=True, timeout=60)
    status = jobs[0].wait(timeout=WAIT)
    assert status is not None and status.state is JobState.COMPLETED
    assert ex.queries == []
    ex.wait_ticks(10)
    assert set(ex.looked) == {released}
    assert ex.looked[released] <= 2  # once when it started, once when it ended
    assert all(job.status.state is JobState.QUEUED for job in jobs[1:])



def test_a_burst_of_submits_asks_slurm_nothing_until_it_ends(counting: Any) -> None:
    # each job is due a query 0.05 s after its submit, and the burst lasts while the
    # submits come less than file_poll_interval (1 s) apart: the queries wait for its
    # end (max_query_hold, 10 s by default), then one squeue asks about every job
    ex = counting(file_poll_interval=1.0, min_query_interval=0.05)
    jobs = held_jobs(ex, 40)
    assert ex.queries == []
    ex.wait_ticks(2)  # (a tick after the hold's end asks)
    assert ex.queries, "no status query after the burst"
    assert set(ex.queries[0]) == {job.native_id for job in jobs}
    assert all(job.status.state is JobState.QUEUED for job in jobs)


class FewIds(CountingScheduler):
    """Lists the user's jobs for a status query of more than 3 jobs (50 in earnest)."""

    few_ids = 3


class FewIdsSlurm(CountingSlurm):
    scheduler_class = FewIds


class ForeignListing(FewIds):
    """Its listings name another user (``listed``): none of its jobs is listed, as for
    another user's job it attached to."""

    listed = ""

    def user_selection(self) -> str:
        return f"--user={self.listed}"


class ForeignListingSlurm(CountingSlurm):
    scheduler_class = ForeignListing


def cancel_behind_its_back(ex: CountingSlurm) -> list[Job]:
    """Submits 8 held jobs in a burst (their first query waits for its end: one query of
    all 8) and scancels the first: only a status query can tell the executor."""
    jobs = held_jobs(ex, 8)
    subprocess.run(["scancel", str(jobs[0].native_id)], check=True, timeout=60)
    status = jobs[0].wait(timeout=WAIT)
    assert status is not None and status.state is JobState.CANCELED, status
    assert set(ex.queries[0]) == {job.native_id for job in jobs}
    assert all(job.status.state is JobState.QUEUED for job in jobs[1:])
    return jobs


def test_many_jobs_are_asked_with_one_listing_of_the_users_jobs(counting: Any) -> None:
    # squeue given many ids loads every job of the cluster and matches each against
    # each id; given the user, only the user's jobs: one command, whatever the count
    ex = counting(FewIdsSlurm, file_poll_interval=1.0, min_query_interval=0.05)
    cancel_behind_its_back(ex)
    assert ex.squeues[0] == "--user", ex.squeues
    assert len(ex.squeues) == len(ex.queries), ex.squeues  # one command a query


@pytest.mark.parametrize("listed", ["65534", "987654321"], ids=["nobody", "no-such-user"])
def test_jobs_a_listing_misses_are_asked_by_id(counting: Any, listed: str) -> None:
    # not listed: another user's job, or one gone from the queue; a uid squeue cannot
    # name ("Invalid user") lists nothing: every job is then asked by id
    ForeignListing.listed = listed
    ex = counting(ForeignListingSlurm, file_poll_interval=1.0, min_query_interval=0.05)
    cancel_behind_its_back(ex)
    assert ex.squeues[:2] == ["--user", "--jobs"], ex.squeues
