"""Bursts of submissions become scheduler job arrays, without ``submit()`` returning early.

A workflow system submitting thousands of small jobs would otherwise cost the scheduler
one submission RPC per job; an array is one submission for many tasks (and counts as
one job against per-user submit limits). docs/arrays.md has the user's view.

How a burst is collected while ``submit()`` stays synchronous (it returns once the job
is submitted, or raises):

* Every submit stages its job first (validated, job directory and script written) and
  queues it in the :class:`BurstCollector`. The first caller that finds no submission in
  progress becomes the *leader*: it takes everything queued and sends it (grouped by
  :func:`shape`, one array per group); the others wait for their job's outcome. Jobs
  submitted while the leader's scheduler call runs are queued and go out together in
  the next round (group commit). A lone submit never waits: it is its own round.
* When other callers are already waiting (a burst is under way), the leader keeps the
  queue open until ``window`` seconds after its oldest job arrived, so callers arriving
  a moment apart still share an array.
* A single-threaded loop cannot form a burst through ``submit()`` (each call returns only
  once its job is in), hence the explicit ``submit_many(jobs)``: one round for all.

A caller interrupted while its jobs are still queued takes them back (they are released,
never submitted); jobs already in the leader's hands are submitted or released by it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Hashable, Iterator, Mapping, Optional, Sequence

from ...errors import SubmitException
from ...job import Job
from ...spec import JobSpec
from .jobdir import JobDir

__all__ = ["Staged", "BurstCollector", "shape", "chunks"]

log = logging.getLogger(__name__)


class Staged:
    """A job ready to go out: claimed, its directory and script written.

    ``shape`` is what it must share with others to go in the same array (None: it
    always goes alone). The sender sets ``native_id`` or ``error``, then ``done``.
    """

    __slots__ = ("job", "spec", "job_dir", "directives", "shape", "arrived", "taken",
                 "withdrawn", "done", "native_id", "error")

    def __init__(self, job: Job, spec: JobSpec, job_dir: JobDir, directives: dict[str, Any],
                 shape: Optional[Hashable]) -> None:
        self.job = job
        self.spec = spec
        self.job_dir = job_dir
        self.directives = directives
        self.shape = shape
        self.arrived = 0.0
        self.taken = False      # in a leader's round
        self.withdrawn = False  # taken back by its interrupted caller: never sent
        self.done = False
        self.native_id: Optional[str] = None
        self.error: Optional[SubmitException] = None


def shape(directives: Mapping[str, Any], per_job: Sequence[str]) -> Hashable:
    """The grouping key of a job: its scheduler directives (resources, walltime, queue,
    account, reservation, custom options: everything an array's tasks share), except
    the ``per_job`` ones that an array may differ in (the job name)."""
    return repr(sorted((k, v) for k, v in directives.items() if k not in per_job))


def chunks(items: Sequence[Staged], size: int) -> Iterator[Sequence[Staged]]:
    """``items`` in slices of at most ``size`` (the scheduler's array size limit)."""
    for i in range(0, len(items), max(1, size)):
        yield items[i:i + size]


class BurstCollector:
    """Groups concurrent submissions into rounds (see the module docstring).

    ``send(batch)`` submits a round: it must mark every item ``done`` (with
    ``native_id`` or ``error``); it runs on the leader's thread without the lock held.
    """

    def __init__(self, window: float, send: Callable[[list[Staged]], None]) -> None:
        self._window = window
        self._send = send
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[Staged] = []
        self._callers = 0  # callers whose jobs are not all done
        self._leading = False

    def submit(self, items: Sequence[Staged]) -> None:
        """Queue ``items`` and return once each is done (or withdrawn, if this caller is
        interrupted first: then the interruption is raised)."""
        with self._cond:
            now = time.monotonic()
            for item in items:
                item.arrived = now
            self._queue.extend(items)
            self._callers += 1
            try:
                while not all(item.done for item in items):
                    if self._leading:
                        self._cond.wait()
                    else:
                        self._lead()
            except BaseException:
                self._withdraw(items)
                raise
            finally:
                self._callers -= 1

    def _lead(self) -> None:
        """Run one round (called with the lock held; released during the send)."""
        self._leading = True
        try:
            if self._window > 0 and self._callers > 1:  # a burst is under way
                deadline = self._queue[0].arrived + self._window
                while (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
            batch, self._queue = self._queue, []
            for item in batch:
                item.taken = True
            self._cond.release()
            try:
                self._send_all(batch)
            finally:
                self._cond.acquire()
        finally:
            self._leading = False
            self._cond.notify_all()

    def _send_all(self, batch: list[Staged]) -> None:
        try:
            self._send(batch)
        except BaseException as e:  # a bug or an interruption: no caller may wait forever
            for item in batch:
                if not item.done:
                    item.error = SubmitException(f"job {item.job.id} was not submitted: {e!r}", e)
                    item.done = True
            raise

    def _withdraw(self, items: Sequence[Staged]) -> None:
        mine = {id(item) for item in items}
        self._queue = [q for q in self._queue if id(q) not in mine]
        for item in items:
            if not item.taken:
                item.withdrawn = item.done = True
