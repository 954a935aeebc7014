"""The decision-process side of Batsim's wire protocol, behind one small interface.

A ``Codec`` turns a message (``now`` plus a list of events) into bytes and back; the
executor only ever sees ``Message`` and event dicts of the JSON protocol
(spec/batsim-protocol-json.txt), so batprotocol (Batsim 5) or the legacy text protocol
would be further codecs, not changes to the executor. The ``*_event`` helpers build the
events the executor sends, in the shapes the recorded Batsim 4.2.1 runs accept
(fixtures/batsim-4.2.1/dynack: ``subtime`` is required in REGISTER_JOB though the
protocol page omits it).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol

__all__ = ["Message", "Codec", "JsonCodec", "ProtocolError", "Event",
           "register_profile", "register_job", "execute_job", "kill_jobs", "reject_job",
           "call_me_later", "notify"]

Event = dict[str, Any]


class ProtocolError(Exception):
    """The simulator sent something that is not a valid protocol message."""


class Message(NamedTuple):
    """One protocol message: the sender's clock and its events, in time order."""

    now: float
    events: list[Event]


class Codec(Protocol):
    """A wire format of the Batsim protocol."""

    def encode(self, message: Message) -> bytes:
        """The bytes of ``message``."""

    def decode(self, raw: bytes) -> Message:
        """The message in ``raw``; ``ProtocolError`` if it is not one."""


class JsonCodec:
    """Batsim's JSON protocol (the one Batsim 4 speaks over ZeroMQ)."""

    def __init__(self) -> None:
        self._encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False,
                                         allow_nan=False)

    def encode(self, message: Message) -> bytes:
        return self._encoder.encode({"now": message.now, "events": message.events}).encode()

    def decode(self, raw: bytes) -> Message:
        try:
            msg = json.loads(raw)
        except ValueError as e:
            raise ProtocolError(f"the simulator sent invalid JSON: {e}") from None
        if not isinstance(msg, dict) or not isinstance(msg.get("events"), list):
            raise ProtocolError(f"the simulator sent a message without 'events': {raw[:200]!r}")
        now = msg.get("now")
        if isinstance(now, bool) or not isinstance(now, (int, float)):
            raise ProtocolError(f"the simulator sent a message without a numeric 'now': {raw[:200]!r}")
        for event in msg["events"]:
            if not (isinstance(event, dict) and isinstance(event.get("type"), str)
                    and isinstance(event.get("data"), dict)):
                raise ProtocolError(f"the simulator sent a malformed event: {event!r}"[:300])
        return Message(float(now), msg["events"])


def _event(t: float, kind: str, data: dict[str, Any]) -> Event:
    return {"timestamp": t, "type": kind, "data": data}


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


def notify(t: float, kind: str) -> Event:
    """NOTIFY ``kind`` (``registration_finished``, ``continue_registration``)."""
    return _event(t, "NOTIFY", {"type": kind})
