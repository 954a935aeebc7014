"""What a scheduler's status or accounting command says about one job, in PSI/J terms."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from ...state import JobState, JobStatus
from .jobdir import signal_name

__all__ = ["NativeStatus", "decode_wait_status", "describe_exit"]


@dataclasses.dataclass
class NativeStatus:
    """One job as the scheduler reports it.

    ``state`` is None for a native state the backend's table does not know (logged and
    ignored). ``message`` says why a final state was reached (walltime, out of memory,
    ...); ``exit_code`` is PSI/J's (negative: killed by that signal).
    """

    native_id: str
    native_state: str
    state: Optional[JobState]
    exit_code: Optional[int] = None
    message: Optional[str] = None
    time: Optional[float] = None
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)

    def status(self, message: Optional[str] = None, exit_code: Optional[int] = None) -> JobStatus:
        """This as a JobStatus (``message``/``exit_code`` override the scheduler's)."""
        assert self.state is not None
        return JobStatus(self.state, self.time,
                         message=message if message is not None else self.message,
                         exit_code=exit_code if exit_code is not None else self.exit_code,
                         metadata=self.metadata)


def decode_wait_status(raw: int) -> int:
    """A POSIX wait status (what Slurm's ``exit_code`` field holds) as a PSI/J exit code."""
    if raw & 0x7F:
        return -(raw & 0x7F)
    return (raw >> 8) & 0xFF


def describe_exit(exit_code: Optional[int]) -> str:
    """``exit code 3`` / ``killed by SIGKILL (signal 9)`` / ``exit status unknown``."""
    if exit_code is None:
        return "exit status unknown"
    if exit_code < 0:
        return f"killed by {signal_name(-exit_code)} (signal {-exit_code})"
    return f"exit code {exit_code}"
