"""The hot path of batprotocol: the per-job events written with one ``struct`` call each
and read optimistically, whole messages at a time.

Why: the schema's reader and writer (``batprotocol_schema.py``) walk a table field by
field in Python, ten to thirty times slower than this, and a simulation exchanges these
few events (JobSubmitted, JobCompleted, ExecuteJob, CallMeLater, RequestedCall,
SimulationEnds) by the million.

**Layout.** An event is one position-independent block: the message's
``EventAndTimestamp`` table, the event's tables, then all its strings (FlatBuffers
offsets are relative, children after their parent). For given string lengths the
block's layout is fixed, so it is computed once (a :class:`_Shape`). Slots, scalar types
and table sizes are not written here: they are read from the schema
(``batprotocol_schema.py``: ``JobCompletedEvent.return_code`` is slot 2, an int32), the
one source of batprotocol's layout.

**Writing.** A shape is one ``struct`` format and one small function, compiled from the
layout when the shape is first needed, that packs the event's values between the
layout's constants (vtables, offsets, union types, string lengths) written in as
literals: an event is one call of that function, found by the lengths of its strings.
Writing gives up (None: the codec's schema-driven writer writes the message, or refuses it naming
the field) on another event, an unusual variant (a forwarded profile, a custom
placement, ...) or a value ``struct`` refuses.

**Reading.** :func:`decode` reads back what :func:`encode` writes, with the bounds
checks that keep a read inside the buffer. A block laid out as written here (its tables
come before its strings, so they do not move with the strings' lengths) is read by a
function compiled from the layout (:class:`_Head`): one ``unpack`` of its tables that
takes every run of constant bytes (vtables, offsets between tables, union types and
their padding) as one ``bytes`` to compare, the strings read where their offsets
point, the event built in place; it answers only when every constant is the one
written. Anything else — another writer's layout (flatc's, Batsim 5's C++), another
event, an offset outside the buffer, a bad string, a non-finite timestamp — makes it
give up and return None, and the schema's careful reader (``batprotocol.py``) decodes
the message or refuses it naming the field. The fast path never decides that a buffer
is bad.
"""

from __future__ import annotations

import math
import operator
import struct
from itertools import accumulate
from typing import Any, Callable, Optional, Union

from ..events import FINAL_JOB_STATES, Event
from .batprotocol_schema import load_schema, scalar_code

__all__ = ["encode", "decode"]

_STATE_INDEX = {name: i for i, name in enumerate(FINAL_JOB_STATES)}
#: where a block's EventAndTimestamp table starts (after its vtable of 3 slots)
_ITEM_TABLE = 16
_SIZES = {"d": 8, "Q": 8, "q": 8, "I": 4, "i": 4, "f": 4, "H": 2, "h": 2, "b": 1, "B": 1, "?": 1, "o": 4}
#: shapes kept per block kind (one per combination of string lengths met); past this
#: many the cache starts again, so odd lengths cannot make it grow without bound
_MAX_SHAPES = 4096


class _GiveUp(Exception):
    """Not the usual form: the codec's schema-driven writer or careful reader decides."""


# -- the layout, as the schema states it ----------------------------------------------
_SCHEMA = load_schema()


def _field(table: str, name: str) -> tuple[int, str]:
    """(slot, struct code; ``o``: an offset) of field ``name`` of ``table``."""
    for f in _SCHEMA.tables[table]:
        if f.name == name:
            return f.slot, scalar_code(_SCHEMA, f)
    raise KeyError(f"{table}.{name}")


def _slots(table: str) -> int:
    fields = _SCHEMA.tables[table]
    return fields[-1].slot + 1 if fields else 0


def _member(union: str, name: str) -> int:
    """The type code of ``union``'s member ``name``."""
    return _SCHEMA.unions[union].index(name) + 1


class _Str:
    """A string of a block, given as the value named ``name`` (UTF-8 bytes)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Table:
    """A table of a block: the schema's table ``name`` and its fields as (field name,
    value) with a value that is a constant, the name of a variable, or a child
    (:class:`_Table` or :class:`_Str`) the field points to."""

    def __init__(self, name: str, *fields: tuple[str, Any]) -> None:
        self.slots = _slots(name)
        self.fields = [(*_field(name, field), value) for field, value in fields]


class _Const:
    def __init__(self, value: Any) -> None:
        self.value = value


_Node = Union[_Table, _Str]


class _Part:
    """One field of a block's bytes: at ``at``, of struct ``code``, that is ``kind``:
    ``pad`` (zeros), ``const`` (``value``), ``var`` (the value named ``value``),
    ``offset`` (to the string named ``value``: ``target`` once placed), ``length``
    (of the string named ``value``: ``target``) or ``bytes`` (the string named ``value``)."""

    __slots__ = ("at", "code", "kind", "value", "target")

    def __init__(self, at: int, code: str, kind: str, value: Any) -> None:
        self.at, self.code, self.kind, self.value = at, code, kind, value
        self.target = 0

    @property
    def constant(self) -> Any:
        return self.value if self.kind == "const" else self.target


class _Shape:
    """One block layout for given string lengths (``lengths``: by string name).

    The tables come first, the strings last: the tables' part (the block's *head*) is
    then the same whatever the strings' lengths, and the first string starts right
    after it (:class:`_Head` reads a head and that string's length in one unpack)."""

    def __init__(self, root: _Table, lengths: dict[str, int]) -> None:
        parts: list[_Part] = []
        at = 0  # bytes laid out so far
        placed: dict[int, int] = {}  # id(node) -> position of the table / string
        links: list[tuple[_Part, _Node]] = []  # offset fields and what they point to
        self.root_fields: dict[int, int] = {}  # slot -> field offset in the root table

        def pad(n: int) -> None:
            nonlocal at
            extra = -at % n
            if extra:
                parts.append(_Part(at, f"{extra}x", "pad", None))
                at += extra

        def put(code: str, kind: str, value: Any, size: int) -> _Part:
            nonlocal at
            part = _Part(at, code, kind, value)
            parts.append(part)
            at += size
            return part

        tables: list[_Table] = [root]
        strings: list[_Str] = []
        while tables:
            node = tables.pop(0)
            # the vtable, then the table: soffset, fields biggest first (no padding between)
            order = sorted(node.fields, key=lambda f: -_SIZES[f[1]])
            rel, offsets = 4, {}
            for slot, code, _ in order:
                rel += -rel % _SIZES[code]
                offsets[slot] = rel
                rel += _SIZES[code]
            if node is root:
                self.root_fields.update(offsets)
            pad(2)
            vtable = at
            for value in (4 + 2 * node.slots, rel, *[offsets.get(s, 0) for s in range(node.slots)]):
                put("H", "const", value, 2)
            pad(8)
            placed[id(node)] = at
            put("i", "const", at - vtable, 4)
            for slot, code, value in order:
                pad(_SIZES[code])
                if code == "o":
                    if isinstance(value, _Str):
                        links.append((put("I", "offset", value.name, 4), value))
                        strings.append(value)
                    else:
                        links.append((put("I", "const", 0, 4), value))
                        tables.append(value)
                elif isinstance(value, _Const):
                    put(code, "const", value.value, _SIZES[code])
                else:
                    put(code, "var", value, _SIZES[code])
        pad(4)
        #: where the head ends and the first string starts
        self.head_size = at
        for string in strings:
            pad(4)
            placed[id(string)] = at
            n = lengths[string.name]
            put("I", "length", string.name, 4).target = n
            put(f"{n}s", "bytes", string.name, n)
            put("x", "pad", None, 1)  # the terminating NUL
        pad(8)
        for part, target in links:
            if part.kind == "offset":
                part.target = placed[id(target)] - part.at
            else:
                part.value = placed[id(target)] - part.at
        self.parts = parts
        self.strings = [s.name for s in strings]
        self.size = at
        assert placed[id(root)] == _ITEM_TABLE  # the root's vtable, then the root

    def packer(self, names: tuple[str, ...]) -> Callable[..., bytes]:
        """The function packing a block of this shape from the values ``names``, in
        that order (strings as UTF-8 bytes): one ``struct`` call, each run of constant
        bytes (vtables, offsets, union types, string lengths, padding) written in as one
        ``bytes`` literal."""
        fmt, args, values = ["<"], [], []
        for item in _merged(self.parts, lambda p: p.kind not in ("var", "bytes")):
            if isinstance(item, bytes):
                fmt.append(f"{len(item)}s")
                args.append(repr(item))
            else:
                fmt.append(item.code)
                args.append(item.value)
                values.append(item.value)
        assert sorted(names) == sorted(values)
        pack: Callable[..., bytes] = _compile(f"lambda {', '.join(names)}: _pack({', '.join(args)})",
                                              {"_pack": struct.Struct("".join(fmt)).pack})
        return pack


def _merged(parts: list[_Part], constant: Callable[[_Part], bool]) -> list[Union[bytes, _Part]]:
    """``parts`` with each run of ``constant`` ones replaced by the bytes they pack to."""
    out: list[Union[bytes, _Part]] = []
    run: list[_Part] = []
    for part in [*parts, None]:
        if part is not None and constant(part):
            run.append(part)
            continue
        if run:
            out.append(struct.pack("<" + "".join(p.code for p in run), *[p.constant for p in run if p.kind != "pad"]))
            run = []
        if part is not None:
            out.append(part)
    return out


def _compile(source: str, namespace: dict[str, Any]) -> Any:
    """The function ``source`` (made here from a layout: names and numbers only)."""
    exec(compile(f"_f = {source}" if source.startswith("lambda") else source, "<batprotocol_fast>", "exec"),
         namespace)
    return namespace["_f"]


class _Head:
    """The reader of the blocks of one kind as :class:`_Shape` lays them out:
    :attr:`read` ``(buf, block, size)`` answers the event of the block at ``block``
    (``size``: the buffer's length), or None when its constants are not the ones
    written here (another writer's layout: the careful reader's); it raises
    :class:`_GiveUp` when the block is laid out as here but unusual (a string outside the
    buffer, a non-finite timestamp, a value out of range).

    One ``unpack`` reads the head and the first string's length: each run of constant
    bytes (padding included, written as zeros) is one ``bytes`` compared whole, each
    value a typed field; the first string's offset is a constant (it starts right
    after the head), the others are followed."""

    def __init__(self, shape: _Shape, kind: str, data: str, guard: str = "") -> None:
        self.source = self._source(shape, kind, data, guard)
        self.struct = struct.Struct(self._format)
        self.read: Callable[[bytes, int, int], Optional[Event]] = _compile(self.source, {
            "_unpack": self.struct.unpack_from, "_U32": _U32, "_isfinite": math.isfinite, "_GiveUp": _GiveUp,
            "FINAL_JOB_STATES": FINAL_JOB_STATES, "_SECOND": _SECOND, **self._constants})

    def _source(self, shape: _Shape, kind: str, data: str, guard: str) -> str:
        first = shape.strings[0] if shape.strings else None
        fmt, targets = ["<"], []
        self._constants: dict[str, bytes] = {}
        followed = []  # (string name, position of its offset field)
        head = [p for p in shape.parts if p.at < shape.head_size]
        for item in _merged(head, lambda p: p.kind in ("const", "pad") or (p.kind == "offset" and p.value == first)):
            if isinstance(item, bytes):
                name = f"_K{len(self._constants)}"
                self._constants[name] = item
                fmt.append(f"{len(item)}s")
                targets.append(name.lower())
                continue
            fmt.append(item.code)
            if item.kind == "var":
                targets.append(item.value)
            else:  # the offset of a string after the first
                targets.append(f"_o_{item.value}")
                followed.append((item.value, item.at))
        if first is not None:
            fmt.append("I")
            targets.append("_n0")
        self._format = "".join(fmt)
        lines = [f"def _f(buf, block, size):",
                 f"    {', '.join(targets)}{',' if len(targets) == 1 else ''} = _unpack(buf, block)",
                 "    if " + " or ".join(f"{k.lower()} != {k}" for k in self._constants) + ":",
                 "        return None",
                 "    if not _isfinite(timestamp):",
                 "        raise _GiveUp"]
        if first is not None:
            lines += [f"    _at = block + {shape.head_size + 4}",
                      "    _end = _at + _n0",
                      "    if _end > size:",
                      "        raise _GiveUp",
                      f"    {first} = buf[_at:_end].decode()"]
        for name, at in followed:
            lines += [f"    _at = block + {at} + _o_{name}",
                      "    _end = _at + 4 + _U32(buf, _at)[0]",
                      "    if _end > size:",
                      "        raise _GiveUp",
                      f"    {name} = buf[_at + 4:_end].decode()"]
        if guard:
            lines += [f"    if {guard}:", "        raise _GiveUp"]
        lines.append(f"    return {{'timestamp': timestamp, 'type': {kind!r}, 'data': {data}}}")
        return "\n".join(lines) + "\n"


class _Block:
    """An event's block: an ``EventAndTimestamp`` table (variable ``timestamp``) pointing
    to ``event`` of union member ``kind``. ``names``: the values :meth:`packer` takes,
    in order; the reader answers the shared event ``{"type": name, "data": data}``
    (``data``: a Python expression of the values) unless ``guard`` (an expression) holds."""

    def __init__(self, kind: int, event: _Table, names: tuple[str, ...], name: str, data: str,
                 guard: str = "") -> None:
        self.root = _Table("EventAndTimestamp", ("timestamp", "timestamp"),
                           ("event_type", _Const(kind)), ("event", event))
        self.names = ("timestamp", *names)
        some = _Shape(self.root, _Lengths())
        #: the strings, in the order of the lengths that key :attr:`shapes`
        self.strings = [n for n in self.names if n in some.strings]
        #: packers by string lengths (one string: its length; more: their tuple)
        self.shapes: dict[Any, Callable[..., bytes]] = {}
        #: the reader of the blocks of this kind, whatever the strings' lengths
        self.head = _Head(some, name, data, guard)
        #: where the union type is, from the EventAndTimestamp table
        self.kind_at = some.root_fields[_field("EventAndTimestamp", "event_type")[0]]

    def new(self, key: Any) -> Callable[..., bytes]:
        """The packer for strings of lengths ``key`` (made once)."""
        if len(self.shapes) >= _MAX_SHAPES:
            self.shapes.clear()
        lengths = dict(zip(self.strings, key if isinstance(key, tuple) else (key,)))
        pack = self.shapes[key] = _Shape(self.root, lengths).packer(self.names)
        return pack

    def pack(self, *values: Any) -> bytes:
        """The block of the event with ``values`` (strings as UTF-8 bytes): what the
        writers below do inline."""
        lengths = tuple(len(values[self.names.index(s)]) for s in self.strings)
        key = lengths if len(lengths) != 1 else lengths[0]
        return (self.shapes.get(key) or self.new(key))(*values)


class _Lengths(dict[str, int]):
    """Any string length: 0."""

    def __missing__(self, key: str) -> int:
        return 0


# the events, by the schema's names
_PREDEFINED = _member("ExecutorPlacement", "PredefinedExecutorPlacementStrategyWrapper")
_ONE_SHOT, _SECOND = _member("TemporalTrigger", "OneShot"), _SCHEMA.enums["TimeUnit"][1]["Second"]
_U32 = struct.Struct("<I").unpack_from

_SUBMITTED, _SUBMITTED_WALLTIME = [_Block(_member("Event", "JobSubmittedEvent"), _Table(
    "JobSubmittedEvent", ("job_id", _Str("job_id")),
    ("submission_time", "subtime"),
    ("job", _Table("Job", ("resource_request", "res"),
                                        *([("walltime", "walltime")] if walltime else []),
                                        ("profile_id", _Str("profile"))))),
    ("job_id", "subtime", "res", *(["walltime"] if walltime else []), "profile"), "JOB_SUBMITTED",
    '{"job_id": job_id, "job": {"id": job_id, "subtime": subtime, "res": res, "profile": profile, '
    f'"walltime": {"walltime" if walltime else -1}}}}}')
    for walltime in (False, True)]  # -1 (none) is the absent optional scalar
_COMPLETED = _Block(_member("Event", "JobCompletedEvent"), _Table(
    "JobCompletedEvent", ("job_id", _Str("job_id")),
    ("state", "state"), ("return_code", "return_code")),
    ("job_id", "state", "return_code"), "JOB_COMPLETED",
    '{"job_id": job_id, "job_state": FINAL_JOB_STATES[state], "return_code": return_code}', "not 0 <= state < 5")
_EXECUTE = _Block(_member("Event", "ExecuteJobEvent"), _Table(
    "ExecuteJobEvent", ("job_id", _Str("job_id")),
    ("allocation", _Table(
        "AllocationPlacement", ("host_allocation", _Str("alloc")),
        ("executor_placement_type", _Const(_PREDEFINED)),
        # the strategy left at its default, SpreadOverHostsFirst
        ("executor_placement", _Table("PredefinedExecutorPlacementStrategyWrapper"))))),
    ("job_id", "alloc"), "EXECUTE_JOB", '{"job_id": job_id, "alloc": alloc}')
_CALL = _Block(_member("Event", "CallMeLaterEvent"), _Table(
    "CallMeLaterEvent", ("call_me_later_id", _Str("call_id")),
    ("when_type", _Const(_ONE_SHOT)),
    ("when", _Table("OneShot", ("time", "time"),
                                        ("time_unit", "unit")))),
    ("call_id", "time", "unit"), "CALL_ME_LATER", '{"id": call_id, "timestamp": float(time)}', "unit != _SECOND")
_CALLED = _Block(_member("Event", "RequestedCallEvent"), _Table(
    "RequestedCallEvent", ("call_me_later_id", _Str("call_id")),
    ("last_periodic_call", "last")), ("call_id", "last"), "REQUESTED_CALL",
    '{"id": call_id, "last_periodic_call": last}')
_ENDS = _Block(_member("Event", "SimulationEndsEvent"), _Table("SimulationEndsEvent"), (), "SIMULATION_ENDS", "{}")
_BLOCKS = (_SUBMITTED, _SUBMITTED_WALLTIME, _COMPLETED, _EXECUTE, _CALL, _CALLED, _ENDS)


# -- writing ---------------------------------------------------------------------------
_JOB_KEYS = frozenset(("id", "subtime", "res", "profile", "walltime"))
_SUBMITTED_SHAPES, _SUBMITTED_WALLTIME_SHAPES = _SUBMITTED.shapes, _SUBMITTED_WALLTIME.shapes
_COMPLETED_SHAPES, _EXECUTE_SHAPES = _COMPLETED.shapes, _EXECUTE.shapes
_CALL_SHAPES, _CALLED_SHAPES = _CALL.shapes, _CALLED.shapes
_ENDS_PACK = _ENDS.new(())
assert [b.strings for b in _BLOCKS] == [["job_id", "profile"], ["job_id", "profile"], ["job_id"],
                                        ["job_id", "alloc"], ["call_id"], ["call_id"], []]


def _write_submitted(d: dict[str, Any], t: float) -> bytes:
    job = d["job"]
    if "profile" in d or not job.keys() <= _JOB_KEYS:
        raise _GiveUp  # a forwarded profile or extra_data: the schema-driven writer writes those
    job_id = d["job_id"].encode()
    profile = job["profile"].encode()
    key = (len(job_id), len(profile))
    walltime = job.get("walltime", -1)
    if walltime == -1:
        pack = _SUBMITTED_SHAPES.get(key) or _SUBMITTED.new(key)
        return pack(t, job_id, float(job.get("subtime", 0.0)), int(job["res"]), profile)
    pack = _SUBMITTED_WALLTIME_SHAPES.get(key) or _SUBMITTED_WALLTIME.new(key)
    return pack(t, job_id, float(job.get("subtime", 0.0)), int(job["res"]), float(walltime), profile)


def _write_completed(d: dict[str, Any], t: float) -> bytes:
    job_id = d["job_id"].encode()
    pack = _COMPLETED_SHAPES.get(len(job_id)) or _COMPLETED.new(len(job_id))
    return pack(t, job_id, _STATE_INDEX[d["job_state"]], int(d["return_code"]))


def _write_execute(d: dict[str, Any], t: float) -> bytes:
    if d.get("mapping"):
        raise _GiveUp
    job_id = d["job_id"].encode()
    alloc = d["alloc"].encode()
    key = (len(job_id), len(alloc))
    return (_EXECUTE_SHAPES.get(key) or _EXECUTE.new(key))(t, job_id, alloc)


def _write_call(d: dict[str, Any], t: float) -> bytes:
    if "period" in d:
        raise _GiveUp
    when = float(d["timestamp"])
    if when != int(when):
        raise _GiveUp  # milliseconds, rounded up: the schema-driven writer's rule
    call_id = d.get("id", "").encode()
    return (_CALL_SHAPES.get(len(call_id)) or _CALL.new(len(call_id)))(t, call_id, int(when), _SECOND)


def _write_called(d: dict[str, Any], t: float) -> bytes:
    call_id = d.get("id", "").encode()
    return (_CALLED_SHAPES.get(len(call_id)) or _CALLED.new(len(call_id)))(
        t, call_id, bool(d.get("last_periodic_call", False)))


def _write_ends(d: dict[str, Any], t: float) -> bytes:
    return _ENDS_PACK(t)


_WRITERS: dict[str, Callable[[dict[str, Any], float], bytes]] = {
    "JOB_SUBMITTED": _write_submitted, "JOB_COMPLETED": _write_completed, "EXECUTE_JOB": _write_execute,
    "CALL_ME_LATER": _write_call, "REQUESTED_CALL": _write_called, "SIMULATION_ENDS": _write_ends}

# the message: root offset, the Message table (now, events) and the events vector
_NOW, _EVENTS = _field("Message", "now"), _field("Message", "events")
assert (_NOW, _EVENTS) == ((0, "d"), (1, "o"))  # as the head below lays them out
#: root u32 | vtable: 4 u16 | pad | table: soffset, events offset | now | the events vector
#: (count, offsets, padding): all that comes before ``now`` is constant
_MESSAGE_START = struct.pack("<I4H4xiI", 16, 8, 16, 8, 4, 12, 12)
_MESSAGE_FORMAT = "<24sd{}I{}x"
#: where the events vector's first offset is in the head
_FIRST_ENTRY = 36
#: by event count: the head's pack, the first block's offset from the first entry, the
#: entries' positions relative to the first
_HEADS: dict[int, tuple[Callable[..., bytes], int, range]] = {}
_sub = operator.sub


def _message_head(count: int) -> tuple[Callable[..., bytes], int, range]:
    pad = -(_FIRST_ENTRY + 4 * count) % 8
    head = _HEADS[count] = (struct.Struct(_MESSAGE_FORMAT.format(count + 1, pad)).pack,
                            4 * count + pad + _ITEM_TABLE, range(0, 4 * count, 4))
    return head


def encode(now: float, events: list[Event]) -> Optional[bytes]:
    """The message as a FlatBuffer, or None when an event needs the schema-driven writer."""
    try:
        blocks = [_WRITERS[event["type"]](event["data"], event["timestamp"]) for event in events]
        count = len(blocks)
        pack, first, steps = _HEADS.get(count) or _message_head(count)
        # the vector's offsets: from entry i to block i's EventAndTimestamp table
        blocks.insert(0, pack(_MESSAGE_START, now, count,
                              *map(_sub, accumulate(map(len, blocks), initial=first), steps)))
    except (_GiveUp, KeyError, TypeError, ValueError, AttributeError, OverflowError, struct.error):
        return None  # the schema-driven writer writes it, or refuses it naming the field
    return b"".join(blocks)


# -- reading ---------------------------------------------------------------------------
_VECTORS: dict[int, Callable[[bytes, int], tuple[int, ...]]] = {}
#: the message's head up to the events' count, as encode writes it
_MESSAGE = struct.Struct(_MESSAGE_FORMAT.format(1, 0)).unpack_from
_isfinite = math.isfinite


#: the readers of the blocks :func:`encode` writes, by union type (the likelier first)
_WHOLE: dict[int, tuple[Callable[[bytes, int, int], Optional[Event]], ...]] = {
    _member("Event", "JobSubmittedEvent"): (_SUBMITTED.head.read, _SUBMITTED_WALLTIME.head.read),
    _member("Event", "JobCompletedEvent"): (_COMPLETED.head.read,), _member("Event", "ExecuteJobEvent"): (_EXECUTE.head.read,),
    _member("Event", "CallMeLaterEvent"): (_CALL.head.read,), _member("Event", "RequestedCallEvent"): (_CALLED.head.read,),
    _member("Event", "SimulationEndsEvent"): (_ENDS.head.read,)}
_KIND_AT = _ENDS.kind_at
assert all(block.kind_at == _KIND_AT for block in _BLOCKS)


def decode(buf: bytes) -> Optional[tuple[float, list[Event]]]:
    """``now`` and the events of ``buf`` when it is a message as :func:`encode` writes
    it, else None (the careful reader then decides)."""
    try:
        start, now, count = _MESSAGE(buf, 0)
        if start != _MESSAGE_START or not _isfinite(now):
            return None
        size = len(buf)
        at = _FIRST_ENTRY
        if at + 4 * count > size:
            return None
        entries = _VECTORS.get(count)
        if entries is None:
            entries = _VECTORS[count] = struct.Struct(f"<{count}I").unpack_from
        events: list[Event] = []
        for offset in entries(buf, at):
            item = at + offset
            at += 4
            if item < _ITEM_TABLE:
                return None
            # the whole block at once, if it is laid out as encode lays it out
            for read in _WHOLE.get(buf[item + _KIND_AT], ()):
                event = read(buf, item - _ITEM_TABLE, size)
                if event is not None:
                    break
            else:
                return None
            events.append(event)
        return now, events
    except (_GiveUp, struct.error, IndexError, UnicodeDecodeError):
        return None
