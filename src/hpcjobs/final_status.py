"""How a job ended, in the same words on every backend.

Every backend learns two things about a job that ended, from two witnesses:

* what the job itself recorded: an exit code, or the signal that killed it (a POSIX wait
  status, a shell's ``128+N``, a nanny's exit record);
* what the scheduler says about why (:class:`Cause`: cancelled, walltime, out of
  memory, preemption, node failure), which the job cannot know: the kernel's OOM killer
  and a scheduler's ``SIGKILL`` look alike from inside.

This module turns those into one final :class:`~hpcjobs.state.JobStatus`
(:func:`ended`), worded once::

    exited with code 3
    killed by signal 9 (SIGKILL)
    out of memory: the job exceeded its memory limit (Slurm state OUT_OF_MEMORY); killed by signal 9 (SIGKILL)
    cancelled: by alice; exited with code 143

The rule that joins them: the scheduler's cause, when there is one, says why and comes
first (it also decides the state: CANCELED for a cancel, FAILED for the others); the
job's exit code follows as recorded. A job that ended by a signal (exit code ``< 0``)
needs the scheduler's word before its status is final (:func:`needs_cause`): without a
cause it is a plain "killed by signal N" (the job killed itself, or someone else did).
"""

from __future__ import annotations

import enum
import os
import signal
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from .state import JobState, JobStatus

__all__ = ["Cause", "decode_wait_status", "describe_exit", "ended", "needs_cause",
           "shell_exit_code", "signal_name"]


class Cause(enum.Enum):
    """Why a scheduler ended a job; the value is the phrase that starts the message."""

    CANCELED = "cancelled"
    WALLTIME = "walltime exceeded"
    OUT_OF_MEMORY = "out of memory"
    PREEMPTED = "preempted"
    NODE_FAILURE = "node failure"


def signal_name(number: int) -> Optional[str]:
    """``SIGKILL`` for 9; None for a number this system does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def decode_wait_status(raw: int) -> int:
    """A POSIX wait status (Slurm's ``exit_code``, Flux's ``finish`` status) as a PSI/J
    exit code: the exit status, or ``-N`` for "killed by signal N"."""
    if os.WIFSIGNALED(raw):
        return -os.WTERMSIG(raw)
    return os.WEXITSTATUS(raw)


def shell_exit_code(status: int) -> int:
    """A shell's ``$?`` as a PSI/J exit code: ``128+N`` (N a signal number, 1..64) is
    ``-N``, anything else is itself."""
    if 128 < status <= 128 + 64:
        return -(status - 128)
    return status


def describe_exit(exit_code: Optional[int]) -> str:
    """``exited with code 3`` / ``killed by signal 9 (SIGKILL)`` / ``exit status unknown``."""
    if exit_code is None:
        return "exit status unknown"
    if exit_code < 0:
        name = signal_name(-exit_code)
        return f"killed by signal {-exit_code}" + (f" ({name})" if name else "")
    return f"exited with code {exit_code}"


def needs_cause(exit_code: Optional[int]) -> bool:
    """True if a job that recorded ``exit_code`` may have been ended by its scheduler
    for a reason the record cannot show (it was killed by a signal): ask the scheduler
    (in the backend's one bulk status query) before reporting the final status."""
    return exit_code is not None and exit_code < 0


def ended(exit_code: Optional[int], time: Optional[float] = None, *,
          cause: Optional[Cause] = None, reason: Optional[str] = None,
          notes: Iterable[str] = (), state: Optional[JobState] = None,
          metadata: Optional[Mapping[str, Any]] = None) -> JobStatus:
    """The final status of a job that ended with ``exit_code`` (None: unknown).

    ``cause``: the scheduler's why, if it gave one; ``reason``: its own words about it
    (``the job's time limit expired (Flux: ...)``, ``Slurm state TIMEOUT``), or the why
    of an ending no :class:`Cause` names (``node boot failure ...``). ``notes``: what
    else is known, after the exit code (``the job script caught SIGTERM``). ``state``:
    the scheduler's PSI/J state when it has one; else CANCELED for a cancel, COMPLETED
    for exit code 0 with no why, FAILED otherwise.

    The message is ``<cause>: <reason>; <exit>; <notes>`` (parts that are unknown left
    out; no message for a completed job). A signal is also in ``metadata["signal"]``.
    """
    if state is None:
        if cause is Cause.CANCELED:
            state = JobState.CANCELED
        elif exit_code == 0 and cause is None and reason is None:
            state = JobState.COMPLETED
        else:
            state = JobState.FAILED
    meta = dict(metadata or {})
    if exit_code is not None and exit_code < 0:
        meta["signal"] = -exit_code
    if state is JobState.COMPLETED:
        return JobStatus(state, time, exit_code=exit_code, metadata=meta)
    parts = []
    if cause is not None:
        parts.append(f"{cause.value}: {reason}" if reason else cause.value)
    elif reason:
        parts.append(reason)
    if exit_code is not None or not parts:
        parts.append(describe_exit(exit_code))
    parts.extend(notes)
    return JobStatus(state, time, message="; ".join(parts), exit_code=exit_code, metadata=meta)
