"""``Job``: a spec plus the job's status, which only ever moves forward.

Executors report what they observe through ``JobExecutor._set_job_status``; the job
turns each observation into the ordered list of new states (synthesising any the
backend skipped), wakes its waiters, and hands the list to the executor's dispatcher
thread, which runs the callbacks outside every lock.

``wait()`` returns a final status only once the callbacks for that final state have
returned (and so every earlier callback of the job: one dispatcher thread runs them in
order). Only the batch holding the final state is tracked, so this costs one flag per
job, not a count per callback.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Protocol, Union

from .errors import InvalidJobStateError, WaitFromCallbackError
from .spec import JobSpec
from .state import JobState, JobStatus, path_to

if TYPE_CHECKING:
    from .executor import JobExecutor

__all__ = ["Job", "JobStatusCallback", "StatusCallback"]


class JobStatusCallback(Protocol):
    """The spec's callback interface: an object with ``job_status_changed``."""

    def job_status_changed(self, job: "Job", job_status: JobStatus) -> None:
        """Called once per state the job enters, in order, on the dispatcher thread."""


#: What ``set_job_status_callback`` accepts: a JobStatusCallback or a plain callable.
StatusCallback = Union[JobStatusCallback, Callable[["Job", JobStatus], None]]
_Fn = Callable[["Job", JobStatus], None]


def as_function(cb: Optional[StatusCallback]) -> Optional[_Fn]:
    """Normalise a callback object or callable to a callable (None stays None)."""
    if cb is None:
        return None
    method = getattr(cb, "job_status_changed", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(cb):
        return cb
    raise TypeError("a status callback must be callable or have job_status_changed(job, status)")


class _CallbackThreadMarker(threading.local):
    active = False


#: Set on dispatcher threads while they run callbacks (see dispatch.CallbackDispatcher).
in_callback = _CallbackThreadMarker()


def _new_id() -> str:
    # a random UUID4 in its usual text form, without importing uuid (import time matters)
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Job:
    """A job: its spec, its status, and (once submitted) its executor and native id.

    Users call the properties, ``set_job_status_callback``, ``wait`` and ``cancel``.
    The methods after them (``claim``, ``bind``, ``advance``, the final-callback
    marks, ``restore``) are for executors and the dispatcher: the backend contract.
    """

    __slots__ = ("_id", "_spec", "_status", "_native_id", "_executor", "_callback",
                 "_lock", "_cond", "_final_callbacks_pending", "__weakref__")

    def __init__(self, spec: Optional[JobSpec] = None) -> None:
        self._id = _new_id()
        self.spec = spec
        self._status = JobStatus(JobState.NEW)
        self._native_id: Optional[str] = None
        self._executor: Optional["JobExecutor"] = None
        self._callback: Optional[_Fn] = None
        self._lock = threading.Lock()
        self._cond: Optional[threading.Condition] = None
        #: set (under _lock) while the callbacks for the final state are queued or running
        self._final_callbacks_pending = False

    # -- plain properties ---------------------------------------------------------------
    @property
    def id(self) -> str:
        """This job's client-side id, unique on this machine."""
        return self._id

    @property
    def spec(self) -> Optional[JobSpec]:
        """The job's specification."""
        return self._spec

    @spec.setter
    def spec(self, value: Optional[JobSpec]) -> None:
        if value is not None and not isinstance(value, JobSpec):
            raise TypeError(f"Job.spec must be a JobSpec, got {type(value).__name__}")
        self._spec = value

    @property
    def status(self) -> JobStatus:
        """The latest status; monotonic in time under the state order."""
        return self._status

    @property
    def native_id(self) -> Optional[str]:
        """The backend's id for this job, once submitted or attached."""
        return self._native_id

    @property
    def executor(self) -> Optional["JobExecutor"]:
        """The executor this job was submitted to or attached with."""
        return self._executor

    def set_job_status_callback(self, cb: Optional[StatusCallback]) -> None:
        """Call ``cb(job, status)`` for every state this job enters from now on."""
        self._callback = as_function(cb)

    def cancel(self) -> None:
        """Ask the job's executor to cancel it (the state changes when the backend acts)."""
        if self._executor is None:
            raise InvalidJobStateError(f"job {self._id} was never submitted; nothing to cancel")
        self._executor.cancel(self)

    # -- waiting ------------------------------------------------------------------------
    def wait(
        self,
        timeout: Union[timedelta, float, int, None] = None,
        target_states: Union[JobState, Iterable[JobState], None] = None,
    ) -> Optional[JobStatus]:
        """Wait until the job is in one of ``target_states`` or a state greater than
        one of them (default: any final state), or ``timeout`` (a ``timedelta`` or
        seconds) passes. Returns the status that ended the wait, or None on timeout.

        A final status that can never satisfy the targets (waiting for COMPLETED on a
        FAILED job) also ends the wait: check the returned state. A final status is
        returned only after every status callback of the job (job and executor ones)
        up to and including the final one has returned, so what they recorded is
        complete; from inside a callback the final status is returned at once.
        From inside a status callback, raises ``WaitFromCallbackError`` rather than
        blocking the thread that delivers status updates.
        """
        targets = _targets(target_states)
        if isinstance(timeout, timedelta):
            timeout = timeout.total_seconds()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                status = self._status
                if status.state.final:
                    if not self._final_callbacks_pending or in_callback.active:
                        return status
                elif _reached(status.state, targets):
                    return status
                elif in_callback.active:
                    raise WaitFromCallbackError(
                        f"Job.wait() called from a status callback for job {self._id}: "
                        "callbacks run on the thread that delivers status updates, so the "
                        "wait could never end; react to the callback's status instead")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                if self._cond is None:
                    self._cond = (threading.Condition(self._lock) if self._executor is None
                                  else self._executor.wait_condition(self, self._lock))
                self._cond.wait(remaining)

    # -- executor side: the backend contract (docs/executors.md) ---------------------------
    @classmethod
    def restore(cls, spec: Optional[JobSpec], job_id: str, native_id: Optional[str],
                status: JobStatus) -> "Job":
        """A job as a record made elsewhere describes it (:mod:`hpcjobs.serialize`):
        its id, native id and status, bound to no executor."""
        job = cls(spec)
        job._id, job._native_id, job._status = job_id, native_id, status
        return job

    def claim(self, executor: "JobExecutor",
               native_id: Optional[str] = None) -> Optional[JobState]:
        """Bind this job to ``executor`` (and ``native_id``, for attach) if it is NEW and
        bound to no executor: how an executor takes a job (submit, attach). None when it
        did; else the job's state, and nothing changed."""
        with self._lock:
            if self._executor is not None or self._status.state is not JobState.NEW:
                return self._status.state
            self.bind(executor, native_id)
            if self._cond is not None:
                # made by a wait before the job had an executor: the executor's own
                # (wait_condition: the Batsim executor's virtual time counts its
                # waiters) takes over at the next wait; a thread blocked on this one
                # wakes to wait on that
                self._cond.notify_all()
                self._cond = None
            return None

    def bind(self, executor: Optional["JobExecutor"], native_id: Optional[str]) -> None:
        """Record the job's executor (None: a claim released, its submit failed) and
        its ``native_id`` once the backend gave one."""
        self._executor = executor
        if native_id is not None:
            self._native_id = native_id

    def advance(self, status: JobStatus, ran: bool,
                 hand_off: Callable[["Job", list[JobStatus]], None]) -> None:
        """Move to ``status`` if it is later than the current one and pass the statuses
        entered (synthesised ones first) to ``hand_off`` while still holding the lock,
        so two threads reporting on one job cannot queue callbacks out of order.

        A report of the current, non-final state that carries metadata or a message
        replaces those (a pending reason, an estimated start: backends report the whole
        picture) and keeps the time the state was entered; one carrying neither is no
        news. Callbacks are for state changes only. Executors call it through
        ``JobExecutor._set_job_status``.
        """
        with self._lock:
            current = self._status
            path = path_to(current.state, status.state, ran or status.exit_code is not None)
            if not path:
                if (status.state is current.state and not current.state.final
                        and (status.metadata is not None or status.message is not None)):
                    if (status.time == current.time and status.exit_code == current.exit_code
                            and status.metadata is not None
                            and (status.message is not None or current.message is None)):
                        # the report is the refreshed status itself (a backend that
                        # keeps the entry time, as Batsim's pending reasons do): no copy
                        self._status = status
                    else:
                        self._status = JobStatus(
                            current.state, current.time,
                            current.message if status.message is None else status.message,
                            current.exit_code,
                            current.metadata if status.metadata is None else status.metadata)
                return
            if len(path) == 1:
                entered = [status]
            else:
                entered = [JobStatus(s, status.time) for s in path[:-1]]
                entered.append(status)
            self._status = status
            hand_off(self, entered)
            if self._cond is not None:
                self._cond.notify_all()

    def final_callbacks_queued(self) -> None:
        """Called by the dispatcher, with this job's lock held (during :meth:`advance`),
        when it queues the callbacks for the final state: ``wait`` holds the final
        status back until :meth:`final_callbacks_returned`."""
        self._final_callbacks_pending = True

    def final_callbacks_returned(self) -> None:
        """Called by the dispatcher once the callbacks for the final state returned."""
        with self._lock:
            self._final_callbacks_pending = False
            if self._cond is not None:
                self._cond.notify_all()

    def __repr__(self) -> str:
        return f"Job(id={self._id}, native_id={self._native_id}, status={self._status!r})"


#: what ``Job.wait()`` waits for by default (built once: waits come by the thousand)
_FINAL_TARGETS = (JobState.COMPLETED, JobState.FAILED, JobState.CANCELED)


def _targets(target_states: Union[JobState, Iterable[JobState], None]) -> tuple[JobState, ...]:
    if target_states is None:
        return _FINAL_TARGETS
    if isinstance(target_states, JobState):
        return (target_states,)
    targets = tuple(target_states)
    for t in targets:
        if not isinstance(t, JobState):
            raise TypeError(f"target_states must be JobStates, got {type(t).__name__}")
    return targets


def _reached(state: JobState, targets: tuple[JobState, ...]) -> bool:
    return any(state is t or state.is_greater_than(t) for t in targets)
