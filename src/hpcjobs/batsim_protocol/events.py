"""Protocol messages and events, independent of any wire format.

A message is the sender's clock (``now``) and its events in time order. An event is
the dict the JSON protocol (spec/batsim-protocol-json.txt) carries —
``{"timestamp": t, "type": "EXECUTE_JOB", "data": {...}}`` — whatever the wire: each
codec translates its own generation's encoding to and from these dicts, so the two
ends never see a wire format. :data:`EVENTS` is the one definition of every event
type: who sends it and how each protocol generation names it (``None``: that
generation does not have it, and its codec refuses it by name).

The builders below make the events in the shapes the recorded Batsim 4.2.1 runs accept
(fixtures/batsim-4.2.1/dynack: ``subtime`` is required in REGISTER_JOB though the
protocol page omits it).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from .. import __version__

__all__ = ["Event", "Message", "EventType", "EVENTS", "NOT_JSON", "BATSIM", "DECISION", "FINAL_JOB_STATES",
           "COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED",
           "REJECTED",
           "notify", "edc_hello", "simulation_error",
           "register_profile", "register_job", "execute_job", "kill_jobs", "reject_job",
           "call_me_later"]

Event = dict[str, Any]

#: senders
BATSIM = "batsim"
DECISION = "decision process"

#: how a Batsim job ended (JOB_COMPLETED's ``job_state``, the ``_jobs.csv`` outputs)
COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_FAILED = "COMPLETED_FAILED"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"
REJECTED = "REJECTED"
#: in batprotocol's ``FinalJobState`` order: a state's index is its value on that wire
FINAL_JOB_STATES = (COMPLETED_SUCCESSFULLY, COMPLETED_FAILED, COMPLETED_WALLTIME_REACHED, COMPLETED_KILLED,
                    REJECTED)


class Message(NamedTuple):
    """One protocol message: the sender's clock and its events, in time order."""

    now: float
    events: list[Event]


class EventType(NamedTuple):
    """One event type and its name in each generation (None: it lacks the event)."""

    name: str  # the name both ends use (the JSON protocol's, where it has the event)
    sender: str  # BATSIM, DECISION, or both ("")
    legacy: Optional[str]  # the stamp of the legacy text protocol (Batsim < 1.0)
    batprotocol: Optional[str]  # the Event union member of batprotocol (Batsim 5)
    json: bool = True  # whether the JSON protocol (Batsim 3-4) has it


EVENTS: dict[str, EventType] = {e.name: e for e in (
    EventType("EDC_HELLO", DECISION, None, "EDCHelloEvent", json=False),
    EventType("SIMULATION_BEGINS", BATSIM, "A", "SimulationBeginsEvent"),
    EventType("SIMULATION_ENDS", BATSIM, "Z", "SimulationEndsEvent"),
    EventType("SIMULATION_ERROR", BATSIM, None, "SimulationErrorEvent", json=False),
    EventType("JOB_SUBMITTED", BATSIM, "S", "JobSubmittedEvent"),
    EventType("JOB_COMPLETED", BATSIM, "C", "JobCompletedEvent"),
    EventType("JOB_KILLED", BATSIM, None, "JobsKilledEvent"),
    EventType("REQUESTED_CALL", BATSIM, "N", "RequestedCallEvent"),
    EventType("NOP", DECISION, "N", None, json=False),  # legacy: "do nothing"
    EventType("RESOURCE_STATE_CHANGED", BATSIM, "p", None),
    EventType("ANSWER", BATSIM, "e", None),
    EventType("NOTIFY", "", None, "FinishRegistrationEvent"),
    EventType("EXECUTE_JOB", DECISION, "J", "ExecuteJobEvent"),
    EventType("REJECT_JOB", DECISION, "R", "RejectJobEvent"),
    EventType("KILL_JOB", DECISION, None, "KillJobsEvent"),
    EventType("CALL_ME_LATER", DECISION, "n", "CallMeLaterEvent"),
    EventType("STOP_CALL_ME_LATER", DECISION, None, "StopCallMeLaterEvent", json=False),
    EventType("REGISTER_JOB", DECISION, None, "RegisterJobEvent"),
    EventType("REGISTER_PROFILE", DECISION, None, "RegisterProfileEvent"),
    EventType("SET_RESOURCE_STATE", DECISION, "P", None),
    EventType("QUERY", DECISION, "E", None),
    EventType("CHANGE_JOB_STATE", DECISION, None, None),
    EventType("TO_JOB_MSG", DECISION, None, None),
    EventType("FROM_JOB_MSG", BATSIM, None, None),
)}


#: the events the JSON protocol lacks (its codec refuses them by name)
NOT_JSON = frozenset(e.name for e in EVENTS.values() if not e.json)


def _event(t: float, kind: str, data: dict[str, Any]) -> Event:
    return {"timestamp": t, "type": kind, "data": data}


# -- Batsim -> decision process ------------------------------------------------------
def simulation_error(t: float, error: str) -> Event:
    """batprotocol's SimulationError: Batsim stops because of ``error``."""
    return _event(t, "SIMULATION_ERROR", {"error": error})


# -- either side ---------------------------------------------------------------------
def notify(t: float, kind: str) -> Event:
    """NOTIFY ``kind`` (``registration_finished``, ``continue_registration``, ...)."""
    return _event(t, "NOTIFY", {"type": kind})


# -- decision process -> Batsim ------------------------------------------------------
def edc_hello(t: float, **features: bool) -> Event:
    """batprotocol's EDC hello (the decision process's first reply) asking for
    ``features`` (``dynamic_registration``, ``acknowledge_dynamic_jobs``,
    ``profile_reuse``, ``forward_profiles_on_job_submission``, ...)."""
    return _event(t, "EDC_HELLO", {
        "decision_component_name": "hpcjobs", "decision_component_version": __version__,
        "requested_simulation_features": features})


def register_profile(t: float, workload: str, name: str, profile: dict[str, Any]) -> Event:
    """REGISTER_PROFILE: ``profile`` becomes ``workload``'s profile ``name``."""
    return _event(t, "REGISTER_PROFILE",
                  {"workload_name": workload, "profile_name": name, "profile": profile})


def register_job(t: float, job_id: str, res: int, profile: str, walltime: float) -> Event:
    """REGISTER_JOB submitted at ``t`` (Batsim wants ``subtime`` in the job object)."""
    job = {"id": job_id, "subtime": t, "res": res, "profile": profile, "walltime": walltime}
    return _event(t, "REGISTER_JOB", {"job_id": job_id, "job": job})


def execute_job(t: float, job_id: str, alloc: str) -> Event:
    """EXECUTE_JOB on the interval set ``alloc`` (``"0-3 7"``)."""
    return _event(t, "EXECUTE_JOB", {"job_id": job_id, "alloc": alloc})


def kill_jobs(t: float, job_ids: list[str]) -> Event:
    """KILL_JOB of running jobs (acknowledged by one JOB_KILLED)."""
    return _event(t, "KILL_JOB", {"job_ids": job_ids})


def reject_job(t: float, job_id: str) -> Event:
    """REJECT_JOB of a submitted job that never ran."""
    return _event(t, "REJECT_JOB", {"job_id": job_id})


def call_me_later(t: float, when: float) -> Event:
    """CALL_ME_LATER: Batsim sends REQUESTED_CALL at ``when``."""
    return _event(t, "CALL_ME_LATER", {"timestamp": when})
