"""The careful reader of batprotocol's frequent events (JobSubmitted, JobCompleted,
ExecuteJob, RequestedCall, SimulationEnds) and of the message around them: every
offset is checked against the buffer, so a corrupt buffer raises ``Corrupt`` naming
what was being read, never reads outside it, and a missing required field is refused
naming it. The codec (``batprotocol.py``) uses it when the fast path
(``batprotocol_fast.py``) gives up on a message; other events are read by the
generated code.
"""

from __future__ import annotations

import struct
from typing import Any, Optional

from ..errors import ProtocolError
from ..events import FINAL_JOB_STATES

__all__ = ["read_message", "decode_event", "Corrupt", "Reader"]

# union members of batprotocol's Event (schema order, from 1) that this module handles
JOB_SUBMITTED, JOB_COMPLETED, EXECUTE_JOB, REQUESTED_CALL, SIMULATION_ENDS = 1, 2, 4, 15, 19
_PREDEFINED_PLACEMENT = 1  # ExecutorPlacement.PredefinedExecutorPlacementStrategyWrapper
_HOST_STATES = ("sleeping", "idle", "computing", "switching_on", "switching_off")

_U8 = struct.Struct("<B")
_I8 = struct.Struct("<b")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_F64 = struct.Struct("<d")


class Corrupt(Exception):
    """The buffer is not a valid FlatBuffer at ``args[0]`` (a field name)."""


# -- reading -------------------------------------------------------------------------
class Reader:
    """Bounds-checked access to the tables of one buffer."""

    __slots__ = ("buf", "size")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.size = len(buf)

    def _check(self, pos: int, n: int, what: str) -> None:
        if pos < 0 or pos + n > self.size:
            raise Corrupt(what)

    def table(self, pos: int, what: str) -> tuple[int, int, int]:
        """(table position, vtable position, number of slots)."""
        self._check(pos, 4, what)
        vt = pos - _I32.unpack_from(self.buf, pos)[0]
        self._check(vt, 4, what)
        vt_size = _U16.unpack_from(self.buf, vt)[0]
        if vt_size < 4 or vt_size % 2:
            raise Corrupt(what)
        self._check(vt, vt_size, what)
        return pos, vt, (vt_size - 4) // 2

    def field(self, t: tuple[int, int, int], slot: int, size: int, what: str) -> int:
        """The absolute position of field ``slot`` (0: absent)."""
        pos, vt, nslots = t
        if slot >= nslots:
            return 0
        rel: int = _U16.unpack_from(self.buf, vt + 4 + 2 * slot)[0]
        if not rel:
            return 0
        self._check(pos + rel, size, what)
        return pos + rel

    def scalar(self, t: tuple[int, int, int], slot: int, fmt: struct.Struct, default: Any, what: str) -> Any:
        at = self.field(t, slot, fmt.size, what)
        return fmt.unpack_from(self.buf, at)[0] if at else default

    def target(self, t: tuple[int, int, int], slot: int, what: str) -> int:
        at = self.field(t, slot, 4, what)
        if not at:
            raise ProtocolError(f"the required field {what!r} is missing", what)
        offset: int = _U32.unpack_from(self.buf, at)[0]
        return at + offset

    def string(self, t: tuple[int, int, int], slot: int, what: str) -> str:
        at = self.target(t, slot, what)
        self._check(at, 4, what)
        n = _U32.unpack_from(self.buf, at)[0]
        self._check(at + 4, n, what)
        return self.buf[at + 4:at + 4 + n].decode("utf-8")

    def subtable(self, t: tuple[int, int, int], slot: int, what: str) -> tuple[int, int, int]:
        return self.table(self.target(t, slot, what), what)

    def vector(self, t: tuple[int, int, int], slot: int, width: int, what: str) -> tuple[int, int]:
        """(position of the first item, count) of the vector of ``width``-byte items."""
        at = self.target(t, slot, what)
        self._check(at, 4, what)
        count: int = _U32.unpack_from(self.buf, at)[0]
        self._check(at + 4, width * count, what)
        return at + 4, count

    def tables(self, t: tuple[int, int, int], slot: int, what: str) -> list[tuple[int, int, int]]:
        """The tables of a vector of tables."""
        start, count = self.vector(t, slot, 4, what)
        return [self.table(at + _U32.unpack_from(self.buf, at)[0], f"{what}[{index}]")
                for index, at in enumerate(range(start, start + 4 * count, 4))]


def read_message(buf: bytes) -> tuple[float, list[tuple[int, float, int]], Reader]:
    """``now`` and the events' (union type, timestamp, table position)."""
    r = Reader(buf)
    r._check(0, 4, "root")
    msg = r.table(_U32.unpack_from(buf, 0)[0], "message")
    now = r.scalar(msg, 0, _F64, 0.0, "now")
    vec = r.target(msg, 1, "events")
    r._check(vec, 4, "events")
    count = _U32.unpack_from(buf, vec)[0]
    r._check(vec + 4, 4 * count, "events")
    items = []
    for index in range(count):
        at = vec + 4 + 4 * index
        item = r.table(at + _U32.unpack_from(buf, at)[0], f"events[{index}]")
        kind = r.scalar(item, 1, _U8, 0, f"events[{index}].event_type")
        stamp = r.scalar(item, 0, _F64, 0.0, f"events[{index}].timestamp")
        items.append((kind, stamp, r.target(item, 2, f"events[{index}].event")))
    return now, items, r


def read_hosts(r: Reader, pos: int) -> list[dict[str, Any]]:
    """The computation hosts of the SimulationBeginsEvent at ``pos`` (the rest of the
    event is read by the generated code: a thousand hosts take it a tenth of a second)."""
    hosts = []
    for index, h in enumerate(r.tables(r.table(pos, "SimulationBeginsEvent"), 5, "computation_hosts")):
        what = f"computation_hosts[{index}]"
        state = r.scalar(h, 4, _I8, 0, f"{what}.state")
        start, count = r.vector(h, 8, 8, f"{what}.computation_speed")
        hosts.append({
            "id": r.scalar(h, 0, _U32, 0, f"{what}.id"), "name": r.string(h, 1, f"{what}.name"),
            "state": _HOST_STATES[state] if 0 <= state < len(_HOST_STATES) else "idle",
            "properties": _properties(r, h, 5, f"{what}.properties"),
            "zone_properties": _properties(r, h, 6, f"{what}.zone_properties"),
            "core_count": r.scalar(h, 7, _U32, 1, f"{what}.core_count"),
            "computation_speed": list(struct.unpack_from(f"<{count}d", r.buf, start))})
    return hosts


def _properties(r: Reader, host: tuple[int, int, int], slot: int, what: str) -> dict[str, str]:
    if not r.field(host, slot, 4, what):
        return {}
    return {r.string(p, 0, f"{what}[{index}].key"): r.string(p, 1, f"{what}[{index}].value")
            for index, p in enumerate(r.tables(host, slot, what))}


def decode_event(r: Reader, kind: int, pos: int) -> Optional[tuple[str, dict[str, Any]]]:
    """The shared form of the event at ``pos``, or None if the generated code must read it."""
    if kind == JOB_COMPLETED:
        t = r.table(pos, "JobCompletedEvent")
        state = r.scalar(t, 1, _I8, 0, "state")
        if not 0 <= state < len(FINAL_JOB_STATES):
            raise ProtocolError(f"unknown final state {state}", "state")
        return "JOB_COMPLETED", {"job_id": r.string(t, 0, "job_id"), "job_state": FINAL_JOB_STATES[state],
                                 "return_code": r.scalar(t, 2, _I32, 0, "return_code")}
    if kind == JOB_SUBMITTED:
        t = r.table(pos, "JobSubmittedEvent")
        if r.field(t, 3, 4, "profile"):
            return None
        job_id = r.string(t, 0, "job_id")
        job = r.subtable(t, 1, "job")
        if r.field(job, 2, 4, "extra_data"):
            return None
        walltime = r.scalar(job, 1, _F64, None, "walltime")
        return "JOB_SUBMITTED", {"job_id": job_id, "job": {
            "id": job_id, "subtime": r.scalar(t, 2, _F64, 0.0, "submission_time"),
            "res": r.scalar(job, 0, _U32, 0, "resource_request"), "profile": r.string(job, 3, "profile_id"),
            "walltime": -1 if walltime is None else walltime}}
    if kind == EXECUTE_JOB:
        t = r.table(pos, "ExecuteJobEvent")
        if r.field(t, 2, 4, "profile_allocation_override") or r.field(t, 3, 4, "storage_placement"):
            return None
        alloc = r.subtable(t, 1, "allocation")
        if r.scalar(alloc, 1, _U8, 0, "executor_placement_type") != _PREDEFINED_PLACEMENT:
            return None
        r.subtable(alloc, 2, "executor_placement")
        return "EXECUTE_JOB", {"job_id": r.string(t, 0, "job_id"), "alloc": r.string(alloc, 0, "host_allocation")}
    if kind == REQUESTED_CALL:
        t = r.table(pos, "RequestedCallEvent")
        return "REQUESTED_CALL", {"id": r.string(t, 0, "call_me_later_id"),
                                  "last_periodic_call": bool(r.scalar(t, 1, _U8, 0,
                                                                      "last_periodic_call"))}
    if kind == SIMULATION_ENDS:
        r.table(pos, "SimulationEndsEvent")
        return "SIMULATION_ENDS", {}
    return None
