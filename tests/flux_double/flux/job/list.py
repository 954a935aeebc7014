"""TEST DOUBLE of ``flux.job.list`` / ``flux.job.info`` (flux-core 0.88): job-list.

Record shapes from the ``job-list get_job()`` lines of the transcripts (true.txt,
cancel-pending.txt, infeasible.txt, joblist.txt): string ``state``/``result`` in
``JobInfo``, numeric ones in raw ``job_list`` dicts; ``returncode`` is the exit code,
``-signal`` for a raw signal status, ``-128`` when cancelled before running and ``1``
for other exceptions before running.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from flux import constants
from flux.double import Job, _result, all_jobs
from flux.future import Future
from flux.job.JobID import JobID

if TYPE_CHECKING:
    from flux import Flux

_STATES = {name: getattr(constants, f"FLUX_JOB_STATE_{name.upper()}") for name in
           ("depend", "priority", "sched", "run", "cleanup", "inactive", "pending",
            "running", "active")}
_RESULTS = {name: getattr(constants, f"FLUX_JOB_RESULT_{name.upper()}") for name in
            ("completed", "failed", "canceled", "timeout")}


def _returncode(job: Job) -> int | str:
    if job.state != "INACTIVE":
        return ""
    if job.waitstatus is not None:
        status = job.waitstatus
        return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    return -128 if job.fatal and job.fatal["type"] == "cancel" else 1


def _record(job: Job) -> dict[str, Any]:
    """The fields ``flux.job.get_job()`` prints (true.txt), for one job."""
    exc = job.exception or {}
    result = _result(job)
    times = {key: job.times.get(key, 0.0) for key in
             ("t_submit", "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup",
              "t_inactive")}
    return dict(times, id=job.id, jobid=JobID(job.id).f58, name=job.name, userid=job.userid,
                urgency=job.urgency, priority=job.priority, state=job.state, result=result,
                status=result or job.state, returncode=_returncode(job),
                waitstatus=job.waitstatus if job.waitstatus is not None else "",
                success=result == "COMPLETED", annotations=job.annotations or {},
                exception={"occurred": bool(exc), "type": exc.get("type", ""),
                           "severity": exc.get("severity", ""), "note": exc.get("note", "")},
                ntasks=job.request.ntasks, ncores=len(job.cores) or
                job.request.nslots * job.request.cores_per_slot,
                duration=float(job.system.get("duration", 0)), expiration=job.expiration,
                cwd=job.system.get("cwd", ""), queue=job.system.get("queue", ""),
                bank=job.system.get("bank", ""), project=job.system.get("project", ""),
                runtime=(times["t_cleanup"] - times["t_run"]) if times["t_run"] else 0.0)


class JobInfo:
    """Attribute view of a job-list record; ``annotations``/``sched`` are namespaces
    whose missing values read as ``""`` (README section 1)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self._record = record
        for key, value in record.items():
            setattr(self, key, value)
        self.id = JobID(record["id"])
        self.exception = SimpleNamespace(**record["exception"])
        sched = record["annotations"].get("sched", {})
        self.sched = SimpleNamespace(**{key: sched.get(key, "") for key in (
            "t_estimate", "reason_pending", "jobs_ahead", "resource_summary", "queue")})

    def to_dict(self) -> dict[str, Any]:
        return dict(self._record)


def _matches(job: Job, states: int, results: int) -> bool:
    state = getattr(constants, f"FLUX_JOB_STATE_{job.state}")
    if results:
        result = _result(job)
        return bool(result) and bool(_RESULTS[result.lower()] & results)
    return not states or bool(state & states)


def _order(jobs: Iterable[Job]) -> list[Job]:
    """Pending first, then running, then inactive, newest first within each group."""
    group = {"INACTIVE": 2, "RUN": 1, "CLEANUP": 1}
    return sorted(jobs, key=lambda j: (group.get(j.state, 0), -j.id))


class JobList:
    """``flux.job.JobList(h, filters=[...], ids=[...], user=None, max_entries=1000)``."""

    def __init__(self, flux_handle: Flux, filters: list[str] | None = None,
                 ids: list[Any] | None = None, user: Any | None = None,
                 max_entries: int = 1000, **_: Any) -> None:
        self.handle = flux_handle
        self.states = self.results = 0
        for name in filters or []:
            if name in _STATES:
                self.states |= _STATES[name]
            elif name in _RESULTS:
                self.results |= _RESULTS[name]
            else:
                raise ValueError(f"Invalid filter specified: {name}")
        self.ids = [int(JobID(i)) for i in ids or []]
        self.userid = None if user == "all" else (os.getuid() if user is None else int(user))
        self.max_entries = max_entries

    def jobs(self) -> list[JobInfo]:
        selected = [job for job in all_jobs(self.handle.instance)
                    if (not self.ids or job.id in self.ids)
                    and (self.userid is None or job.userid == self.userid)
                    and _matches(job, self.states, self.results)]
        return [JobInfo(_record(job)) for job in _order(selected)[: self.max_entries]]


class JobListFuture(Future):
    def get_jobs(self) -> list[dict[str, Any]]:
        jobs: list[dict[str, Any]] = self.take()
        return jobs


def job_list(flux_handle: Flux, max_entries: int = 1000, attrs: Iterable[str] = (),
             userid: int | None = None, states: int = 0, results: int = 0,
             **_: Any) -> JobListFuture:
    """Raw ``job-list.list``: dicts with numeric ``state`` and ``result`` (joblist.txt)."""
    uid = os.getuid() if userid is None else userid
    records = []
    for job in _order(all_jobs(flux_handle.instance)):
        if job.userid == uid and _matches(job, states, results):
            record = _record(job)
            record["state"] = getattr(constants, f"FLUX_JOB_STATE_{job.state}")
            if record["result"]:
                record["result"] = _RESULTS[record["result"].lower()]
            else:
                del record["result"]
            records.append(record)
    future = JobListFuture(flux_handle)
    future.push(records[:max_entries])
    return future


def get_job(flux_handle: Flux, jobid: Any) -> dict[str, Any]:
    """One job's record with string state/result (cancel-pending.txt)."""
    with flux_handle.instance.cv:
        return _record(flux_handle.instance.get(int(JobID(jobid))))
