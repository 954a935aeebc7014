"""Batsim workloads: job and profile descriptions, validated with errors naming the field.

The same validation serves static workload files (InputError) and the decision
process's REGISTER_PROFILE / REGISTER_JOB (ProtocolViolation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from .errors import InputError, SimError

SIMPLE_TYPES = ("delay", "parallel", "parallel_homogeneous", "parallel_homogeneous_total")
PROFILE_TYPES = SIMPLE_TYPES + ("composed",)
#: characters Batsim's rewriting of job ids cannot carry (see make_job)
_ID_BREAKERS = ',()|}"'


def _number(value: object) -> bool:
    # json accepts NaN and Infinity: no duration, size or time may be either
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _int32(value: object) -> TypeGuard[int]:
    """An integer Batsim can hold: it reads ids, ``nb_res``, ``ret`` and ``repeat`` with
    rapidjson's IsInt/GetInt, 32-bit (2147483648 is "not an integer" to it)."""
    return isinstance(value, int) and not isinstance(value, bool) and -2**31 <= value < 2**31


def _printed(value: Any) -> Any:
    """``value`` with every float in it as Batsim echoes job and profile descriptions:
    rounded to six decimals, like "%f" (1.23456789 -> 1.234568, 1e-9 -> 0.0); integers
    and strings as they are."""
    if isinstance(value, float):
        return float(f"{value:f}")
    if isinstance(value, dict):
        return {key: _printed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printed(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class Profile:
    """One profile; ``raw`` is the description exactly as given (echoed in messages)."""

    name: str
    kind: str
    ret: int
    raw: dict[str, Any]  # as Batsim echoes it: floats to six decimals
    delay: float = 0.0
    cpu: tuple[float, ...] = ()
    com: tuple[float, ...] = ()
    seq: tuple[str, ...] = ()
    repeat: int = 1


def make_profile(name: str, raw: object, error: type[SimError], where: str,
                 run_as_printed: bool = False) -> Profile:
    """Validate one profile description; ``where`` prefixes error messages. The run
    uses the numbers as given, or with ``run_as_printed`` as messages show them."""

    def fail(msg: str) -> SimError:
        return error(f"{where}: profile {name!r} {msg}")

    if not isinstance(raw, dict):
        raise fail("is not a JSON object")
    printed = _printed(raw)  # (messages show the numbers as Batsim prints them)
    return _checked_profile(name, printed if run_as_printed else raw, fail, printed)


def registered_profile(name: str, raw: object, error: type[SimError], where: str) -> Profile:
    """:func:`make_profile` for a profile registered by the decision process
    (REGISTER_PROFILE), which Batsim 4.2.1 reads as it prints it, every float rounded
    to six decimals (measured: a delay of 4e-7 is refused as 0, one of 0.9999996 lasts
    1 s, a 'cpu' of 1.4000004 flops is 1.4), where a workload file's are run as given."""
    return make_profile(name, raw, error, where, run_as_printed=True)


def _checked_profile(name: str, raw: dict[str, Any], fail: Callable[[str], SimError],
                     echoed: dict[str, Any]) -> Profile:
    """The profile ``raw`` describes (the numbers it runs with), echoed as ``echoed``."""
    kind = raw.get("type")
    if kind not in PROFILE_TYPES:
        raise fail(f"has unsupported type {kind!r} (supported: {', '.join(PROFILE_TYPES)})")
    ret = raw.get("ret", 0)
    if not _int32(ret):
        raise fail(f"has a non-integer 'ret' field ({ret!r}): need a 32-bit integer")
    if kind == "delay":
        delay = raw.get("delay")
        if not _number(delay):
            raise fail(f"has a non-number 'delay' field ({delay!r})")
        assert isinstance(delay, (int, float))
        if delay <= 0:
            # Batsim 4.2.1 refuses the workload for this (fixtures README)
            raise fail(f"has a non-strictly-positive 'delay' field ({delay})")
        return Profile(name, kind, ret, echoed, delay=float(delay))
    if kind == "composed":
        seq = raw.get("seq")
        if not isinstance(seq, list) or not seq or not all(isinstance(s, str) for s in seq):
            raise fail("needs a 'seq' field: a non-empty list of profile names")
        repeat = raw.get("repeat", 1)
        if not _int32(repeat) or repeat < 1:
            raise fail(f"has an invalid 'repeat' field ({repeat!r}): need a 32-bit integer >= 1")
        return Profile(name, kind, ret, echoed, seq=tuple(seq), repeat=repeat)
    cpu, com = raw.get("cpu"), raw.get("com")
    if kind == "parallel":
        if not isinstance(cpu, list) or not cpu or not all(_number(c) and c >= 0 for c in cpu):
            raise fail("needs a 'cpu' field: a non-empty list of non-negative numbers")
        if not isinstance(com, list) or len(com) != len(cpu) ** 2 or not all(_number(c) and c >= 0 for c in com):
            raise fail(f"needs a 'com' field: a list of {len(cpu) ** 2} non-negative numbers "
                       f"(a {len(cpu)}x{len(cpu)} matrix)")
        return Profile(name, kind, ret, echoed, cpu=tuple(map(float, cpu)), com=tuple(map(float, com)))
    for field_name, value in (("cpu", cpu), ("com", com)):
        if not _number(value) or value < 0:  # type: ignore[operator]
            raise fail(f"has an invalid {field_name!r} field ({value!r}): need a number >= 0")
    assert isinstance(cpu, (int, float)) and isinstance(com, (int, float))
    return Profile(name, kind, ret, echoed, cpu=(float(cpu),), com=(float(com),))


@dataclass(slots=True)
class WorkloadJob:
    """A job description as submitted (static) or registered (dynamic)."""

    job_id: str  # "workload!name"
    workload: str
    name: str
    subtime: float
    walltime: float  # -1: none
    res: int
    profile: str
    raw: dict[str, Any]  # echoed in JOB_SUBMITTED, with "id" set to job_id

    @property
    def submit_at(self) -> float:
        """When a static job is submitted: at its subtime, at 0 if that is negative
        (Batsim's submitter only sleeps until later subtimes)."""
        return max(self.subtime, 0.0)


def make_job(raw: object, workload: str, error: type[SimError], where: str,
             subtime_required: bool = True) -> WorkloadJob:
    """Validate one job description (``id``, ``subtime``, ``res``, ``profile``, ``walltime``)."""
    if not isinstance(raw, dict):
        raise error(f"{where}: job is not a JSON object")
    jid = raw.get("id")
    if not isinstance(jid, str) and not _int32(jid):
        raise error(f"{where}: job has an invalid 'id' ({jid!r}): need a string or a 32-bit integer")
    name = str(jid)
    full = name if "!" in name else f"{workload}!{name}"
    name = full.split("!", 1)[1]

    def fail(msg: str) -> SimError:
        return error(f"{where}: job {full!r} {msg}")

    bad = [c for c in name if c in _ID_BREAKERS or c < " "]
    if bad:
        # Batsim writes "w0!name" into the job's JSON with a regular expression whose
        # value stops at ,()|} and with the name unescaped, then aborts on the broken
        # JSON: "A problem occured when replacing the job_id by its WLOAD!job_name counterpart"
        raise fail(f"has an invalid 'id': Batsim cannot rewrite an id containing {''.join(bad)!r} "
                   f"(none of {_ID_BREAKERS} nor control characters may appear)")

    subtime = raw.get("subtime")
    if subtime is None and not subtime_required:
        subtime = 0.0
    # a negative subtime is accepted, as Batsim does: the job is submitted at time 0
    # and keeps its subtime (JOB_SUBMITTED, the _jobs.csv waiting time)
    if not _number(subtime):
        raise fail(f"has an invalid or missing 'subtime' ({subtime!r})")
    res = raw.get("res")
    # res 0 is accepted, as Batsim does ("a negative 'res' field" is its rule): such a
    # job can only be rejected, no allocation matches it (engine: EXECUTE_JOB)
    if not isinstance(res, int) or isinstance(res, bool) or res < 0:
        raise fail(f"has an invalid or missing 'res' ({res!r}): need an integer >= 0")
    profile = raw.get("profile")
    if not isinstance(profile, str):
        raise fail(f"has an invalid or missing 'profile' ({profile!r})")
    walltime = raw.get("walltime", -1)
    if not _number(walltime) or (walltime <= 0 and walltime != -1):
        raise fail(f"has an invalid 'walltime' ({walltime!r}): need a number > 0, or -1 for none")
    echoed = raw  # ours (freshly parsed): no copy, 100k-job workloads must stay small
    echoed["id"] = full
    for key, value in echoed.items():
        if type(value) is not int and type(value) is not str:
            # Batsim echoes floats as it printed them ("%f": six decimals), the
            # subtime and walltime too (the run uses them as given); integers as they
            # are (a walltime of 10 stays 10)
            echoed[key] = _printed(value)
    assert isinstance(subtime, (int, float)) and isinstance(walltime, (int, float))
    return WorkloadJob(full, workload, name, float(subtime), float(walltime), res, profile, echoed)


@dataclass
class Workload:
    """A workload file: its name (w0, w1, ...), path as given, jobs and profiles."""

    name: str
    path: str
    jobs: list[WorkloadJob]
    profiles: dict[str, Profile]
    raw_profiles: dict[str, Any]

    def used_profiles(self) -> set[str]:
        """The profiles its jobs use, directly or through composed profiles."""
        used: set[str] = set()
        todo = [job.profile for job in self.jobs]
        while todo:
            name = todo.pop()
            if name not in used:
                used.add(name)
                todo.extend(self.profiles[name].seq)
        return used


def executors_mismatch(profile: Profile, res: int) -> str | None:
    """Why Batsim refuses a job of ``res`` resources running ``profile`` (a workload
    at load, a REGISTER_JOB at once), or None: a 'parallel' profile has one executor
    per 'cpu' entry, and Batsim wants ``res`` of them."""
    if profile.kind == "parallel" and len(profile.cpu) != res:
        return (f"'res' ({res}) does not match the number of executors of its 'parallel' profile "
                f"{profile.name!r} ({len(profile.cpu)})")
    return None


def check_composed(profiles: dict[str, Profile], error: type[SimError], where: str) -> None:
    """Every profile named in a composed profile's ``seq`` must exist in the same workload,
    and no composed profile may contain itself (it would never end)."""
    for prof in profiles.values():
        for sub in prof.seq:
            if sub not in profiles:
                raise error(f"{where}: composed profile {prof.name!r} uses unknown profile {sub!r}")
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join(path[path.index(name):] + (name,))
            raise error(f"{where}: composed profile {name!r} contains itself ({cycle})")
        if name in done:
            return
        for sub in profiles[name].seq:
            visit(sub, path + (name,))
        done.add(name)

    for name in profiles:
        visit(name, ())


def _check_prefixed_id(jid: str, workload: str, where: str) -> None:
    """Batsim names jobs ``workload!name``: a file's job id may carry its own workload's
    prefix (``w0!1`` in the first workload is job ``1``), nothing else with a '!'."""
    prefix, _, rest = jid.partition("!")
    if "!" in rest:
        # Batsim: "Invalid string job identifier 'w0!a!b': should be formatted as two
        # '!'-separated parts"
        raise InputError(f"{where}: job {jid!r}: invalid 'id': more than one '!' "
                         "(a job id is 'name' or 'workload!name')")
    if prefix != workload:
        # Batsim: "Invalid job_name 'a!b': contains a '!'"
        raise InputError(f"{where}: job {jid!r}: invalid 'id': a job name cannot contain a '!' "
                         f"(only this workload's own prefix {workload + '!'!r} may come before one)")


def _absent_or(kind: str, data: dict[str, Any], key: str) -> str:
    return "is missing (Batsim requires it, even empty)" if key not in data else f"is not {kind}"


def parse_workload(path: str, name: str) -> Workload:
    """Read a Batsim workload JSON file; raises InputError naming the offending field."""
    where = f"workload {path}"
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InputError(f"{where}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a JSON object")
    nb_res = data.get("nb_res")
    if not _int32(nb_res) or nb_res < 1:
        raise InputError(f"{where}: 'nb_res' is missing or not a positive 32-bit integer ({nb_res!r})")
    # Batsim requires both members, even empty: "the 'profiles' object is missing",
    # "the 'jobs' array is missing"
    raw_profiles = data.get("profiles")
    if not isinstance(raw_profiles, dict):
        raise InputError(f"{where}: 'profiles' {_absent_or('an object', data, 'profiles')}")
    profiles = {pname: make_profile(pname, praw, InputError, where) for pname, praw in raw_profiles.items()}
    check_composed(profiles, InputError, where)
    raw_jobs = data.get("jobs")
    if not isinstance(raw_jobs, list):
        raise InputError(f"{where}: 'jobs' {_absent_or('a list', data, 'jobs')}")
    jobs: list[WorkloadJob] = []
    seen: set[str] = set()
    for raw in raw_jobs:
        if isinstance(raw, dict) and "!" in str(raw.get("id", "")):
            _check_prefixed_id(str(raw["id"]), name, where)
        job = make_job(raw, name, InputError, where)
        if job.job_id in seen:
            raise InputError(f"{where}: duplicate job id {job.name!r}")
        seen.add(job.job_id)
        if job.profile not in profiles:
            raise InputError(f"{where}: job {job.name!r} uses unknown profile {job.profile!r}")
        mismatch = executors_mismatch(profiles[job.profile], job.res)
        if mismatch:
            raise InputError(f"{where}: job {job.job_id!r}: {mismatch}: Batsim refuses the workload")
        # (a job wider than the platform is accepted, as Batsim does: the decision
        # process may run its executors on fewer resources with a 'mapping', or reject it)
        jobs.append(job)
    # Batsim submits the jobs of one instant in the order of their ids (as strings)
    jobs.sort(key=lambda j: (j.subtime, j.name))
    return Workload(name, path, jobs, profiles, {pname: prof.raw for pname, prof in profiles.items()})
