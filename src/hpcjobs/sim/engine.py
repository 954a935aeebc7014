"""The discrete-event core: jobs, resources, an event heap, and the protocol's semantics.

Batsim's timing rules this engine reproduces (fixtures/batsim-4.2.1, docs/sim.md):
- Events that happen while the decision process is deciding (between a request's
  ``now`` and its reply's ``now``) travel together in the next message.
- On a zero-latency platform, Batsim's own clock: each internal message takes a byte's
  transfer to the master host, the server takes one at a time and sends what it has
  once its mailbox is empty (:meth:`Engine._receive`); on a platform with latency, one
  message per source of events.
- Each decision takes effect when Batsim's server would receive it.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..batsim_protocol import intervals
from ..batsim_protocol.platform import Platform
from ..batsim_protocol.events import FINAL_JOB_STATES
from .errors import Deadlock, InputError, ProtocolViolation
from .profiles import Execution
from .workload import (WorkloadJob, Profile, Workload, check_composed, executors_mismatch, make_job,
                       registered_profile)

log = logging.getLogger(__name__)


def shown(t: float) -> float:
    """``t`` as Batsim writes times in its messages: rounded to the microsecond ("%f")."""
    return float(f"{t:f}")

Event = dict[str, Any]

#: the shortest wait of a CALL_ME_LATER, as Batsim's waiter sleeps
MIN_CALL_WAIT = 1e-5
#: SimGrid's timing precision ("precision/timing", 1e-9 s): a timer due less than this
#: after a step of the simulation ends at that step; one due exactly that much later
#: (a message's transfer on a 1 GBps route) does not, hence the margin
SNAP = 0.999e-9

_SUBMIT, _COMPLETE, _CALL, _NOTIFY = 0, 1, 2, 3
#: the rank of an internal event among those of its instant (see Engine._push); a
#: completion's rank depends on how the job ends (0: a timer, 3: a parallel task)
_RANKS = {_SUBMIT: 0, _CALL: 0, _NOTIFY: 1}
#: on a platform with latency: one message per source, in this order
_LATENCY_RANKS = {_SUBMIT: 0, _COMPLETE: 1, _CALL: 2, _NOTIFY: 3}

SUBMITTED, RUNNING = "SUBMITTED", "RUNNING"
SUCCESS, FAILED, WALLTIME, KILLED, REJECTED = FINAL_JOB_STATES
JOB_STATES = ("NOT_SUBMITTED", SUBMITTED, RUNNING, *FINAL_JOB_STATES)
FINAL_STATES = frozenset(FINAL_JOB_STATES)
_RELEASED: dict[str, Any] = {}


@dataclass(frozen=True)
class Options:
    """The behaviour switches Batsim takes on its command line."""

    dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    profile_reuse: bool = False
    forward_profiles: bool = False
    sched_config: str = ""
    #: batprotocol: SIMULATION_BEGINS lists the profiles only when the decision process
    #: asked (EDC hello); it always describes each host's cores and speed
    forward_profiles_on_begins: bool = True
    host_details: bool = False
    #: Batsim 4.2.1 (JSON protocol) runs a job on exactly ``res`` executors: one per
    #: allocated resource, or per rank of a 'mapping' ("The job requires 2 machines but
    #: only 1 were given", "the custom mapping size (2) does not match the job requested
    #: number of machines (1)"); the other protocol generations are not held to it
    executors_match_res: bool = True
    #: batprotocol: SIMULATION_BEGINS lists the simulator's command line as it received
    #: it (program first); None: the JSON protocol, whose SIMULATION_BEGINS has no such field
    arguments: tuple[str, ...] | None = None


class _Call:
    """A CALL_ME_LATER of batprotocol: named, possibly periodic (``left`` calls to go,
    None: until stopped)."""

    __slots__ = ("id", "period", "left", "stopped")

    def __init__(self, call_id: str, period: float, left: int | None) -> None:
        self.id, self.period, self.left, self.stopped = call_id, period, left, False


class SimJob:
    """A submitted job and what became of it."""

    __slots__ = (
        "alloc",
        "alloc_text",
        "end_state",
        "execution",
        "finish",
        "metadata",
        "ret",
        "spec",
        "start",
        "state",
        "token",
    )

    def __init__(self, spec: WorkloadJob) -> None:
        self.spec = spec
        self.state = SUBMITTED
        self.start = -1.0
        self.finish = -1.0
        self.alloc: list[int] = []  # only while running
        self.alloc_text = ""
        self.ret = 0
        self.metadata = ""
        self.execution: Execution | None = None
        self.token = 0
        self.end_state = SUCCESS


class Engine:
    """State of one simulation; driven by the server loop through two calls."""

    def __init__(self, platform: Platform, workloads: list[Workload], options: Options) -> None:
        self.platform = platform
        self.workloads = workloads
        self.options = options
        self.now = 0.0
        self.ended = False
        self._heap: list[tuple[float, int, float, int, int, int, Any]] = []
        self._seq = 0
        self._pending: list[Event] = []
        self.jobs: dict[str, SimJob] = {}
        self.finished: list[SimJob] = []  # ended or rejected, in that order
        self.nb_rejected = 0
        self._profiles: dict[str, dict[str, Profile]] = {}
        self._gone: set[tuple[str, str]] = set()
        self._refs: dict[tuple[str, str], int] = {}
        nb = len(platform.compute)
        self._busy: list[SimJob | None] = [None] * nb
        self._last_release = [0.0] * nb
        self.idle_time = 0.0
        self.computing_time = 0.0
        self._unfinished = 0
        self._lost: list[str] = []  # jobs that returned -2 (see _complete)
        self._cursors = [0] * len(workloads)
        self._static_left = 0
        self._registration_open = options.dynamic_jobs
        self._calls = 0
        self._byes = 0  # workloads whose last submission the current instant made
        master = platform.master
        self._latency = any(link.latency > 0 for host in [platform.master, *(h.name for h in platform.compute)]
                            for link in platform.route(master, host))
        # On a zero-latency platform, Batsim's clock runs ahead of the times it shows by
        # its internal messages: each takes a byte's transfer (``_delta`` from the
        # master's actors, ``_host_delta`` from a job's first host) and the server
        # receives them one at a time; which events share a message follows from that
        # clock (see _pop_group). On a platform with latency, one message per source.
        self._delta = 0.0 if self._latency else platform.message_time(master)
        self._host_delta: dict[int, float] = {}
        self._named_calls: dict[str, list[_Call]] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "EXECUTE_JOB": self._execute, "REJECT_JOB": self._reject, "KILL_JOB": self._kill,
            "CALL_ME_LATER": self._call_me_later, "REGISTER_JOB": self._register_job,
            "REGISTER_PROFILE": self._register_profile, "NOTIFY": self._notify,
            "SET_JOB_METADATA": self._set_metadata, "CHANGE_JOB_STATE": self._change_state,
            "QUERY": self._query, "STOP_CALL_ME_LATER": self._stop_call_me_later,
            "NOP": lambda data: None,  # the legacy protocol's "do nothing"
        }
        for index, wl in enumerate(workloads):
            self._profiles[wl.name] = dict(wl.profiles)
            for prof in wl.profiles.values():
                for sub in prof.seq:
                    self._ref(wl.name, sub, 1)
            for spec in wl.jobs:
                self._ref(wl.name, spec.profile, 1)
            if wl.jobs:
                self._static_left += 1
                self._push(wl.jobs[0].submit_at, _SUBMIT, index, None)
        if workloads and not self._static_left:
            self._push(0.0, _NOTIFY, 0, None)

    # ---- messages ------------------------------------------------------------------
    def simulation_begins(self) -> list[Event]:
        """The first message's events."""
        compute = [{"id": i, "name": h.name, "state": "idle", "properties": dict(h.properties),
                    "zone_properties": dict(h.zone_properties)}
                   for i, h in enumerate(self.platform.compute)]
        opts = self.options
        if opts.host_details:
            for resource, host in zip(compute, self.platform.compute):
                resource["core_count"] = host.cores
                resource["computation_speed"] = [host.speed]
        data = {
            "nb_resources": len(compute), "nb_compute_resources": len(compute),
            "nb_storage_resources": 0, "allow_compute_sharing": False, "allow_storage_sharing": True,
            "config": {"redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
                       "redis-prefix": "default",
                       "profiles-forwarded-on-submission": opts.forward_profiles,
                       "dynamic-jobs-enabled": opts.dynamic_jobs,
                       "dynamic-jobs-acknowledged": opts.acknowledge_dynamic_jobs,
                       "profile-reuse-enabled": opts.profile_reuse,
                       "sched-config": opts.sched_config, "forward-unknown-events": False},
            "compute_resources": compute, "storage_resources": [],
            "workloads": {wl.name: wl.path for wl in self.workloads},
            # Batsim lists each workload's profiles in reverse file order, and only those
            # its jobs use (directly or in a composed profile): it drops the others at load
            "profiles": {wl.name: _used_in_reverse(wl) for wl in self.workloads},
        }
        if not opts.forward_profiles_on_begins:
            del data["profiles"]
        if opts.arguments is not None:
            data["batsim_arguments"] = list(opts.arguments)
        return [{"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": data}]

    def next_events(self) -> list[Event]:
        """Events of the next request; the clock (``now``) moves to their time."""
        while self._heap and not self._pending:
            self._pop_group()
        if not self._pending:
            if not self._is_over():
                raise Deadlock(self._deadlock_reason())
            self.ended = True
            self._emit("SIMULATION_ENDS", {})
        events, self._pending = self._pending, []
        return events

    def apply_reply(self, now: float, events: list[Event]) -> None:
        """Apply the decision process's reply to the request sent at ``self.now``."""
        asked = self.now
        if now < shown(asked):
            raise ProtocolViolation(f"reply 'now' ({now}) is earlier than the request's 'now' ({shown(asked)})")
        now = max(now, asked)  # (the request showed the time rounded to the microsecond)
        previous = asked
        cursor = server = asked  # zero-latency: the request-reply actor's and the server's clocks
        for index, event in enumerate(events):
            stamp = event["timestamp"]
            kind = event["type"]
            if shown(previous) <= stamp < previous:
                stamp = previous
            if stamp > now:
                raise ProtocolViolation(f"event #{index} ({kind}) has timestamp {stamp}, later than "
                                        f"the message's 'now' ({now})")
            if stamp < previous:
                which = "the request's 'now'" if previous == asked and index == 0 else "the previous event's"
                raise ProtocolViolation(f"event #{index} ({kind}) has timestamp {stamp}, earlier than "
                                        f"{which} ({previous}): events must be in time order")
            previous = stamp
            handler = self._handlers.get(kind)
            if handler is None:
                raise ProtocolViolation(f"event #{index}: unsupported or unknown event type {kind!r}")
            if self._latency:
                self._advance(stamp)
                self.now = stamp
            else:
                # Batsim's request-reply actor sleeps until a decision's time if it is
                # later, then posts it to the server, which takes it a message later
                cursor = max(cursor, stamp)
                server = self._take(cursor, server)
                receipt = max(cursor, server) + self._delta
                server = self._take(receipt, receipt, decision=stamp)
                self.now = cursor = receipt
            handler(event["data"])
        if self._latency:
            if now > asked:
                self._advance(now)
            self.now = now
            return
        # the actor sleeps until the reply's time, then tells the server it is ready:
        # the server then sends what it has once it took what was posted by then
        cursor = max(cursor, now)
        server = self._take(cursor, server)
        ready = max(cursor, server) + self._delta
        server = self._take(ready, ready)
        self.now = self._receive(server, start=False, prev=server - self._delta)

    # ---- heap ----------------------------------------------------------------------
    def _push(self, when: float, kind: int, sub: int, payload: Any, rank: int = -1,
              registered: float = -1.0) -> None:
        """Schedule an internal event. Events of one instant reach the decision process
        as Batsim's SimGrid actors reach its server (differential test, docs/sim.md):
        one message with the timers (``rank`` 0: static submissions, requested calls,
        delay steps and walltime kills, in the order their timers were set,
        ``registered``), then ``no_more_static_job_to_submit`` (rank 1, the
        submitter's next step), then parallel tasks that finish by themselves (rank 2,
        a few scheduling rounds later)."""
        self._seq += 1
        if kind == _SUBMIT:
            # Batsim's submitter posts its message a transfer after the submission time
            when += self._delta
        if self._latency:
            # Batsim's messages travel over the simulated network: each source's reach
            # the decision process at its own time, in its own message (docs/sim.md)
            rank, registered = _LATENCY_RANKS[kind], 0.0
        elif rank < 0:
            rank = _RANKS[kind]
        heapq.heappush(self._heap, (when, rank, self.now if registered < 0 else registered, self._seq,
                                    kind, sub, payload))

    def _advance(self, limit: float) -> None:
        """Handle the internal events due by ``limit`` (platforms with latency)."""
        heap = self._heap
        while heap and heap[0][0] <= limit:
            self._pop_group()

    def _take(self, limit: float, server: float, decision: float = -1.0) -> float:
        """While the decision process's reply is applied (zero-latency platforms): the
        server receives the messages posted before ``limit`` (it is busy until
        ``server``), and returns when it is free. Before a decision stamped
        ``decision``, not the parallel tasks ending at that instant: they reach the
        server after that instant's decisions (a job killed then ends killed)."""
        heap = self._heap
        while heap and heap[0][0] < limit and not (heap[0][1] == 2 and shown(heap[0][0]) <= decision):
            server = self._receive(server, limit, hold=decision)
        return server

    def _pop_group(self, limit: float = math.inf) -> None:
        """Handle the events of the next message (see :meth:`_push`), due before
        ``limit``: on a platform with latency, those of one instant and rank; on a
        zero-latency platform, those Batsim's server takes before its mailbox is empty
        (:meth:`_receive`), which sets the clock to when it sends them."""
        heap = self._heap
        if self._latency:
            group = [heapq.heappop(heap)]
            when, rank = group[0][0], group[0][1]
            while heap and heap[0][0] == when and heap[0][1] == rank:
                group.append(heapq.heappop(heap))
            self._handle(group, when)
            return
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)  # a killed job's planned end: nothing happens then
        if heap and heap[0][0] < limit:
            self.now = max(self.now, self._receive(heap[0][0], limit))

    def _live(self, entry: tuple[float, int, float, int, int, int, Any]) -> bool:
        """Whether a heap entry still sends a message (a killed job's end does not)."""
        if entry[4] != _COMPLETE:
            return True
        job, token = entry[6]
        return bool(job.token == token and job.state == RUNNING)

    def _receive(self, free: float, limit: float = math.inf, start: bool = True, hold: float = -1.0,
                 prev: float = -math.inf) -> float:
        """Batsim's server on a zero-latency platform, idle from ``free`` on: it
        receives one message at a time, each a transfer (:meth:`_message_time`) after
        it was posted and after the previous one, and sends the decision process what
        it has once its mailbox is empty. A timer due before then (or within SimGrid's
        timing precision of an earlier step: not a parallel task, whose end is
        computed, not timed) has posted by then; one ending at the very step the
        server looks posts after it looked (measured); messages posted at one step
        reach the server in the order their timers were set. Handles them (those due
        before ``limit``, the first one whenever with ``start``, else after the step
        ``prev``; not the parallel tasks ending by ``hold``: see :meth:`_take`) and
        returns when the server is free again."""
        heap = self._heap
        group: list[tuple[float, int, float, int, int, int, Any]] = []
        steps: list[float] = []  # when something happens while the server receives
        while heap:
            due, entry_rank = heap[0][0], heap[0][1]
            if due >= limit or (entry_rank == 2 and shown(due) <= hold):
                break
            if (group or not start) and not (due < free or (entry_rank != 2 and due - prev < SNAP)):
                break
            entry = heapq.heappop(heap)
            if not self._live(entry):
                continue
            prev = max(free, due) if not group and start else max(free, min(due, prev))
            free = prev + self._message_time(entry)
            steps += [prev, free]
            group.append(entry)
        if len(group) > 1:
            def posted(e: tuple[float, int, float, int, int, int, Any]) -> float:
                """When a timer posts: at the first step within the precision of its end."""
                index = bisect.bisect_right(steps, e[0] - (0.0 if e[1] == 2 else SNAP))
                return min(e[0], steps[index]) if index < len(steps) else e[0]
            group.sort(key=lambda e: (posted(e), e[2], e[3]))
        if group:
            self._handle(group, free)
        return free

    def _handle(self, group: list[tuple[float, int, float, int, int, int, Any]], free: float) -> None:
        """Handle a message's internal events; ``free``: when the server has them."""
        self._byes = 0
        first_bye = -1  # index of the first submission that ended its workload
        for index, (due, _, _, _, kind, sub, payload) in enumerate(group):
            if self._byes and first_bye < 0:
                first_bye = index - 1
            if kind == _COMPLETE:
                job, token = payload
                # completions of killed jobs are left in the heap: skip them without
                # moving the clock
                if job.token == token and job.state == RUNNING:
                    self.now = due
                    self._complete(job)
                continue
            self.now = due
            if kind == _SUBMIT:
                self._submit_static(sub)
            elif kind == _NOTIFY:
                self._emit("NOTIFY", {"type": "no_more_static_job_to_submit"})
            else:
                self._requested_call(payload)
        if self._byes and first_bye < 0:
            first_bye = len(group) - 1
        if self._byes and not self._static_left:
            # a submitter says goodbye one scheduling round after Batsim's server took
            # its last submission: if the server is still busy with this instant's other
            # messages then, the NOTIFY travels with them; else it posts just after the
            # server sent them (docs/sim.md)
            if first_bye < len(group) - 1 and not self._latency:
                self._emit("NOTIFY", {"type": "no_more_static_job_to_submit"})
            else:
                self._push(free, _NOTIFY, 0, None)
        self._byes = 0

    def _message_time(self, entry: tuple[float, int, float, int, int, int, Any]) -> float:
        """How long the message of a heap entry takes to reach Batsim's server."""
        if entry[4] != _COMPLETE:
            return self._delta
        job = entry[6][0]
        first = job.alloc[0] if job.alloc else -1
        delta = self._host_delta.get(first)
        if delta is None:
            host = self.platform.compute[first].name if first >= 0 else self.platform.master
            delta = self._host_delta[first] = self.platform.message_time(host)
        return delta

    def _requested_call(self, call: _Call | None) -> None:
        if call is None:  # the JSON protocol's anonymous one-shot call
            self._calls -= 1
            self._emit("REQUESTED_CALL", {})
            return
        if call.stopped:
            return
        if call.left is not None:
            call.left -= 1
        last = call.left == 0
        if last or not call.period:
            self._calls -= 1
            calls = self._named_calls[call.id]
            calls.remove(call)
            if not calls:
                del self._named_calls[call.id]
        else:
            self._push(self.now + call.period, _CALL, 0, call)
        self._emit("REQUESTED_CALL", {"id": call.id, "last_periodic_call": last and bool(call.period)})

    def _emit(self, kind: str, data: dict[str, Any]) -> None:
        self._pending.append({"timestamp": shown(self.now), "type": kind, "data": data})

    @property
    def shown_now(self) -> float:
        """The current time as Batsim writes it in its messages."""
        return shown(self.now)

    # ---- internal events -----------------------------------------------------------
    def _submit_static(self, index: int) -> None:
        wl = self.workloads[index]
        jobs = wl.jobs
        cursor = self._cursors[index]
        when = jobs[cursor].submit_at
        while cursor < len(jobs) and jobs[cursor].submit_at == when:
            self._submitted(jobs[cursor])
            cursor += 1
        self._cursors[index] = cursor
        if cursor < len(jobs):
            self._push(jobs[cursor].submit_at, _SUBMIT, index, None)
            return
        self._static_left -= 1
        self._byes += 1

    def _submitted(self, spec: WorkloadJob) -> None:
        self.jobs[spec.job_id] = SimJob(spec)
        self._unfinished += 1
        data: dict[str, Any] = {"job_id": spec.job_id, "job": spec.raw}
        if self.options.forward_profiles:
            data["profile"] = self._profiles[spec.workload][spec.profile].raw
        self._emit("JOB_SUBMITTED", data)
        spec.raw = _RELEASED  # only needed for this event: frees memory on large workloads

    def _complete(self, job: SimJob) -> None:
        if job.end_state == KILLED:
            if job.ret != -2:
                raise InputError(f"Job '{job.spec.job_id}' completed with unknown return code: {job.ret} "
                                 "(its profile's 'ret': Batsim 4.2.1 aborts on a return code below -2)")
            # Batsim takes -2 for its kill by the scheduler, whose end the kill reports:
            # the job frees its hosts but is never reported, so the simulation cannot end
            self._release(job, KILLED)
            self._lost.append(job.spec.job_id)
            return
        self._finish(job, job.end_state)
        ret = -1 if job.state == WALLTIME else job.ret
        self._emit("JOB_COMPLETED", {"job_id": job.spec.job_id, "job_state": job.state,
                                     "return_code": ret, "alloc": job.alloc_text})

    def _finish(self, job: SimJob, state: str) -> None:
        self._release(job, state)
        self._unfinished -= 1
        self.finished.append(job)
        self._ref(job.spec.workload, job.spec.profile, -1)

    def _release(self, job: SimJob, state: str) -> None:
        """``job`` ends in ``state`` now and frees its resources."""
        now = self.now
        job.state = state
        job.finish = now
        job.token += 1
        job.execution = None
        if job.start < 0:  # ended without running (killed or state-changed while queued)
            job.start = now
        self.computing_time += (now - job.start) * len(job.alloc)
        for res in job.alloc:
            self._busy[res] = None
            self._last_release[res] = now
        job.alloc = []

    def _ref(self, workload: str, profile: str, delta: int) -> None:
        key = (workload, profile)
        count = self._refs.get(key, 0) + delta
        self._refs[key] = count
        if count == 0 and delta < 0 and not self.options.profile_reuse:
            # Batsim frees a profile once no job or composed profile uses it any more;
            # --enable-profile-reuse keeps it (fixtures: dyn_without_profile_reuse)
            gone = self._profiles[workload].pop(profile, None)
            self._gone.add(key)
            if gone is not None:
                for sub in gone.seq:
                    self._ref(workload, sub, -1)

    def _is_over(self) -> bool:
        return (not self._static_left and not self._heap and not self._unfinished
                and not self._registration_open and not self._calls)

    def _deadlock_reason(self) -> str:
        reasons = []
        if self._registration_open:
            reasons.append("dynamic registration is still open (the decision process never sent "
                           "NOTIFY registration_finished)")
        if self._lost:
            reasons.append(f"job(s) {', '.join(self._lost)} returned -2, Batsim's code for a kill by the "
                           "scheduler, and were never reported")
        waiting = [j.spec.job_id for j in self.jobs.values() if j.state == SUBMITTED]
        if waiting:
            shown = ", ".join(waiting[:10]) + (" ..." if len(waiting) > 10 else "")
            reasons.append(f"{len(waiting)} submitted job(s) were never executed, rejected or killed: {shown}")
        return (f"deadlock at time {self.now}: nothing can happen any more but the simulation is not "
                f"over: " + "; ".join(reasons) + " (Batsim's SimGrid reports 'Deadlock detected' here)")

    # ---- decisions -----------------------------------------------------------------
    def _job(self, data: dict[str, Any], kind: str, job_id: Any = None) -> SimJob:
        jid = data.get("job_id") if job_id is None else job_id
        if not isinstance(jid, str):
            raise ProtocolViolation(f"{kind}: 'job_id' is missing or not a string ({jid!r})")
        job = self.jobs.get(jid)
        if job is None:
            raise ProtocolViolation(f"{kind}: unknown job {jid!r}")
        return job

    def _lookup(self, workload: str) -> Callable[[str], Profile]:
        profiles = self._profiles.get(workload, {})

        def lookup(name: str) -> Profile:
            prof = profiles.get(name)
            if prof is None:
                raise self._missing_profile(workload, name)
            return prof
        return lookup

    def _missing_profile(self, workload: str, name: str) -> ProtocolViolation:
        if (workload, name) in self._gone:
            return ProtocolViolation(f"Cannot get profile {name!r} of workload {workload!r}: it existed "
                                     "some time ago but is no longer accessible (its last job finished; "
                                     "run with --enable-profile-reuse to keep profiles)")
        return ProtocolViolation(f"unknown profile {name!r} in workload {workload!r}")

    def _execute(self, data: dict[str, Any]) -> None:
        job = self._job(data, "EXECUTE_JOB")
        jid = job.spec.job_id
        if job.state != SUBMITTED:
            raise ProtocolViolation(f"EXECUTE_JOB: job {jid!r} cannot be executed: it is {job.state}")
        alloc_text = data.get("alloc")
        if not isinstance(alloc_text, str):
            raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: 'alloc' is missing or not a string")
        alloc = intervals.parse(alloc_text, f"EXECUTE_JOB {jid!r} alloc", len(self._busy))
        for res in alloc:
            other = self._busy[res]
            if other is not None:
                raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: resource {res} is busy with job "
                                        f"{other.spec.job_id!r} (compute sharing is disabled)")
        hosts = [self.platform.compute[r] for r in alloc]
        mapping = data.get("mapping")
        if mapping is not None:
            hosts = self._map(jid, mapping, hosts)
        if self.options.executors_match_res and len(hosts) != job.spec.res:
            what = (f"its 'mapping' has {len(hosts)} ranks" if mapping is not None else
                    f"its allocation {alloc_text!r} has {len(hosts)} resources (a 'mapping' of "
                    f"{job.spec.res} ranks may place the executors)")
            raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: the job requests {job.spec.res} resources but "
                                    f"{what}: Batsim refuses a different number of executors")
        lookup = self._lookup(job.spec.workload)
        profile = lookup(job.spec.profile)
        execution = Execution(self.platform, hosts, lookup)
        duration, ret, reached, last_step, by_itself = execution.ending(profile, job.spec.walltime)
        now = self.now
        for res in alloc:
            self._busy[res] = job
            self.idle_time += now - self._last_release[res]
        job.state = RUNNING
        job.start = now
        job.alloc = alloc
        job.alloc_text = intervals.format_ids(alloc)
        job.execution = execution
        if reached or ret == -1:
            # Batsim kills a job whose run reaches its walltime, even exactly: a delay
            # step sleeps only while it ends before the remaining time, a parallel task
            # waits with the remaining time as timeout (differential test, docs/sim.md);
            # and it tells the end state from the return code alone, so a profile
            # returning -1, its walltime kill's code, ends the same way
            job.end_state, job.ret = WALLTIME, -1
        elif ret < -1:
            # -2 is its kill by the scheduler's code, below that it aborts (_complete)
            job.end_state, job.ret = KILLED, ret
        else:
            job.end_state, job.ret = (SUCCESS if ret == 0 else FAILED), ret
        self._push(now + duration, _COMPLETE, 0, (job, job.token), rank=2 if by_itself else 0,
                   registered=now + last_step)

    def _map(self, jid: str, mapping: Any, hosts: list[Any]) -> list[Any]:
        if not isinstance(mapping, dict) or not mapping:
            raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: 'mapping' must be a non-empty object rank -> index")
        try:
            pairs = sorted((int(k), int(v)) for k, v in mapping.items())
        except (TypeError, ValueError):
            raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: 'mapping' keys and values must be integers") from None
        if [rank for rank, _ in pairs] != list(range(len(pairs))):
            raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: 'mapping' ranks must be 0..{len(pairs) - 1}")
        for rank, index in pairs:
            if not 0 <= index < len(hosts):
                raise ProtocolViolation(f"EXECUTE_JOB {jid!r}: mapping sends rank {rank} to allocation "
                                        f"index {index}, but the allocation has {len(hosts)} resources")
        return [hosts[index] for _, index in pairs]

    def _reject(self, data: dict[str, Any]) -> None:
        job = self._job(data, "REJECT_JOB")
        if job.state != SUBMITTED:
            raise ProtocolViolation(f"REJECT_JOB: job {job.spec.job_id!r} cannot be rejected: it is {job.state}")
        job.state = REJECTED
        job.token += 1
        self._unfinished -= 1
        self.nb_rejected += 1
        self.finished.append(job)  # Batsim lists it in _jobs.csv when it is rejected
        self._ref(job.spec.workload, job.spec.profile, -1)

    def _kill(self, data: dict[str, Any]) -> None:
        ids = data.get("job_ids")
        if not isinstance(ids, list) or not ids:
            raise ProtocolViolation("KILL_JOB: 'job_ids' must be a non-empty list")
        progress: dict[str, Any] = {}
        for jid in ids:
            job = self._job(data, "KILL_JOB", jid)
            if job.state == RUNNING:
                assert job.execution is not None
                profile = self._lookup(job.spec.workload)(job.spec.profile)
                progress[jid] = job.execution.progress(profile, self.now - job.start)
                code = job.execution.killed_return_code(progress[jid])
                self._finish(job, KILLED)
                # Batsim 4.2.1 reports the killed job's end before the JOB_KILLED
                self._emit("JOB_COMPLETED", {"job_id": jid, "job_state": KILLED, "return_code": code,
                                             "alloc": job.alloc_text})
            elif job.state == SUBMITTED:
                # never started: it ends killed, without progress (docs/sim.md)
                self._finish(job, KILLED)
        # Batsim 4.2.1 always sends job_progress, empty when no listed job was running
        self._emit("JOB_KILLED", {"job_ids": list(ids), "job_progress": progress})

    def _call_me_later(self, data: dict[str, Any]) -> None:
        if "period" in data:
            self._periodic_call(data)
            return
        when = data.get("timestamp")
        if not isinstance(when, (int, float)) or isinstance(when, bool) or not math.isfinite(when):
            raise ProtocolViolation(f"CALL_ME_LATER: 'timestamp' is missing or not a number ({when!r})")
        if when <= self.now:
            # Batsim asserts target_time > now and aborts, even for the current time
            raise ProtocolViolation(f"CALL_ME_LATER: You asked to be awaken in the past! (you ask: "
                                    f"{when:f}, it is: {self.now:f}): the timestamp must be later "
                                    "than the current time")
        self._calls += 1
        call_id = data.get("id")
        # Batsim 4.2.1's waiter sleeps at least MIN_CALL_WAIT (a shorter sleep did not
        # move SimGrid's clock): a call due sooner comes that long after now (measured)
        self._push(max(float(when), self.now + MIN_CALL_WAIT), _CALL, 0,
                   None if call_id is None else self._named(call_id, 0.0, 1))

    def _named(self, call_id: Any, period: float, left: int | None) -> _Call:
        if not isinstance(call_id, str):
            raise ProtocolViolation(f"CALL_ME_LATER: 'id' must be a string ({call_id!r})")
        call = _Call(call_id, period, left)
        self._named_calls.setdefault(call_id, []).append(call)
        return call

    def _periodic_call(self, data: dict[str, Any]) -> None:
        """batprotocol's periodic CallMeLater: calls at ``offset + k * period`` (k >= 1,
        times counted from 0) after now, ``count`` times or until stopped."""
        period, offset, count = data.get("period"), data.get("offset", 0.0), data.get("count")
        if not isinstance(period, (int, float)) or not period > 0 or not math.isfinite(period):
            raise ProtocolViolation(f"CALL_ME_LATER {data.get('id')!r}: 'period' must be > 0 ({period!r})")
        if not isinstance(offset, (int, float)) or not offset >= 0:
            raise ProtocolViolation(f"CALL_ME_LATER {data.get('id')!r}: 'offset' must be >= 0 ({offset!r})")
        if count is not None and (type(count) is not int or count < 1):
            raise ProtocolViolation(f"CALL_ME_LATER {data.get('id')!r}: the number of periods must be "
                                    f">= 1 ({count!r})")
        first = offset + (math.floor(max(self.now - offset, 0.0) / period) + 1) * period
        self._calls += 1
        self._push(first, _CALL, 0, self._named(data.get("id"), float(period), count))

    def _stop_call_me_later(self, data: dict[str, Any]) -> None:
        call_id = data.get("id")
        calls = self._named_calls.pop(call_id, []) if isinstance(call_id, str) else []
        if not calls:
            raise ProtocolViolation(f"STOP_CALL_ME_LATER: no pending call {call_id!r}")
        for call in calls:
            call.stopped = True
            self._calls -= 1

    def _need_dynamic(self, kind: str) -> None:
        if not self.options.dynamic_jobs:
            raise ProtocolViolation(f"{kind} needs dynamic jobs: run with --enable-dynamic-jobs")

    def _register_profile(self, data: dict[str, Any]) -> None:
        self._need_dynamic("REGISTER_PROFILE")
        wl, name, raw = data.get("workload_name"), data.get("profile_name"), data.get("profile")
        if not isinstance(wl, str) or not wl or "!" in wl:
            raise ProtocolViolation(f"REGISTER_PROFILE: invalid 'workload_name' {wl!r}")
        if not isinstance(name, str) or not name:
            raise ProtocolViolation(f"REGISTER_PROFILE: invalid 'profile_name' {name!r}")
        profiles = self._profiles.setdefault(wl, {})  # registering a profile creates its workload
        if name in profiles or (wl, name) in self._gone:
            raise ProtocolViolation(f"REGISTER_PROFILE: duplicate profile {name!r} in workload {wl!r}")
        prof = registered_profile(name, raw, ProtocolViolation, "REGISTER_PROFILE")
        if prof.seq:
            # only a composed profile can name a missing profile or close a cycle: the
            # registered ones were checked, and none can name one registered later
            # (checking them all again made a workflow's registrations quadratic)
            check_composed({**profiles, name: prof}, ProtocolViolation, "REGISTER_PROFILE")
        profiles[name] = prof
        for sub in prof.seq:
            self._ref(wl, sub, 1)

    def _register_job(self, data: dict[str, Any]) -> None:
        self._need_dynamic("REGISTER_JOB")
        if not self._registration_open:
            raise ProtocolViolation("REGISTER_JOB after NOTIFY registration_finished "
                                    "(send NOTIFY continue_registration first)")
        jid, raw = data.get("job_id"), data.get("job")
        if not isinstance(jid, str) or "!" not in jid:
            raise ProtocolViolation(f"REGISTER_JOB: 'job_id' must be a string 'workload!name' ({jid!r})")
        if not isinstance(raw, dict):
            raise ProtocolViolation(f"REGISTER_JOB {jid!r}: 'job' is missing or not an object")
        if raw.get("id", jid) != jid:
            raise ProtocolViolation(f"REGISTER_JOB: job_id {jid!r} differs from job.id {raw.get('id')!r}")
        if "id" not in raw:
            raw = {"id": jid, **raw}
        workload = jid.split("!", 1)[0]
        spec = make_job(raw, workload, ProtocolViolation, "REGISTER_JOB")
        if jid in self.jobs:
            raise ProtocolViolation(f"REGISTER_JOB: duplicate job id {jid!r}")
        # (a job wider than the platform is registered, as Batsim does: the decision
        # process may reject it, or map its res executors on fewer resources)
        profile = self._profiles.get(workload, {}).get(spec.profile)
        if profile is None:
            raise self._missing_profile(workload, spec.profile)
        mismatch = executors_mismatch(profile, spec.res)
        if mismatch:
            raise ProtocolViolation(f"REGISTER_JOB {jid!r}: {mismatch}: Batsim refuses the job")
        self._ref(workload, spec.profile, 1)
        if self.options.acknowledge_dynamic_jobs:
            self._submitted(spec)
        else:
            spec.raw = _RELEASED
            self.jobs[jid] = SimJob(spec)
            self._unfinished += 1

    def _notify(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "registration_finished":
            self._need_dynamic("NOTIFY registration_finished")
            self._registration_open = False
        elif kind == "continue_registration":
            self._need_dynamic("NOTIFY continue_registration")
            self._registration_open = True
        else:
            raise ProtocolViolation(f"NOTIFY: unsupported type {kind!r} "
                                    "(registration_finished, continue_registration)")

    def _set_metadata(self, data: dict[str, Any]) -> None:
        job = self._job(data, "SET_JOB_METADATA")
        metadata = data.get("metadata")
        if not isinstance(metadata, str):
            raise ProtocolViolation(f"SET_JOB_METADATA {job.spec.job_id!r}: 'metadata' must be a string")
        job.metadata = metadata

    def _change_state(self, data: dict[str, Any]) -> None:
        job = self._job(data, "CHANGE_JOB_STATE")
        state = data.get("job_state")
        if state not in JOB_STATES:
            raise ProtocolViolation(f"CHANGE_JOB_STATE {job.spec.job_id!r}: unknown job_state {state!r}")
        if job.state == RUNNING and state in FINAL_STATES:
            raise ProtocolViolation(f"CHANGE_JOB_STATE {job.spec.job_id!r}: the job is running; "
                                    "use KILL_JOB to stop it")
        if job.state == SUBMITTED and state in FINAL_STATES:
            if state == REJECTED:
                self._reject(data)
            else:
                self._finish(job, state)
            return
        job.state = state

    def _query(self, data: dict[str, Any]) -> None:
        requests = data.get("requests")
        if not isinstance(requests, dict) or not requests:
            raise ProtocolViolation("QUERY: 'requests' must be a non-empty object")
        for key in requests:
            if key != "consumed_energy":
                raise ProtocolViolation(f"QUERY: unsupported request {key!r} (consumed_energy)")
        log.error("QUERY consumed_energy: the energy model is not enabled; answering with an error")
        self._emit("ANSWER", {"consumed_energy": None,
                              "error": "consumed_energy: the energy model is not enabled "
                                       "(hpcjobs.sim has no energy model; Batsim needs -E)"})


def _used_in_reverse(wl: Workload) -> dict[str, Any]:
    """The raw profiles ``wl``'s jobs use (directly or in a composed profile), in reverse
    file order: what Batsim lists in SIMULATION_BEGINS (it drops the others at load)."""
    used = wl.used_profiles()  # once: it walks every job
    return {name: raw for name, raw in reversed(list(wl.raw_profiles.items())) if name in used}
