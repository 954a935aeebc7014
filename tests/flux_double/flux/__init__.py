"""TEST DOUBLE of flux-core 0.88's Python bindings (package ``flux``).

No Flux can be installed on the project's machines, so tests put ``tests/flux_double``
on ``sys.path`` and get this package instead of the real one.  It reproduces what was
recorded from a real flux-core 0.88.0 in tests/fixtures/flux-0.88/ (event names,
order, context payloads, wait statuses, the exceptions the bindings raise) and runs every
job's command as a real process.  Which transcript each behaviour comes from is cited
next to the code.  ``flux.double`` (no such module in the real bindings) starts and stops
the simulated instances; code under test must never import it.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
import time
from typing import Any, Callable

from flux.future import Future


class Flux:
    """A handle on a (simulated) Flux instance, like ``flux.Flux(url)``.

    ``url=None`` means the enclosing instance, ``$FLUX_URI``, as in the real bindings.
    """

    def __init__(self, url: str | None = None) -> None:
        from flux import double  # the engine imports flux.job, which imports us

        uri = url if url is not None else os.environ.get("FLUX_URI")
        instance = double.lookup(uri) if uri else None
        if instance is None:
            # Unrecorded: the real message names the socket it tried.
            raise OSError(errno.ENOENT, f"Unable to connect to Flux: {uri or 'no FLUX_URI'}")
        self.instance = instance
        self._ready: queue.Queue[Future] = queue.Queue()
        self._armed = 0
        self._lock = threading.Lock()
        self._stopped = False
        self.timers: list[TimerWatcher] = []

    def attr_get(self, name: str) -> str:
        """Broker attributes seen in basics.txt (size 1, rank 0, version 0.88.0)."""
        attrs = {"size": "1", "rank": "0", "version": "0.88.0",
                 "local-uri": self.instance.uri}
        if name not in attrs:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        return attrs[name]

    def rpc(self, topic: str, payload: Any = None) -> Future:
        """Only ``job-manager.urgency``, the raw RPC used in depend-urgency.txt."""
        future = Future(self)
        if topic != "job-manager.urgency":
            future.push(OSError(errno.ENOSYS, "Function not implemented"))
        else:
            try:
                self.instance.set_urgency(int(payload["id"]), int(payload["urgency"]))
                future.push({})
            except OSError as exc:
                future.push(exc)
        return future

    def arm(self, delta: int) -> None:
        """Count futures with a ``then()`` callback still to run (reactor bookkeeping)."""
        with self._lock:
            self._armed += delta

    def notify(self, future: Future) -> None:
        """Queue one callback invocation of ``future`` for ``reactor_run``."""
        self._ready.put(future)

    def timer_watcher_create(self, after: float, callback: Callable[..., None],
                             repeat: float = 0.0, args: Any = None) -> TimerWatcher:
        """A timer, called as ``callback(handle, watcher, revents, args)``."""
        return TimerWatcher(self, after, callback, repeat, args)

    def reactor_stop(self) -> None:
        """Make ``reactor_run`` return (called from a callback of this reactor)."""
        self._stopped = True

    def reactor_run(self) -> int:
        """Run ``then()`` callbacks and timers until none is active any more (async.txt)
        or ``reactor_stop()``."""
        self._stopped = False
        while not self._stopped:
            with self._lock:
                timers = [t for t in self.timers if t.active]
                if self._armed <= 0 and not timers:
                    return 0
            due = min((t.due for t in timers), default=None)
            try:
                future = self._ready.get(
                    timeout=None if due is None else max(due - time.monotonic(), 0.0))
                future.fire()
            except queue.Empty:
                pass
            for timer in timers:
                if timer.active and timer.due <= time.monotonic() and not self._stopped:
                    timer.fire()
        return 0


class TimerWatcher:
    """``flux.core.watchers.TimerWatcher``: ``start()``/``stop()``; fires after
    ``after`` seconds, then every ``repeat`` seconds if ``repeat`` > 0."""

    def __init__(self, handle: Flux, after: float, callback: Callable[..., None],
                 repeat: float, args: Any) -> None:
        self.handle, self.after, self.repeat = handle, after, repeat
        self.callback, self.args = callback, args
        self.active = False
        self.due = 0.0

    def start(self) -> "TimerWatcher":
        self.due, self.active = time.monotonic() + self.after, True
        with self.handle._lock:
            self.handle.timers.append(self)
        return self

    def stop(self) -> None:
        self.active = False
        with self.handle._lock:
            if self in self.handle.timers:
                self.handle.timers.remove(self)

    def fire(self) -> None:
        if self.repeat > 0:
            self.due += self.repeat
        else:
            self.stop()
        self.callback(self.handle, self, 0, self.args)


__all__ = ["Flux"]
