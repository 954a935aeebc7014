"""batprotocol, Batsim 5's protocol: FlatBuffers messages (schema/batprotocol.fbs).

Every message is read and written from the schema (``batprotocol_schema.py``): this
module translates between the events of :mod:`..events` and the schema's tables in
FlatBuffers' JSON form (a dict per table, keyed by the schema's field names). The
per-job events in their usual form take the hot path of ``batprotocol_fast.py``, laid
out from the same schema; whatever it does not take is written and read here.

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

Python's FlatBuffers runtime has no verifier: decoding reads every field through the
schema's bounds-checked reader and refuses a buffer whose offsets leave it, whose
required fields are missing, whose strings are not UTF-8 or whose union types are
unknown, naming the field.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, Callable, Optional

from ..errors import ProtocolError
from ..events import FINAL_JOB_STATES, Event, Message
from . import batprotocol_fast as fast
from .batprotocol_schema import Corrupt, from_json, load_schema, read_message, read_table

__all__ = ["Codec", "BATPROTOCOL_VERSION"]

#: what hpcjobs says it speaks (the schema's example of a released version)
BATPROTOCOL_VERSION = "0.1.0"

_SCHEMA = load_schema()
_EVENT_MEMBERS = _SCHEMA.unions["Event"]
_HOST_STATES = ("sleeping", "idle", "computing", "switching_on", "switching_off")
_FEATURES = ("dynamic_registration", "profile_reuse", "acknowledge_dynamic_jobs",
             "forward_profiles_on_job_submission", "forward_profiles_on_jobs_killed",
             "forward_profiles_on_simulation_begins")
_JOB_KEYS = ("id", "subtime", "res", "profile", "walltime")
_SECOND, _MILLISECOND = 0, 1  # TimeUnit
#: a table in FlatBuffers' JSON form (batprotocol_schema)
Table = dict[str, Any]


class Codec:
    """Batsim 5's batprotocol, binary FlatBuffers."""

    name = "batprotocol"
    #: Batsim 5 opens with an empty message; the decision process says hello in reply
    hello = True

    def encode(self, message: Message) -> bytes:
        # the per-job events: one struct each (batprotocol_fast); the rest: the schema
        raw = fast.encode(message.now, message.events)
        return self.encode_by_schema(message) if raw is None else raw

    def encode_by_schema(self, message: Message) -> bytes:
        """``encode`` through the schema's writer only."""
        events = []
        for index, event in enumerate(message.events):
            kind = event["type"]
            encoder = _ENCODERS.get(kind)
            if encoder is None:
                raise ProtocolError(f"batprotocol has no event {kind}", f"events[{index}].type")
            try:
                member, table = encoder(event["data"])
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise ProtocolError(f"cannot encode {kind}: {e!r}", f"events[{index}].data") from None
            events.append({"timestamp": event["timestamp"], "event_type": member, "event": table})
        try:
            return from_json(_SCHEMA, {"now": message.now, "events": events})
        except ProtocolError as e:  # a value the field's type cannot hold: say whose
            where = e.field or "now"
            if where.startswith("events["):
                index = int(where[7:where.index("]")])
                raise ProtocolError(f"cannot encode {message.events[index]['type']}: {e.reason}",
                                    f"events[{index}]") from None
            raise ProtocolError(f"cannot encode the message: {e.reason}", where) from None

    def decode(self, raw: bytes) -> Message:
        usual = fast.decode(raw)  # the per-job events in their usual form
        return self.decode_carefully(raw) if usual is None else Message(*usual)

    def decode_carefully(self, raw: bytes) -> Message:
        """``decode`` field by field through the schema, naming the field of what it refuses."""
        if len(raw) < 8:
            raise ProtocolError(f"a FlatBuffer of {len(raw)} bytes is too short", "message")
        field = "message"
        try:
            now, items, reader = read_message(raw)
            if not math.isfinite(now):
                raise ProtocolError(f"'now' ({now}) is not finite", "now")
            events: list[Event] = []
            for index, (kind, stamp, pos) in enumerate(items):
                field = f"events[{index}]"
                if not 0 < kind <= len(_EVENT_MEMBERS):
                    raise ProtocolError(f"unknown event type {kind} (not in the schema's Event union)", field)
                member = _EVENT_MEMBERS[kind - 1]
                decoder = _DECODERS.get(member)
                if decoder is None:
                    raise ProtocolError(f"{member} is not modelled by hpcjobs (probes, storage, external "
                                        "events and power states are not)", f"{field} ({member})")
                field = f"{field} ({member})"
                if not math.isfinite(stamp):
                    raise ProtocolError(f"timestamp {stamp} is not finite", f"{field}.timestamp")
                kind_name, data = decoder(read_table(_SCHEMA, reader, member, pos, field))
                if kind_name == "REGISTER_JOB":
                    data["job"]["subtime"] = stamp  # batprotocol's job has no submission time
                events.append({"timestamp": stamp, "type": kind_name, "data": data})
        except ProtocolError as e:
            if e.field is not None and not e.field.startswith(("events", "now", "message")):
                e.field = f"{field}.{e.field}"  # located inside the event being read
            raise
        except Corrupt as e:
            where = e.args[0]
            where = where if where.startswith(("events", "now", "root", "message")) else f"{field}.{where}"
            raise ProtocolError("the FlatBuffer fails verification: an offset leaves the buffer",
                                where) from None
        except UnicodeDecodeError as e:
            raise ProtocolError(f"a string is not UTF-8 at byte {e.start}", field) from None
        except (struct.error, IndexError, TypeError, ValueError, OverflowError) as e:
            raise ProtocolError(f"the FlatBuffer fails verification: {e}", field) from None
        return Message(now, events)


# -- helpers -------------------------------------------------------------------------
def _extra(data: dict[str, Any], known: tuple[str, ...]) -> dict[str, str]:
    """``{"extra_data": ...}``: the fields batprotocol lacks, as JSON (none: ``{}``)."""
    rest = {k: v for k, v in data.items() if k not in known}
    return {"extra_data": json.dumps(rest, separators=(",", ":"))} if rest else {}


def _unextra(value: Optional[str]) -> dict[str, Any]:
    if not value:
        return {}
    try:
        extra = json.loads(value)
    except ValueError:
        return {"extra_data": value}
    return extra if isinstance(extra, dict) else {"extra_data": extra}


def _in_unit(*times: float) -> tuple[list[int], int]:
    """Times as batprotocol's uint64s in one TimeUnit: whole seconds when exact, else
    milliseconds rounded up (a call comes no earlier than asked)."""
    if all(t == int(t) for t in times):
        return [int(t) for t in times], _SECOND
    return [math.ceil(t * 1000 - 1e-6) for t in times], _MILLISECOND


def _from_unit(value: int, unit: Any) -> float:
    return value / 1000 if unit == "Millisecond" else float(value)


# -- profiles ------------------------------------------------------------------------
def _profile(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    kind = raw.get("type")
    known: tuple[str, ...]
    table: Table
    if kind == "delay":
        member, table, known = "DelayProfile", {"delay": float(raw["delay"])}, ("type", "delay")
    elif kind == "parallel":
        member, known = "ParallelTaskProfile", ("type", "cpu", "com")
        table = {"computation_vector": [float(x) for x in raw.get("cpu", [])],
                 "communication_matrix": [float(x) for x in raw.get("com", [])]}
    elif kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        member, known = "ParallelTaskHomogeneousProfile", ("type", "cpu", "com")
        table = {"computation_amount": float(raw.get("cpu", 0)), "communication_amount": float(raw.get("com", 0)),
                 "generation_strategy": "DefinedAmountsUsedForEachValue" if kind == "parallel_homogeneous"
                 else "DefinedAmountsSpreadUniformly"}
    elif kind == "composed":
        member, known = "SequentialCompositionProfile", ("type", "seq", "repeat")
        table = {"profile_ids": list(raw["seq"]), "repetition_count": int(raw.get("repeat", 1))}
    else:
        raise ValueError(f"profile {name!r}: batprotocol has no profile type {kind!r}")
    return {"id": name, "profile_type": member, "profile": table, **_extra(raw, known)}


def _unprofile(p: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name, kind, table = p["id"], p["profile_type"], p["profile"]
    raw: dict[str, Any]
    if kind == "DelayProfile":
        raw = {"type": "delay", "delay": table["delay"]}
    elif kind == "ParallelTaskProfile":
        raw = {"type": "parallel", "cpu": table.get("computation_vector", []),
               "com": table.get("communication_matrix", [])}
    elif kind == "ParallelTaskHomogeneousProfile":
        total = table["generation_strategy"] == "DefinedAmountsSpreadUniformly"
        raw = {"type": "parallel_homogeneous_total" if total else "parallel_homogeneous",
               "cpu": table["computation_amount"], "com": table["communication_amount"]}
    elif kind == "SequentialCompositionProfile":
        raw = {"type": "composed", "repeat": table["repetition_count"], "seq": table["profile_ids"]}
    else:
        raise ProtocolError(f"profile {name!r}: {kind} is not modelled by hpcjobs", "profile")
    raw.update(_unextra(p.get("extra_data")))
    return name, raw


# -- jobs ----------------------------------------------------------------------------
def _job(raw: dict[str, Any]) -> dict[str, Any]:
    walltime = raw.get("walltime", -1)
    return {"resource_request": int(raw["res"]), "walltime": None if walltime == -1 else float(walltime),
            "profile_id": raw["profile"], **_extra(raw, _JOB_KEYS)}


def _unjob(job: dict[str, Any], job_id: str, subtime: float) -> dict[str, Any]:
    raw = {"id": job_id, "subtime": subtime, "res": job["resource_request"], "profile": job["profile_id"],
           "walltime": -1 if job["walltime"] is None else job["walltime"]}
    raw.update(_unextra(job.get("extra_data")))
    return raw


def _progress(p: dict[str, Any]) -> dict[str, Any]:
    if "current_task" in p:
        return {"kill_progress_type": "KillProgressSequentialProfile", "kill_progress": {
            "profile_id": p["profile"], "current_repetition": int(p.get("current_repetition", 0)),
            "current_task_index": int(p["current_task_index"]),
            "current_task_progress": _progress(p["current_task"])}}
    return {"kill_progress_type": "KillProgressAtomicProfile",
            "kill_progress": {"profile_id": p["profile"], "progress": float(p["progress"])}}


def _unprogress(w: dict[str, Any]) -> dict[str, Any]:
    kind, p = w["kill_progress_type"], w["kill_progress"]
    if kind == "KillProgressAtomicProfile":
        return {"profile": p["profile_id"], "progress": p["progress"]}
    if kind == "KillProgressSequentialProfile":
        return {"profile": p["profile_id"], "current_repetition": p["current_repetition"],
                "current_task_index": p["current_task_index"],
                "current_task": _unprogress(p["current_task_progress"])}
    raise ProtocolError("fork-join kill progress is not modelled by hpcjobs", "kill_progress")


# -- encoders: event data -> (Event union member, table) -----------------------------
def _enc_hello(d: dict[str, Any]) -> tuple[str, Table]:
    asked = d.get("requested_simulation_features", {})
    e = {"batprotocol_version": d.get("batprotocol_version", BATPROTOCOL_VERSION),
         "decision_component_name": d["decision_component_name"],
         "decision_component_version": d["decision_component_version"],
         "requested_simulation_features": {key: bool(asked.get(key, False)) for key in _FEATURES}}
    if d.get("decision_component_commit") is not None:
        e["decision_component_commit"] = d["decision_component_commit"]
    return "EDCHelloEvent", e


def _enc_begins(d: dict[str, Any]) -> tuple[str, Table]:
    hosts = [{"id": r["id"], "name": r["name"], "state": _HOST_STATES.index(r.get("state", "idle")),
              "properties": [{"key": k, "value": str(v)} for k, v in r.get("properties", {}).items()],
              "zone_properties": [{"key": k, "value": str(v)} for k, v in r.get("zone_properties", {}).items()],
              "core_count": r.get("core_count", 1), "computation_speed": list(r.get("computation_speed", []))}
             for r in d["compute_resources"]]
    e = {"batprotocol_version": BATPROTOCOL_VERSION, "batsim_version": d.get("batsim_version", "hpcjobs.sim"),
         "host_number": d["nb_resources"], "computation_host_number": d["nb_compute_resources"],
         "computation_hosts": hosts, "storage_host_number": 0, "storage_hosts": [],
         "batsim_arguments": list(d.get("batsim_arguments", [])),
         "batsim_execution_context_json": json.dumps(d.get("config", {}), separators=(",", ":")),
         "workloads": [{"name": name, "filename": path} for name, path in d.get("workloads", {}).items()],
         "external_event_lists": []}
    if "profiles" in d:
        e["profiles"] = [_profile(f"{wl}!{name}", raw) for wl, profiles in d["profiles"].items()
                         for name, raw in profiles.items()]
    return "SimulationBeginsEvent", e


def _enc_submitted(d: dict[str, Any]) -> tuple[str, Table]:
    e = {"job_id": d["job_id"], "job": _job(d["job"]), "submission_time": float(d["job"].get("subtime", 0.0))}
    if "profile" in d:
        e["profile"] = _profile(d["job"]["profile"], d["profile"])
    return "JobSubmittedEvent", e


def _enc_completed(d: dict[str, Any]) -> tuple[str, Table]:
    return "JobCompletedEvent", {"job_id": d["job_id"], "state": FINAL_JOB_STATES.index(d["job_state"]),
                                 "return_code": int(d["return_code"])}


def _enc_killed(d: dict[str, Any]) -> tuple[str, Table]:
    return "JobsKilledEvent", {"job_ids": list(d["job_ids"]), "progresses": [
        {"job_id": job_id, "wrapper": _progress(progress)} for job_id, progress in d.get("job_progress", {}).items()]}


def _enc_requested(d: dict[str, Any]) -> tuple[str, Table]:
    return "RequestedCallEvent", {"call_me_later_id": d.get("id", ""),
                                  "last_periodic_call": bool(d.get("last_periodic_call", False))}


def _enc_notify(d: dict[str, Any]) -> tuple[str, Table]:
    kind = d["type"]
    if kind == "registration_finished":
        return "FinishRegistrationEvent", {}
    if kind == "no_more_static_job_to_submit":
        return "AllStaticJobsHaveBeenSubmittedEvent", {}
    raise ValueError(f"batprotocol has no NOTIFY {kind!r}")


def _enc_execute(d: dict[str, Any]) -> tuple[str, Table]:
    mapping = d.get("mapping")
    if mapping:
        placement = {"executor_placement_type": "CustomExecutorToHostMapping",
                     "executor_placement": {"mapping": [int(mapping[str(rank)]) for rank in range(len(mapping))]}}
    else:
        placement = {"executor_placement_type": "PredefinedExecutorPlacementStrategyWrapper",
                     "executor_placement": {}}
    return "ExecuteJobEvent", {"job_id": d["job_id"], "allocation": {"host_allocation": d["alloc"], **placement}}


def _enc_kill(d: dict[str, Any]) -> tuple[str, Table]:
    return "KillJobsEvent", {"job_ids": list(d["job_ids"])}


def _enc_reject(d: dict[str, Any]) -> tuple[str, Table]:
    return "RejectJobEvent", {"job_id": d["job_id"]}


def _enc_call(d: dict[str, Any]) -> tuple[str, Table]:
    when: Table
    if "period" in d:
        (period, offset), unit = _in_unit(float(d["period"]), float(d.get("offset", 0)))
        when = {"period": period, "offset": offset, "time_unit": unit, "mode_type": "Infinite", "mode": {}}
        if d.get("count") is not None:
            when.update(mode_type="FinitePeriodNumber", mode={"nb_periods": int(d["count"])})
        kind = "Periodic"
    else:
        (time,), unit = _in_unit(float(d["timestamp"]))
        when, kind = {"time": time, "time_unit": unit}, "OneShot"
    return "CallMeLaterEvent", {"call_me_later_id": d.get("id", ""), "when_type": kind, "when": when}


def _enc_stop_call(d: dict[str, Any]) -> tuple[str, Table]:
    return "StopCallMeLaterEvent", {"call_me_later_id": d["id"]}


def _enc_register_job(d: dict[str, Any]) -> tuple[str, Table]:
    return "RegisterJobEvent", {"job_id": d["job_id"], "job": _job(d["job"])}


def _enc_register_profile(d: dict[str, Any]) -> tuple[str, Table]:
    return "RegisterProfileEvent", {"profile": _profile(f"{d['workload_name']}!{d['profile_name']}", d["profile"])}


_ENCODERS: dict[str, Callable[[dict[str, Any]], tuple[str, Table]]] = {
    "EDC_HELLO": _enc_hello, "SIMULATION_BEGINS": _enc_begins, "JOB_SUBMITTED": _enc_submitted,
    "JOB_COMPLETED": _enc_completed, "JOB_KILLED": _enc_killed, "REQUESTED_CALL": _enc_requested,
    "NOTIFY": _enc_notify, "EXECUTE_JOB": _enc_execute, "KILL_JOB": _enc_kill,
    "REJECT_JOB": _enc_reject, "CALL_ME_LATER": _enc_call, "STOP_CALL_ME_LATER": _enc_stop_call,
    "REGISTER_JOB": _enc_register_job, "REGISTER_PROFILE": _enc_register_profile,
    "SIMULATION_ENDS": lambda d: ("SimulationEndsEvent", {}),
    "SIMULATION_ERROR": lambda d: ("SimulationErrorEvent", {"error": d["error"]}),
}


# -- decoders: table (JSON form) -> (event type, data) --------------------------------
def _dec_hello(e: Table) -> tuple[str, dict[str, Any]]:
    features = e["requested_simulation_features"]
    data = {"batprotocol_version": e["batprotocol_version"],
            "decision_component_name": e["decision_component_name"],
            "decision_component_version": e["decision_component_version"],
            "requested_simulation_features": {key: bool(features[key]) for key in _FEATURES}}
    if "decision_component_commit" in e:
        data["decision_component_commit"] = e["decision_component_commit"]
    return "EDC_HELLO", data


def _host(h: Table) -> dict[str, Any]:
    state = h["state"]
    return {"id": h["id"], "name": h["name"], "state": state.lower() if isinstance(state, str) else "idle",
            "properties": {p["key"]: p["value"] for p in h.get("properties", [])},
            "zone_properties": {p["key"]: p["value"] for p in h.get("zone_properties", [])},
            "core_count": h["core_count"], "computation_speed": h["computation_speed"]}


def _dec_begins(e: Table) -> tuple[str, dict[str, Any]]:
    try:
        config = json.loads(e["batsim_execution_context_json"])
    except ValueError:
        raise ProtocolError("is not JSON", "batsim_execution_context_json") from None
    data: dict[str, Any] = {
        "nb_resources": e["host_number"], "nb_compute_resources": e["computation_host_number"],
        "nb_storage_resources": e["storage_host_number"], "compute_resources": list(map(_host, e["computation_hosts"])),
        "storage_resources": [], "config": config, "batsim_version": e["batsim_version"],
        "batsim_arguments": e["batsim_arguments"],
        "workloads": {w["name"]: w["filename"] for w in e["workloads"]}}
    if "profiles" in e:
        profiles: dict[str, dict[str, Any]] = {}
        for p in e["profiles"]:
            full, raw = _unprofile(p)
            workload, _, name = full.rpartition("!")
            profiles.setdefault(workload, {})[name] = raw
        data["profiles"] = profiles
    return "SIMULATION_BEGINS", data


def _dec_submitted(e: Table) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"job_id": e["job_id"], "job": _unjob(e["job"], e["job_id"], e["submission_time"])}
    if "profile" in e:
        data["profile"] = _unprofile(e["profile"])[1]
    return "JOB_SUBMITTED", data


def _dec_completed(e: Table) -> tuple[str, dict[str, Any]]:
    if not isinstance(e["state"], str):
        raise ProtocolError(f"unknown final state {e['state']}", "state")
    return "JOB_COMPLETED", {"job_id": e["job_id"], "job_state": e["state"], "return_code": e["return_code"]}


def _dec_killed(e: Table) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"job_ids": e["job_ids"]}
    progress = {p["job_id"]: _unprogress(p["wrapper"]) for p in e["progresses"]}
    if progress:
        data["job_progress"] = progress
    return "JOB_KILLED", data


def _dec_execute(e: Table) -> tuple[str, dict[str, Any]]:
    if e.get("profile_allocation_override") or e.get("storage_placement"):
        raise ProtocolError("profile allocation overrides and storage placements are not modelled "
                            "by hpcjobs", "profile_allocation_override")
    alloc = e["allocation"]
    data: dict[str, Any] = {"job_id": e["job_id"], "alloc": alloc["host_allocation"]}
    if alloc["executor_placement_type"] == "CustomExecutorToHostMapping":
        data["mapping"] = {str(rank): index for rank, index in enumerate(alloc["executor_placement"]["mapping"])}
    # with one executor per allocated host (as hpcjobs.sim runs jobs) both predefined
    # strategies place executor i on host i: the JSON protocol's default
    return "EXECUTE_JOB", data


def _dec_call(e: Table) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"id": e["call_me_later_id"]}
    when = e["when"]
    if e["when_type"] == "OneShot":
        data["timestamp"] = _from_unit(when["time"], when["time_unit"])
    else:
        data["period"] = _from_unit(when["period"], when["time_unit"])
        data["offset"] = _from_unit(when["offset"], when["time_unit"])
        data["count"] = when["mode"]["nb_periods"] if when["mode_type"] == "FinitePeriodNumber" else None
    return "CALL_ME_LATER", data


def _dec_register_profile(e: Table) -> tuple[str, dict[str, Any]]:
    full, raw = _unprofile(e["profile"])
    workload, sep, name = full.partition("!")
    if not sep:
        raise ProtocolError(f"profile id {full!r} is not 'workload!name'", "profile.id")
    return "REGISTER_PROFILE", {"workload_name": workload, "profile_name": name, "profile": raw}


_DECODERS: dict[str, Callable[[Table], tuple[str, dict[str, Any]]]] = {
    "EDCHelloEvent": _dec_hello, "SimulationBeginsEvent": _dec_begins,
    "JobSubmittedEvent": _dec_submitted, "JobCompletedEvent": _dec_completed,
    "JobsKilledEvent": _dec_killed, "ExecuteJobEvent": _dec_execute, "CallMeLaterEvent": _dec_call,
    "RequestedCallEvent": lambda e: ("REQUESTED_CALL", {"id": e["call_me_later_id"],
                                                        "last_periodic_call": bool(e["last_periodic_call"])}),
    "KillJobsEvent": lambda e: ("KILL_JOB", {"job_ids": e["job_ids"]}),
    "RejectJobEvent": lambda e: ("REJECT_JOB", {"job_id": e["job_id"]}),
    "StopCallMeLaterEvent": lambda e: ("STOP_CALL_ME_LATER", {"id": e["call_me_later_id"]}),
    "RegisterJobEvent": lambda e: ("REGISTER_JOB", {"job_id": e["job_id"],
                                                    "job": _unjob(e["job"], e["job_id"], math.nan)}),
    "RegisterProfileEvent": _dec_register_profile,
    "FinishRegistrationEvent": lambda e: ("NOTIFY", {"type": "registration_finished"}),
    "AllStaticJobsHaveBeenSubmittedEvent": lambda e: ("NOTIFY", {"type": "no_more_static_job_to_submit"}),
    "SimulationEndsEvent": lambda e: ("SIMULATION_ENDS", {}),
    "SimulationErrorEvent": lambda e: ("SIMULATION_ERROR", {"error": e["error"]}),
}
