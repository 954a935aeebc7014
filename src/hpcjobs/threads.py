"""Background threads owned by an executor, and how they hold their owner.

A thread an executor starts must not keep the executor alive: a forgotten executor is
collected, its ``weakref.finalize`` stops the thread (possibly on that very thread).
The pieces, used by every backend:

* :func:`weak_callable` / :func:`weakly`: hold a callback (a bound method of the owner)
  without keeping its owner alive;
* :class:`OwnedThread`: a named daemon thread whose ``stop()`` works from any thread,
  its own included (then the thread frees its resources on its way out);
* :class:`PeriodicTask`: a thread that calls a function, sleeps for the interval the
  function returns, and wakes early on ``poke()`` (a submit or attach wants a status
  soon) or ``stop()`` (shutdown is immediate, never a sleep).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable, Optional, TypeVar

__all__ = ["OwnedThread", "PeriodicTask", "weak_callable", "weakly"]

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def weak_callable(fn: F) -> Callable[[], Optional[F]]:
    """A reference to ``fn`` that does not keep its owner alive: calling it gives ``fn``,
    or None once the object ``fn`` is a bound method of has been collected. A plain
    function is held as it is."""
    if hasattr(fn, "__self__"):
        return weakref.WeakMethod(fn)
    return lambda: fn


def weakly(fn: Callable[..., None]) -> Callable[..., None]:
    """``fn`` (a bound method), called only while its object lives: a no-op after."""
    owner = getattr(fn, "__self__", None)
    if owner is None:
        return fn
    # the object's weak reference and the plain function, not a WeakMethod: called for
    # every status change of a busy executor, it builds no bound method per call
    ref, func = weakref.ref(owner), getattr(fn, "__func__")

    def call(*args: Any) -> None:
        obj = ref()
        if obj is not None:
            func(obj, *args)
    return call


class OwnedThread:
    """A named daemon thread running ``body()``, started once (``start()`` is
    idempotent). ``stop()`` calls ``wake()`` so that the body notices it should return,
    joins the thread and calls ``release()`` (the thread's pipes, selectors, ...).
    Called on the thread itself (a forgotten executor collected there), ``stop()``
    returns at once and the thread releases on its way out."""

    def __init__(self, name: str, body: Callable[[], None], wake: Callable[[], None],
                 release: Callable[[], None] = lambda: None) -> None:
        self._body, self._wake, self._release = body, wake, release
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._lock = threading.Lock()
        self._started = self._stopped = self._releases_itself = False

    def start(self) -> None:
        """Start the thread, unless it was started or stopped before."""
        with self._lock:
            if self._started or self._stopped:
                return
            self._started = True
        self._thread.start()

    def stop(self) -> None:
        """End the thread and release its resources (see the class docstring)."""
        with self._lock:
            started, self._stopped = self._started, True
        self._wake()
        if not started:
            self._release()
        elif self._thread is threading.current_thread():
            self._releases_itself = True
        else:
            self._thread.join()
            self._release()

    @property
    def current(self) -> bool:
        """True when called on this thread."""
        return self._thread is threading.current_thread()

    def _run(self) -> None:
        try:
            self._body()
        finally:
            if self._releases_itself:
                self._release()


class PeriodicTask:
    """Calls ``fn()`` on a named daemon thread; ``fn`` returns the seconds until the
    next call, or None to end the task. ``poke()`` makes the next call happen now.

    ``fn`` is held weakly when it is a bound method, so the task never keeps its
    owner alive; when the owner is gone, the task ends.
    """

    def __init__(self, name: str, fn: Callable[[], Optional[float]]) -> None:
        self._name = name
        self._ref = weak_callable(fn)
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
