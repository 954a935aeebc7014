"""TEST DOUBLE of ``flux.job`` (flux-core 0.88): submit, watch, cancel, kill, list.

Like the real functions, these take the job id as an int (a ``JobID``): they call
``int(jobid)``, so an f58 string is a ``ValueError``.

See the package docstring of ``flux``.  Behaviour sources (fixtures/flux-0.88/):
submit returns a ``JobID`` and an invalid jobspec raises ``PermissionError(EPERM)``
with the validator's message (infeasible.txt); ``cancel`` raises
``FileNotFoundError(2, 'job is inactive' | 'unknown job id')`` (misc.txt); ``kill``
posts no exception event (kill-signal.txt); ``result`` works for finished jobs (misc.txt).
"""

from __future__ import annotations

import errno
import json
from typing import TYPE_CHECKING, Any

from flux.double import eventlog_text
from flux.future import SubmitFuture
from flux.job.event import (
    MAIN_EVENTS,
    EventLogEvent,
    JobException,
    event_wait,
    event_watch,
    event_watch_async,
)
from flux.job.JobID import JobID, id_parse
from flux.job.Jobspec import Jobspec, JobspecV1, validate_jobspec
from flux.job.journal import JournalConsumer, JournalEvent
from flux.job.list import JobInfo, JobList, _record, get_job, job_list

if TYPE_CHECKING:
    from flux import Flux

__all__ = [
    "MAIN_EVENTS",
    "EventLogEvent",
    "JobException",
    "JobID",
    "JobInfo",
    "JobList",
    "Jobspec",
    "JobspecV1",
    "JournalConsumer",
    "JournalEvent",
    "cancel",
    "cancel_async",
    "event_wait",
    "event_watch",
    "event_watch_async",
    "get_job",
    "id_parse",
    "job_kvs_lookup",
    "job_list",
    "job_raise",
    "kill",
    "result",
    "submit",
    "submit_async",
]


def _ingest(jobspec: Jobspec | str | bytes) -> dict[str, Any]:
    """job-ingest: parse and validate; any failure is EPERM with the validator's text."""
    if isinstance(jobspec, Jobspec):
        text: str | bytes = jobspec.dumps()
    elif isinstance(jobspec, (str, bytes)):
        text = jobspec
    else:
        raise TypeError("jobspec must be a Jobspec or string (either binary or unicode)")
    try:
        obj = json.loads(text)
        validate_jobspec(obj)
    except (TypeError, ValueError, KeyError) as exc:
        raise PermissionError(errno.EPERM, str(exc).strip("'\"")) from None
    spec: dict[str, Any] = obj
    return spec


def submit(flux_handle: Flux, jobspec: Jobspec | str | bytes, urgency: int = 16,
           waitable: bool = False, debug: bool = False, pre_signed: bool = False,
           novalidate: bool = False) -> JobID:
    """Submit; returns once the job manager has the job (its ``submit`` event exists)."""
    flags = (4 if waitable else 0) | (1 if debug else 0)
    return JobID(flux_handle.instance.submit(_ingest(jobspec), urgency, flags))


def submit_async(flux_handle: Flux, jobspec: Jobspec | str | bytes,
                 urgency: int = 16, waitable: bool = False, **_: Any) -> SubmitFuture:
    future = SubmitFuture(flux_handle)
    try:
        future.push(submit(flux_handle, jobspec, urgency, waitable))
    except OSError as exc:
        future.push(exc)
    return future


def job_raise(flux_handle: Flux, jobid: Any, type: str, severity: int,
              note: str = "") -> None:
    flux_handle.instance.raise_exception(int(jobid), type, severity, note)


def cancel(flux_handle: Flux, jobid: Any, reason: str | None = None) -> None:
    """An exception event ``type=cancel`` with ``note=reason`` ("" if none)."""
    job_raise(flux_handle, jobid, "cancel", 0, reason or "")


def cancel_async(flux_handle: Flux, jobid: Any, reason: str | None = None) -> SubmitFuture:
    future = SubmitFuture(flux_handle)
    try:
        cancel(flux_handle, jobid, reason)
        future.push(None)
    except OSError as exc:
        future.push(exc)
    return future


def kill(flux_handle: Flux, jobid: Any, signum: int | None = None) -> None:
    flux_handle.instance.kill(int(jobid), 15 if signum is None else signum)


def result(flux_handle: Flux, jobid: Any, flags: int = 0) -> JobInfo:
    """Wait until the job is inactive; a JobInfo with result/returncode/waitstatus."""
    instance = flux_handle.instance
    with instance.cv:
        job = instance.get(int(jobid))
        instance.cv.wait_for(lambda: job.state == "INACTIVE")
        return JobInfo(_record(job))


def job_kvs_lookup(flux_handle: Flux, jobid: Any, keys: list[str] | None = None,
                   decode: bool = True) -> dict[str, Any] | None:
    """``job-info.lookup``: ``eventlog`` (RFC 18 text), ``jobspec``, ``R``; ``None`` for
    an unknown id, like the real function."""
    instance = flux_handle.instance
    with instance.cv:
        job = instance.jobs.get(int(jobid))
        if job is None:
            return None
        data: dict[str, Any] = {"id": job.id}
        for key in keys or ["jobspec"]:
            if key in job.logs:
                data[key] = eventlog_text(job.logs[key])
            elif key in ("jobspec", "R"):
                value = job.jobspec if key == "jobspec" else job.R
                data[key] = value if decode else json.dumps(value)
            else:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        return data
