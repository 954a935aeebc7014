"""The differential test's machinery: one seeded case, run on two simulators, compared.

A case (:func:`make_case`, a pure function of its seed) is a platform, a static workload,
Batsim's flags and the parameters of a decision process. :class:`Decider` is that
decision process: FCFS on the lowest free resources, plus seeded kills, rejections,
CALL_ME_LATERs, decision delays and dynamic registrations (with or without
acknowledgements). It is a pure function of the messages it receives and its seed, so
two simulators that send the same messages get the same replies; the first message in
which they differ is where they disagree.

:func:`run` drives one simulator program (real ZeroMQ, a real process) and returns the
transcript, the ``_jobs.csv`` rows and the exit status; :func:`compare` names the first
difference between two runs. Used by tests/sim/test_differential.py (fixed seeds) and
scripts/differential.py (fresh seeds, thousands of them).
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import zmq

import hpcjobs
from hpcjobs.executors.batsim.platform import write_platform

Event = dict[str, Any]


@dataclass
class Case:
    """One generated scenario."""

    seed: int
    hosts: int
    workload: dict[str, Any]
    dynamic: bool
    acks: bool
    # decision process parameters
    p_delay: float
    p_kill: float
    p_reject: float
    p_call: float
    dynamic_jobs: list[tuple[float, int, dict[str, Any], float]] = field(default_factory=list)
    #: the platform file's text; None: write_platform's zero-latency one of ``hosts`` hosts
    platform: Optional[str] = None
    #: times drawn to the microsecond (see :func:`distinct_case`): no two events share an
    #: instant, but by a chance of about one in a million
    distinct: bool = False

    def flags(self) -> list[str]:
        out = []
        if self.dynamic:
            out += ["--enable-dynamic-jobs", "--enable-profile-reuse"]
            if self.acks:
                out.append("--acknowledge-dynamic-jobs")
        return out


def _simple_profile(rng: random.Random, hosts: int) -> tuple[dict[str, Any], float]:
    """A non-composed profile and its duration on one executor per host (1 Gflop/s
    hosts, no communication: exact on a zero-latency platform)."""
    kind = rng.choice(["delay", "delay", "parallel_homogeneous", "parallel_homogeneous_total"])
    ret = rng.choice([0, 0, 0, 1, 3])
    if kind == "delay":
        delay = rng.choice([1, 2, 2.5, 3, 4, 5, 10])
        prof: dict[str, Any] = {"type": "delay", "delay": delay}
        duration = float(delay)
    else:
        cpu = rng.choice([1, 2, 3, 4]) * 1e9
        prof = {"type": kind, "cpu": cpu, "com": 0}
        duration = cpu / 1e9  # per executor for homogeneous; total is divided later
    if ret:
        prof["ret"] = ret
    return prof, duration


def make_case(seed: int) -> Case:
    """The case of ``seed`` (deterministic)."""
    rng = random.Random(seed)
    hosts = rng.randint(1, 6)
    profiles: dict[str, dict[str, Any]] = {}
    durations: dict[str, float] = {}  # on one executor (homogeneous totals: n = 1)
    for i in range(rng.randint(1, 4)):
        prof, duration = _simple_profile(rng, hosts)
        profiles[f"p{i}"] = prof
        durations[f"p{i}"] = duration
    simple = list(profiles)
    for i in range(rng.randint(0, 2)):
        seq = [rng.choice(simple) for _ in range(rng.randint(1, 3))]
        prof = {"type": "composed", "seq": seq}
        if rng.random() < 0.5:
            prof["repeat"] = rng.randint(1, 3)
        if rng.random() < 0.3:
            prof["ret"] = rng.choice([0, 2])
        profiles[f"c{i}"] = prof
    jobs = []
    shared = list(profiles)  # (a 'parallel' profile below serves only its own job)
    for j in range(rng.randint(1, 10)):
        res = rng.randint(1, hosts)
        name = rng.choice(shared)
        if rng.random() < 0.15:
            # a 'parallel' profile of exactly res executors
            name = f"par{j}"
            profiles[name] = {"type": "parallel", "cpu": [rng.choice([0, 1e9, 2e9]) for _ in range(res)],
                              "com": [0] * (res * res)}
        job: dict[str, Any] = {"id": j if rng.random() < 0.5 else f"j{j}", "subtime": rng.choice([0, 0, 1, 2, 3, 5]),
                               "res": res, "profile": name}
        walltime = _walltime(rng, profiles, name, res)
        if walltime is not None:
            job["walltime"] = walltime
        jobs.append(job)
    jobs.sort(key=lambda job: job["subtime"])
    dynamic = rng.random() < 0.4
    case = Case(seed, hosts, {"nb_res": hosts, "jobs": jobs, "profiles": profiles}, dynamic,
                acks=rng.random() < 0.6,
                p_delay=rng.choice([0, 0, 0.2, 0.5]), p_kill=rng.choice([0, 0, 0.1, 0.3]),
                p_reject=rng.choice([0, 0, 0.1]), p_call=rng.choice([0, 0.1, 0.3]))
    if dynamic:
        for _ in range(rng.randint(1, 5)):
            prof, _duration = _simple_profile(rng, hosts)
            res = rng.randint(1, hosts)
            case.dynamic_jobs.append((float(rng.choice([0, 0, 1, 2, 4, 7])), res, prof,
                                      float(rng.choice([-1, 2, 3, 5, 100]))))
        case.dynamic_jobs.sort(key=lambda d: d[0])
    return case


def distinct_case(seed: int) -> Case:
    """The case of ``seed`` with its times spread to the microsecond, so that no two
    events share an instant: submissions, dynamic registrations, decision delays and
    requested calls moved off the whole seconds, and every job given its own copy of
    its profile (and of a composed profile's steps) with its own durations, so that
    jobs started together do not end together. Walltimes keep their place relative to
    the steps (around or after a step's end, as :func:`make_case` drew them; half a
    millisecond past a step's end where it drew one at it)."""
    case = make_case(seed)
    rng = random.Random(seed * 104729 + 7)
    profiles = case.workload["profiles"]
    own: dict[str, Any] = {}

    def spread(value: float, width: float) -> float:
        return round(value + rng.uniform(0.0, width), 6)

    def flops(value: float, factor: float) -> float:
        # whole microseconds of work at 1 Gflop/s, for every executor count up to 6:
        # no duration sits on a rounding tie of Batsim's six printed decimals
        return float(round(value * factor / 6e4) * 6e4)

    def copy(name: str, job: int, factor: float) -> str:
        prof = dict(profiles[name])
        if prof["type"] == "composed":
            prof["seq"] = [copy(sub, job, factor) for sub in prof["seq"]]
        elif prof["type"] == "delay":
            prof["delay"] = round(prof["delay"] * factor, 6)
        elif prof["type"] == "parallel":
            prof["cpu"] = [flops(c, factor) for c in prof["cpu"]]
        else:
            prof["cpu"] = flops(prof["cpu"], factor)
        own[f"{name}_{job}"] = prof
        return f"{name}_{job}"

    for index, job in enumerate(case.workload["jobs"]):
        factor = 1 + round(rng.uniform(0.01, 0.3), 6)
        job["profile"] = copy(job["profile"], index, factor)
        job["subtime"] = spread(job["subtime"], 0.9)
        if "walltime" in job:
            # half a millisecond past where make_case put it: a step ending exactly at the
            # walltime is the rounding of Batsim's clock once the times have decimals
            job["walltime"] = round(job["walltime"] * factor + 0.0005, 6)
    case.workload["profiles"] = own
    case.workload["jobs"].sort(key=lambda job: job["subtime"])
    for index, (t, res, prof, walltime) in enumerate(case.dynamic_jobs):
        factor = 1 + round(rng.uniform(0.01, 0.3), 6)
        if prof["type"] == "delay":
            prof["delay"] = round(prof["delay"] * factor, 6)
        elif prof["type"] == "parallel":
            prof["cpu"] = [flops(c, factor) for c in prof["cpu"]]
        else:
            prof["cpu"] = flops(prof["cpu"], factor)
        case.dynamic_jobs[index] = (spread(t, 0.9), res, prof, walltime if walltime == -1 else
                                    round(walltime * factor + 0.0005, 6))
    case.dynamic_jobs.sort(key=lambda d: d[0])
    case.distinct = True
    return case


def _walltime(rng: random.Random, profiles: dict[str, Any], name: str, res: int) -> Optional[float]:
    """None (no walltime), or a walltime at or around one of the profile's step ends."""
    if rng.random() < 0.3:
        return None
    ends = _step_ends(profiles, name, res)
    end, ptask = rng.choice(ends)
    # a parallel task ending exactly at the walltime is SimGrid's floating-point
    # solver's call (docs/sim.md): only delay steps get a walltime exactly at their end
    return max(0.5, end + rng.choice([0.5, -0.5, 0.5, 100] if ptask else [0, 0, -0.5, 0.5, 100]))


def _step_ends(profiles: dict[str, Any], name: str, res: int) -> list[tuple[float, bool]]:
    """When each step of a run ends, and whether it is a parallel task."""
    prof = profiles[name]
    if prof["type"] != "composed":
        return [(_leaf(prof, res), prof["type"] != "delay")]
    ends, t = [], 0.0
    for _ in range(prof.get("repeat", 1)):
        for sub in prof["seq"]:
            t += _leaf(profiles[sub], res)
            ends.append((t, profiles[sub]["type"] != "delay"))
    return ends


def _leaf(prof: dict[str, Any], res: int) -> float:
    if prof["type"] == "delay":
        return float(prof["delay"])
    if prof["type"] == "parallel":
        return float(max(prof["cpu"])) / 1e9
    if prof["type"] == "parallel_homogeneous_total":
        return float(prof["cpu"]) / 1e9 / res
    return float(prof["cpu"] / 1e9)


class Decider:
    """The decision process of a case: deterministic given its seed and its inputs."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.rng = random.Random(case.seed * 7919 + 1)
        self.free: list[int] = []
        self.res: dict[str, int] = {}
        self.queue: list[str] = []
        self.running: dict[str, list[int]] = {}
        self.planned = list(case.dynamic_jobs)
        self.registered = 0
        self.finished_sent = not case.dynamic
        self.call_pending: set[float] = set()

    def reply(self, msg: dict[str, Any]) -> dict[str, Any]:
        now = float(msg["now"])
        for event in msg["events"]:
            self._observe(event)
        if any(e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
            return {"now": now, "events": []}
        rng = self.rng
        t = now + rng.choice([0.5, 1.0, 2.5]) if rng.random() < self.case.p_delay else now
        if t > now and self.case.distinct:
            t = round(t + rng.uniform(0.0, 0.4), 6)
        out: list[Event] = []
        if self.running and rng.random() < self.case.p_kill:
            victim = rng.choice(sorted(self.running))
            out.append(_event(t, "KILL_JOB", {"job_ids": [victim]}))
            self.free += self.running.pop(victim)  # the kill ends it at t
        # (distinct instants: a kill and a rejection never share a reply)
        if self.queue and rng.random() < self.case.p_reject and not (self.case.distinct and out):
            victim = self.queue.pop(rng.randrange(len(self.queue)))
            out.append(_event(t, "REJECT_JOB", {"job_id": victim}))
        while self.planned and self.planned[0][0] <= t:
            self._register(t, out)
        if self.planned:
            self._call(t, self.planned[0][0], out)
        elif not self.finished_sent:
            out.append(_event(t, "NOTIFY", {"type": "registration_finished"}))
            self.finished_sent = True
        self._fcfs(t, out)
        if rng.random() < self.case.p_call:
            self._call(t, round(t + rng.choice([0.5, 1.0, 3.0]) + (rng.uniform(0.0, 0.4) if self.case.distinct
                                                                   else 0.0), 6), out)
        return {"now": t, "events": out}

    def _observe(self, event: Event) -> None:
        kind, data = event["type"], event["data"]
        if kind == "SIMULATION_BEGINS":
            self.free = list(range(data["nb_compute_resources"]))
        elif kind == "JOB_SUBMITTED":
            if data["job_id"] not in self.res:
                self.res[data["job_id"]] = data["job"]["res"]
                self.queue.append(data["job_id"])
        elif kind == "JOB_COMPLETED":
            self.free += self.running.pop(data["job_id"], [])
        elif kind == "REQUESTED_CALL":
            self.call_pending.discard(float(event["timestamp"]))

    def _register(self, t: float, out: list[Event]) -> None:
        _, res, prof, walltime = self.planned.pop(0)
        self.registered += 1
        n = self.registered
        out.append(_event(t, "REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": f"dp{n}",
                                                  "profile": prof}))
        jid = f"dyn!{n}"
        out.append(_event(t, "REGISTER_JOB", {"job_id": jid, "job": {
            "id": jid, "subtime": t, "res": res, "profile": f"dp{n}", "walltime": walltime}}))
        if not self.case.acks:
            self.res[jid] = res
            self.queue.append(jid)

    def _call(self, t: float, when: float, out: list[Event]) -> None:
        if when > t and when not in self.call_pending:
            self.call_pending.add(when)
            out.append(_event(t, "CALL_ME_LATER", {"timestamp": when}))

    def _fcfs(self, t: float, out: list[Event]) -> None:
        self.free.sort()
        while self.queue and self.res[self.queue[0]] <= len(self.free):
            jid = self.queue.pop(0)
            if not self.res[jid]:
                # a job of res 0 (Batsim accepts one in a workload): no allocation fits it
                out.append(_event(t, "REJECT_JOB", {"job_id": jid}))
                continue
            alloc, self.free = self.free[:self.res[jid]], self.free[self.res[jid]:]
            self.running[jid] = alloc
            out.append(_event(t, "EXECUTE_JOB", {"job_id": jid, "alloc": _idset(alloc)}))


def _event(t: float, kind: str, data: dict[str, Any]) -> Event:
    return {"timestamp": t, "type": kind, "data": data}


def _idset(ids: list[int]) -> str:
    return " ".join(str(i) for i in ids)


@dataclass
class Run:
    """What one simulator did with a case."""

    transcript: list[dict[str, Any]]  # messages received, in order
    replies: list[dict[str, Any]]  # the decision process's replies, in order
    rows: list[dict[str, str]]
    returncode: int
    stderr: str
    #: jobs whose run may end either way (see :func:`walltime_ties`)
    ties: frozenset[str] = frozenset()


def write_inputs(case: Case, where: Path) -> tuple[Path, Path]:
    platform = where / "platform.xml"
    if case.platform is None:
        write_platform(platform, case.hosts, 1, "1Gf")
    else:
        platform.write_text(case.platform)
    workload = where / "workload.json"
    workload.write_text(json.dumps(case.workload))
    return platform, workload


def run(case: Case, program: list[str], where: Path, timeout: float = 30.0, quiet: bool = True) -> Run:
    """Run ``case`` on the simulator started by ``program`` (its argv before Batsim's
    flags) in the directory ``where``; without ``quiet``, no ``-q``: the simulator logs
    as ``program`` asks (its stderr is :attr:`Run.stderr`)."""
    where.mkdir(parents=True, exist_ok=True)
    platform, workload = write_inputs(case, where)
    endpoint = f"ipc://{where}/dp.sock"
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(endpoint)
    prefix = where / "out"
    # the simulator run is the hpcjobs this process imported: a relative PYTHONPATH=src
    # would not hold from `where` and `-m hpcjobs.sim` would find the installed copy
    path = os.pathsep.join(filter(None, [_SRC, os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen([*program, "-p", str(platform), "-w", str(workload), "-s", endpoint,
                             "-e", str(prefix), *(["-q"] if quiet else []), *case.flags()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=where,
                            env={**os.environ, "PYTHONPATH": path})
    decider = Decider(case)
    transcript: list[dict[str, Any]] = []
    replies: list[dict[str, Any]] = []
    try:
        waited = 0.0
        while waited < timeout:
            if not sock.poll(50):
                if proc.poll() is not None and not sock.poll(50):
                    break  # the simulator ended without a further message
                waited += 0.1
                continue
            waited = 0.0
            msg = json.loads(sock.recv())
            transcript.append(msg)
            replies.append(decider.reply(msg))
            sock.send(json.dumps(replies[-1]).encode())
            if any(e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
                break
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        sock.close(0)
        ctx.term()
    rows: list[dict[str, str]] = []
    jobs_csv = Path(f"{prefix}_jobs.csv")
    if jobs_csv.exists():
        with open(jobs_csv, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    return Run(transcript, replies, rows, proc.returncode, err.decode(errors="replace"), walltime_ties(case))


def walltime_ties(case: Case) -> frozenset[str]:
    """The jobs of ``case`` with a parallel task that ends exactly at the job's walltime.

    Batsim waits for a parallel task with the remaining time as a timeout; whether SimGrid
    then ends the task or the timeout first depends on the last bits of its clock, which
    every earlier event (down to Batsim's 1e-10 s messages) moves: the same job ends
    COMPLETED_WALLTIME_REACHED in one run and normally in another whose history differs
    (deterministically for a given case; docs/sim.md). Such a job may end either way."""
    ties = set()
    for job in case.workload["jobs"]:
        walltime = job.get("walltime", -1)
        if walltime != -1 and walltime in _ptask_ends(case.workload["profiles"], job["profile"], job["res"]):
            ties.add(f"w0!{job['id']}")
    for n, (_, res, prof, walltime) in enumerate(case.dynamic_jobs, 1):
        if prof["type"] != "delay" and _leaf(prof, res) == walltime:
            ties.add(f"dyn!{n}")
    return frozenset(ties)


def _ptask_ends(profiles: dict[str, Any], name: str, res: int) -> list[float]:
    """When the parallel-task steps of a run end, up to the step that fails it."""
    prof = profiles[name]
    leaves = [prof] if prof["type"] != "composed" else [profiles[n] for n in prof["seq"]] * prof.get("repeat", 1)
    ends, t = [], 0.0
    for leaf in leaves:
        t += _leaf(leaf, res)
        if leaf["type"] != "delay":
            ends.append(t)
        if leaf.get("ret", 0):
            break
    return ends


#: the simulators compared: real Batsim (a 'batsim' program) and hpcjobs.sim
_SRC = str(Path(hpcjobs.__file__).resolve().parents[1])
EMBEDDED = [sys.executable, "-m", "hpcjobs.sim", "--timeout", "60"]


def _scrub(msg: dict[str, Any]) -> dict[str, Any]:
    # SIMULATION_BEGINS names the input files, which differ per run directory
    for event in msg["events"]:
        if event["type"] == "SIMULATION_BEGINS":
            event["data"]["workloads"] = sorted(event["data"]["workloads"])
    return msg


#: a bound on how far Batsim's internal messages move a job's turnaround (s): each is a
#: 1-byte SimGrid transfer, 1e-10 s on the generated 10 GBps platforms; 100 of them (up
#: to 11 seen: a job started by the last of many decisions of one reply)
MESSAGE_TIME = 1e-8


def _same_row(real: dict[str, str], ours: dict[str, str]) -> bool:
    """Whether two _jobs.csv rows agree: exactly, but for ``stretch`` (and the end state
    of a walltime tie, blanked by :func:`compare`). ``stretch`` is
    turnaround / run time, a quotient that amplifies the ~1e-10 s Batsim's messages add
    to its times (hpcjobs.sim's messages take no time; docs/sim.md): it may differ by
    what MESSAGE_TIME explains (one unit of its last printed digit when a quotient sits
    on a rounding tie; more for runs of microseconds), and is not compared for a job
    that ran 0 s (killed as it started: Batsim divides by its message times)."""
    if {**real, "stretch": ""} != {**ours, "stretch": ""}:
        return False
    if real["stretch"] == ours["stretch"]:
        return True
    runtime = float(real["execution_time"] or "nan")
    if runtime == 0:
        return True
    a, b = float(real["stretch"]), float(ours["stretch"])
    return abs(a - b) <= 1e-6 + max(abs(a), abs(b)) * MESSAGE_TIME / runtime


_NATURAL_ENDS = ("COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED")


def _untie(event: dict[str, Any], ties: frozenset[str]) -> dict[str, Any]:
    """``event`` with the end state of a walltime tie (:func:`walltime_ties`) blanked."""
    data = event["data"]
    if event["type"] == "JOB_COMPLETED" and data["job_id"] in ties and data["job_state"] in _NATURAL_ENDS:
        return {**event, "data": {**data, "job_state": "(either)", "return_code": "(either)"}}
    return event


def compare(real: Run, ours: Run) -> Optional[str]:
    """The first difference between the real Batsim run and ours (None: identical)."""
    ties = real.ties
    for index, (a, b) in enumerate(zip(real.transcript, ours.transcript)):
        if ties:
            a = {**a, "events": [_untie(e, ties) for e in a["events"]]}
            b = {**b, "events": [_untie(e, ties) for e in b["events"]]}
        if _scrub(a) != _scrub(b):
            return f"message #{index} differs:\n  batsim:      {json.dumps(a)[:1500]}\n  hpcjobs.sim: {json.dumps(b)[:1500]}"
    if len(real.transcript) != len(ours.transcript):
        return (f"batsim sent {len(real.transcript)} messages, hpcjobs.sim {len(ours.transcript)}; "
                f"exit {real.returncode} vs {ours.returncode}; stderr: {real.stderr[-600:]!r} / "
                f"{ours.stderr[-600:]!r}")
    if (real.returncode == 0) != (ours.returncode == 0):
        return f"exit status {real.returncode} vs {ours.returncode}: {real.stderr[-600:]!r} / {ours.stderr[-600:]!r}"
    for index, (a, b) in enumerate(zip(real.rows, ours.rows)):
        if (f"{a['workload_name']}!{a['job_id']}" in ties and a["final_state"] in _NATURAL_ENDS
                and b["final_state"] in _NATURAL_ENDS):
            a, b = {**a, "success": "", "final_state": ""}, {**b, "success": "", "final_state": ""}
        if not _same_row(a, b):
            return f"_jobs.csv row {index} differs:\n  batsim:      {a}\n  hpcjobs.sim: {b}"
    if len(real.rows) != len(ours.rows):
        return f"_jobs.csv has {len(real.rows)} rows in batsim, {len(ours.rows)} in hpcjobs.sim"
    return None
