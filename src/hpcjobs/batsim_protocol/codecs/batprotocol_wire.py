"""The FlatBuffers wire format of batprotocol's frequent events, written and read with
``struct`` directly: the per-job events of a simulation (JobSubmitted, JobCompleted,
ExecuteJob, RequestedCall, SimulationEnds) and the message around them.

Why: the generated classes and PyPI's ``flatbuffers`` runtime build and read a buffer
one checked field at a time, about twenty times slower than the ``json`` module the
JSON protocol uses; a simulation exchanges these few events by the million. Everything
else goes through the generated code (``batprotocol.py``), and the tests check that each
side reads what the other writes (tests/batsim_protocol/test_batprotocol.py).

The buffers are ordinary FlatBuffers (any reader of the schema reads them): written
front to back, each table preceded by its vtable, children after their parent (offsets
point forward, as unsigned offsets must), scalars aligned to their size. Reading
checks every offset against the buffer, so a corrupt buffer raises ``_Corrupt`` naming
what was being read, never reads outside it.
"""

from __future__ import annotations

import struct
from typing import Any, Optional

from ..errors import ProtocolError
from ..events import Event

__all__ = ["FAST_TYPES", "encode", "read_message", "decode_event", "Corrupt", "Reader"]

# union members of batprotocol's Event (schema order, from 1) that this module handles
JOB_SUBMITTED, JOB_COMPLETED, EXECUTE_JOB, REQUESTED_CALL, SIMULATION_ENDS = 1, 2, 4, 15, 19
_PREDEFINED_PLACEMENT = 1  # ExecutorPlacement.PredefinedExecutorPlacementStrategyWrapper
_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED",
           "COMPLETED_KILLED", "REJECTED")
_STATE_INDEX = {name: i for i, name in enumerate(_STATES)}
#: event types (the shared names) this module can write
FAST_TYPES = frozenset({"JOB_SUBMITTED", "JOB_COMPLETED", "EXECUTE_JOB", "REQUESTED_CALL",
                        "SIMULATION_ENDS"})

_U8 = struct.Struct("<B")
_I8 = struct.Struct("<b")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_F64 = struct.Struct("<d")
_SIZES = {"d": 8, "I": 4, "i": 4, "b": 1, "B": 1, "?": 1, "o": 4}


class Corrupt(Exception):
    """The buffer is not a valid FlatBuffer at ``args[0]`` (a field name)."""


# -- writing -------------------------------------------------------------------------
class _Layout:
    """A table shape, computed once: its vtable's bytes and one ``struct`` for its
    inline part (the soffset to the vtable, then the fields, biggest first so that
    nothing needs padding between them; offset fields are written 0 and patched)."""

    __slots__ = ("vtable", "inline", "order", "at")

    def __init__(self, nslots: int, spec: tuple[tuple[int, str], ...]) -> None:
        rel, fmt, self.at = 4, "<i", {}
        order = sorted(spec, key=lambda f: -_SIZES[f[1]])
        for slot, code in order:
            size = _SIZES[code]
            fmt += "x" * (-rel % size)
            rel += -rel % size
            self.at[slot] = rel
            fmt += "I" if code == "o" else code
            rel += size
        self.order = [slot for slot, _ in order]
        vt = [self.at.get(slot, 0) for slot in range(nslots)]
        self.vtable = struct.pack(f"<{2 + nslots}H", 4 + 2 * nslots, rel, *vt)
        self.inline = struct.Struct(fmt)


class _Writer:
    """Front-to-back FlatBuffer writer; offsets to children are patched when written."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray(4)  # the root offset, patched by link(0, root)

    def pad(self, n: int) -> None:
        extra = -len(self.buf) % n
        if extra:
            self.buf += bytes(extra)

    def table(self, layout: _Layout, values: dict[int, Any]) -> int:
        """Write a table of ``layout`` with ``values`` by slot (offset fields: 0, to be
        patched with :meth:`link` at ``pos + layout.at[slot]``); return its position."""
        buf = self.buf
        self.pad(2)
        vt_pos = len(buf)
        buf += layout.vtable
        self.pad(8)
        pos = len(buf)
        buf += layout.inline.pack(pos - vt_pos, *[values.get(slot, 0) for slot in layout.order])
        return pos

    def string(self, text: str) -> int:
        data = text.encode("utf-8")
        self.pad(4)
        pos = len(self.buf)
        self.buf += _U32.pack(len(data)) + data + b"\0"
        return pos

    def link(self, field_pos: int, target: int) -> None:
        _U32.pack_into(self.buf, field_pos, target - field_pos)


_MESSAGE = _Layout(2, ((0, "d"), (1, "o")))
_ITEM = _Layout(3, ((0, "d"), (1, "B"), (2, "o")))
_SUBMITTED = _Layout(4, ((0, "o"), (1, "o"), (2, "d")))
_JOB = _Layout(4, ((0, "I"), (3, "o")))
_JOB_WALLTIME = _Layout(4, ((0, "I"), (1, "d"), (3, "o")))
_COMPLETED = _Layout(3, ((0, "o"), (1, "b"), (2, "i")))
_EXECUTE = _Layout(4, ((0, "o"), (1, "o")))
_ALLOCATION = _Layout(3, ((0, "o"), (1, "B"), (2, "o")))
_EMPTY = _Layout(0, ())
_EMPTY_1 = _Layout(1, ())
_CALLED = _Layout(2, ((0, "o"), (1, "?")))


def _job_submitted(w: _Writer, data: dict[str, Any]) -> int:
    job = data["job"]
    if "profile" in data or any(k not in ("id", "subtime", "res", "profile", "walltime") for k in job):
        raise _Fallback  # extra_data / a forwarded profile: the generated code writes those
    pos = w.table(_SUBMITTED, {2: float(job.get("subtime", 0.0))})
    w.link(pos + _SUBMITTED.at[0], w.string(data["job_id"]))
    walltime = job.get("walltime", -1)
    if walltime == -1:  # absent: "no walltime" (the schema's "= null")
        layout, job_pos = _JOB, w.table(_JOB, {0: int(job["res"])})
    else:
        layout, job_pos = _JOB_WALLTIME, w.table(_JOB_WALLTIME, {0: int(job["res"]), 1: float(walltime)})
    w.link(pos + _SUBMITTED.at[1], job_pos)
    w.link(job_pos + layout.at[3], w.string(job["profile"]))
    return pos


def _job_completed(w: _Writer, data: dict[str, Any]) -> int:
    pos = w.table(_COMPLETED, {1: _STATE_INDEX[data["job_state"]], 2: int(data["return_code"])})
    w.link(pos + _COMPLETED.at[0], w.string(data["job_id"]))
    return pos


def _execute_job(w: _Writer, data: dict[str, Any]) -> int:
    if data.get("mapping"):
        raise _Fallback
    pos = w.table(_EXECUTE, {})
    w.link(pos + _EXECUTE.at[0], w.string(data["job_id"]))
    alloc = w.table(_ALLOCATION, {1: _PREDEFINED_PLACEMENT})
    w.link(pos + _EXECUTE.at[1], alloc)
    w.link(alloc + _ALLOCATION.at[0], w.string(data["alloc"]))
    w.link(alloc + _ALLOCATION.at[2], w.table(_EMPTY_1, {}))  # strategy: SpreadOverHostsFirst
    return pos


def _requested_call(w: _Writer, data: dict[str, Any]) -> int:
    pos = w.table(_CALLED, {1: bool(data.get("last_periodic_call", False))})
    w.link(pos + _CALLED.at[0], w.string(data.get("id", "")))
    return pos


def _simulation_ends(w: _Writer, data: dict[str, Any]) -> int:
    return w.table(_EMPTY, {})


_WRITERS = {"JOB_SUBMITTED": (JOB_SUBMITTED, _job_submitted), "JOB_COMPLETED": (JOB_COMPLETED, _job_completed),
            "EXECUTE_JOB": (EXECUTE_JOB, _execute_job), "REQUESTED_CALL": (REQUESTED_CALL, _requested_call),
            "SIMULATION_ENDS": (SIMULATION_ENDS, _simulation_ends)}


class _Fallback(Exception):
    """This event has a part only the generated code writes."""


def encode(now: float, events: list[Event]) -> Optional[bytes]:
    """The message as a FlatBuffer, or None when an event needs the generated code."""
    w = _Writer()
    root = w.table(_MESSAGE, {0: now})
    w.link(0, root)
    w.pad(4)
    vec = len(w.buf)
    w.link(root + _MESSAGE.at[1], vec)
    w.buf += _U32.pack(len(events)) + bytes(4 * len(events))
    try:
        for index, event in enumerate(events):
            kind, write = _WRITERS[event["type"]]
            item = w.table(_ITEM, {0: event["timestamp"], 1: kind})
            w.link(vec + 4 + 4 * index, item)
            w.link(item + _ITEM.at[2], write(w, event["data"]))
    except (KeyError, _Fallback):
        return None
    return bytes(w.buf)


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


def decode_event(r: Reader, kind: int, pos: int) -> Optional[tuple[str, dict[str, Any]]]:
    """The shared form of the event at ``pos``, or None if the generated code must read it."""
    if kind == JOB_COMPLETED:
        t = r.table(pos, "JobCompletedEvent")
        state = r.scalar(t, 1, _I8, 0, "state")
        if not 0 <= state < len(_STATES):
            raise ProtocolError(f"unknown final state {state}", "state")
        return "JOB_COMPLETED", {"job_id": r.string(t, 0, "job_id"), "job_state": _STATES[state],
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
