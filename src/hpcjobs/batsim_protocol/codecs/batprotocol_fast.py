"""The hot path of batprotocol: the per-job events written with one ``struct`` call each
and read optimistically, whole messages at a time.

Why: PyPI's ``flatbuffers`` runtime builds and reads a buffer one checked field at a
time, several times slower than the C ``json`` module the JSON protocol uses, and a
simulation exchanges these few events (JobSubmitted, JobCompleted, ExecuteJob,
CallMeLater, RequestedCall, SimulationEnds) by the million.

**Writing.** An event is one position-independent block: the message's
``EventAndTimestamp`` table, the event's tables, then all its strings (FlatBuffers
offsets are relative, children after their parent). For given string lengths the
block's layout is fixed, so it is computed once (a :class:`_Shape`: one ``struct``
format, the constants of its vtables and offsets) and each event is one ``pack`` of its
values.
Slots, scalar types and table sizes are not written here: they are read from the
flatc-generated builder functions (``JobCompletedEventAddReturnCode`` says slot 2, an
int32), so the generated code stays the one source of the schema's layout.

**Reading.** :func:`decode` reads a message whose events are all of these kinds and in
the usual form (no forwarded profile, no custom placement, ...), with the bounds checks
that keep a read inside the buffer. A block laid out as written here (its tables come
before its strings, so they do not move with the strings' lengths) is read with one
``unpack`` of its tables, answered only when every vtable, offset between tables and
union type is the one written (:class:`_Head`); another writer's layout (flatc's, Batsim
5's C++) is read table by table. Anything else — another event, an unusual variant,
a missing field, an offset outside the buffer, a bad string — makes it give up and
return None, and the codec's careful reader (``batprotocol.py``) decodes the message or
refuses it naming the field. The fast path never decides that a buffer is bad.
"""

from __future__ import annotations

import math
import operator
import re
import struct
from typing import Any, Callable, Optional, Union

from ..events import Event
from . import batprotocol_fb

__all__ = ["encode", "decode"]

fb: Any = batprotocol_fb  # generated, untyped: typed here by use

_STATES = ("COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED",
           "COMPLETED_KILLED", "REJECTED")
_STATE_INDEX = {name: i for i, name in enumerate(_STATES)}
#: where a block's EventAndTimestamp table starts (after its vtable of 3 slots)
_ITEM_TABLE = 16
_SIZES = {"d": 8, "Q": 8, "q": 8, "I": 4, "i": 4, "f": 4, "H": 2, "h": 2, "b": 1, "B": 1, "?": 1, "o": 4}


# -- the layout, as the generated code states it -------------------------------------
class _Recorder:
    """Stands for a ``flatbuffers.Builder`` to learn, from a generated builder function,
    a table's slot count or a field's slot and scalar type (``o``: an offset)."""

    _CODES = {"Bool": "?", "Int8": "b", "Uint8": "B", "Int16": "h", "Uint16": "H", "Int32": "i",
              "Uint32": "I", "Int64": "q", "Uint64": "Q", "Float32": "f", "Float64": "d",
              "UOffsetTRelative": "o"}

    def __init__(self) -> None:
        self.seen: tuple[int, str] = (0, "")

    def StartObject(self, slots: int) -> None:  # noqa: N802 (the runtime's name)
        self.seen = (slots, "")

    def __getattr__(self, name: str) -> Callable[..., None]:
        kind = re.fullmatch(r"Prepend(\w+)Slot", name)
        if kind is None or kind.group(1) not in self._CODES:
            raise AttributeError(name)

        def record(slot: int, value: Any, default: Any) -> None:
            self.seen = (slot, self._CODES[kind.group(1)])
        return record


def _field(add: Callable[[Any, Any], None]) -> tuple[int, str]:
    """(slot, struct code) of the field a generated ``<Table>Add<Field>`` function sets."""
    recorder = _Recorder()
    add(recorder, 0)
    return recorder.seen


def _slots(start: Callable[[Any], None]) -> int:
    recorder = _Recorder()
    start(recorder)
    return recorder.seen[0]


# -- writing ---------------------------------------------------------------------------
class _Str:
    """A string of a block, given as the value named ``name`` (UTF-8 bytes)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Table:
    """A table of a block: its generated ``Start`` function and its fields as
    (generated ``Add`` function, value) with a value that is a constant, the name of
    a variable, or a child (:class:`_Table` or :class:`_Str`) the field points to."""

    def __init__(self, start: Callable[[Any], None], *fields: tuple[Callable[[Any, Any], None], Any]) -> None:
        self.slots = _slots(start)
        self.fields = [(*_field(add), value) for add, value in fields]


class _Const:
    def __init__(self, value: Any) -> None:
        self.value = value


_Node = Union[_Table, _Str]


class _Shape:
    """One block layout for given string lengths: a ``struct`` whose arguments are the
    layout's constants and the event's values, put in order by one ``itemgetter``.

    The tables come first, the strings last: the tables' part (the block's *head*) is
    then the same whatever the strings' lengths, which lets the reader check a whole head
    with one ``unpack`` (:class:`_Head`)."""

    __slots__ = ("struct", "order", "consts", "size", "head", "root_fields")

    def __init__(self, root: _Table, names: tuple[str, ...], lengths: dict[str, int]) -> None:
        fmt = ["<"]
        args: list[Any] = []
        at = 0  # bytes laid out so far
        where: dict[str, int] = {}
        patches: list[tuple[int, int, _Node]] = []  # (argument index, field position, target)
        placed: dict[int, int] = {}  # id(node) -> position of the table / string
        root_fields: dict[int, int] = {}  # slot -> field offset in the root table

        def pad(n: int) -> None:
            nonlocal at
            extra = -at % n
            if extra:
                fmt.append(f"{extra}x")
                at += extra

        def put(code: str, value: Any) -> None:
            """One field: a constant, or a variable by name (str)."""
            nonlocal at
            fmt.append(code)
            if isinstance(value, str):
                where[value] = len(args)
            args.append(value)
            at += struct.calcsize("<" + code)

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
                root_fields.update(offsets)
            pad(2)
            vtable = at
            for value in (4 + 2 * node.slots, rel, *[offsets.get(s, 0) for s in range(node.slots)]):
                put("H", value)
            pad(8)
            placed[id(node)] = at
            put("i", at - vtable)
            for slot, code, value in order:
                pad(_SIZES[code])
                if code == "o":
                    patches.append((len(args), at, value))
                    put("I", 0)
                    if isinstance(value, _Str):
                        strings.append(value)
                    else:
                        tables.append(value)
                else:
                    put(code, value.value if isinstance(value, _Const) else value)
        pad(4)
        head_args = len(args)
        head_fmt = "".join(fmt)
        for string in strings:
            pad(4)
            placed[id(string)] = at
            n = lengths[string.name]
            put("I", n)
            put(f"{n}s", string.name)
            fmt.append("x")  # the terminating NUL
            at += 1
        pad(8)
        string_fields = {index for index, _, target in patches if isinstance(target, _Str)}
        for index, position, target in patches:
            args[index] = placed[id(target)] - position
        self.struct = struct.Struct("".join(fmt))
        # the constants, then the values: one itemgetter puts them in the struct's order
        constant = [i for i, a in enumerate(args) if not isinstance(a, str)]
        self.consts = tuple(args[i] for i in constant)
        slot_of = {i: k for k, i in enumerate(constant)}
        value_at = {where[name]: len(constant) + k for k, name in enumerate(names)}
        self.order = operator.itemgetter(*[slot_of[i] if i in slot_of else value_at[i] for i in range(len(args))])
        self.size = at
        # what the reader checks and reads in the head: the constants (string offsets
        # aside, they depend on the lengths), the values, the strings' offset fields
        fixed = [i for i in constant if i < head_args and i not in string_fields]
        in_head = [n for n in names if where[n] < head_args]
        read = in_head + [t.name for _, _, t in patches if isinstance(t, _Str)]
        self.head = _Head(head_fmt, fixed, [args[i] for i in fixed], [where[n] for n in in_head],
                          [(index, position) for index, position, target in patches if isinstance(target, _Str)],
                          [read.index(n) for n in names])
        self.root_fields = root_fields
        assert placed[id(root)] == _ITEM_TABLE  # the root's vtable, then the root

    def pack(self, values: tuple[Any, ...]) -> bytes:
        return self.struct.pack(*self.order(self.consts + values))


class _Head:
    """The tables of a block as :class:`_Shape` lays them out: :meth:`read` unpacks them
    in one call and answers only when every constant (vtables, offsets between tables,
    union types) is as written here, so the fields are where this layout puts them."""

    __slots__ = ("unpack", "fixed", "consts", "values", "strings", "order")

    def __init__(self, fmt: str, fixed: list[int], consts: list[Any], values: list[int],
                 strings: list[tuple[int, int]], order: list[int]) -> None:
        self.unpack = struct.Struct(fmt).unpack_from
        self.fixed = _getter(fixed)
        self.consts = tuple(consts)
        self.values = _getter(values)
        self.strings = strings
        self.order = _getter(order)

    def read(self, buf: bytes, block: int) -> Optional[tuple[Any, ...]]:
        """The values then the strings of the block at ``block``, or None."""
        v = self.unpack(buf, block)
        if self.fixed(v) != self.consts:
            return None
        out: tuple[Any, ...] = self.values(v)
        for index, position in self.strings:
            at = block + position + v[index]
            end = at + 4 + _U32(buf, at)[0]
            if end > len(buf):
                raise _GiveUp
            out += (buf[at + 4:end].decode(),)
        return self.order(out)


def _getter(indexes: list[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """``itemgetter`` that always answers a tuple (also of one or no item)."""
    if len(indexes) == 1:
        index = indexes[0]
        return lambda v: (v[index],)
    return operator.itemgetter(*indexes) if indexes else (lambda v: ())


class _Block:
    """An event's block: an ``EventAndTimestamp`` table (variable ``timestamp``) pointing
    to ``event`` of union member ``kind``; ``names`` orders the values of :meth:`pack`."""

    def __init__(self, kind: int, event: _Table, names: tuple[str, ...]) -> None:
        self.root = _Table(fb.EventAndTimestampStart, (fb.EventAndTimestampAddTimestamp, "timestamp"),
                           (fb.EventAndTimestampAddEventType, _Const(kind)), (fb.EventAndTimestampAddEvent, event))
        self.names = ("timestamp", *names)
        self.strings = [n for n in self.names if self._is_string(self.root, n)]
        self.string_at = [self.names.index(n) for n in self.strings]
        strings = _getter(self.string_at)
        self._lengths: Callable[[tuple[Any, ...]], tuple[int, ...]] = lambda v: tuple(map(len, strings(v)))
        self.shapes: dict[tuple[int, ...], _Shape] = {}
        some = _Shape(self.root, self.names, {name: 0 for name in self.strings})
        #: the reader of the block's tables, whatever the strings' lengths
        self.head = some.head
        #: where the union type is, from the EventAndTimestamp table
        self.kind_at = some.root_fields[_field(fb.EventAndTimestampAddEventType)[0]]

    @classmethod
    def _is_string(cls, node: _Node, name: str) -> bool:
        if isinstance(node, _Str):
            return node.name == name
        return any(isinstance(v, (_Str, _Table)) and cls._is_string(v, name) for _, _, v in node.fields)

    def pack(self, values: tuple[Any, ...]) -> bytes:
        """The block of the event with ``values`` (strings as UTF-8 bytes)."""
        lengths = self._lengths(values)
        shape = self.shapes.get(lengths)
        if shape is None:
            shape = self.shapes[lengths] = _Shape(self.root, self.names, dict(zip(self.strings, lengths)))
        return shape.struct.pack(*shape.order(shape.consts + values))


# the events, by the generated code's names
_SUBMITTED = {walltime: _Block(fb.Event.JobSubmittedEvent, _Table(
    fb.JobSubmittedEventStart, (fb.JobSubmittedEventAddJobId, _Str("job_id")),
    (fb.JobSubmittedEventAddSubmissionTime, "subtime"),
    (fb.JobSubmittedEventAddJob, _Table(fb.JobStart, (fb.JobAddResourceRequest, "res"),
                                        *([(fb.JobAddWalltime, "walltime")] if walltime else []),
                                        (fb.JobAddProfileId, _Str("profile"))))),
    ("job_id", "subtime", "res", *(["walltime"] if walltime else []), "profile"))
    for walltime in (False, True)}  # -1 (none) is the absent optional scalar
_COMPLETED = _Block(fb.Event.JobCompletedEvent, _Table(
    fb.JobCompletedEventStart, (fb.JobCompletedEventAddJobId, _Str("job_id")),
    (fb.JobCompletedEventAddState, "state"), (fb.JobCompletedEventAddReturnCode, "return_code")),
    ("job_id", "state", "return_code"))
_EXECUTE = _Block(fb.Event.ExecuteJobEvent, _Table(
    fb.ExecuteJobEventStart, (fb.ExecuteJobEventAddJobId, _Str("job_id")),
    (fb.ExecuteJobEventAddAllocation, _Table(
        fb.AllocationPlacementStart, (fb.AllocationPlacementAddHostAllocation, _Str("alloc")),
        (fb.AllocationPlacementAddExecutorPlacementType,
         _Const(fb.ExecutorPlacement.PredefinedExecutorPlacementStrategyWrapper)),
        # the strategy left at its default, SpreadOverHostsFirst
        (fb.AllocationPlacementAddExecutorPlacement, _Table(fb.PredefinedExecutorPlacementStrategyWrapperStart))))),
    ("job_id", "alloc"))
_CALL = _Block(fb.Event.CallMeLaterEvent, _Table(
    fb.CallMeLaterEventStart, (fb.CallMeLaterEventAddCallMeLaterId, _Str("id")),
    (fb.CallMeLaterEventAddWhenType, _Const(fb.TemporalTrigger.OneShot)),
    (fb.CallMeLaterEventAddWhen, _Table(fb.OneShotStart, (fb.OneShotAddTime, "time"),
                                        (fb.OneShotAddTimeUnit, "unit")))),
    ("id", "time", "unit"))
_CALLED = _Block(fb.Event.RequestedCallEvent, _Table(
    fb.RequestedCallEventStart, (fb.RequestedCallEventAddCallMeLaterId, _Str("id")),
    (fb.RequestedCallEventAddLastPeriodicCall, "last")), ("id", "last"))
_ENDS = _Block(fb.Event.SimulationEndsEvent, _Table(fb.SimulationEndsEventStart), ())

_JOB_KEYS = frozenset(("id", "subtime", "res", "profile", "walltime"))


def _write_submitted(d: dict[str, Any], t: float) -> Optional[bytes]:
    job = d["job"]
    if "profile" in d or not job.keys() <= _JOB_KEYS:
        return None  # a forwarded profile or extra_data: the generated code writes those
    walltime = job.get("walltime", -1)
    if walltime == -1:
        return _SUBMITTED[False].pack((t, d["job_id"].encode(), float(job.get("subtime", 0.0)), int(job["res"]),
                                       job["profile"].encode()))
    return _SUBMITTED[True].pack((t, d["job_id"].encode(), float(job.get("subtime", 0.0)), int(job["res"]),
                                  float(walltime), job["profile"].encode()))


def _write_completed(d: dict[str, Any], t: float) -> Optional[bytes]:
    return _COMPLETED.pack((t, d["job_id"].encode(), _STATE_INDEX[d["job_state"]], int(d["return_code"])))


def _write_execute(d: dict[str, Any], t: float) -> Optional[bytes]:
    if d.get("mapping"):
        return None
    return _EXECUTE.pack((t, d["job_id"].encode(), d["alloc"].encode()))


def _write_call(d: dict[str, Any], t: float) -> Optional[bytes]:
    if "period" in d:
        return None
    when = float(d["timestamp"])
    if when != int(when):
        return None  # milliseconds, rounded up: the generated path's rule
    return _CALL.pack((t, d.get("id", "").encode(), int(when), fb.TimeUnit.Second))


def _write_called(d: dict[str, Any], t: float) -> Optional[bytes]:
    return _CALLED.pack((t, d.get("id", "").encode(), bool(d.get("last_periodic_call", False))))


def _write_ends(d: dict[str, Any], t: float) -> Optional[bytes]:
    return _ENDS.pack((t,))


_WRITERS: dict[str, Callable[[dict[str, Any], float], Optional[bytes]]] = {
    "JOB_SUBMITTED": _write_submitted, "JOB_COMPLETED": _write_completed, "EXECUTE_JOB": _write_execute,
    "CALL_ME_LATER": _write_call, "REQUESTED_CALL": _write_called, "SIMULATION_ENDS": _write_ends}

# the message: root offset, the Message table (now, events) and the events vector
_NOW, _EVENTS = _field(fb.MessageAddNow), _field(fb.MessageAddEvents)
assert (_NOW, _EVENTS) == ((0, "d"), (1, "o"))  # as the head below lays them out
_HEADS: dict[int, struct.Struct] = {}


def encode(now: float, events: list[Event]) -> Optional[bytes]:
    """The message as a FlatBuffer, or None when an event needs the generated code."""
    blocks = []
    for event in events:
        write = _WRITERS.get(event["type"])
        block = None if write is None else write(event["data"], event["timestamp"])
        if block is None:
            return None
        blocks.append(block)
    count = len(events)
    head = _HEADS.get(count)
    if head is None:
        # root u32 | vtable: 4 u16 | pad | table: soffset, events offset, now | vector
        head = _HEADS[count] = struct.Struct(f"<I4H4xiId{count + 1}I{-(36 + 4 * count) % 8}x")
    entries = []
    at = head.size  # the first block; its EventAndTimestamp table follows its vtable
    for index, block in enumerate(blocks):
        entries.append(at + _ITEM_TABLE - (36 + 4 * index))
        at += len(block)
    return head.pack(16, 8, 16, 8, 4, 12, 12, now, count, *entries) + b"".join(blocks)




# -- reading ---------------------------------------------------------------------------
class _GiveUp(Exception):
    """Not the usual form: the careful reader decides."""


_I8 = struct.Struct("<b").unpack_from
_U8 = struct.Struct("<B").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U16 = struct.Struct("<H").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_F64 = struct.Struct("<d").unpack_from
_UNPACK = {"b": _I8, "B": _U8, "?": _U8, "i": _I32, "I": _U32, "Q": _U64, "d": _F64}
_VTABLES = [struct.Struct(f"<{n}H").unpack_from for n in range(64)]
_VECTORS: dict[int, Callable[[bytes, int], tuple[int, ...]]] = {}
_isfinite = math.isfinite


def _table(buf: bytes, pos: int, want: int) -> tuple[int, ...]:
    """The field offsets (0: absent) of the table at ``pos``, at least ``want`` of them."""
    vt = pos - _I32(buf, pos)[0]
    if vt < 0:
        raise _GiveUp
    size = _U16(buf, vt)[0]
    if size < 4 or size & 1:
        raise _GiveUp
    n = (size - 4) >> 1
    offsets: tuple[int, ...] = _VTABLES[n](buf, vt + 4)
    return offsets if n >= want else offsets + (0,) * (want - n)


def _string(buf: bytes, at: int) -> str:
    """The string the offset at ``at`` points to."""
    at += _U32(buf, at)[0]
    end = at + 4 + _U32(buf, at)[0]
    if end > len(buf):
        raise _GiveUp
    return buf[at + 4:end].decode()


def _child(buf: bytes, at: int) -> int:
    """The position of the table the offset at ``at`` points to."""
    offset: int = _U32(buf, at)[0]
    return at + offset


def _scalar(add: Callable[[Any, Any], None]) -> tuple[int, Callable[[bytes, int], tuple[Any, ...]]]:
    slot, code = _field(add)
    return slot, _UNPACK[code]


# the slots of what is read, as the generated builder functions state them
_TS, _KIND, _EVENT = _field(fb.EventAndTimestampAddTimestamp)[0], _field(fb.EventAndTimestampAddEventType)[0], \
    _field(fb.EventAndTimestampAddEvent)[0]
_C_ID, (_C_STATE, _c_state), (_C_RC, _c_rc) = (_field(fb.JobCompletedEventAddJobId)[0],
                                               _scalar(fb.JobCompletedEventAddState),
                                               _scalar(fb.JobCompletedEventAddReturnCode))
_S_ID, _S_JOB, _S_TIME, _S_PROFILE = (_field(fb.JobSubmittedEventAddJobId)[0], _field(fb.JobSubmittedEventAddJob)[0],
                                      _field(fb.JobSubmittedEventAddSubmissionTime)[0],
                                      _field(fb.JobSubmittedEventAddProfile)[0])
_J_RES, _J_WALL, _J_EXTRA, _J_PROFILE = (_field(fb.JobAddResourceRequest)[0], _field(fb.JobAddWalltime)[0],
                                         _field(fb.JobAddExtraData)[0], _field(fb.JobAddProfileId)[0])
_E_ID, _E_ALLOC = _field(fb.ExecuteJobEventAddJobId)[0], _field(fb.ExecuteJobEventAddAllocation)[0]
_E_OVERRIDE, _E_STORAGE = (_field(fb.ExecuteJobEventAddProfileAllocationOverride)[0],
                           _field(fb.ExecuteJobEventAddStoragePlacement)[0])
_A_HOSTS, _A_TYPE, _A_PLACEMENT = (_field(fb.AllocationPlacementAddHostAllocation)[0],
                                   _field(fb.AllocationPlacementAddExecutorPlacementType)[0],
                                   _field(fb.AllocationPlacementAddExecutorPlacement)[0])
_R_ID, _R_LAST = _field(fb.RequestedCallEventAddCallMeLaterId)[0], _field(fb.RequestedCallEventAddLastPeriodicCall)[0]
_L_ID, _L_TYPE, _L_WHEN = (_field(fb.CallMeLaterEventAddCallMeLaterId)[0], _field(fb.CallMeLaterEventAddWhenType)[0],
                           _field(fb.CallMeLaterEventAddWhen)[0])
_O_TIME, _O_UNIT = _field(fb.OneShotAddTime)[0], _field(fb.OneShotAddTimeUnit)[0]
# the scalar types the readers below use, as the generated code has them
assert [_field(add)[1] for add in (
    fb.EventAndTimestampAddTimestamp, fb.EventAndTimestampAddEventType, fb.JobSubmittedEventAddSubmissionTime,
    fb.JobAddResourceRequest, fb.JobAddWalltime, fb.AllocationPlacementAddExecutorPlacementType,
    fb.RequestedCallEventAddLastPeriodicCall, fb.CallMeLaterEventAddWhenType, fb.OneShotAddTime,
    fb.OneShotAddTimeUnit)] == ["d", "B", "d", "I", "d", "B", "?", "B", "Q", "b"]
_PREDEFINED = fb.ExecutorPlacement.PredefinedExecutorPlacementStrategyWrapper
_ONE_SHOT, _SECOND = fb.TemporalTrigger.OneShot, fb.TimeUnit.Second


def _read_completed(buf: bytes, pos: int) -> tuple[str, dict[str, Any]]:
    o = _table(buf, pos, 3)
    if not o[_C_ID]:
        raise _GiveUp
    state = _c_state(buf, pos + o[_C_STATE])[0] if o[_C_STATE] else 0
    if not 0 <= state < 5:
        raise _GiveUp
    return "JOB_COMPLETED", {"job_id": _string(buf, pos + o[_C_ID]), "job_state": _STATES[state],
                             "return_code": _c_rc(buf, pos + o[_C_RC])[0] if o[_C_RC] else 0}


def _read_submitted(buf: bytes, pos: int) -> tuple[str, dict[str, Any]]:
    o = _table(buf, pos, 4)
    if not (o[_S_ID] and o[_S_JOB]) or o[_S_PROFILE]:
        raise _GiveUp
    job_id = _string(buf, pos + o[_S_ID])
    job = _child(buf, pos + o[_S_JOB])
    j = _table(buf, job, 4)
    if not j[_J_PROFILE] or j[_J_EXTRA]:
        raise _GiveUp
    return "JOB_SUBMITTED", {"job_id": job_id, "job": {
        "id": job_id, "subtime": _F64(buf, pos + o[_S_TIME])[0] if o[_S_TIME] else 0.0,
        "res": _U32(buf, job + j[_J_RES])[0] if j[_J_RES] else 0, "profile": _string(buf, job + j[_J_PROFILE]),
        "walltime": _F64(buf, job + j[_J_WALL])[0] if j[_J_WALL] else -1}}


def _read_execute(buf: bytes, pos: int) -> tuple[str, dict[str, Any]]:
    o = _table(buf, pos, 4)
    if not (o[_E_ID] and o[_E_ALLOC]) or o[_E_OVERRIDE] or o[_E_STORAGE]:
        raise _GiveUp
    alloc = _child(buf, pos + o[_E_ALLOC])
    a = _table(buf, alloc, 3)
    if not (a[_A_HOSTS] and a[_A_PLACEMENT] and a[_A_TYPE]) or _U8(buf, alloc + a[_A_TYPE])[0] != _PREDEFINED:
        raise _GiveUp
    _table(buf, _child(buf, alloc + a[_A_PLACEMENT]), 0)  # either strategy: executor i on host i
    return "EXECUTE_JOB", {"job_id": _string(buf, pos + o[_E_ID]), "alloc": _string(buf, alloc + a[_A_HOSTS])}


def _read_call(buf: bytes, pos: int) -> tuple[str, dict[str, Any]]:
    o = _table(buf, pos, 3)
    if not (o[_L_ID] and o[_L_WHEN] and o[_L_TYPE]) or _U8(buf, pos + o[_L_TYPE])[0] != _ONE_SHOT:
        raise _GiveUp  # periodic: the careful reader
    when = _child(buf, pos + o[_L_WHEN])
    w = _table(buf, when, 2)
    if (_I8(buf, when + w[_O_UNIT])[0] if w[_O_UNIT] else _SECOND) != _SECOND:
        raise _GiveUp
    return "CALL_ME_LATER", {"id": _string(buf, pos + o[_L_ID]),
                             "timestamp": float(_U64(buf, when + w[_O_TIME])[0] if w[_O_TIME] else 0)}


def _read_called(buf: bytes, pos: int) -> tuple[str, dict[str, Any]]:
    o = _table(buf, pos, 2)
    if not o[_R_ID]:
        raise _GiveUp
    return "REQUESTED_CALL", {"id": _string(buf, pos + o[_R_ID]),
                              "last_periodic_call": bool(_U8(buf, pos + o[_R_LAST])[0]) if o[_R_LAST] else False}


def _read_ends(buf: bytes, pos: int) -> tuple[str, dict[str, Any]]:
    _table(buf, pos, 0)
    return "SIMULATION_ENDS", {}


_READERS: dict[int, Callable[[bytes, int], tuple[str, dict[str, Any]]]] = {
    fb.Event.JobCompletedEvent: _read_completed, fb.Event.JobSubmittedEvent: _read_submitted,
    fb.Event.ExecuteJobEvent: _read_execute, fb.Event.RequestedCallEvent: _read_called,
    fb.Event.CallMeLaterEvent: _read_call, fb.Event.SimulationEndsEvent: _read_ends}


def _made_submitted(v: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    return "JOB_SUBMITTED", {"job_id": v[1], "job": {"id": v[1], "subtime": v[2], "res": v[3], "profile": v[4],
                                                     "walltime": -1}}


def _made_submitted_walltime(v: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    return "JOB_SUBMITTED", {"job_id": v[1], "job": {"id": v[1], "subtime": v[2], "res": v[3], "profile": v[5],
                                                     "walltime": v[4]}}


def _made_completed(v: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    if not 0 <= v[2] < 5:
        raise _GiveUp
    return "JOB_COMPLETED", {"job_id": v[1], "job_state": _STATES[v[2]], "return_code": v[3]}


def _made_call(v: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    if v[3] != _SECOND:
        raise _GiveUp
    return "CALL_ME_LATER", {"id": v[1], "timestamp": float(v[2])}


#: the blocks :func:`encode` writes, by union type: their head and what makes the event
#: of their values (in the order of the block's names)
_BY_KIND: dict[int, list[tuple[_Head, Callable[[tuple[Any, ...]], tuple[str, dict[str, Any]]]]]] = {
    fb.Event.JobSubmittedEvent: [(_SUBMITTED[False].head, _made_submitted),
                                 (_SUBMITTED[True].head, _made_submitted_walltime)],
    fb.Event.JobCompletedEvent: [(_COMPLETED.head, _made_completed)],
    fb.Event.ExecuteJobEvent: [(_EXECUTE.head, lambda v: ("EXECUTE_JOB", {"job_id": v[1], "alloc": v[2]}))],
    fb.Event.CallMeLaterEvent: [(_CALL.head, _made_call)],
    fb.Event.RequestedCallEvent: [(_CALLED.head, lambda v: ("REQUESTED_CALL", {
        "id": v[1], "last_periodic_call": bool(v[2])}))],
    fb.Event.SimulationEndsEvent: [(_ENDS.head, lambda v: ("SIMULATION_ENDS", {}))]}
_KIND_AT = _ENDS.kind_at
assert all(block.kind_at == _KIND_AT for block in (*_SUBMITTED.values(), _COMPLETED, _EXECUTE, _CALL, _CALLED))


def decode(buf: bytes) -> Optional[tuple[float, list[Event]]]:
    """``now`` and the events of ``buf`` when it is a message of the usual per-job
    events in their usual form, else None (the careful reader then decides)."""
    try:
        root = _U32(buf, 0)[0]
        o = _table(buf, root, 2)
        now = _F64(buf, root + o[_NOW[0]])[0] if o[_NOW[0]] else 0.0
        if not (o[_EVENTS[0]] and _isfinite(now)):
            return None
        vec = _child(buf, root + o[_EVENTS[0]])
        count = _U32(buf, vec)[0]
        entries = _VECTORS.get(count)
        if entries is None:
            entries = _VECTORS[count] = struct.Struct(f"<{count}I").unpack_from
        events: list[Event] = []
        at = vec + 4
        for offset in entries(buf, at):
            item = at + offset
            at += 4
            # as this module writes it: the whole block at once
            if item >= _ITEM_TABLE:
                for head, make in _BY_KIND.get(buf[item + _KIND_AT], ()):
                    values = head.read(buf, item - _ITEM_TABLE)
                    if values is not None:
                        if not _isfinite(values[0]):
                            return None
                        kind, data = make(values)
                        events.append({"timestamp": values[0], "type": kind, "data": data})
                        break
                else:
                    values = None
                if values is not None:
                    continue
            # as another writer may lay it out: table by table
            i = _table(buf, item, 3)
            read = _READERS.get(_U8(buf, item + i[_KIND])[0] if i[_KIND] else 0)
            stamp = _F64(buf, item + i[_TS])[0] if i[_TS] else 0.0
            if read is None or not i[_EVENT] or not _isfinite(stamp):
                return None
            kind, data = read(buf, _child(buf, item + i[_EVENT]))
            events.append({"timestamp": stamp, "type": kind, "data": data})
        return now, events
    except (_GiveUp, struct.error, IndexError, UnicodeDecodeError):
        return None
