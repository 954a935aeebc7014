"""The batch monitor's status query calendar (query_calendar.py) on its own: which jobs
a tick asks about, when they are asked again, and the hold while submits come. No
processes and no waiting: the calendar reads a clock the tests move."""

from __future__ import annotations

from typing import Iterable, Optional

import pytest

from hpcjobs.executors.batch import BatchConfig
from hpcjobs.executors.batch.query_calendar import QueryCalendar

INF = float("inf")


class Clock:
    """Monotonic time that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Job:
    """What the monitor's _Tracked gives the calendar."""

    def __init__(self, name: str, blind: bool = False) -> None:
        self.name = name
        self.due = INF
        self.interval = 0.0
        self.blind = blind

    def __repr__(self) -> str:
        return self.name


class Calendar:
    """A calendar over ``Job``s and a ``Clock``, with the live jobs as a set."""

    def __init__(self, **config: float) -> None:
        self.clock = Clock()
        self.config = BatchConfig(**config)
        self.live: set[Job] = set()
        self.cal: QueryCalendar[Job] = QueryCalendar(self.config, self.live.__contains__,
                                                     self.clock)

    def job(self, name: str, delay: Optional[float] = None, blind: bool = False,
            pressing: bool = False) -> Job:
        """A followed job, its query ``delay`` seconds from now (default: the minimum)."""
        job = Job(name, blind)
        self.live.add(job)
        self.cal.schedule(job, self.config.min_query_interval if delay is None else delay,
                          pressing)
        return job

    def at(self, seconds: float) -> "Calendar":
        self.clock.now += seconds
        return self

    def take(self) -> set[str]:
        return {job.name for job in self.cal.take_due()}

    def intervals(self, job: Job, rounds: int, urgent: Iterable[Job] = (),
                  failed: bool = False) -> list[float]:
        """``job``'s intervals over ``rounds`` rounds of take and requeue (``failed``:
        the status command failed)."""
        seen = []
        for _ in range(rounds):
            self.clock.now = job.due
            assert self.cal.take_due() == [job]
            self.cal.requeue([job], None if failed else set(urgent))
            seen.append(job.interval)
        return seen


@pytest.fixture
def c() -> Calendar:
    return Calendar()


def test_nothing_is_asked_before_it_is_due(c: Calendar) -> None:
    c.job("a")
    assert c.at(1.5).take() == set()
    assert c.at(0.5).take() == {"a"}
    assert c.take() == set()  # taken: not queued until requeued


def test_jobs_due_close_together_are_asked_in_one_command(c: Calendar) -> None:
    c.job("a", 2.0)
    c.job("b", 2.9)  # within half the minimum interval (1 s) of a
    c.job("c", 3.5)
    assert c.at(2.0).take() == {"a", "b"}
    assert c.at(1.5).take() == {"c"}


def test_a_job_with_a_long_interval_joins_up_to_a_quarter_of_it_early(c: Calendar) -> None:
    d = c.job("d")
    c.at(2.0).cal.take_due()
    d.interval = 20.0  # doubled by the requeue: 40, so d may go up to 10 s early
    c.cal.requeue([d], set())
    assert d.due == c.clock.now + 40.0
    c.job("e", 31.0)  # 9 s before d
    c.job("f", 40.5)  # 9.5 s after e, but its interval is the minimum (2 s)
    assert c.at(30.5).take() == set()
    assert c.at(0.5).take() == {"e", "d"}
    assert c.at(9.0).take() == set()
    assert c.at(0.5).take() == {"f"}


def test_stale_entries_are_dropped(c: Calendar) -> None:
    a = c.job("a", 5.0)
    c.cal.schedule(a, 1.0, pressing=False)  # sooner: the entry at 5 s is stale
    b = c.job("b", 3.0)
    c.live.discard(b)  # ended: its entry is stale
    assert c.cal.next_wait(polling=False) == 1.0
    assert c.at(1.0).take() == {"a"}
    assert c.cal.next_wait(polling=False) == INF  # neither the old a nor b is left
    assert c.at(10.0).take() == set()


def test_the_interval_doubles_up_to_the_maximum(c: Calendar) -> None:
    a = c.job("a")
    assert c.intervals(a, 7) == [4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


def test_a_job_without_files_is_asked_at_least_every_blind_interval(c: Calendar) -> None:
    a = c.job("a", blind=True)
    assert c.intervals(a, 5) == [4.0, 8.0, 15.0, 15.0, 15.0]


def test_an_urgent_job_is_asked_again_at_the_minimum_interval(c: Calendar) -> None:
    a = c.job("a")
    c.intervals(a, 3)
    assert c.intervals(a, 2, urgent={a}) == [2.0, 2.0]


def test_a_failed_query_backs_off_5_s_or_more(c: Calendar) -> None:
    a = c.job("a")
    assert c.intervals(a, 1, failed=True) == [5.0]  # 2 doubled is 4: at least 5
    assert c.intervals(a, 4, failed=True) == [10.0, 20.0, 40.0, 60.0]


def test_an_ended_or_already_rescheduled_job_is_not_requeued(c: Calendar) -> None:
    a = c.job("a")
    b = c.job("b")
    c.at(2.0).cal.take_due()
    c.cal.schedule(b, 0.5, pressing=True)  # a cancel while its query ran
    c.live.discard(a)
    c.cal.requeue([a, b], set())
    assert a.due == INF and b.due == c.clock.now + 0.5


def test_routine_queries_wait_while_submits_come(c: Calendar) -> None:
    c.job("a", 0.0)
    for _ in range(10):  # a submit every 0.2 s (less than file_poll_interval, 0.25)
        c.cal.submitted()
        assert c.at(0.2).take() == set()
    assert c.at(0.25).take() == {"a"}  # a file_poll_interval without a submit


def test_a_hold_ends_after_max_query_hold_however_the_submits_go_on(c: Calendar) -> None:
    c.job("a", 0.0)
    asked = []
    for tick in range(120):  # 15 s of a submit every 0.125 s
        c.cal.submitted()
        if c.at(0.125).take():
            asked.append(tick)
    assert asked == [79]  # due at 0, asked 10 s later (max_query_hold)


def test_the_monitor_sleeps_until_the_hold_may_end(c: Calendar) -> None:
    c.job("a", 0.0)
    c.cal.submitted()
    # the next submit may not come: then the queries go at file_poll_interval
    assert c.cal.next_wait(polling=False) == pytest.approx(0.25)
    # a routine query is no reason to wake a holding monitor; a pressing one is
    assert not c.cal.schedule(c.job("b", 0.0), 0.0, pressing=False)
    assert c.cal.schedule(c.job("p", 0.0), 0.0, pressing=True)


def test_pressing_queries_are_never_held(c: Calendar) -> None:
    c.job("a", 0.0)
    p = c.job("p", 0.5, pressing=True)  # a cancel's
    for _ in range(3):
        c.cal.submitted()
        assert c.at(0.125).take() == set()
    c.cal.submitted()
    assert c.at(0.125).take() == {"a", "p"}  # p is due: the routine one goes with it
    c.cal.schedule(p, 0.0, pressing=True)
    c.cal.submitted()
    assert c.take() == {"p"}


def test_a_hold_of_zero_seconds_holds_nothing() -> None:
    c = Calendar(max_query_hold=0.0)
    c.job("a", 0.0)
    c.cal.submitted()
    assert c.take() == {"a"}


def test_an_idle_monitor_is_woken_by_the_next_query(c: Calendar) -> None:
    assert c.cal.next_wait(polling=True) == 0.25  # job files to look at
    c.cal.idle()
    assert c.cal.schedule(c.job("a"), 2.0, pressing=False)
    assert c.cal.next_wait(polling=False) == 2.0
    assert not c.cal.schedule(c.job("b"), 3.0, pressing=False)  # after the next tick


def test_an_idle_monitor_is_woken_even_if_it_was_holding(c: Calendar) -> None:
    # a job submitted, and ended on the monitor's next tick: the tick before it began a
    # hold for the submits, and the monitor then went idle (its thread ended)
    c.job("a")
    c.cal.submitted()
    assert c.cal.next_wait(polling=True) == pytest.approx(0.25)  # holding
    c.live.clear()
    c.cal.idle()
    # the next submit must wake it: nothing else would ever ask about that job
    c.cal.submitted()
    assert c.cal.schedule(c.job("b"), 2.0, pressing=False)
