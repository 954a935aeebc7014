"""The Flux executor's one watcher: a thread that follows the job-manager journal.

``flux.job.JournalConsumer`` streams the main-eventlog events of every job the user
may see, interleaved, plus the journal-only ``annotations`` event (flux-core 0.88,
journal.txt in the test fixtures). One stream serves all jobs of an executor: no
per-job watch and no polling. It is opened with ``full=True``: the job manager first
replays the history of its jobs, so a job submitted before the stream was registered
is not missed, and after a broken connection the replay catches up what was missed
(the receiver ignores repeats).

A Flux handle must not be shared between threads, so the thread opens its own.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["JournalWatcher"]

log = logging.getLogger(__name__)

#: how often the thread looks at its stop flag while the journal is quiet (seconds);
#: this is a local wait on the stream, not a request to Flux
_STOP_CHECK = 0.25
_MAX_BACKOFF = 30.0

EventHandler = Callable[[Any, Any], None]


class JournalWatcher:
    """Calls ``on_event(event, handle)`` for each journal event on a named daemon
    thread; ``handle`` is the thread's own Flux handle (for look-ups from the handler).

    ``on_event`` is held weakly when it is a bound method, so the watcher never keeps
    its executor alive; when the executor is gone, the thread ends.
    """

    def __init__(self, name: str, connect: Callable[[], Any], flux_job: Any,
                 on_event: EventHandler) -> None:
        self._name = name
        self._connect = connect
        self._flux_job = flux_job
        self._ref: Callable[[], EventHandler | None] = weakref.WeakMethod(on_event) \
            if hasattr(on_event, "__self__") else (lambda: on_event)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread unless it runs (idempotent)."""
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name=self._name,
                                                daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """End the thread (within ``_STOP_CHECK`` seconds)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                handle = self._connect()
                consumer = self._flux_job.JournalConsumer(handle, full=True).start()
                log.debug("%s: following the Flux job-manager journal", self._name)
                backoff = 0.5
                if not self._follow(consumer, handle):
                    return
            except Exception as e:  # a broken connection must not end the watching
                log.warning("%s: Flux journal failed (%s); reconnecting in %.1f s",
                            self._name, e, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    def _follow(self, consumer: Any, handle: Any) -> bool:
        """Hand events over until stopped (False) or the stream ends (True: reconnect)."""
        while not self._stop.is_set():
            try:
                event = consumer.poll(_STOP_CHECK)
            except TimeoutError:
                continue
            if event is None:
                log.warning("%s: the Flux journal ended; reconnecting", self._name)
                return True
            handler = self._ref()
            if handler is None:
                return False
            try:
                handler(event, handle)
            except Exception:
                log.exception("%s: handling Flux event %s of job %s failed; ignored",
                              self._name, getattr(event, "name", "?"),
                              getattr(event, "jobid", "?"))
            del handler
        consumer.stop()
        return False
