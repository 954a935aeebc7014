"""What a scheduler's status or accounting command says about one job, in PSI/J terms."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional

from ...final_status import Cause, ended
from ...state import JobState, JobStatus

__all__ = ["NativeStatus"]


@dataclasses.dataclass
class NativeStatus:
    """One job as the scheduler reports it.

    ``state`` is None for a native state the backend's table does not know (logged and
    ignored). For a final state, ``cause`` is the scheduler's why when it names one
    (walltime, out of memory, ...) and ``message`` its own words about the ending
    (``Slurm state TIMEOUT``); ``exit_code`` is PSI/J's (negative: killed by that
    signal).
    """

    native_id: str
    native_state: str
    state: Optional[JobState]
    exit_code: Optional[int] = None
    message: Optional[str] = None
    time: Optional[float] = None
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    cause: Optional[Cause] = None

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
