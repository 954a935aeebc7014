"""``QueryCalendar``: when the batch monitor asks the scheduler about each job.

Each job has its own next query time: ``min_query_interval`` after its submit and after
its start, at once after an attach, soon after a cancel, then with a doubling interval
up to ``max_query_interval`` (``blind_query_interval`` for a job without job files). The
jobs due within half the minimum interval (or a quarter of their own interval) of each
other are asked in ONE command, never one per submit. While the executor is submitting,
the queries the calendar asks for wait for the burst to end (up to ``max_query_hold``
past due): the scheduler serves the submits first. Those a cancel, an attach or a
signal asks for (pressing ones) never wait. A failed query backs off (5 s or more).

The calendar has no lock of its own: the executor calls it with its lock held (monitor.py
and executor.py). Its clock is ``time.monotonic`` unless given another (the unit tests).
"""

from __future__ import annotations

import heapq
import itertools
import time
from typing import Callable, Container, Generic, Iterable, List, Optional, Protocol, TypeVar

from .config import BatchConfig

__all__ = ["Queried", "QueryCalendar"]


class Queried(Protocol):
    """What the calendar reads and sets on a job (the monitor's ``_Tracked``)."""

    #: when to ask the scheduler next (monotonic); infinite while not queued
    due: float
    #: the current query interval (doubles, see BatchConfig)
    interval: float

    @property
    def blind(self) -> bool:
        """True for a job without job files: the scheduler is its only witness."""


_Q = TypeVar("_Q", bound=Queried)


class QueryCalendar(Generic[_Q]):
    """The status queries to come, and when the monitor's next tick is due for them.
    ``live(job)`` says whether a job is still followed: a queued query of one that is
    not is stale, and dropped."""

    def __init__(self, config: BatchConfig, live: Callable[[_Q], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._live = live
        self._clock = clock
        # (due time, tie-breaker, job): the status queries to come; an entry is stale
        # once its job ended or was rescheduled (its due differs)
        self._queries: list[tuple[float, int, _Q]] = []
        self._order = itertools.count()
        self._wake_at = float("inf")  # when the monitor's next tick comes (monotonic)
        self._last_submit = float("-inf")  # when this executor last accepted a job
        self._holding = False  # the monitor's next tick is when the hold may end
        # jobs whose queued query an event asked for (cancel, attach, signal), not the
        # calendar: such a query does not wait for a burst of submits to end
        self._pressing: set[_Q] = set()

    def schedule(self, t: _Q, delay: float, pressing: bool) -> bool:
        """Ask the scheduler about ``t`` within ``delay`` seconds, resetting its backoff;
        a ``pressing`` query (an event's, not the calendar's) is not held for submits.
        True if the monitor must be woken for it."""
        t.interval = self._config.min_query_interval
        due = self._clock() + delay
        if due < t.due:
            self._queue(t, due, pressing or t in self._pressing)
        elif pressing and t not in self._pressing:  # (due sooner already: pressing now)
            due = t.due
            self._queue(t, due, pressing)
        # (a monitor holding the queries for the submits wakes when the hold may end)
        return due < self._wake_at and (pressing or not self._holding)

    def submitted(self) -> None:
        """This executor has just accepted a job: routine queries wait (``_held``)."""
        self._last_submit = self._clock()

    def forget(self, t: _Q) -> None:
        """``t`` is no longer followed (its queued queries are stale, see ``live``)."""
        self._pressing.discard(t)

    def take_due(self) -> List[_Q]:
        """The jobs to ask about now: if one is due, the jobs next due join it, in the
        order they are due, as long as each is due within half the minimum interval or
        within a quarter of its own interval (one command instead of one per tick; and
        jobs submitted over a while, whose doubling intervals would keep them apart,
        fall into step: a job is asked at most a quarter of its interval early).
        Nothing while the queries are held."""
        now = self._clock()
        due: List[_Q] = []
        if self._next_due() > now or self._held(now):
            return due
        least = self._config.min_query_interval / 2
        while (when := self._next_due()) != float("inf"):
            t = self._queries[0][2]
            if when > now + max(least, t.interval / 4):
                break
            heapq.heappop(self._queries)
            t.due = float("inf")
            self._pressing.discard(t)
            due.append(t)
        return due

    def requeue(self, asked: Iterable[_Q], urgent: Optional[Container[_Q]]) -> None:
        """Schedule the next query of the jobs just asked about: soon for the ``urgent``
        ones, else after a doubled interval; after a failed query (``urgent`` None) at
        least 5 s later."""
        now = self._clock()
        config = self._config
        for t in asked:
            if not self._live(t) or t.due != float("inf"):
                continue  # ended, or already asked for again (cancel, a signal seen)
            if urgent is None:
                t.interval = min(max(t.interval * 2, 5.0), config.max_query_interval)
            elif t in urgent:
                t.interval = config.min_query_interval
            else:
                longest = config.max_query_interval
                if t.blind:  # the scheduler is its only witness
                    longest = min(longest, config.blind_query_interval)
                t.interval = min(t.interval * 2, longest)
            self._queue(t, now + t.interval)

    def next_wait(self, polling: bool) -> float:
        """Seconds until the monitor's next tick: when the next query is due or the hold
        may end, and at most ``file_poll_interval`` while job files are ``polling``."""
        now = self._clock()
        hold_end = self._hold_end(now)
        self._holding = hold_end > now
        wait = max(0.0, self._next_due() - now, hold_end - now)
        if polling:
            wait = min(wait, self._config.file_poll_interval)
        self._wake_at = now + wait
        return wait

    def idle(self) -> None:
        """The monitor stops ticking (no job to follow): the next query wakes it."""
        self._wake_at = float("inf")
        # an idle monitor holds nothing: a hold its last tick began (a job submitted and
        # ended within a file_poll_interval) must not keep the next submit from waking
        # it, or that job would never be followed
        self._holding = False

    def _queue(self, t: _Q, due: float, pressing: bool = False) -> None:
        """``t``'s next status query is at ``due``."""
        t.due = due
        if pressing:
            self._pressing.add(t)
        else:
            self._pressing.discard(t)
        heapq.heappush(self._queries, (due, next(self._order), t))

    def _next_due(self) -> float:
        """When the next status query is due (stale entries dropped)."""
        queries = self._queries
        while queries:
            due, _, t = queries[0]
            if t.due == due and self._live(t):
                return due
            heapq.heappop(queries)
        return float("inf")

    def _held(self, now: float) -> bool:
        """Whether the due queries wait for this executor's submits: none is pressing, a
        submit came within ``file_poll_interval`` and the first has been due for less
        than ``max_query_hold``. (A burst of submits then costs no status command until
        it ends, or one every ``max_query_hold`` seconds.)"""
        return (now - self._last_submit < self._config.file_poll_interval
                and now - self._next_due() < self._config.max_query_hold
                and not any(t.due <= now for t in self._pressing))

    def _hold_end(self, now: float) -> float:
        """When ``_held`` is to be asked again, if it holds now."""
        if not self._held(now):
            return now
        return min(self._last_submit + self._config.file_poll_interval,
                   self._next_due() + self._config.max_query_hold,
                   *(t.due for t in self._pressing))
