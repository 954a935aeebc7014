"""Background threads owned by an executor.

``PeriodicTask``: a named daemon thread that calls a function, sleeps for the interval
the function returns, and wakes early on ``poke()`` (a submit or attach wants a status
soon) or ``stop()`` (shutdown is immediate, never a sleep). It holds its function weakly
when that is a bound method, so a forgotten executor is collected and its thread ends.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Callable, Optional

__all__ = ["PeriodicTask"]

log = logging.getLogger(__name__)


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
