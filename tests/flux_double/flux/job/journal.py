"""TEST DOUBLE of ``flux.job.journal`` (flux-core 0.88): the job-manager journal.

journal.txt: events of all jobs interleaved; ``submit`` carries the redacted jobspec,
``alloc`` carries R; a journal-only ``annotations`` event (the job's whole annotation
dictionary, or null when cleared) precedes ``alloc`` and follows every change;
``full=True`` replays history first, ``include_sentinel`` marks its end with an empty
event; ``poll(timeout)`` raises ``TimeoutError`` when nothing came; after ``stop()``
``poll`` returns ``None``.  A guest of the instance gets ``PermissionError`` (EPERM)
from ``poll``: the job manager serves the journal to the instance owner only.
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING, Any

from flux.double import JOURNAL_ENDED
from flux.job.event import EventLogEvent
from flux.job.JobID import JobID

if TYPE_CHECKING:
    from flux import Flux

_END = object()


class JournalEvent(EventLogEvent):
    """A journal entry: an eventlog event plus ``jobid``, ``jobspec`` and ``R``."""

    def __init__(self, jobid: int, event: dict[str, Any], jobspec: Any = None,
                 R: Any = None) -> None:
        super().__init__(event)
        self.jobid = JobID(jobid)
        self.jobspec = jobspec
        self.R = R

    def is_empty(self) -> bool:
        return int(self.jobid) == -1


SENTINEL_EVENT = JournalEvent(-1, {"name": "", "timestamp": 0.0})


class JournalConsumer:
    """Consumer of ``job-manager.events-journal`` with ``poll`` (callbacks not modelled)."""

    SENTINEL_EVENT = SENTINEL_EVENT

    def __init__(self, flux_handle: Flux, full: bool = True, since: float = 0.0,
                 include_sentinel: bool = False) -> None:
        self.handle = flux_handle
        self.full = full
        self.since = since
        self.include_sentinel = include_sentinel
        self._queue: queue.Queue[Any] = queue.Queue()
        self._unsubscribe: Any | None = None

    def _sink(self, item: Any) -> None:
        if item is None:
            # the Python consumer only shows the sentinel after a full history
            if self.include_sentinel and self.full:
                self._queue.put(SENTINEL_EVENT)
            return
        if isinstance(item, BaseException):  # an error response, raised by poll()
            self._queue.put(item)
            return
        if item is JOURNAL_ENDED:
            self._queue.put(_END)
            return
        jobid, event, extra = item
        if event["timestamp"] > self.since:
            self._queue.put(JournalEvent(jobid, event, **extra))

    def start(self) -> JournalConsumer:
        self._unsubscribe = self.handle.instance.journal(self._sink, self.full)
        return self

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._queue.put(_END)

    def poll(self, timeout: float = -1.0) -> JournalEvent | None:
        if self._unsubscribe is None:
            raise RuntimeError("poll() called before start()")
        try:
            item = self._queue.get(timeout=None if timeout < 0 else timeout)
        except queue.Empty:
            raise TimeoutError(110, "Connection timed out") from None
        if item is _END:
            self._queue.put(_END)
            return None
        if isinstance(item, BaseException):
            self._queue.put(item)
            raise item
        event: JournalEvent = item
        return event
