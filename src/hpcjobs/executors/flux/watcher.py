"""The Flux executor's one watcher thread: all its jobs' events, without polling.

Preferred source: the job-manager journal (``flux.job.JournalConsumer``), one stream
with the main-eventlog events of every job, interleaved, plus the journal-only
``annotations`` event (flux-core 0.88, journal.txt in the test fixtures). It is opened
with ``full=True``: the job manager first replays the events of the jobs it holds, so
a job submitted before the stream was registered is not missed, and after a broken
connection the replay catches up (the receiver ignores repeats). The replay ends with a
sentinel; a followed job it did not mention was purged meanwhile (``on_missing``).

The job manager serves the journal to the instance owner only (flux-core
job-manager/journal.c registers it with rolemask 0): a user of a system instance gets
EPERM. Then the same thread watches each job's eventlog instead
(``flux.job.event_watch_async``, allowed for one's own jobs), all on one handle and one
reactor, a timer picking up newly submitted jobs.

A Flux handle must not be shared between threads, so the thread opens its own.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from ...threads import OwnedThread, weak_callable

__all__ = ["WatchedEvent", "Watcher"]

log = logging.getLogger(__name__)

#: how often the thread looks at its stop flag and for new jobs to watch (seconds);
#: a local wait, not a request to Flux
_TICK = 0.25
_MAX_BACKOFF = 30.0
#: connection attempts (0.5 + 1 + 2 s apart) before the instance counts as gone
_ATTEMPTS_BEFORE_LOST = 4

EventHandler = Callable[[Any, Any], None]
LostHandler = Callable[[str], None]
MissingHandler = Callable[[list[int], Any], None]


class WatchedEvent(NamedTuple):
    """An eventlog event of one job, shaped like a ``JournalEvent``."""

    jobid: int
    name: str
    timestamp: float
    context: dict[str, Any]
    R: Any = None


class Watcher:
    """Calls ``on_event(event, handle)`` for each event of the jobs, on a named daemon
    thread; ``handle`` is the thread's own Flux handle (for look-ups from the handler).

    ``follow(jobid)`` / ``forget(jobid)`` say which jobs matter (the journal mode gets
    every job anyway; the per-job mode watches exactly these). ``on_event`` is held
    weakly when it is a bound method, so the watcher never keeps its executor alive;
    when the executor is gone, the thread ends. When the instance cannot be reached
    any more (``_ATTEMPTS_BEFORE_LOST`` connections in a row fail: it was shut down, or
    its node is gone), ``on_lost(reason)`` is called once, then the thread keeps trying.
    ``on_missing(jobids, handle)`` is told of followed jobs whose events Flux no longer
    holds where they were expected: not in the journal's history after a (re)connect,
    or an eventlog that cannot be watched (Flux forgets inactive jobs when it purges
    them: ``flux job purge``, job-manager.inactive-age-limit).
    """

    def __init__(self, name: str, connect: Callable[[], Any], flux_job: Any,
                 on_event: EventHandler, on_lost: LostHandler,
                 on_missing: MissingHandler) -> None:
        self._name = name
        self._connect = connect
        self._flux_job = flux_job
        self._ref = weak_callable(on_event)
        self._lost_ref = weak_callable(on_lost)
        self._missing_ref = weak_callable(on_missing)
        self._stop = threading.Event()
        self._thread = OwnedThread(name, self._run, self._stop.set)
        self._lock = threading.Lock()
        self._wanted: set[int] = set()
        self._new: collections.deque[int] = collections.deque()
        self.per_job = False  # True once the journal was refused

    def start(self) -> None:
        """Start the thread unless it runs (idempotent)."""
        self._thread.start()

    def stop(self) -> None:
        """End the thread (within ``_TICK`` seconds)."""
        self._thread.stop()

    def follow(self, jobid: int) -> None:
        with self._lock:
            self._wanted.add(jobid)
            if self.per_job:  # else _watch_jobs starts from _wanted when it begins
                self._new.append(jobid)

    def forget(self, jobid: int) -> None:
        with self._lock:
            self._wanted.discard(jobid)

    def _run(self) -> None:
        backoff = 0.5
        failed_connects = 0
        while not self._stop.is_set():
            try:
                try:
                    handle = self._connect()
                except OSError as e:
                    failed_connects += 1
                    if failed_connects == _ATTEMPTS_BEFORE_LOST:
                        self._lost(str(e))
                    raise
                failed_connects = 0
                if not self.per_job:
                    try:
                        self._follow_journal(handle)
                    except PermissionError as e:
                        log.info("%s: the Flux journal is for the instance owner (%s); "
                                 "watching each job's eventlog instead", self._name, e)
                        with self._lock:
                            self.per_job = True
                        continue
                else:
                    self._watch_jobs(handle)
                if self._stop.is_set() or self._ref() is None:
                    return
                backoff = 0.5
            except Exception as e:  # a broken connection must not end the watching
                log.warning("%s: watching Flux failed (%s); reconnecting in %.1f s",
                            self._name, e, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    def _lost(self, reason: str) -> None:
        handler = self._lost_ref()
        if handler is not None:
            try:
                handler(reason)
            except Exception:
                log.exception("%s: reporting the lost Flux instance failed", self._name)

    def _deliver(self, event: Any, handle: Any) -> bool:
        """Hand one event to the executor; False if the executor is gone."""
        handler = self._ref()
        if handler is None:
            return False
        try:
            handler(event, handle)
        except Exception:
            log.exception("%s: handling Flux event %s of job %s failed; ignored",
                          self._name, getattr(event, "name", "?"),
                          getattr(event, "jobid", "?"))
        return True

    def _follow_journal(self, handle: Any) -> None:
        """Until stopped; ``ConnectionError`` if the stream ends (the caller reconnects)."""
        with self._lock:
            # submitted before the request: in its replay, unless Flux purged them (jobs
            # followed later may be submitted after the replay was made: not missing)
            expected = set(self._wanted)
        consumer = self._flux_job.JournalConsumer(handle, full=True,
                                                  include_sentinel=True).start()
        log.debug("%s: following the Flux job-manager journal", self._name)
        history: set[int] | None = set()  # the jobs the replay mentions, until it ends
        while not self._stop.is_set():
            try:
                event = consumer.poll(_TICK)
            except TimeoutError:
                continue
            if event is None:  # the job manager ended the stream (e.g. unloaded)
                raise ConnectionError("the Flux journal ended")
            if history is not None:
                if event.is_empty():  # the sentinel: the replay is over, live events follow
                    with self._lock:
                        missing = sorted((expected & self._wanted) - history)
                    history = None
                    self._missing(missing, handle)
                    continue
                history.add(int(event.jobid))
            if not self._deliver(event, handle):
                break
        consumer.stop()

    def _missing(self, jobids: list[int], handle: Any) -> None:
        handler = self._missing_ref()
        if jobids and handler is not None:
            try:
                handler(jobids, handle)
            except Exception:
                log.exception("%s: looking up Flux jobs %s failed", self._name, jobids)

    def _watch_jobs(self, handle: Any) -> None:
        """Per-job eventlog watches on one reactor until stopped. Every watch replays
        the job's eventlog from its start, so (re)starting one loses nothing."""
        with self._lock:
            self._new = collections.deque(self._wanted)  # after a reconnect: all again
        watches: dict[int, Any] = {}  # jobid -> its watch, until its stream ends

        # (h, watcher, revents) and, in older bindings, an ``args`` value: *_ takes both
        def tick(h: Any, _watcher: Any, _revents: int, *_: Any) -> None:
            if self._stop.is_set() or self._ref() is None:
                h.reactor_stop()
                return
            while True:
                with self._lock:
                    if not self._new:
                        return
                    jobid = self._new.popleft()
                watches[jobid] = self._flux_job.event_watch_async(h, jobid).then(
                    on_event, jobid)

        def on_event(future: Any, jobid: int) -> None:
            try:
                event = future.get_event()
            except OSError as e:
                watches.pop(jobid, None)
                _ended(future)
                if isinstance(e, FileNotFoundError):  # the job is gone: purged
                    self._missing([jobid], handle)
                else:
                    log.warning("%s: watching Flux job %s failed: %s", self._name, jobid, e)
                return
            if event is None:  # the eventlog is complete
                watches.pop(jobid, None)
                return
            self._deliver(WatchedEvent(jobid, event.name, event.timestamp, event.context),
                          handle)

        timer = handle.timer_watcher_create(0.0, tick, repeat=_TICK)
        timer.start()
        try:
            handle.reactor_run()
        finally:
            timer.stop()
            for future in watches.values():
                try:
                    future.cancel()
                except OSError:  # the connection is gone, and the watch with it
                    _ended(future)


def _ended(watch: Any) -> None:
    """Mark an eventlog watch (``KVSWatchFuture``) as over, so that the bindings do not
    cancel it when it is collected: on a broken connection that cancel raises in
    ``__del__``, an error no caller can catch (flux/kvs.py WatchImplementation)."""
    watch.needs_cancel = False
