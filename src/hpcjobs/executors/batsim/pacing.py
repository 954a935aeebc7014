"""When the decision process answers Batsim: the two time modes.

Batsim's clock only moves when the decision process replies, so pacing is deciding when
to reply. Both pacers answer two questions about a message received at simulated time
``t``: how long to wait before handling its events (:meth:`Pacer.due`), and how long to
wait before replying (:meth:`Pacer.hold`), given what the client is doing (a
:class:`ClientState`). ``None`` means "now".

- :class:`RealTime`: simulated time runs at ``scale`` x wall-clock time. Events are
  handled when the wall clock reaches their simulated time, replies go out at once, and
  a CALL_ME_LATER every :data:`TICK` wall-clock seconds makes Batsim come back even when
  nothing happens, so a submit waits at most a tick to reach the simulation.
- :class:`VirtualTime`: the simulation runs as fast as it can, but only while the
  client is blocked in ``Job.wait()`` (and makes no other call); between calls it stands
  still, so a script's jobs get the same simulated times on every run. Clients that
  wait on callbacks instead get the simulation moving after ``grace`` idle seconds.
  ``Job.wait`` is observed through :class:`WaitTracker`, the condition variable the
  executor gives jobs for waiting (``JobExecutor.wait_condition``).
"""

from __future__ import annotations

import threading
import time
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from ...threads import weak_callable

if TYPE_CHECKING:
    from ...job import Job

__all__ = ["Pacer", "RealTime", "VirtualTime", "ClientState", "WaitTracker", "TICK"]

#: real-time mode: the longest a client request waits for the simulation, in wall seconds
TICK = 0.05


@dataclass
class ClientState:
    """What the client is doing (guarded by the session's pacing condition)."""

    calls: int = 0  # executor calls in progress (submit, cancel, attach)
    waiters: int = 0  # threads blocked in Job.wait() on this executor's jobs
    actions: bool = False  # requests waiting for the next reply
    closing: bool = False
    last_activity: float = field(default_factory=time.monotonic)


class Pacer(ABC):
    """Decides when the decision process handles events and replies."""

    #: simulated seconds between keep-alive CALL_ME_LATERs (None: none needed)
    tick: Optional[float] = None

    def start(self) -> None:  # noqa: B027 (a hook; most pacers need no start time)
        """Hook: the simulation began (simulated time 0) now."""

    @abstractmethod
    def submit_time(self, held: float) -> float:
        """Simulated submission time of a job registered while a message of time
        ``held`` waits for its reply."""

    @abstractmethod
    def due(self, t: float, client: ClientState) -> Optional[float]:
        """Wall seconds to wait before handling events of simulated time ``t``."""

    @abstractmethod
    def hold(self, client: ClientState) -> Optional[float]:
        """Wall seconds to wait before replying (re-asked after any change)."""


class RealTime(Pacer):
    """Simulated time = ``scale`` x wall-clock time since the simulation began."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.tick = TICK * scale
        self._t0: Optional[float] = None  # when the simulation began

    def start(self) -> None:
        self._t0 = time.monotonic()

    def _sim_now(self) -> float:
        # before the simulation begins its clock stands at 0
        return 0.0 if self._t0 is None else (time.monotonic() - self._t0) * self.scale

    def submit_time(self, held: float) -> float:
        return max(held, self._sim_now())

    def due(self, t: float, client: ClientState) -> Optional[float]:
        if client.actions or client.closing:
            return None
        delay = (t - self._sim_now()) / self.scale
        return delay if delay > 0 else None

    def hold(self, client: ClientState) -> Optional[float]:
        return None


class VirtualTime(Pacer):
    """As fast as possible while the client only waits; deterministic."""

    def __init__(self, grace: Optional[float]) -> None:
        self.grace = grace

    def submit_time(self, held: float) -> float:
        return held

    def due(self, t: float, client: ClientState) -> Optional[float]:
        return None

    def hold(self, client: ClientState) -> Optional[float]:
        if client.closing:
            return None
        if client.calls:
            return 1.0
        if client.waiters:
            return None
        if self.grace is None:
            return 1.0
        remaining = client.last_activity + self.grace - time.monotonic()
        return remaining if remaining > 0 else None


class WaitTracker(threading.Condition):
    """A job's condition variable that counts the threads blocked in ``Job.wait()``.

    ``Job.wait`` blocks on the condition its executor's ``wait_condition`` hook made
    (on the first wait); the Batsim executor makes this one in virtual time. A waiter counts from the moment it blocks until it is notified
    (a status change): the count drops in the notifying thread, before the waiter even
    runs, so the simulation never moves on while a woken client is deciding what to do
    next. A waiter that goes back to waiting counts again.
    """

    def __init__(self, lock: threading.Lock, job: Job,
                 on_change: Callable[["WaitTracker", int], None]) -> None:
        super().__init__(lock)
        self.job: weakref.ref[Job] = weakref.ref(job)  # (the job holds its condition)
        # weak: a job that outlives its executor must not keep the session alive
        self._on_change = weak_callable(on_change)
        self._blocked = 0  # waiters not yet accounted for by a notify
        self._generation = 0  # notifications so far

    @property
    def blocked(self) -> bool:
        """Whether a waiter is blocked and not yet woken by a status change."""
        return self._blocked > 0

    def wait(self, timeout: Optional[float] = None) -> bool:
        generation = self._generation
        self._blocked += 1
        self._notify_change(1)
        try:
            return super().wait(timeout)
        finally:
            if self._generation == generation:  # timed out: nobody accounted for it
                self._blocked -= 1
                self._notify_change(-1)

    def notify_all(self) -> None:
        self._generation += 1
        blocked, self._blocked = self._blocked, 0
        if blocked:
            # zeroed first: the session reads ``blocked`` to drop this condition from
            # its set of blocked ones (it would otherwise keep every condition ever
            # waited on, and go through them all on every message)
            self._notify_change(-blocked)
        super().notify_all()

    def _notify_change(self, delta: int) -> None:
        fn = self._on_change()
        if fn is not None:
            fn(self, delta)

