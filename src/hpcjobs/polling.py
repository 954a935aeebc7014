"""The shared status machinery: callback delivery and periodic background work.

``CallbackDispatcher``: one named daemon thread per executor that runs status callbacks
in order, outside every lock; a failing callback is logged and the next one runs.
``PeriodicTask``: a named daemon thread that calls a function, sleeps for the interval
the function returns, and wakes early on ``poke()`` (a submit or attach wants a status
soon) or ``stop()`` (shutdown is immediate, never a sleep).
Neither holds a strong reference to its executor, so a forgotten executor is collected
and its threads end (``weakref.finalize`` calls ``stop``).
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from typing import Callable, Optional, Sequence

from .job import Job, in_callback
from .state import JobStatus

__all__ = ["CallbackDispatcher", "PeriodicTask"]

log = logging.getLogger(__name__)

_Fn = Callable[[Job, JobStatus], None]
_Item = Optional[tuple[Job, Sequence[JobStatus], Sequence[_Fn]]]


class CallbackDispatcher:
    """Delivers (job, statuses, callbacks) batches on one thread, in submission order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: "queue.SimpleQueue[_Item]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._stopped = False

    def deliver(self, job: Job, statuses: Sequence[JobStatus], callbacks: Sequence[_Fn]) -> None:
        """Queue ``callbacks`` to be called with each of ``statuses`` in order."""
        if not callbacks or not statuses:
            return
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stopped:
                    self._thread = threading.Thread(target=_run_dispatch, name=self._name,
                                                    args=(self._queue,), daemon=True)
                    self._thread.start()
        self._queue.put((job, statuses, callbacks))

    def stop(self, wait: bool = True) -> None:
        """Deliver what is queued, then end the thread (idempotent)."""
        with self._lock:
            self._stopped = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            if wait and thread is not threading.current_thread():
                thread.join()


def _run_dispatch(q: "queue.SimpleQueue[_Item]") -> None:
    in_callback.active = True
    while True:
        item = q.get()
        if item is None:
            return
        job, statuses, callbacks = item
        for status in statuses:
            for cb in callbacks:
                try:
                    cb(job, status)
                except Exception:
                    log.exception("status callback %r failed for job %s (%s); ignored",
                                  cb, job.id, status.state)


class PeriodicTask:
    """Calls ``fn()`` on a named daemon thread; ``fn`` returns the seconds until the
    next call, or None to end the task. ``poke()`` makes the next call happen now.

    ``fn`` is held weakly when it is a bound method, so the task never keeps its
    owner alive; when the owner is gone, the task ends.
    """

    def __init__(self, name: str, fn: Callable[[], Optional[float]]) -> None:
        self._name = name
        self._ref: Callable[[], Optional[Callable[[], Optional[float]]]]
        if hasattr(fn, "__self__"):
            self._ref = weakref.WeakMethod(fn)
        else:
            self._ref = lambda: fn
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread if it is not running (idempotent)."""
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()

    def poke(self) -> None:
        """Run the function as soon as possible (starting the thread if needed)."""
        self._wake.set()
        self.start()

    def stop(self, wait: bool = True) -> None:
        """End the thread; returns at once if called from the task itself."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    @property
    def running(self) -> bool:
        """True while the thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()  # a poke from here on asks for another run
            fn = self._ref()
            if fn is None:
                break
            try:
                delay = fn()
            except Exception:
                log.exception("%s: periodic task failed; retrying in 5 s", self._name)
                delay = 5.0
            del fn
            if delay is None:
                with self._lock:  # poke() checks _thread under this lock: no lost wake-up
                    if not self._wake.is_set():
                        self._thread = None
                        return
                continue
            self._wake.wait(delay)
        with self._lock:
            self._thread = None
