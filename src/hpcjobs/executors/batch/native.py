"""What a scheduler's status or accounting command says about one job, in PSI/J terms."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Iterable, Optional

from ...final_status import Cause, ended
from ...state import JobState, JobStatus

__all__ = ["NativeStatus", "local_time"]


@dataclasses.dataclass
class NativeStatus:
    """One job as the scheduler reports it.

    ``state`` is None for a native state the backend's table does not know (logged and
    ignored). For a final state, ``cause`` is the scheduler's why when it names one
    (walltime, out of memory, ...) and ``message`` its own words about the ending
    (``Slurm state TIMEOUT``); ``exit_code`` is PSI/J's (negative: killed by that
    signal). ``metadata`` always has ``native_state``. ``withdraw``: the scheduler keeps
    the job but says it will never run it (a FAILED ``state`` says why): the executor
    cancels it if it is one of its own, so that it does not wait forever.
    """

    native_id: str
    native_state: str
    state: Optional[JobState]
    exit_code: Optional[int] = None
    message: Optional[str] = None
    time: Optional[float] = None
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    cause: Optional[Cause] = None
    withdraw: bool = False

    def __post_init__(self) -> None:
        self.metadata.setdefault("native_state", self.native_state)

    def waiting(self, reason: Optional[str], estimate: Optional[float]) -> None:
        """A queued job's metadata: why it waits (``reason_pending``, the scheduler's
        words) and when the scheduler expects it to start (``t_estimate``, a POSIX
        time), each only when there is one."""
        if reason:
            self.metadata["reason_pending"] = reason
        if estimate is not None:
            self.metadata["t_estimate"] = estimate

    def status(self) -> JobStatus:
        """This as a JobStatus, as the scheduler tells it."""
        assert self.state is not None
        if self.state.final:
            return self.final(self.exit_code)
        return JobStatus(self.state, self.time, message=self.message,
                         exit_code=self.exit_code, metadata=self.metadata)

    def final(self, exit_code: Optional[int], notes: Iterable[str] = ()) -> JobStatus:
        """The final status: the scheduler's why joined with ``exit_code`` (what the
        job recorded, or the scheduler's own figure) and ``notes``."""
        assert self.state is not None and self.state.final
        return ended(exit_code, self.time, cause=self.cause, reason=self.message,
                     notes=notes, state=self.state, metadata=self.metadata)


def local_time(text: Any, format: str) -> Optional[float]:
    """A scheduler's local time ``text``, in the ``time.strptime`` ``format``, as a
    POSIX time (None if it is not one: ``N/A``, ``Unknown``, nothing)."""
    try:
        return time.mktime(time.strptime(str(text), format))
    except ValueError:
        return None
