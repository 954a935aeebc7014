"""The exceptions of the PSI/J API, plus the few this implementation adds.

The spec names three: ``InvalidJobException`` (the job itself is wrong: resubmitting
the same job can never work), ``SubmitException`` (the backend could not take the
request; ``transient`` says whether a retry may help) and ``InvalidStateException``
(the call does not fit the job's state, e.g. a double submit). Construction-time type
errors are plain ``TypeError``s naming the field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .job import Job

__all__ = [
    "PSIJError",
    "InvalidJobException",
    "SubmitException",
    "BulkSubmitException",
    "InvalidJobStateError",
    "InvalidStateException",
    "WaitFromCallbackError",
    "ExecutorNotFoundError",
    "MissingExtraError",
    "CommandError",
]


class PSIJError(Exception):
    """The base of the spec's exceptions: an end-user message plus an optional
    underlying exception (``get_message``, ``get_exception``)."""

    def __init__(self, message: str, exception: Optional[BaseException] = None) -> None:
        super().__init__(message)
        self.message = message
        self.exception = exception

    def get_message(self) -> str:
        """The message, clear enough to show to an end user."""
        return self.message

    def get_exception(self) -> Optional[BaseException]:
        """The underlying exception, for debugging; may be None."""
        return self.exception

    def __str__(self) -> str:
        if self.exception is not None:
            return f"{self.message} ({self.exception})"
        return self.message


class InvalidJobException(PSIJError):
    """The job's specification cannot be understood or is inconsistent.

    Fatal for this job: submitting the exact same job again fails the same way.
    Raised before anything reaches the backend, so nothing is half-submitted.
    """


class SubmitException(PSIJError):
    """The request could not be sent to the backend (independently of the job)."""

    def __init__(
        self,
        message: str,
        exception: Optional[BaseException] = None,
        transient: bool = False,
    ) -> None:
        super().__init__(message, exception)
        self.transient = transient

    def is_transient(self) -> bool:
        """True if retrying later may succeed."""
        return self.transient


class BulkSubmitException(SubmitException):
    """``submit_many`` could not submit some of its jobs (the others were submitted).

    ``failures`` pairs each job that was not submitted (it is NEW again and may be
    resubmitted) with the reason, e.g. the scheduler's refusal of the array it was in.
    """

    def __init__(self, failures: list[tuple[Job, SubmitException]], total: int) -> None:
        first = failures[0][1]
        super().__init__(f"{len(failures)} of {total} jobs were not submitted "
                         f"(first: {first.get_message()})", first,
                         transient=all(e.transient for _, e in failures))
        self.failures = failures


class InvalidJobStateError(PSIJError):
    """The job is in a state that does not allow the request (e.g. submitted twice)."""


#: The spec's name for :class:`InvalidJobStateError`.
InvalidStateException = InvalidJobStateError


class WaitFromCallbackError(RuntimeError):
    """``Job.wait()`` was called from a status callback and would have to block.

    Callbacks run on the executor's single dispatcher thread; blocking there would stop
    the very status updates the wait is waiting for, so it raises instead.
    """


class ExecutorNotFoundError(ValueError):
    """No installed executor (or launcher) plugin matches the requested name/version."""


class MissingExtraError(ExecutorNotFoundError, ImportError):
    """A part of hpcjobs was asked for whose pip extra is not installed (the message
    says which: ``pip install 'hpcjobs[batsim]'``). An ``ExecutorNotFoundError`` for
    ``get_instance`` and an ``ImportError`` for an import; ``extra`` names it."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


class CommandError(Exception):
    """An external command failed: carries everything needed to diagnose it."""

    def __init__(
        self,
        argv: list[str],
        returncode: Optional[int],
        stdout: str,
        stderr: str,
        reason: str = "",
    ) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.reason = reason
        what = reason or f"exited with code {returncode}"
        tail = stderr.strip() or stdout.strip()
        msg = f"command {argv!r} {what}"
        if tail:
            msg += f": {tail[-2000:]}"
        super().__init__(msg)
