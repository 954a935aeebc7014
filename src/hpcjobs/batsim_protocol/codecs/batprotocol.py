"""batprotocol, Batsim 5's protocol: FlatBuffers messages (schema/batprotocol.fbs).

The message classes come from ``batprotocol_fb.py``, generated from the schema by
Debian's ``flatc`` (scripts/gen-batprotocol.sh); the per-job events take the hot path
of ``batprotocol_fast.py``. This module translates between them and the
events of :mod:`..events`:

============================  =======================================================
batprotocol                   event (``data``)
============================  =======================================================
EDCHelloEvent                 EDC_HELLO (the decision process's first reply:
                              ``batprotocol_version``, ``decision_component_*``,
                              ``requested_simulation_features``)
SimulationBeginsEvent         SIMULATION_BEGINS (as in JSON; a host also has
                              ``core_count`` and ``computation_speed``)
JobSubmittedEvent             JOB_SUBMITTED (``job.subtime`` is ``submission_time``)
JobCompletedEvent             JOB_COMPLETED (no ``alloc``: batprotocol has none)
ExecuteJobEvent               EXECUTE_JOB (a custom executor mapping is ``mapping``)
KillJobsEvent / JobsKilled    KILL_JOB / JOB_KILLED (``job_progress``)
RejectJobEvent                REJECT_JOB
RegisterProfile / RegisterJob REGISTER_PROFILE / REGISTER_JOB
CallMeLaterEvent              CALL_ME_LATER (``id``; one-shot: ``timestamp``;
                              periodic: ``period``, ``offset``, ``count`` or None)
StopCallMeLaterEvent          STOP_CALL_ME_LATER (``id``)
RequestedCallEvent            REQUESTED_CALL (``id``, ``last_periodic_call``)
FinishRegistrationEvent       NOTIFY registration_finished
AllStaticJobsHaveBeen...      NOTIFY no_more_static_job_to_submit
SimulationEnds / Error        SIMULATION_ENDS / SIMULATION_ERROR (``error``)
============================  =======================================================

Profiles: DelayProfile, ParallelTaskProfile, ParallelTaskHomogeneousProfile (its two
generation strategies are ``parallel_homogeneous`` and ``parallel_homogeneous_total``)
and SequentialCompositionProfile (``composed``); a job's or profile's fields that
batprotocol lacks (a profile's ``ret``, a job's own fields) travel as JSON in its
``extra_data``, which Batsim 5 ignores. The other events (probes, storage, external
events, power states) are refused by name: nothing here models them.

Python's FlatBuffers runtime has no verifier: decoding reads every field inside a
guard and refuses a buffer whose offsets leave it, whose required fields are missing,
whose strings are not UTF-8 or whose union types are unknown, naming the field.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, Callable, Optional

import flatbuffers
from flatbuffers.table import Table

from ..errors import ProtocolError
from ..events import FINAL_JOB_STATES, Event, Message
from . import batprotocol_fast as fast
from . import batprotocol_fb
from . import batprotocol_wire as wire

__all__ = ["Codec", "BATPROTOCOL_VERSION"]

fb: Any = batprotocol_fb  # generated, untyped: typed here by use

#: what hpcjobs says it speaks (the schema's example of a released version)
BATPROTOCOL_VERSION = "0.1.0"

_HOST_STATES = ("sleeping", "idle", "computing", "switching_on", "switching_off")
_EVENT_NAMES = {v: k for k, v in vars(fb.Event).items() if isinstance(v, int)}
_FEATURES = ("dynamic_registration", "profile_reuse", "acknowledge_dynamic_jobs",
             "forward_profiles_on_job_submission", "forward_profiles_on_jobs_killed",
             "forward_profiles_on_simulation_begins")
_JOB_KEYS = ("id", "subtime", "res", "profile", "walltime")


class Codec:
    """Batsim 5's batprotocol, binary FlatBuffers."""

    name = "batprotocol"
    #: Batsim 5 opens with an empty message; the decision process says hello in reply
    hello = True

    def encode(self, message: Message) -> bytes:
        # the per-job events: one struct each (batprotocol_fast); the rest: generated code
        raw = fast.encode(message.now, message.events)
        return self.encode_generated(message) if raw is None else raw

    def encode_generated(self, message: Message) -> bytes:
        """``encode`` through the generated classes only."""
        out = fb.MessageT()
        out.now = message.now
        out.events = []
        for index, event in enumerate(message.events):
            kind = event["type"]
            encoder = _ENCODERS.get(kind)
            if encoder is None:
                raise ProtocolError(f"batprotocol has no event {kind}", f"events[{index}].type")
            item = fb.EventAndTimestampT()
            item.timestamp = event["timestamp"]
            try:
                item.eventType, item.event = encoder(event["data"])
            except (KeyError, TypeError, ValueError) as e:
                raise ProtocolError(f"cannot encode {kind}: {e!r}", f"events[{index}].data") from None
            out.events.append(item)
        builder = flatbuffers.Builder(256)
        try:
            builder.Finish(out.Pack(builder))
        except _UNPACKABLE as e:  # a value the field's type cannot hold: find whose
            for index, item in enumerate(out.events):
                try:
                    item.Pack(flatbuffers.Builder(64))
                except _UNPACKABLE:
                    raise ProtocolError(f"cannot encode {message.events[index]['type']}: {e}",
                                        f"events[{index}]") from None
            raise ProtocolError(f"cannot encode the message: {e}", "now") from None
        return bytes(builder.Output())

    def decode(self, raw: bytes) -> Message:
        usual = fast.decode(raw)  # the per-job events in their usual form
        return self.decode_carefully(raw) if usual is None else Message(*usual)

    def decode_carefully(self, raw: bytes) -> Message:
        """``decode`` field by field, naming the field of what it refuses."""
        if len(raw) < 8:
            raise ProtocolError(f"a FlatBuffer of {len(raw)} bytes is too short", "message")
        field = "message"
        try:
            now, items, reader = wire.read_message(raw)
            if not math.isfinite(now):
                raise ProtocolError(f"'now' ({now}) is not finite", "now")
            events: list[Event] = []
            for index, (kind, stamp, pos) in enumerate(items):
                field = f"events[{index}]"
                member = _EVENT_NAMES.get(kind)
                if member is None or member == "NONE":
                    raise ProtocolError(f"unknown event type {kind} (not in the schema's Event union)", field)
                decoder = _DECODERS.get(member)
                if decoder is None:
                    raise ProtocolError(f"{member} is not modelled by hpcjobs (probes, storage, external "
                                        "events and power states are not)", f"{field} ({member})")
                field = f"{field} ({member})"
                if not math.isfinite(stamp):
                    raise ProtocolError(f"timestamp {stamp} is not finite", f"{field}.timestamp")
                decoded = wire.decode_event(reader, kind, pos)
                if kind == fb.Event.SimulationBeginsEvent:
                    view = _BeginsWithoutHosts()
                    view.Init(raw, pos)
                    decoded = _dec_begins(fb.SimulationBeginsEventT.InitFromObj(view), wire.read_hosts(reader, pos))
                elif decoded is None:  # a rarer event or variant: the generated code reads it
                    decoded = decoder(fb.EventCreator(kind, Table(raw, pos)))
                kind_name, data = decoded
                if kind_name == "REGISTER_JOB":
                    data["job"]["subtime"] = stamp  # batprotocol's job has no submission time
                events.append({"timestamp": stamp, "type": kind_name, "data": data})
        except ProtocolError as e:
            if e.field is not None and not e.field.startswith(("events", "now", "message")):
                e.field = f"{field}.{e.field}"  # located inside the event being read
            raise
        except wire.Corrupt as e:
            where = e.args[0]
            where = where if where.startswith(("events", "now", "root", "message")) else f"{field}.{where}"
            raise ProtocolError("the FlatBuffer fails verification: an offset leaves the buffer",
                                where) from None
        except _Missing as e:
            raise ProtocolError(f"the required field {e.args[0]!r} is missing", f"{field}.{e.args[0]}") from None
        except UnicodeDecodeError as e:
            raise ProtocolError(f"a string is not UTF-8 at byte {e.start}", field) from None
        except (struct.error, IndexError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise ProtocolError(f"the FlatBuffer fails verification: {e}", field) from None
        return Message(now, events)


#: what the runtime raises for a value its field's type cannot hold (a negative uint32)
_UNPACKABLE = (TypeError, ValueError, OverflowError, struct.error)


class _Missing(Exception):
    """A required field is absent (the schema's ``(required)``)."""


# -- helpers -------------------------------------------------------------------------
def _s(value: Optional[bytes], name: str) -> str:
    """A required string field."""
    if value is None:
        raise _Missing(name)
    return value.decode("utf-8")


def _req(value: Any, name: str) -> Any:
    if value is None:
        raise _Missing(name)
    return value


def _numbers(vector: Any, kind: Callable[[Any], Any]) -> list[Any]:
    """A vector of scalars of the object API as a list of ``kind`` (int or float): the
    object API answers a list, or a numpy array where numpy is installed (the runtime
    then imports it), whose truth value is an error."""
    return [] if vector is None else [kind(x) for x in vector]


def _extra(data: dict[str, Any], known: tuple[str, ...]) -> Optional[str]:
    rest = {k: v for k, v in data.items() if k not in known}
    return json.dumps(rest, separators=(",", ":")) if rest else None


def _unextra(value: Optional[bytes]) -> dict[str, Any]:
    if not value:
        return {}
    try:
        extra = json.loads(value)
    except ValueError:
        return {"extra_data": value.decode("utf-8")}
    return extra if isinstance(extra, dict) else {"extra_data": extra}


def _in_unit(*times: float) -> tuple[list[int], int]:
    """Times as batprotocol's uint64s in one TimeUnit: whole seconds when exact, else
    milliseconds rounded up (a call comes no earlier than asked)."""
    if all(t == int(t) for t in times):
        return [int(t) for t in times], fb.TimeUnit.Second
    return [math.ceil(t * 1000 - 1e-6) for t in times], fb.TimeUnit.Millisecond


def _from_unit(value: int, unit: int) -> float:
    return value / 1000 if unit == fb.TimeUnit.Millisecond else float(value)


# -- profiles ------------------------------------------------------------------------
def _profile(name: str, raw: dict[str, Any]) -> Any:
    out = fb.ProfileAndIdT()
    out.id = name
    kind = raw.get("type")
    known: tuple[str, ...]
    if kind == "delay":
        p: Any = fb.DelayProfileT()
        p.delay = float(raw["delay"])
        out.profileType, known = fb.Profile.DelayProfile, ("type", "delay")
    elif kind == "parallel":
        p = fb.ParallelTaskProfileT()
        p.computationVector = [float(x) for x in raw.get("cpu", [])]
        p.communicationMatrix = [float(x) for x in raw.get("com", [])]
        out.profileType, known = fb.Profile.ParallelTaskProfile, ("type", "cpu", "com")
    elif kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        p = fb.ParallelTaskHomogeneousProfileT()
        p.computationAmount = float(raw.get("cpu", 0))
        p.communicationAmount = float(raw.get("com", 0))
        strategy = fb.HomogeneousParallelTaskGenerationStrategy
        p.generationStrategy = (strategy.DefinedAmountsUsedForEachValue if kind == "parallel_homogeneous"
                                else strategy.DefinedAmountsSpreadUniformly)
        out.profileType, known = fb.Profile.ParallelTaskHomogeneousProfile, ("type", "cpu", "com")
    elif kind == "composed":
        p = fb.SequentialCompositionProfileT()
        p.profileIds = list(raw["seq"])
        p.repetitionCount = int(raw.get("repeat", 1))
        out.profileType, known = fb.Profile.SequentialCompositionProfile, ("type", "seq", "repeat")
    else:
        raise ValueError(f"profile {name!r}: batprotocol has no profile type {kind!r}")
    out.profile = p
    out.extraData = _extra(raw, known)
    return out


def _unprofile(obj: Any) -> tuple[str, dict[str, Any]]:
    name = _s(obj.id, "profile.id")
    p = _req(obj.profile, "profile.profile")
    kind = obj.profileType
    raw: dict[str, Any]
    if kind == fb.Profile.DelayProfile:
        raw = {"type": "delay", "delay": p.delay}
    elif kind == fb.Profile.ParallelTaskProfile:
        raw = {"type": "parallel", "cpu": _numbers(p.computationVector, float),
               "com": _numbers(p.communicationMatrix, float)}
    elif kind == fb.Profile.ParallelTaskHomogeneousProfile:
        total = p.generationStrategy == fb.HomogeneousParallelTaskGenerationStrategy.DefinedAmountsSpreadUniformly
        raw = {"type": "parallel_homogeneous_total" if total else "parallel_homogeneous",
               "cpu": p.computationAmount, "com": p.communicationAmount}
    elif kind == fb.Profile.SequentialCompositionProfile:
        raw = {"type": "composed", "repeat": p.repetitionCount,
               "seq": [s.decode("utf-8") for s in _req(p.profileIds, "profile_ids")]}
    else:
        member = {v: k for k, v in vars(fb.Profile).items() if isinstance(v, int)}.get(kind, kind)
        raise ProtocolError(f"profile {name!r}: {member} is not modelled by hpcjobs", "profile")
    raw.update(_unextra(obj.extraData))
    return name, raw


# -- jobs ----------------------------------------------------------------------------
def _job(raw: dict[str, Any]) -> Any:
    job = fb.JobT()
    job.resourceRequest = int(raw["res"])
    walltime = raw.get("walltime", -1)
    job.walltime = None if walltime == -1 else float(walltime)
    job.profileId = raw["profile"]
    job.extraData = _extra(raw, _JOB_KEYS)
    return job


def _unjob(obj: Any, job_id: str, subtime: float) -> dict[str, Any]:
    job = _req(obj, "job")
    raw = {"id": job_id, "subtime": subtime, "res": job.resourceRequest,
           "profile": _s(job.profileId, "job.profile_id"),
           "walltime": -1 if job.walltime is None else job.walltime}
    raw.update(_unextra(job.extraData))
    return raw


# -- encoders: event data -> (union type, table object) ------------------------------
def _enc_hello(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.EDCHelloEventT()
    e.batprotocolVersion = d.get("batprotocol_version", BATPROTOCOL_VERSION)
    e.decisionComponentName = d["decision_component_name"]
    e.decisionComponentVersion = d["decision_component_version"]
    e.decisionComponentCommit = d.get("decision_component_commit")
    features = fb.EDCRequestedSimulationFeaturesT()
    asked = d.get("requested_simulation_features", {})
    for key in _FEATURES:
        head, *rest = key.split("_")
        setattr(features, head + "".join(w.title() for w in rest), bool(asked.get(key, False)))
    e.requestedSimulationFeatures = features
    return fb.Event.EDCHelloEvent, e


def _enc_begins(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.SimulationBeginsEventT()
    e.batprotocolVersion = BATPROTOCOL_VERSION
    e.batsimVersion = d.get("batsim_version", "hpcjobs.sim")
    e.hostNumber = d["nb_resources"]
    e.computationHostNumber = d["nb_compute_resources"]
    e.storageHostNumber = 0
    hosts = []
    for r in d["compute_resources"]:
        h = fb.HostT()
        h.id, h.name = r["id"], r["name"]
        h.state = _HOST_STATES.index(r.get("state", "idle"))
        h.properties = [_property(k, v) for k, v in r.get("properties", {}).items()]
        h.zoneProperties = [_property(k, v) for k, v in r.get("zone_properties", {}).items()]
        h.coreCount = r.get("core_count", 1)
        h.computationSpeed = list(r.get("computation_speed", []))
        hosts.append(h)
    e.computationHosts, e.storageHosts = hosts, []
    e.batsimArguments = list(d.get("batsim_arguments", []))
    e.batsimExecutionContextJson = json.dumps(d.get("config", {}), separators=(",", ":"))
    e.workloads = []
    for name, path in d.get("workloads", {}).items():
        w = fb.WorkloadAndFilenameT()
        w.name, w.filename = name, path
        e.workloads.append(w)
    e.externalEventLists = []
    if "profiles" in d:
        e.profiles = [_profile(f"{wl}!{name}", raw) for wl, profiles in d["profiles"].items()
                      for name, raw in profiles.items()]
    return fb.Event.SimulationBeginsEvent, e


def _property(key: str, value: Any) -> Any:
    p = fb.HostPropertyT()
    p.key, p.value = key, str(value)
    return p


def _enc_submitted(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.JobSubmittedEventT()
    e.jobId = d["job_id"]
    e.job = _job(d["job"])
    e.submissionTime = float(d["job"].get("subtime", 0.0))
    if "profile" in d:
        e.profile = _profile(d["job"]["profile"], d["profile"])
    return fb.Event.JobSubmittedEvent, e


def _enc_completed(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.JobCompletedEventT()
    e.jobId = d["job_id"]
    e.state = FINAL_JOB_STATES.index(d["job_state"])
    e.returnCode = int(d["return_code"])
    return fb.Event.JobCompletedEvent, e


def _progress(p: dict[str, Any]) -> Any:
    wrapper = fb.KillProgressWrapperT()
    if "current_task" in p:
        s = fb.KillProgressSequentialProfileT()
        s.profileId = p["profile"]
        s.currentRepetition = int(p.get("current_repetition", 0))
        s.currentTaskIndex = int(p["current_task_index"])
        s.currentTaskProgress = _progress(p["current_task"])
        wrapper.killProgressType, wrapper.killProgress = fb.KillProgress.KillProgressSequentialProfile, s
    else:
        a = fb.KillProgressAtomicProfileT()
        a.profileId, a.progress = p["profile"], float(p["progress"])
        wrapper.killProgressType, wrapper.killProgress = fb.KillProgress.KillProgressAtomicProfile, a
    return wrapper


def _unprogress(w: Any) -> dict[str, Any]:
    p = _req(_req(w, "wrapper").killProgress, "kill_progress")
    if w.killProgressType == fb.KillProgress.KillProgressAtomicProfile:
        return {"profile": _s(p.profileId, "profile_id"), "progress": p.progress}
    if w.killProgressType == fb.KillProgress.KillProgressSequentialProfile:
        return {"profile": _s(p.profileId, "profile_id"), "current_repetition": p.currentRepetition,
                "current_task_index": p.currentTaskIndex,
                "current_task": _unprogress(p.currentTaskProgress)}
    raise ProtocolError("fork-join kill progress is not modelled by hpcjobs", "kill_progress")


def _enc_killed(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.JobsKilledEventT()
    e.jobIds = list(d["job_ids"])
    e.progresses = []
    for job_id, progress in d.get("job_progress", {}).items():
        jp = fb.JobAndProgressT()
        jp.jobId, jp.wrapper = job_id, _progress(progress)
        e.progresses.append(jp)
    return fb.Event.JobsKilledEvent, e


def _enc_requested(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.RequestedCallEventT()
    e.callMeLaterId = d.get("id", "")
    e.lastPeriodicCall = bool(d.get("last_periodic_call", False))
    return fb.Event.RequestedCallEvent, e


def _enc_notify(d: dict[str, Any]) -> tuple[int, Any]:
    kind = d["type"]
    if kind == "registration_finished":
        return fb.Event.FinishRegistrationEvent, fb.FinishRegistrationEventT()
    if kind == "no_more_static_job_to_submit":
        return fb.Event.AllStaticJobsHaveBeenSubmittedEvent, fb.AllStaticJobsHaveBeenSubmittedEventT()
    raise ValueError(f"batprotocol has no NOTIFY {kind!r}")


def _enc_execute(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.ExecuteJobEventT()
    e.jobId = d["job_id"]
    alloc = fb.AllocationPlacementT()
    alloc.hostAllocation = d["alloc"]
    mapping = d.get("mapping")
    if mapping:
        custom = fb.CustomExecutorToHostMappingT()
        custom.mapping = [int(mapping[str(rank)]) for rank in range(len(mapping))]
        alloc.executorPlacementType, alloc.executorPlacement = fb.ExecutorPlacement.CustomExecutorToHostMapping, custom
    else:
        alloc.executorPlacementType = fb.ExecutorPlacement.PredefinedExecutorPlacementStrategyWrapper
        alloc.executorPlacement = fb.PredefinedExecutorPlacementStrategyWrapperT()
    e.allocation = alloc
    return fb.Event.ExecuteJobEvent, e


def _enc_kill(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.KillJobsEventT()
    e.jobIds = list(d["job_ids"])
    return fb.Event.KillJobsEvent, e


def _enc_reject(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.RejectJobEventT()
    e.jobId = d["job_id"]
    return fb.Event.RejectJobEvent, e


def _enc_call(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.CallMeLaterEventT()
    e.callMeLaterId = d.get("id", "")
    if "period" in d:
        t: Any = fb.PeriodicT()
        (t.period, t.offset), t.timeUnit = _in_unit(float(d["period"]), float(d.get("offset", 0)))
        if d.get("count") is None:
            t.modeType, t.mode = fb.PeriodicMode.Infinite, fb.InfiniteT()
        else:
            t.modeType, t.mode = fb.PeriodicMode.FinitePeriodNumber, fb.FinitePeriodNumberT()
            t.mode.nbPeriods = int(d["count"])
        e.whenType = fb.TemporalTrigger.Periodic
    else:
        t = fb.OneShotT()
        (t.time,), t.timeUnit = _in_unit(float(d["timestamp"]))
        e.whenType = fb.TemporalTrigger.OneShot
    e.when = t
    return fb.Event.CallMeLaterEvent, e


def _enc_stop_call(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.StopCallMeLaterEventT()
    e.callMeLaterId = d["id"]
    return fb.Event.StopCallMeLaterEvent, e


def _enc_register_job(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.RegisterJobEventT()
    e.jobId = d["job_id"]
    e.job = _job(d["job"])
    return fb.Event.RegisterJobEvent, e


def _enc_register_profile(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.RegisterProfileEventT()
    e.profile = _profile(f"{d['workload_name']}!{d['profile_name']}", d["profile"])
    return fb.Event.RegisterProfileEvent, e


def _enc_ends(d: dict[str, Any]) -> tuple[int, Any]:
    return fb.Event.SimulationEndsEvent, fb.SimulationEndsEventT()


def _enc_error(d: dict[str, Any]) -> tuple[int, Any]:
    e = fb.SimulationErrorEventT()
    e.error = d["error"]
    return fb.Event.SimulationErrorEvent, e


_ENCODERS: dict[str, Callable[[dict[str, Any]], tuple[int, Any]]] = {
    "EDC_HELLO": _enc_hello, "SIMULATION_BEGINS": _enc_begins, "JOB_SUBMITTED": _enc_submitted,
    "JOB_COMPLETED": _enc_completed, "JOB_KILLED": _enc_killed, "REQUESTED_CALL": _enc_requested,
    "NOTIFY": _enc_notify, "EXECUTE_JOB": _enc_execute, "KILL_JOB": _enc_kill,
    "REJECT_JOB": _enc_reject, "CALL_ME_LATER": _enc_call, "STOP_CALL_ME_LATER": _enc_stop_call,
    "REGISTER_JOB": _enc_register_job, "REGISTER_PROFILE": _enc_register_profile,
    "SIMULATION_ENDS": _enc_ends, "SIMULATION_ERROR": _enc_error,
}


# -- decoders: table object -> (event type, data) ------------------------------------
def _dec_hello(e: Any) -> tuple[str, dict[str, Any]]:
    features = _req(e.requestedSimulationFeatures, "requested_simulation_features")
    asked = {}
    for key in _FEATURES:
        head, *rest = key.split("_")
        asked[key] = bool(getattr(features, head + "".join(w.title() for w in rest)))
    data = {"batprotocol_version": _s(e.batprotocolVersion, "batprotocol_version"),
            "decision_component_name": _s(e.decisionComponentName, "decision_component_name"),
            "decision_component_version": _s(e.decisionComponentVersion, "decision_component_version"),
            "requested_simulation_features": asked}
    if e.decisionComponentCommit is not None:
        data["decision_component_commit"] = e.decisionComponentCommit.decode("utf-8")
    return "EDC_HELLO", data


class _BeginsWithoutHosts(fb.SimulationBeginsEvent):  # type: ignore[misc]
    """The generated reader of SimulationBeginsEvent, told that it has no hosts: the
    object API then reads the rest, and ``wire.read_hosts`` the hosts, several times
    faster (their count is the platform's)."""

    def ComputationHostsIsNone(self) -> bool:  # noqa: N802 (the generated name)
        return True


def _dec_begins(e: Any, compute: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    try:
        config = json.loads(_s(e.batsimExecutionContextJson, "batsim_execution_context_json"))
    except ValueError:
        raise ProtocolError("is not JSON", "batsim_execution_context_json") from None
    data: dict[str, Any] = {
        "nb_resources": e.hostNumber, "nb_compute_resources": e.computationHostNumber,
        "nb_storage_resources": e.storageHostNumber, "compute_resources": compute,
        "storage_resources": [], "config": config,
        "batsim_version": _s(e.batsimVersion, "batsim_version"),
        "batsim_arguments": [a.decode("utf-8") for a in _req(e.batsimArguments, "batsim_arguments")],
        "workloads": {_s(w.name, "name"): _s(w.filename, "filename")
                      for w in _req(e.workloads, "workloads")}}
    if e.profiles is not None:
        profiles: dict[str, dict[str, Any]] = {}
        for p in e.profiles:
            full, raw = _unprofile(p)
            workload, _, name = full.rpartition("!")
            profiles.setdefault(workload, {})[name] = raw
        data["profiles"] = profiles
    return "SIMULATION_BEGINS", data


def _dec_submitted(e: Any) -> tuple[str, dict[str, Any]]:
    job_id = _s(e.jobId, "job_id")
    data: dict[str, Any] = {"job_id": job_id, "job": _unjob(e.job, job_id, e.submissionTime)}
    if e.profile is not None:
        data["profile"] = _unprofile(e.profile)[1]
    return "JOB_SUBMITTED", data


def _dec_completed(e: Any) -> tuple[str, dict[str, Any]]:
    if not 0 <= e.state < len(FINAL_JOB_STATES):
        raise ProtocolError(f"unknown final state {e.state}", "state")
    return "JOB_COMPLETED", {"job_id": _s(e.jobId, "job_id"), "job_state": FINAL_JOB_STATES[e.state],
                             "return_code": e.returnCode}


def _dec_killed(e: Any) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"job_ids": [j.decode("utf-8") for j in _req(e.jobIds, "job_ids")]}
    progress = {_s(p.jobId, "job_id"): _unprogress(p.wrapper) for p in _req(e.progresses, "progresses")}
    if progress:
        data["job_progress"] = progress
    return "JOB_KILLED", data


def _dec_requested(e: Any) -> tuple[str, dict[str, Any]]:
    return "REQUESTED_CALL", {"id": _s(e.callMeLaterId, "call_me_later_id"),
                              "last_periodic_call": bool(e.lastPeriodicCall)}


def _dec_execute(e: Any) -> tuple[str, dict[str, Any]]:
    job_id = _s(e.jobId, "job_id")
    alloc = _req(e.allocation, "allocation")
    if e.profileAllocationOverride or e.storagePlacement:
        raise ProtocolError("profile allocation overrides and storage placements are not modelled "
                            "by hpcjobs", "profile_allocation_override")
    data: dict[str, Any] = {"job_id": job_id, "alloc": _s(alloc.hostAllocation, "host_allocation")}
    placement = _req(alloc.executorPlacement, "executor_placement")
    if alloc.executorPlacementType == fb.ExecutorPlacement.CustomExecutorToHostMapping:
        data["mapping"] = {str(rank): index
                           for rank, index in enumerate(_numbers(_req(placement.mapping, "mapping"), int))}
    elif alloc.executorPlacementType != fb.ExecutorPlacement.PredefinedExecutorPlacementStrategyWrapper:
        raise ProtocolError(f"unknown executor placement {alloc.executorPlacementType}", "executor_placement")
    # with one executor per allocated host (as hpcjobs.sim runs jobs) both predefined
    # strategies place executor i on host i: the JSON protocol's default
    return "EXECUTE_JOB", data


def _dec_kill(e: Any) -> tuple[str, dict[str, Any]]:
    return "KILL_JOB", {"job_ids": [j.decode("utf-8") for j in _req(e.jobIds, "job_ids")]}


def _dec_reject(e: Any) -> tuple[str, dict[str, Any]]:
    return "REJECT_JOB", {"job_id": _s(e.jobId, "job_id")}


def _dec_call(e: Any) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"id": _s(e.callMeLaterId, "call_me_later_id")}
    when = _req(e.when, "when")
    if e.whenType == fb.TemporalTrigger.OneShot:
        data["timestamp"] = _from_unit(when.time, when.timeUnit)
    elif e.whenType == fb.TemporalTrigger.Periodic:
        data["period"] = _from_unit(when.period, when.timeUnit)
        data["offset"] = _from_unit(when.offset, when.timeUnit)
        mode = _req(when.mode, "mode")
        data["count"] = mode.nbPeriods if when.modeType == fb.PeriodicMode.FinitePeriodNumber else None
    else:
        raise ProtocolError(f"unknown temporal trigger {e.whenType}", "when")
    return "CALL_ME_LATER", data


def _dec_stop_call(e: Any) -> tuple[str, dict[str, Any]]:
    return "STOP_CALL_ME_LATER", {"id": _s(e.callMeLaterId, "call_me_later_id")}


def _dec_register_job(e: Any) -> tuple[str, dict[str, Any]]:
    job_id = _s(e.jobId, "job_id")
    return "REGISTER_JOB", {"job_id": job_id, "job": _unjob(e.job, job_id, math.nan)}


def _dec_register_profile(e: Any) -> tuple[str, dict[str, Any]]:
    full, raw = _unprofile(_req(e.profile, "profile"))
    workload, sep, name = full.partition("!")
    if not sep:
        raise ProtocolError(f"profile id {full!r} is not 'workload!name'", "profile.id")
    return "REGISTER_PROFILE", {"workload_name": workload, "profile_name": name, "profile": raw}


def _dec_notify(kind: str) -> Callable[[Any], tuple[str, dict[str, Any]]]:
    return lambda e: ("NOTIFY", {"type": kind})


_DECODERS: dict[str, Callable[[Any], tuple[str, dict[str, Any]]]] = {
    # SimulationBeginsEvent: decode_carefully passes its hosts too (read by wire.read_hosts)
    "EDCHelloEvent": _dec_hello, "SimulationBeginsEvent": _dec_begins,  # type: ignore[dict-item]
    "JobSubmittedEvent": _dec_submitted, "JobCompletedEvent": _dec_completed,
    "JobsKilledEvent": _dec_killed, "RequestedCallEvent": _dec_requested,
    "ExecuteJobEvent": _dec_execute, "KillJobsEvent": _dec_kill, "RejectJobEvent": _dec_reject,
    "CallMeLaterEvent": _dec_call, "StopCallMeLaterEvent": _dec_stop_call,
    "RegisterJobEvent": _dec_register_job, "RegisterProfileEvent": _dec_register_profile,
    "FinishRegistrationEvent": _dec_notify("registration_finished"),
    "AllStaticJobsHaveBeenSubmittedEvent": _dec_notify("no_more_static_job_to_submit"),
    "SimulationEndsEvent": lambda e: ("SIMULATION_ENDS", {}),
    "SimulationErrorEvent": lambda e: ("SIMULATION_ERROR", {"error": _s(e.error, "error")}),
}
