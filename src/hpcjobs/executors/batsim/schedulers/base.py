"""The scheduler interface: Flux RFC 27 (spec/flux-rfc27-resource-allocation.txt).

The Batsim executor is the *job manager*; a scheduler is a pure logic object (no I/O,
no threads, no clock of its own) that receives RFC 27 messages as dicts and returns its
responses as dicts, so it can be unit-tested with plain data and written by third
parties (entry-point group ``hpcjobs.batsim_schedulers``).

Messages, in RFC 27's shapes (job ids are integers, times are simulated seconds):

- ``inventory(resources)``: the compute resources, ``[{"rank", "name", "cores"}]``
  (RFC 27 leaves resource discovery out; this is how ours learns it), once, first.
- ``hello(job)``: one call per job already holding resources
  (``{"id", "priority", "userid", "t_submit", "R"}``; R is RFC 20's, see :func:`make_R`).
- ``ready()`` -> ``{"mode": "unlimited"}`` or ``{"mode": "limited", "limit": N}``.
- ``alloc(request, now)`` with ``{"id", "priority", "userid", "t_submit", "jobspec"}``.
- ``free({"id"}, now)``, ``cancel({"id"}, now)``, ``prioritize({"jobs": [[id, prio]]}, now)``.
- ``idle(now)``: the job manager has passed on every request of the moment (the events
  of one Batsim message, or what the client asked for); answer what was deferred.

Each call returns the responses it produced, in order: alloc responses
``{"id", "type": SUCCESS|ANNOTATE|DENY|CANCEL, ...}`` (SUCCESS carries ``R`` and may
carry ``annotations``; DENY carries ``note``) and free responses ``{"id"}``. A call may
answer other jobs' alloc requests too (a free lets queued jobs start). Once returned, a
response and what it holds are the job manager's, never changed again: it keeps and
shares them (many jobs may be given one annotations object). RFC 27 lets a
scheduler answer an alloc whenever it likes; deciding in ``idle`` means a burst of
requests (ten thousand allocs at one instant, twenty frees) costs one scheduling pass,
as in Flux's sched-simple, which queues allocs and frees in their message handlers and
schedules from its reactor's check watcher.

:class:`QueueScheduler` does the bookkeeping every queue-based policy shares (the
queue in priority / submit order, free ranks, DENY of requests wider than the
platform, CANCEL, annotations sent only when they change); FCFS and EASY backfilling
are its two ``schedule`` policies.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union, overload

from ....batsim_protocol import intervals

__all__ = ["Scheduler", "QueueScheduler", "Pending", "PendingQueue", "Running", "SUCCESS", "ANNOTATE", "DENY",
           "CANCEL", "make_R", "ranks_of", "idset", "parse_idset", "jobspec_nodes",
           "jobspec_duration", "merge_annotations", "REASON_RESOURCES", "REASON_PRIORITY"]

#: alloc response types (RFC 27 "Alloc")
SUCCESS, ANNOTATE, DENY, CANCEL = 0, 1, 2, 3

#: ``sched.reason_pending`` of the job at the head of the queue
REASON_RESOURCES = "insufficient resources"
#: ``sched.reason_pending`` of jobs queued behind it
REASON_PRIORITY = "waiting for higher-priority jobs"

Msg = dict[str, Any]


class Scheduler(ABC):
    """An RFC 27 scheduler; see the module docstring for the messages."""

    @abstractmethod
    def inventory(self, resources: list[Msg]) -> None:
        """The platform's compute resources (``rank``, ``name``, ``cores``), once, first."""

    def hello(self, job: Msg) -> None:
        """A job that already holds resources (its ``R``): mark them allocated.

        The Batsim executor never calls it today (no job holds resources when a
        simulation begins), so a scheduler may leave it out; by default it refuses,
        rather than let resources be handed out twice."""
        raise NotImplementedError(f"{type(self).__name__} cannot take over job {job.get('id')} "
                                  "that already holds resources (hello)")

    @abstractmethod
    def ready(self) -> Msg:
        """The concurrency mode: ``{"mode": "unlimited"}`` or ``{"mode": "limited", "limit": n}``."""

    @abstractmethod
    def alloc(self, request: Msg, now: float) -> list[Msg]:
        """A job entered SCHED state; answer now or later (SUCCESS/ANNOTATE/DENY)."""

    @abstractmethod
    def free(self, request: Msg, now: float) -> list[Msg]:
        """A job released its resources; answer ``{"id"}`` (and maybe start others)."""

    @abstractmethod
    def cancel(self, request: Msg, now: float) -> list[Msg]:
        """Withdraw a pending alloc: answer it with CANCEL (ignore unknown ids)."""

    def prioritize(self, request: Msg, now: float) -> list[Msg]:
        """New priorities for pending allocs (``{"jobs": [[id, priority], ...]}``).

        The Batsim executor never changes a priority today; by default a scheduler
        keeps the order it has and answers nothing."""
        return []

    def idle(self, now: float) -> list[Msg]:
        """Every request of the moment has been passed on: answer what was deferred
        (by default nothing is)."""
        return []


# -- RFC 20 R, RFC 22 idsets, RFC 14 jobspec, RFC 27 annotation merging --------------------
def idset(ids: list[int], sep: str = ",") -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (RFC 22); Batsim's interval sets use ``sep=" "``."""
    return intervals.format_ids(ids, sep)


def parse_idset(text: str) -> list[int]:
    """``"0-2,5"`` or ``"0-2 5"`` -> ``[0, 1, 2, 5]`` (``""`` -> ``[]``)."""
    text = text.replace(",", " ")
    return intervals.parse(text, "idset") if text.strip() else []


def make_R(ranks: list[int], starttime: float, expiration: float,
           nodelist: Optional[list[str]] = None, cores: int = 1) -> Msg:
    """An RFC 20 R object for whole nodes ``ranks`` (``expiration`` 0: unlimited)."""
    execution: Msg = {"R_lite": [{"rank": idset(ranks), "children": {"core": _core_ids(cores)}}],
                      "starttime": starttime, "expiration": expiration}
    if nodelist is not None:
        execution["nodelist"] = nodelist
    return {"version": 1, "execution": execution}


@functools.lru_cache(maxsize=8)
def _core_ids(cores: int) -> str:
    return idset(list(range(cores)))


def ranks_of(R: Msg) -> list[int]:
    """The ranks of an R object."""
    lite = R["execution"]["R_lite"]
    if len(lite) == 1 and lite[0]["rank"].isdigit():
        return [int(lite[0]["rank"])]  # the common allocation: one rank
    ranks: list[int] = []
    for entry in lite:
        ranks.extend(parse_idset(entry["rank"]))
    return sorted(ranks)


def jobspec_nodes(jobspec: Msg) -> int:
    """Whole nodes a jobspec asks for (its top-level ``node`` or ``slot`` counts)."""
    total = 0
    for res in jobspec.get("resources", []):
        count = res.get("count", 1)
        total += int(count if isinstance(count, int) else count.get("min", 1))
    return total


def jobspec_duration(jobspec: Msg) -> float:
    """The jobspec's walltime in seconds; ``inf`` when unset or 0 (unlimited)."""
    duration = jobspec.get("attributes", {}).get("system", {}).get("duration", 0)
    return float(duration) if duration else math.inf


def merge_annotations(current: Msg, update: Msg) -> Msg:
    """RFC 27's update rules: dicts merge recursively, JSON null deletes a key,
    anything else replaces. Returns a new dict; ``current`` is not modified."""
    merged = dict(current)
    for key, value in update.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_annotations(merged[key], value)
            if not merged[key]:
                del merged[key]
        else:
            merged[key] = value
    return merged


# -- shared queue machinery --------------------------------------------------------------
@dataclass(slots=True)
class Pending:
    """A job whose alloc request is outstanding."""

    id: int
    priority: int
    t_submit: float
    nodes: int
    duration: float
    #: the sched annotations last sent for it (reason_pending, t_estimate), if any
    sent: Optional[dict[str, Any]] = None

    @property
    def key(self) -> tuple[int, float, int]:
        """Queue order: higher priority first, then earlier submission, then id."""
        return (-self.priority, self.t_submit, self.id)


class PendingQueue(Sequence[Pending]):
    """Pending jobs in queue order (:attr:`Pending.key`), read by policies as a sequence
    (``queue[0]``, slices, ``len``, iteration) and changed only by :class:`QueueScheduler`.

    A list and the offset of its head: the head leaving (most starts) moves the offset
    rather than every job behind it (``del jobs[0]`` costs a queue's length per start,
    quadratic over a run). The jobs left before the offset are dropped once they are a
    quarter of the list, so a start costs a few moves at most, amortized, and a started
    job is not held long."""

    __slots__ = ("_jobs", "_head")

    def __init__(self) -> None:
        self._jobs: list[Pending] = []
        self._head = 0  # _jobs[:_head] have left the queue

    def __len__(self) -> int:
        return len(self._jobs) - self._head

    @overload
    def __getitem__(self, index: int) -> Pending: ...

    @overload
    def __getitem__(self, index: slice) -> list[Pending]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[Pending, list[Pending]]:
        head = self._head
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step < 0:  # (a stop of -1 here means "before the first")
                return self._jobs[head:][index]
            return self._jobs[head + start:head + stop:step]
        size = len(self._jobs) - head
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("queue index out of range")
        return self._jobs[head + position]

    def __iter__(self) -> Iterator[Pending]:
        return itertools.islice(self._jobs, self._head, None)

    def add(self, job: Pending) -> None:
        """Insert ``job`` at its place in key order."""
        jobs = self._jobs
        if len(jobs) == self._head or jobs[-1].key <= job.key:  # the common case: arrivals in order
            jobs.append(job)
            return
        lo, hi = self._head, len(jobs)
        while lo < hi:
            mid = (lo + hi) // 2
            if jobs[mid].key <= job.key:
                lo = mid + 1
            else:
                hi = mid
        jobs.insert(lo, job)

    def discard(self, job: Pending) -> None:
        """Take ``job`` (queued) out of the queue."""
        jobs, head = self._jobs, self._head
        if jobs[head] is not job:
            del jobs[jobs.index(job, head)]
            return
        head = self._head = head + 1
        if head * 4 >= len(jobs):
            del jobs[:head]
            self._head = 0

    def sort(self) -> None:
        """Restore key order after priorities changed."""
        del self._jobs[:self._head]
        self._head = 0
        self._jobs.sort(key=lambda j: j.key)


@dataclass(slots=True)
class Running:
    """A job holding resources."""

    id: int
    ranks: list[int]
    end: float  # expected end (start + walltime; inf when unlimited)


class QueueScheduler(Scheduler):
    """Bookkeeping shared by queue policies; subclasses implement :meth:`schedule`."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._cores = 1
        self._free: list[int] = []  # heap of free ranks: lowest ranks are allocated first
        self._queue = PendingQueue()
        self._pending: dict[int, Pending] = {}
        self._running: dict[int, Running] = {}
        # (expected end, id) of running jobs, sorted; a freed job's entry stays until
        # they are half the list (:meth:`free` would otherwise search and shift it per job)
        self._ends: list[tuple[float, int]] = []
        self._stale = 0  # entries of freed jobs in _ends
        self._out: list[Msg] = []
        self._fresh: list[Pending] = []  # queued jobs not yet annotated
        self._version = 0  # bumped whenever running jobs change (estimates go stale)
        self._estimated: tuple[int, int] = (-1, -1)  # (head id, version) of the last estimate
        self._changed = False  # queue or resources changed since the last schedule()
        #: (a job's sent annotations, the SUCCESS annotations removing them) of the last start
        self._cleared: tuple[Optional[dict[str, Any]], Msg] = (None, {})

    # -- RFC 27 ------------------------------------------------------------------------
    def inventory(self, resources: list[Msg]) -> None:
        self._names = [r["name"] for r in sorted(resources, key=lambda r: int(r["rank"]))]
        self._cores = min((int(r.get("cores", 1)) for r in resources), default=1)
        self._free = [int(r["rank"]) for r in resources]
        heapq.heapify(self._free)

    def hello(self, job: Msg) -> None:
        ranks = ranks_of(job["R"])
        expiration = float(job["R"]["execution"].get("expiration", 0))
        self._add_running(Running(int(job["id"]), ranks, expiration or math.inf))
        taken = set(ranks)
        self._free = [r for r in self._free if r not in taken]
        heapq.heapify(self._free)

    def ready(self) -> Msg:
        return {"mode": "unlimited"}

    def alloc(self, request: Msg, now: float) -> list[Msg]:
        jobspec = request["jobspec"]
        job = Pending(int(request["id"]), int(request.get("priority", 16)),
                      float(request.get("t_submit", now)), jobspec_nodes(jobspec),
                      jobspec_duration(jobspec))
        total = len(self._names)
        if job.nodes < 1 or job.nodes > total:
            return [{"id": job.id, "type": DENY,
                     "note": f"requested {job.nodes} node(s), but the platform has {total}"}]
        self._pending[job.id] = job
        self._queue.add(job)
        self._fresh.append(job)
        return self._changes()

    def free(self, request: Msg, now: float) -> list[Msg]:
        job_id = int(request["id"])
        job = self._running.pop(job_id, None)
        if job is not None:
            self._stale += 1
            if self._stale * 2 > len(self._ends):
                running = self._running
                self._ends = [e for e in self._ends if e[1] in running]
                self._stale = 0
            for rank in job.ranks:
                heapq.heappush(self._free, rank)
            self._version += 1
        self._out.append({"id": job_id})
        return self._changes()

    def cancel(self, request: Msg, now: float) -> list[Msg]:
        job = self._pending.pop(int(request["id"]), None)
        if job is None:
            return []  # RFC 27: no pending alloc, nothing to answer
        self._queue.discard(job)
        self._out.append({"id": job.id, "type": CANCEL})
        return self._changes()

    def prioritize(self, request: Msg, now: float) -> list[Msg]:
        changed = False
        for job_id, priority in request["jobs"]:
            job = self._pending.get(int(job_id))
            if job is not None and job.priority != int(priority):
                job.priority = int(priority)
                changed = True
        if changed:
            self._queue.sort()
            self._fresh = list(self._queue)  # every job's place may have changed
            self._changed = True
        return self._take()

    def idle(self, now: float) -> list[Msg]:
        """Run the policy once for everything that changed since the last time."""
        if self._changed:
            self._changed = False
            if self._queue:
                self.schedule(now)
            elif self._fresh:
                self._fresh.clear()
        return self._take()

    # -- for policies ------------------------------------------------------------------
    @abstractmethod
    def schedule(self, now: float) -> None:
        """Start what the policy allows (:meth:`start`) and annotate the rest
        (:meth:`annotate`). Called from :meth:`idle` when jobs are queued and something
        changed since the last call."""

    @property
    def queue(self) -> PendingQueue:
        """Pending jobs in queue order (read-only; :meth:`start` takes a job out)."""
        return self._queue

    @property
    def free_count(self) -> int:
        """Ranks free now."""
        return len(self._free)

    def start(self, job: Pending, now: float) -> None:
        """Allocate the lowest free ranks to ``job`` and answer its alloc with SUCCESS
        (removing its volatile annotations, RFC 27 "Alloc Success")."""
        free = self._free
        if job.nodes == 1:  # (no comprehensions: a start per job)
            rank = heapq.heappop(free)
            ranks, nodelist = [rank], [self._names[rank]]
        else:
            ranks = sorted(heapq.heappop(free) for _ in range(job.nodes))
            nodelist = [self._names[r] for r in ranks]
        end = now + job.duration
        self._add_running(Running(job.id, ranks, end))
        del self._pending[job.id]
        self._queue.discard(job)
        expiration = 0.0 if math.isinf(end) else end
        response: Msg = {"id": job.id, "type": SUCCESS,
                         "R": make_R(ranks, now, expiration, nodelist, self._cores)}
        sent = job.sent
        if sent:
            # null deletes; jobs that were sent one annotation object (annotate_queue's
            # shared one) get one removal object too, which the job manager merges once
            if sent is not self._cleared[0]:
                self._cleared = (sent, {"sched": dict.fromkeys(sent)})
            response["annotations"] = self._cleared[1]
        self._out.append(response)

    def annotate(self, job: Pending, reason: str, t_estimate: Optional[float] = None) -> None:
        """Set ``job``'s ``sched.reason_pending`` / ``sched.t_estimate``; an ANNOTATE
        response is sent only when they differ from what was last sent."""
        wanted: dict[str, Any] = {"reason_pending": reason}
        if t_estimate is not None and not math.isinf(t_estimate):
            wanted["t_estimate"] = t_estimate
        self._annotate(job, wanted, None)

    def _annotate(self, job: Pending, wanted: dict[str, Any], whole: Optional[Msg]) -> None:
        """:meth:`annotate` with the wanted ``sched`` annotations made; ``whole``, if
        given, is ``{"sched": wanted}``, one object sent to every job of a pass whose
        first annotation it is. Neither side ever changes these dicts (merging makes
        new ones), so the jobs of a pass share them."""
        sent = job.sent
        if sent is None:  # a job's first annotation (most of them): all of it is new
            annotations = whole if whole is not None else {"sched": wanted}
        elif wanted == sent:
            return
        else:
            update = {k: None for k in sent if k not in wanted}
            update.update({k: v for k, v in wanted.items() if sent.get(k) != v})
            annotations = {"sched": update}
        job.sent = wanted
        self._out.append({"id": job.id, "type": ANNOTATE, "annotations": annotations})

    def annotate_queue(self, now: float, head_start: Optional[float] = None) -> None:
        """The usual annotations once the policy has started what it can: the head
        waits for resources (estimated start ``head_start``, computed by
        :meth:`estimated_start` when None); jobs behind it wait for it. Only what
        changed is recomputed, so a long queue costs nothing per scheduling pass."""
        queue = self._queue
        if not queue:
            self._fresh.clear()
            return
        head = queue[0]
        if head_start is not None or (head.id, self._version) != self._estimated:
            self._estimated = (head.id, self._version)
            if head_start is None:
                head_start = self.estimated_start(head.nodes, now)[0]
            self.annotate(head, REASON_RESOURCES, head_start)
        # one reason for every job behind the head: one object for all of them (a
        # first pass annotates thousands), which the job manager merges once
        behind: dict[str, Any] = {"reason_pending": REASON_PRIORITY}
        whole = {"sched": behind}
        pending = self._pending
        for job in self._fresh:
            if job is not head and job.id in pending:
                self._annotate(job, behind, whole)
        self._fresh.clear()

    def estimated_start(self, nodes: int, now: float) -> tuple[float, int]:
        """When ``nodes`` ranks will be free if running jobs end at their walltime,
        and how many ranks beyond ``nodes`` are free then (EASY's "extra" nodes)."""
        free = len(self._free)
        if free >= nodes:
            return now, free - nodes
        running = self._running
        ends = self._ends
        # freed jobs' entries gather at the front (the earliest expected ends): dropped
        # here, each once, rather than skipped again by every later estimate (one per
        # start or end while jobs queue)
        lead = 0
        while lead < len(ends) and ends[lead][1] not in running:
            lead += 1
        if lead:
            del ends[:lead]
            self._stale -= lead
        for end, job_id in ends:  # in end order: usually only the first few are read
            job = running.get(job_id)
            if job is None:
                continue  # freed (its entry is left for later)
            free += len(job.ranks)
            if free >= nodes:
                return max(end, now), free - nodes
        return math.inf, 0

    # -- internals ---------------------------------------------------------------------
    def _add_running(self, job: Running) -> None:
        self._running[job.id] = job
        bisect.insort(self._ends, (job.end, job.id))
        self._version += 1

    def _changes(self) -> list[Msg]:
        # the policy runs in idle(), once per burst of requests
        self._changed = True
        out, self._out = self._out, []
        return out

    def _take(self) -> list[Msg]:
        out, self._out = self._out, []
        return out
