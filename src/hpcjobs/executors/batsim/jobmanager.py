"""The job manager (RFC 27's word): PSI/J jobs <-> Batsim jobs <-> the scheduler.

Pure bookkeeping, no I/O: the session feeds it Batsim's events and client requests and
sends the Batsim events it returns. Per job it keeps a :class:`Record` (Batsim id,
RFC 27 id, state, annotations, allocation, latest status) and reports status changes
through the ``report`` function it was given.

Life of a job: ``register`` (the job is QUEUED; REGISTER_PROFILE when the profile is
new and REGISTER_JOB go out in the next reply, :meth:`JobManager.flush`) ->
JOB_SUBMITTED (Batsim's acknowledgement) -> ``sched.alloc`` (at most ``limit``
outstanding in limited mode, in priority / submit order; the scheduler answers at the
latest in ``sched.idle``, once all events of the message are handled) -> SUCCESS:
EXECUTE_JOB, ACTIVE | ANNOTATE: status metadata | DENY: REJECT_JOB, FAILED with the
note -> JOB_COMPLETED / JOB_KILLED: final state (:data:`FINAL_STATES`), ``sched.free``.
Status changes found while handling a message are built and reported by
:meth:`JobManager.deliver`, which the session calls after replying.
Cancel: a queued job is withdrawn from the scheduler (``sched.cancel`` -> CANCEL) and
rejected in Batsim (REJECT_JOB is the decision Batsim defines for a submitted job that
never ran); a running one gets KILL_JOB.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import os
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Optional

from ...batsim_protocol import events as protocol
from ...batsim_protocol.events import Event
from ...final_status import Cause
from ...job import Job
from ...state import JobState, JobStatus
from .schedulers.base import (ANNOTATE, CANCEL, DENY, SUCCESS, Scheduler, idset,
                              merge_annotations, ranks_of)

__all__ = ["JobManager", "Record", "Phase", "JobRequest", "FINAL_STATES", "WORKLOAD"]

log = logging.getLogger(__name__)

#: the Batsim workload dynamic jobs and profiles are registered in (the executor
#: makes it unique per simulation: a job's native id is ``<workload>!<n>``)
WORKLOAD = "hpcjobs"

#: Batsim's final job states -> (PSI/J state, message); the exit code is Batsim's
#: return code where it is one (not for a walltime kill: Batsim reports -1 there)
FINAL_STATES: dict[str, tuple[JobState, Optional[str]]] = {
    protocol.COMPLETED_SUCCESSFULLY: (JobState.COMPLETED, None),
    protocol.COMPLETED_FAILED: (JobState.FAILED, "the job's profile returned code {rc}"),
    protocol.COMPLETED_WALLTIME_REACHED: (JobState.FAILED, f"{Cause.WALLTIME.value}: killed after "
                                                           "{walltime:g} s (JobAttributes.duration)"),
    protocol.COMPLETED_KILLED: (JobState.FAILED, "killed by the simulator"),
}

#: how statuses reach the PSI/J jobs: report(job, status, ran)
Report = Callable[[Job, JobStatus, bool], None]
#: builds a status change when it is reported, make(job_manager, record, *args) (None:
#: nothing to report); a plain function, so a pending change allocates no bound method
Make = Callable[..., Optional[JobStatus]]


@dataclass(frozen=True, slots=True)
class JobRequest:
    """What a PSI/J job asks of the simulated cluster."""

    nodes: int
    walltime: float
    profile: dict[str, Any]
    # a tuple: of strings only, the garbage collector stops tracking it, and a queued
    # job's request lives as long as the simulation (the jobspec gets a list)
    command: tuple[str, ...]
    name: Optional[str] = None
    cores: int = 1  # per node
    priority: int = 16

    def jobspec(self) -> dict[str, Any]:
        """The request as an RFC 14 jobspec, for the scheduler's alloc (built when
        needed: thousands of queued jobs need not carry one each)."""
        system: dict[str, Any] = {"duration": self.walltime if math.isfinite(self.walltime) else 0}
        if self.name:
            system["job"] = {"name": self.name}
        return {"version": 1,
                "resources": [{"type": "node", "count": self.nodes, "with": [
                    {"type": "slot", "count": 1, "label": "task",
                     "with": [{"type": "core", "count": self.cores}]}]}],
                "tasks": [{"command": list(self.command), "slot": "task", "count": {"per_slot": 1}}],
                "attributes": {"system": system}}


class Phase(enum.Enum):
    """Where a job is between the client, Batsim and the scheduler."""

    REGISTERED = "registered"  # sent to Batsim (REGISTER_JOB), not acknowledged yet
    SUBMITTED = "submitted"    # Batsim acknowledged it (JOB_SUBMITTED)
    SCHED = "sched"            # its alloc request is with the scheduler
    RUNNING = "running"        # it holds resources and runs in Batsim
    DONE = "done"              # final status reported


@dataclass(eq=False, slots=True)
class Record:
    """One Batsim job and the PSI/J jobs bound to it."""

    number: int
    native_id: str
    request: JobRequest
    t_submit: float
    # weak: a PSI/J job nobody holds any more needs no statuses (and holding it would
    # keep its executor, and so this simulation, alive through the job's reference);
    # the submitted job on its own, not in a list: one object less per job for the
    # garbage collector's full passes
    job: Callable[[], Optional[Job]] = field(default=lambda: None)  # (a static job has none)
    attached: tuple[weakref.ref[Job], ...] = ()  # jobs bound later (attach)
    phase: Phase = Phase.REGISTERED
    status: Optional[JobStatus] = None
    ran: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)
    alloc: Optional[str] = None
    hosts: Optional[list[str]] = None  # with ``alloc`` (one list less per queued job)
    cancel_requested: bool = False
    in_batsim: bool = True  # registered in Batsim (not: wider than the platform)


class JobManager:
    """Records, the scheduler conversation, and the decisions for Batsim."""

    def __init__(self, scheduler: Scheduler, report: Report, adopt_static: bool = False,
                 workload: str = WORKLOAD) -> None:
        self.scheduler = scheduler
        self.workload = workload
        #: schedule the workload's own jobs too (a standalone decision process, :mod:`.decide`)
        self._adopt = adopt_static
        self._cores = 1
        self.records: dict[str, Record] = {}
        self._by_number: dict[int, Record] = {}
        self._report = report
        self._profiles: dict[Hashable, str] = {}  # profile key -> registered profile name
        # id(profile) -> (profile, its name): jobs of one command share one profile
        # object (profiles.profile_for caches them; nobody changes one), so most
        # registrations find their name without building the profile's key; the
        # object is kept, so its id cannot be reused meanwhile
        self._profile_objects: dict[int, tuple[dict[str, Any], str]] = {}
        self._new: list[Record] = []  # submitted, to be registered in the next reply
        self._cancels: list[Record] = []
        self._limit: Optional[int] = None
        self._outstanding = 0
        self._waiting: deque[Record] = deque()  # acknowledged, alloc not sent yet (limited mode)
        self._hosts: list[str] = []
        #: status changes found by handle(), reported by deliver(): four items each,
        #: record, ran, make, args, in one flat list (a tuple per change would be ten
        #: thousand objects more after a first scheduling pass, all living long enough
        #: to count towards the collector's next full pass)
        self._deferred: Optional[list[Any]] = None
        #: the args of the last pending-reason refresh, shared by the jobs a pass
        #: annotates with one object
        self._refresh: tuple[dict[str, Any], bool] = ({}, True)
        self._asked = 0  # requests sent to the scheduler so far
        #: the last annotation merge (current, update, result), see :meth:`_merge`
        self._merged: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
        #: the last annotations a queued status was made for, and its metadata
        self._queued: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
        self._userid = os.getuid()
        self.live = 0  # jobs registered and not final
        self.running = 0

    # -- setup -------------------------------------------------------------------------
    def begin(self, begins: dict[str, Any], cores: int) -> None:
        """SIMULATION_BEGINS: tell the scheduler the inventory, hello, ready."""
        resources = begins.get("compute_resources", [])
        self._cores = cores
        self._hosts = [r["name"] for r in sorted(resources, key=lambda r: int(r["id"]))]
        self.scheduler.inventory([{"rank": int(r["id"]), "name": r["name"], "cores": cores}
                                  for r in resources])
        # no job holds resources when a simulation begins: the hello stream is empty
        mode = self.scheduler.ready()
        if mode.get("mode") == "limited":
            limit = mode.get("limit")
            if type(limit) is not int or not 1 <= limit <= 2147483647:
                raise ValueError(f"scheduler {self.scheduler!r}: ready() limit must be 1..2147483647, "
                                 f"got {limit!r}")
            self._limit = limit
        elif mode.get("mode") != "unlimited":
            raise ValueError(f"scheduler {self.scheduler!r}: ready() mode must be 'unlimited' or "
                             f"'limited', got {mode!r}")

    # -- client requests ---------------------------------------------------------------
    def register(self, t: float, request: JobRequest, job: Job,
                 bind: Callable[[str], None]) -> Record:
        """A new Batsim job submitted at ``t`` for ``job`` (``bind`` gets its native
        id before its first status); it is registered in the next reply (:meth:`flush`),
        so a job may be submitted before the simulation has even begun."""
        number = len(self.records) + 1
        native_id = f"{self.workload}!{number}"
        record = Record(number, native_id, request, t, weakref.ref(job))
        bind(native_id)
        self._new.append(record)
        self.records[native_id] = record
        self._by_number[number] = record
        self.live += 1
        record.status = JobStatus.owning(JobState.QUEUED, t, None, None, {"native_state": "SUBMITTED"})
        self._report(job, record.status, False)  # now: submit() returns it QUEUED
        return record

    def _adopt_job(self, data: dict[str, Any]) -> Record:
        """A job of a static workload (no PSI/J job): scheduled like the others."""
        job = data["job"]
        walltime = job.get("walltime", -1)
        number = len(self.records) + 1
        request = JobRequest(int(job["res"]), math.inf if walltime == -1 else float(walltime), {},
                             (data["job_id"],), data["job_id"], self._cores)
        record = Record(number, data["job_id"], request, float(job.get("subtime", 0.0)))
        self.records[record.native_id] = record
        self._by_number[number] = record
        self.live += 1
        return record

    def attach(self, native_id: str, job: Job) -> bool:
        """Bind another PSI/J job to ``native_id`` and give it the current status."""
        record = self.records.get(native_id)
        if record is None:
            return False
        record.attached += (weakref.ref(job),)
        if record.status is not None:
            self._report(job, record.status, record.ran)
        return True

    def request_cancel(self, record: Record) -> None:
        """Cancel at the next reply (a no-op for a finished job)."""
        if record.phase is not Phase.DONE and not record.cancel_requested:
            record.cancel_requested = True
            self._cancels.append(record)

    # -- one exchange with Batsim ------------------------------------------------------
    def handle(self, events: list[Event], t: float) -> list[Event]:
        """Handle Batsim's ``events`` (of a message of time ``t``); return the
        decisions they lead to, timestamped ``t``."""
        out: list[Event] = []
        self._deferred = []
        for event in events:
            handler = _HANDLERS.get(event["type"])
            if handler is not None:
                handler(self, event, t, out)
        self._settle(t, out)
        return out

    def deliver(self, until: Optional[set[Record]] = None) -> None:
        """Report the status changes found by the last :meth:`handle`, in order (with
        ``until``: up to the last one of these records; the others stay pending).
        Deferred, statuses and all, so the session can reply to Batsim first and do
        this while the simulator computes (another core), except what a waiting client
        needs first: a client woken by a change sees every change that happened before it."""
        changes, self._deferred = self._deferred or [], None
        if until is not None:
            end = max((i for i in range(0, len(changes), 4) if changes[i] in until), default=-4) + 4
            changes, self._deferred = changes[:end], changes[end:]
        items = iter(changes)
        for record, ran, make, args in zip(items, items, items, items):
            self._apply(record, ran, make, args)

    def flush(self, now: float) -> list[Event]:
        """What client requests add to the reply sent at ``now``: registrations
        (stamped with their submit times) and cancellations."""
        out: list[Event] = []
        new, self._new = self._new, []
        for record in new:
            self._register(record, out)
        cancels, self._cancels = self._cancels, []
        for record in cancels:
            self._cancel(record, now, out)
        self._settle(now, out)
        return out

    def _register(self, record: Record, out: list[Event]) -> None:
        # the events carry the job's submit time, earlier than the reply's for a job
        # submitted before the simulation began or while Batsim computed
        request, t = record.request, record.t_submit
        if request.nodes > len(self._hosts):
            # Batsim aborts the whole simulation on a job wider than the platform: such a
            # job only goes to the scheduler, whose DENY explains the refusal
            record.in_batsim = False
            record.phase = Phase.SUBMITTED
            if not record.cancel_requested:
                self._waiting.append(record)
            return
        profile = request.profile
        known = self._profile_objects.get(id(profile))
        if known is not None:
            name = known[1]
        else:
            key = protocol_key(profile)
            found = self._profiles.get(key)
            if found is None:
                # --enable-profile-reuse: a profile registered once serves every later job
                found = self._profiles[key] = f"p{len(self._profiles) + 1}"
                out.append(protocol.register_profile(t, self.workload, found, profile))
            name = found
            self._profile_objects[id(profile)] = (profile, name)
        walltime = request.walltime if math.isfinite(request.walltime) else -1
        out.append(protocol.register_job(t, record.native_id, request.nodes, name, walltime))

    @property
    def busy(self) -> bool:
        """Whether Batsim will have something to tell after the next reply (a job
        running, a registration or a cancellation to send)."""
        return bool(self.running or self._new or self._cancels)

    def end(self, message: str, now: float) -> None:
        """The simulation is over or gone: every live job ends FAILED with ``message``,
        reported now (after what was still pending, even if the exchange that found it
        broke off)."""
        self.deliver()
        for record in self.records.values():
            if record.phase is not Phase.DONE:
                self._finish_as(record, JobStatus(JobState.FAILED, now, message=message,
                                                     metadata=self._where(record, "UNKNOWN")))

    # -- Batsim events -----------------------------------------------------------------
    def _submitted(self, event: Event, now: float, out: list[Event]) -> None:
        record = self.records.get(event["data"]["job_id"])
        if record is None and self._adopt:
            record = self._adopt_job(event["data"])
        if record is None or record.phase is not Phase.REGISTERED:
            return
        record.phase = Phase.SUBMITTED
        if record.cancel_requested:
            return  # _cancel rejects it in this same reply
        self._waiting.append(record)  # its alloc goes once all events are handled (_settle)

    def _completed(self, event: Event, now: float, out: list[Event]) -> None:
        data = event["data"]
        record = self.records.get(data["job_id"])
        if record is None or record.phase is Phase.DONE:
            return
        batsim_state = data.get("job_state", protocol.COMPLETED_FAILED)
        rc = data.get("return_code")
        state, template = FINAL_STATES.get(batsim_state, (JobState.FAILED, "ended in Batsim state {state}"))
        if batsim_state == protocol.COMPLETED_KILLED and record.cancel_requested:
            state, template = JobState.CANCELED, Cause.CANCELED.value
        self._finish(record, JobManager._final, (state, float(event["timestamp"]), template, rc,
                                                 batsim_state))
        self._ask(self.scheduler.free, {"id": record.number}, now, out)

    def _killed(self, event: Event, now: float, out: list[Event]) -> None:
        for job_id in event["data"].get("job_ids", []):
            record = self.records.get(job_id)
            if record is None or record.phase is Phase.DONE:
                continue  # it completed on its own before the kill (JOB_COMPLETED came first)
            self._finish(record, JobManager._final, (JobState.CANCELED, float(event["timestamp"]),
                                                     Cause.CANCELED.value, None, protocol.COMPLETED_KILLED))
            self._ask(self.scheduler.free, {"id": record.number}, now, out)

    # -- the scheduler -----------------------------------------------------------------
    def _send_allocs(self, now: float, out: list[Event]) -> None:
        # an alloc answered at once (a DENY) makes room for the next: the loop goes on
        while self._waiting and (self._limit is None or self._outstanding < self._limit):
            record = self._waiting.popleft()
            record.phase = Phase.SCHED
            self._outstanding += 1
            request = {"id": record.number, "priority": record.request.priority,
                       "userid": self._userid, "t_submit": record.t_submit,
                       "jobspec": record.request.jobspec()}
            self._ask(self.scheduler.alloc, request, now, out)

    def _ask(self, call: Callable[[dict[str, Any], float], list[dict[str, Any]]],
             request: dict[str, Any], now: float, out: list[Event]) -> None:
        self._asked += 1
        responses = call(request, now)
        if responses:
            self._responses(responses, now, out)

    def _settle(self, now: float, out: list[Event]) -> None:
        """End of the moment: send the allocs there is room for (every acknowledged
        job in unlimited mode), and take the scheduler's deferred answers (``idle``),
        again while they lead to new requests (in limited mode an answered alloc makes
        room for the next)."""
        idle_at = -1  # requests sent when idle() was last called
        while True:
            self._send_allocs(now, out)
            if self._asked == idle_at:
                return
            idle_at = self._asked
            self._responses(self.scheduler.idle(now), now, out)

    def _responses(self, responses: list[dict[str, Any]], now: float, out: list[Event]) -> None:
        for response in responses:
            kind = response.get("type")
            if kind is None:
                continue  # a sched.free response: nothing left to do
            record = self._by_number.get(int(response["id"]))
            if record is None or record.phase is not Phase.SCHED:
                log.warning("scheduler answered alloc of unknown or not pending job %s: %r",
                            response.get("id"), response)
                continue
            if kind == ANNOTATE:
                annotations = response.get("annotations", {})
                if annotations is not self._refresh[0]:
                    self._refresh = (annotations, True)
                self._set(record, JobManager._annotated, self._refresh)
                continue
            self._outstanding -= 1
            if kind == SUCCESS:  # (its annotations come with the ACTIVE status)
                self._start(record, response, now, out)
                continue
            if "annotations" in response:
                self._set(record, JobManager._annotated, (response["annotations"], False))
            if kind == DENY:
                self._reject(record, now, out)
                note = response.get("note") or "the scheduler denied the request"
                self._finish_as(record, JobStatus(JobState.FAILED, now, message=f"denied: {note}",
                                                    metadata={"native_state": protocol.REJECTED}))
            elif kind == CANCEL:
                if not record.cancel_requested:
                    log.warning("job %s: scheduler sent CANCEL without a cancel request", record.native_id)
                self._reject(record, now, out)
                self._finish_as(record, JobStatus(JobState.CANCELED, now, message=Cause.CANCELED.value,
                                                    metadata={"native_state": protocol.REJECTED}))
            else:
                log.warning("job %s: unknown alloc response type %r", record.native_id, kind)

    def _reject(self, record: Record, now: float, out: list[Event]) -> None:
        if record.in_batsim:
            out.append(protocol.reject_job(now, record.native_id))

    def _start(self, record: Record, response: dict[str, Any], now: float, out: list[Event]) -> None:
        if not record.in_batsim:
            log.error("job %s: scheduler %r granted %d node(s) on a platform of %d",
                      record.native_id, self.scheduler, record.request.nodes, len(self._hosts))
            self._ask(self.scheduler.free, {"id": record.number}, now, out)
            self._finish_as(record, JobStatus(JobState.FAILED, now, message=(
                f"the scheduler granted {record.request.nodes} node(s), but the platform has "
                f"{len(self._hosts)}")))
            return
        ranks = ranks_of(response["R"])
        record.alloc = idset(ranks, " ")
        record.hosts = [self._hosts[r] for r in ranks]
        record.phase = Phase.RUNNING
        record.ran = True
        self.running += 1
        out.append(protocol.execute_job(now, record.native_id, record.alloc))
        self._set(record, JobManager._active, (now, response.get("annotations")))

    def _cancel(self, record: Record, now: float, out: list[Event]) -> None:
        if record.phase is Phase.RUNNING:
            out.append(protocol.kill_jobs(now, [record.native_id]))
        elif record.phase is Phase.SCHED:
            self._ask(self.scheduler.cancel, {"id": record.number}, now, out)
        elif record.phase is Phase.SUBMITTED:
            if record in self._waiting:
                self._waiting.remove(record)
            self._reject(record, now, out)
            self._finish_as(record, JobStatus(JobState.CANCELED, now, message=Cause.CANCELED.value,
                                                metadata={"native_state": protocol.REJECTED}))
        elif record.phase is Phase.REGISTERED:
            # not acknowledged yet: JOB_SUBMITTED will come; cancel when it does
            record.cancel_requested = False
            self.request_cancel(record)

    # -- statuses ----------------------------------------------------------------------
    # Built by deliver() where they are found during an exchange with Batsim (handle):
    # the reply goes out first, and the statuses are made while the simulator computes.
    def _finish(self, record: Record, make: Make, args: tuple[Any, ...]) -> None:
        # the caller sends sched.free where the job held resources
        if record.phase is Phase.RUNNING:
            self.running -= 1
        record.phase = Phase.DONE
        self.live -= 1
        self._set(record, make, args)

    def _finish_as(self, record: Record, status: JobStatus) -> None:
        """:meth:`_finish` with a status made already."""
        self._finish(record, _as_is, (status,))

    def _set(self, record: Record, make: Make, args: tuple[Any, ...]) -> None:
        """A status change of ``record``: ``make(self, record, *args)`` builds the status
        (``args`` passed as one tuple: it is kept as it is while the change waits)."""
        if self._deferred is not None:
            self._deferred += (record, record.ran, make, args)
        else:
            self._apply(record, record.ran, make, args)

    def _apply(self, record: Record, ran: bool, make: Make, args: tuple[Any, ...]) -> None:
        status = make(self, record, *args)
        if status is not None:
            record.status = status
            job = record.job()
            if job is not None:  # (nobody holds it any more: nobody needs its status)
                self._report(job, status, ran)
            for ref in record.attached:  # (most jobs have none: no tuple built per status)
                job = ref()
                if job is not None:
                    self._report(job, status, ran)

    def _where(self, record: Record, native_state: str) -> dict[str, Any]:
        metadata: dict[str, Any] = {"native_state": native_state}
        if record.alloc is not None:
            metadata["allocation"] = record.alloc
            metadata["nodes"] = record.hosts
        return metadata

    def _final(self, record: Record, state: JobState, t: float, template: Optional[str],
               rc: Any, batsim_state: str) -> JobStatus:
        message = None if template is None else template.format(
            rc=rc, walltime=record.request.walltime, state=batsim_state)
        exit_code = rc if isinstance(rc, int) and batsim_state in (protocol.COMPLETED_SUCCESSFULLY,
                                                                   protocol.COMPLETED_FAILED) else None
        return JobStatus.owning(state, t, message, exit_code, self._where(record, batsim_state))

    def _active(self, record: Record, t: float, update: Optional[dict[str, Any]]) -> JobStatus:
        """The job started; ``update``: the SUCCESS response's annotations (RFC 27: those
        removing the pending reason and estimate), merged as the status is made."""
        if update:
            record.annotations = self._merge(record.annotations, update)
        metadata = self._where(record, "RUNNING")
        if record.annotations:
            metadata["annotations"] = record.annotations
        return JobStatus.owning(JobState.ACTIVE, t, None, None, metadata)

    def _annotated(self, record: Record, update: dict[str, Any], refresh: bool) -> Optional[JobStatus]:
        """RFC 27 annotation merging; with ``refresh``, the queued job's new pending
        reason and estimated start."""
        annotations = record.annotations = self._merge(record.annotations, update)
        current = record.status
        if not refresh or current is None or current.state is not JobState.QUEUED:
            return None
        queued = self._queued
        if queued[0] is not annotations:
            sched = annotations.get("sched", {})
            template: dict[str, Any] = {"native_state": "SUBMITTED", "annotations": annotations}
            for key in ("reason_pending", "t_estimate"):
                if key in sched:
                    template[key] = sched[key]
            queued = self._queued = (annotations, template)
        # each status its own dict (JobStatus.owning), the annotations in it shared
        return JobStatus.owning(JobState.QUEUED, current.time, None, None, dict(queued[1]))

    def _merge(self, current: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
        """:func:`merge_annotations`, made once for a run of equal merges: a scheduler's
        pass gives the jobs it annotates alike one update object (thousands of jobs
        queued behind the head), and their starts one removal object, so the jobs of
        a pass merge the same objects in turn. Merging never changes its inputs or a
        result, so the jobs share the result."""
        last_current, last_update, merged = self._merged
        same_current = current is last_current or not (current or last_current)  # (or both empty)
        if update is not last_update or not same_current:
            merged = merge_annotations(current, update)
            self._merged = (current, update, merged)
        return merged


def _as_is(jm: JobManager, record: Record, status: JobStatus) -> JobStatus:
    return status


def protocol_key(profile: dict[str, Any]) -> Hashable:
    """A key equal for equal profiles, so each is registered once."""
    try:
        key = tuple(sorted(profile.items()))  # flat profiles (delay, ...): cheap
        hash(key)  # (a tuple of lists is built fine; it fails only when hashed)
        return key
    except TypeError:  # nested values (lists of a parallel profile, ...)
        return json.dumps(profile, sort_keys=True, separators=(",", ":"))


_Handler = Callable[[JobManager, Event, float, list[Event]], None]
_HANDLERS: dict[str, _Handler] = {
    "JOB_SUBMITTED": JobManager._submitted,
    "JOB_COMPLETED": JobManager._completed,
    "JOB_KILLED": JobManager._killed,
}
