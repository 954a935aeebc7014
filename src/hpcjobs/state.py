"""Job states, their partial order, and the status record a job carries.

The order is psij-python's (with file staging): NEW < QUEUED < STAGE_IN < ACTIVE <
STAGE_OUT < CLEANUP < {COMPLETED, FAILED, CANCELED}; the final states are incomparable
with one another. ``path_to`` gives the states a job must pass through to reach a later
one, so executors can synthesise the states a backend skipped: every job that ran
reaches callbacks as QUEUED -> STAGE_IN -> ACTIVE -> STAGE_OUT -> CLEANUP -> final,
each once (the staging states at the moment of the next state when the job has nothing
to stage), and a job that never ran as QUEUED -> FAILED or CANCELED.
"""

from __future__ import annotations

import enum
import time
from typing import Any, Mapping, Optional

__all__ = ["JobState", "JobStateOrder", "JobStatus"]


class JobState(enum.Enum):
    """The PSI/J job states, with psij-python's staging states (and its numbering)."""

    NEW = 0
    QUEUED = 1
    #: files are being staged in (between QUEUED and ACTIVE)
    STAGE_IN = 2
    ACTIVE = 3
    #: the executable has finished; files are being staged out
    STAGE_OUT = 4
    #: the job's cleanup paths are being removed
    CLEANUP = 5
    COMPLETED = 6
    FAILED = 7
    CANCELED = 8

    @property
    def final(self) -> bool:
        """True for COMPLETED, FAILED and CANCELED."""
        return self in _FINAL

    def is_final(self) -> bool:
        """Spec spelling of :attr:`final`."""
        return self in _FINAL

    def is_greater_than(self, other: "JobState") -> bool:
        """The spec's strict partial order; two final states are incomparable."""
        return (self, other) in _GREATER

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def from_name(name: str) -> "JobState":
        """The state named ``name`` (psij-python's spelling of ``JobState[name]``)."""
        return JobState[name]

    # Members are singletons compared by identity, so the identity hash is correct and,
    # unlike Enum's Python-level __hash__, costs nothing in the state tables' lookups.
    __hash__ = object.__hash__


class JobStateOrder:
    """psij-python's helper to reconstruct skipped states."""

    @staticmethod
    def prev(state: JobState) -> Optional[JobState]:
        """The state that must come right before ``state``, if there is a single one
        (FAILED and CANCELED can follow several states, so they have none)."""
        return _PREV.get(state)


_PREV = {JobState.QUEUED: JobState.NEW, JobState.STAGE_IN: JobState.QUEUED,
         JobState.ACTIVE: JobState.STAGE_IN, JobState.STAGE_OUT: JobState.ACTIVE,
         JobState.CLEANUP: JobState.STAGE_OUT, JobState.COMPLETED: JobState.CLEANUP}
_FINAL = frozenset((JobState.COMPLETED, JobState.FAILED, JobState.CANCELED))
_RANK = {s: min(s.value, 6) for s in JobState}
#: the states every job that runs passes through, in order
_CHAIN = (JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE, JobState.STAGE_OUT,
          JobState.CLEANUP)
# The order is tiny and fixed, so it is tabulated once: status updates are a hot path
# (thousands per second through the Batsim executor), and a set lookup is ~20x cheaper
# than recomputing through enum properties.
_GREATER = frozenset((a, b) for a in JobState for b in JobState
                     if _RANK[a] > _RANK[b] and not (a in _FINAL and b in _FINAL))


def _path(current: JobState, target: JobState, ran: bool) -> tuple[JobState, ...]:
    if (target, current) not in _GREATER:
        return ()
    path = [s for s in _CHAIN if (s, current) in _GREATER and (target, s) in _GREATER]
    if (target in _FINAL and target is not JobState.COMPLETED and not ran
            and _RANK[current] < _RANK[JobState.ACTIVE]):
        # it never ran: no staging and no ACTIVE made up (QUEUED still, if it was NEW)
        path = [s for s in path if s is JobState.QUEUED]
    return (*path, target)


_PATHS = {(c, t, r): _path(c, t, r) for c in JobState for t in JobState for r in (False, True)}


def path_to(current: JobState, target: JobState, ran: bool) -> tuple[JobState, ...]:
    """The states from ``current`` (exclusive) to ``target`` (inclusive), in order.

    ``ran`` says whether the job is known to have executed: COMPLETED always implies it,
    and so does a job already ACTIVE or later; FAILED or CANCELED of a job that never
    ran go straight from QUEUED (or from STAGE_IN, where a stage-in failed).
    Returns () when ``target`` is not greater than ``current``.
    """
    return _PATHS[current, target, ran]


class JobStatus:
    """A job's state at one moment, with why and what is known about it.

    ``time`` is a POSIX timestamp (seconds), from the backend where it has one.
    ``metadata`` holds backend facts users ask for: ``native_state``,
    ``reason_pending``, ``t_estimate``, ``nodes``, ... (see docs/model.md).
    """

    __slots__ = ("state", "time", "message", "exit_code", "metadata")

    def __init__(
        self,
        state: JobState,
        time: Optional[float] = None,
        message: Optional[str] = None,
        exit_code: Optional[int] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(state, JobState):
            raise TypeError(f"JobStatus.state must be a JobState, got {type(state).__name__}")
        self.state = state
        self.time = _now() if time is None else float(time)
        self.message = message
        self.exit_code = exit_code
        self.metadata: Optional[dict[str, Any]] = dict(metadata) if metadata else None

    @classmethod
    def owning(cls, state: JobState, time: float, message: Optional[str], exit_code: Optional[int],
              metadata: dict[str, Any]) -> "JobStatus":
        """For backends: a status that keeps ``metadata``, a dict made for it and not
        used after, as it is. The constructor's copy protects a caller's dict; a backend
        reporting thousands of statuses a second need not pay for it."""
        status = cls.__new__(cls)
        status.state, status.time, status.message = state, time, message
        status.exit_code, status.metadata = exit_code, metadata
        return status

    @property
    def final(self) -> bool:
        """True if the state is final."""
        return self.state.final

    def is_final(self) -> bool:
        """Spec spelling of :attr:`final`."""
        return self.state.final

    def __repr__(self) -> str:
        parts = [f"state={self.state.name}"]
        if self.exit_code is not None:
            parts.append(f"exit_code={self.exit_code}")
        if self.message:
            parts.append(f"message={self.message!r}")
        if self.metadata:
            parts.append(f"metadata={self.metadata!r}")
        return f"JobStatus({', '.join(parts)})"


_now = time.time
