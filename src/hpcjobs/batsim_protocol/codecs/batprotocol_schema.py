"""batprotocol's schema (schema/batprotocol.fbs) and what reads and writes any of its
tables from it: the one description of batprotocol's layout, used by both of its codecs.

- :func:`load_schema`: the tables, enums and unions of the schema file, each field with
  its slot (a union takes two: its type, then its value), kind and default;
- :class:`Reader`: bounds-checked access to one buffer's tables (a corrupt buffer
  raises :class:`Corrupt` naming what was being read, never reads outside it);
- :func:`read_table` / :func:`to_json`: a table as FlatBuffers' JSON mapping of the
  schema describes it (a dict keyed by field names, enum values and union types by
  name, scalars at their defaults when absent), refusing a missing required field or
  an unknown union member naming the field;
- :func:`from_json`: the FlatBuffer of such a dict, refusing what is not the
  schema's naming its place.

``codecs/batprotocol.py`` translates events to and from this form (its per-job hot
path, ``batprotocol_fast.py``, lays its blocks out from the same schema);
``codecs/batprotocol_json.py`` is this form as text.
"""

from __future__ import annotations

import json
import re
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Optional

from ..errors import ProtocolError

__all__ = ["SCHEMA_FILE", "Schema", "Field", "load_schema", "parse_schema", "scalar_code", "Reader", "Corrupt",
           "read_message", "read_table", "to_json", "from_json"]

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema" / "batprotocol.fbs"

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U8 = struct.Struct("<B")
_F64 = struct.Struct("<d")

# FlatBuffers' scalar types and their struct codes
_SCALARS: dict[str, str] = {
    "bool": "?", "byte": "b", "ubyte": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I", "long": "q",
    "ulong": "Q", "float": "f", "double": "d", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d",
}


# -- the schema ----------------------------------------------------------------------
class Field(NamedTuple):
    """A table field: ``kind`` is scalar, enum, string, table, union or vector; ``of``
    names the scalar type, enum, table or union (a vector's element type)."""

    name: str
    slot: int
    kind: str
    of: str
    default: Any
    required: bool


class Schema(NamedTuple):
    """What the JSON mapping needs of a FlatBuffers schema."""

    tables: dict[str, list[Field]]
    enums: dict[str, tuple[str, dict[str, int]]]  # name -> (underlying scalar, values)
    unions: dict[str, list[str]]  # name -> members (type code = index + 1)
    root: str


_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|([A-Za-z_][\w.]*|[-+]?[\d.][\w.+-]*|"[^"]*"|[{}()\[\]:;,=])', re.S)


def parse_schema(text: str) -> Schema:
    """The tables, enums and unions of a ``.fbs`` schema (the subset batprotocol uses:
    no structs, includes or explicit field ids)."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]
    if sum(len(m.group(0)) for m in _TOKEN.finditer(text)) != len(text):
        raise ValueError("the schema has characters outside FlatBuffers' grammar")
    pos = 0

    def take(expected: Optional[str] = None) -> str:
        nonlocal pos
        token = tokens[pos]
        if expected is not None and token != expected:
            raise ValueError(f"schema: expected {expected!r}, found {token!r} (token {pos})")
        pos += 1
        return token

    def metadata() -> set[str]:
        attrs = set()
        if tokens[pos] == "(":
            take("(")
            while tokens[pos] != ")":
                attrs.add(take())
                if tokens[pos] == ":":
                    take(":")
                    take()
                if tokens[pos] == ",":
                    take(",")
            take(")")
        return attrs

    raw_tables: dict[str, list[tuple[str, str, bool, Optional[str], bool]]] = {}
    enums: dict[str, tuple[str, dict[str, int]]] = {}
    unions: dict[str, list[str]] = {}
    root = ""
    while pos < len(tokens):
        keyword = take()
        if keyword in ("namespace", "root_type", "file_identifier", "file_extension", "attribute", "include"):
            value = take()
            root = value if keyword == "root_type" else root
            take(";")
        elif keyword in ("enum", "union"):
            name = take()
            underlying = "ubyte"
            if keyword == "enum":
                take(":")
                underlying = take()
            if metadata():
                raise ValueError(f"schema: attributes of {name} are not supported")
            take("{")
            values: dict[str, int] = {}
            members: list[str] = []
            following = 0  # an enum's values count on from the last one given
            while tokens[pos] != "}":
                member = take()
                if tokens[pos] == "=":
                    take("=")
                    following = int(take())
                values[member], following = following, following + 1
                members.append(member)
                if tokens[pos] == ",":
                    take(",")
            take("}")
            if keyword == "enum":
                enums[name] = (underlying, values)
            else:
                unions[name] = members
        elif keyword == "table":
            name = take()
            metadata()
            take("{")
            fields = raw_tables[name] = []
            while tokens[pos] != "}":
                field = take()
                take(":")
                vector = tokens[pos] == "["
                if vector:
                    take("[")
                of = take()
                if vector:
                    take("]")
                default = None
                if tokens[pos] == "=":
                    take("=")
                    default = take()
                attrs = metadata()
                take(";")
                fields.append((field, of, vector, default, "required" in attrs))
            take("}")
        else:
            raise ValueError(f"schema: {keyword!r} is not supported")
    tables = {name: _fields(raw, enums, unions) for name, raw in raw_tables.items()}
    return Schema(tables, enums, unions, root)


def _fields(raw: list[tuple[str, str, bool, Optional[str], bool]], enums: dict[str, tuple[str, dict[str, int]]],
            unions: dict[str, list[str]]) -> list[Field]:
    """Fields with their slots (a union takes two: its type, then its value) and defaults."""
    out: list[Field] = []
    slot = 0
    for name, of, vector, default, required in raw:
        if vector:
            out.append(Field(name, slot, "vector", of, None, required))
        elif of in unions:
            out.append(Field(f"{name}_type", slot, "enum", f"{of}", 0, False))
            slot += 1
            out.append(Field(name, slot, "union", of, None, required))
        elif of in enums:
            values = enums[of][1]
            member = 0 if default is None else values[default] if default in values else int(default)
            out.append(Field(name, slot, "enum", of, member, False))
        elif of in _SCALARS:
            fmt = _SCALARS[of]
            number: Any = None if default == "null" else (  # "= null": an optional scalar
                default == "true" if fmt == "?" else float(default or 0) if fmt in "fd" else int(default or 0))
            out.append(Field(name, slot, "scalar", of, number, False))
        else:
            out.append(Field(name, slot, "string" if of == "string" else "table", of, None, required))
        slot += 1
    return out


@lru_cache(maxsize=1)
def load_schema() -> Schema:
    """batprotocol's schema (schema/batprotocol.fbs)."""
    return parse_schema(SCHEMA_FILE.read_text(encoding="utf-8"))


def scalar_code(schema: Schema, f: Field) -> str:
    """The ``struct`` code of a field's value (``o``: an offset to a string, table,
    vector or union member)."""
    if f.kind in ("scalar", "enum"):
        return _SCALARS[_scalar_type(schema, f)]
    return "o"


def _enum_values(schema: Schema, name: str) -> dict[str, int]:
    if name in schema.unions:
        return {"NONE": 0, **{m: i + 1 for i, m in enumerate(schema.unions[name])}}
    return schema.enums[name][1]


def _scalar_type(schema: Schema, f: Field) -> str:
    if f.kind == "enum":
        return "ubyte" if f.of in schema.unions else schema.enums[f.of][0]
    return f.of


# -- FlatBuffer -> JSON form ---------------------------------------------------------
def to_json(schema: Schema, buf: bytes) -> dict[str, Any]:
    """The JSON form of the FlatBuffer ``buf`` (a message of ``schema``'s root type)."""
    reader = Reader(buf)
    reader.check(0, 4, "root")
    return read_table(schema, reader, schema.root, _U32.unpack_from(buf, 0)[0], "message")


@lru_cache(maxsize=None)
def _struct(code: str) -> struct.Struct:
    return struct.Struct("<" + code)


def read_table(schema: Schema, r: "Reader", name: str, pos: int, where: str) -> dict[str, Any]:
    """The table ``name`` at ``pos`` in its JSON form; ``where`` names it in errors."""
    t = r.table(pos, where)
    out: dict[str, Any] = {}
    union_types: dict[str, int] = {}
    for f in schema.tables[name]:
        at = f"{where}.{f.name}"
        if f.kind in ("scalar", "enum"):
            value = r.scalar(t, f.slot, _struct(_SCALARS[_scalar_type(schema, f)]), f.default, at)
            if f.kind == "enum":
                union_types[f.name] = value
                names = {v: k for k, v in _enum_values(schema, f.of).items()}
                value = names.get(value, value)
            out[f.name] = value
        elif not r.field(t, f.slot, 4, at):
            if f.required:
                raise ProtocolError(f"the required field {f.name!r} is missing", at)
            # an absent string, table, vector or union: not written
        elif f.kind == "string":
            out[f.name] = r.string(t, f.slot, at)
        elif f.kind == "table":
            out[f.name] = read_table(schema, r, f.of, r.target(t, f.slot, at), at)
        elif f.kind == "union":
            code = union_types[f"{f.name}_type"]
            if not 0 < code <= len(schema.unions[f.of]):
                raise ProtocolError(f"unknown {f.of} member {code}", f"{at}_type")
            member = schema.unions[f.of][code - 1]
            out[f.name] = read_table(schema, r, member, r.target(t, f.slot, at), at)
        else:
            out[f.name] = _read_vector(schema, r, f, t, at)
    return out


def _read_vector(schema: Schema, r: "Reader", f: Field, t: tuple[int, int, int], where: str) -> list[Any]:
    if f.of in _SCALARS or f.of in schema.enums:
        code = _SCALARS[f.of if f.of in _SCALARS else schema.enums[f.of][0]]
        start, count = r.vector(t, f.slot, _struct(code).size, where)
        values = list(struct.unpack_from(f"<{count}{code}", r.buf, start))
        if f.of in schema.enums:
            names = {v: k for k, v in schema.enums[f.of][1].items()}
            values = [names.get(v, v) for v in values]
        return values
    if f.of == "string":
        start, count = r.vector(t, f.slot, 4, where)
        return [r.string_at(at + _U32.unpack_from(r.buf, at)[0], f"{where}[{i}]")
                for i, at in enumerate(range(start, start + 4 * count, 4))]
    return [read_table(schema, r, f.of, pos[0], f"{where}[{i}]") for i, pos in enumerate(r.tables(t, f.slot, where))]


# -- JSON form -> FlatBuffer ---------------------------------------------------------
#: bytes of each struct code (``o``: an offset)
_SIZE = {"?": 1, "b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8, "o": 4}


def from_json(schema: Schema, obj: Any) -> bytes:
    """The FlatBuffer the JSON form ``obj`` describes; ``ProtocolError`` naming the
    place of what is not the schema's.

    Written front to back: the root offset, then each table (its vtable just before
    it, scalars at their natural alignment, biggest first) followed by what its offset
    fields point to, in field order. A scalar at its default is left out, as
    FlatBuffers' builders do."""
    out = bytearray(4)
    _U32.pack_into(out, 0, _write_table(schema, out, schema.root, obj, ""))
    return bytes(out)


def _pad(out: bytearray, n: int) -> None:
    out.extend(bytes(-len(out) % n))


def _write_table(schema: Schema, out: bytearray, name: str, obj: Any, where: str) -> int:
    """Append table ``name`` (and what it points to) to ``out``; its position."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"a {name} is a JSON object, not {_shown(obj)}", where or "message")
    fields = schema.tables[name]
    unknown = set(obj) - {f.name for f in fields}
    if unknown:
        raise ProtocolError(f"{name} has no field {sorted(unknown)[0]!r}", _at(where, sorted(unknown)[0]))
    values: list[tuple[int, str, Any]] = []  # (slot, struct code, value or what an offset points to)
    for f in fields:
        value = obj.get(f.name)
        at = _at(where, f.name)
        if value is None:
            continue
        if f.kind in ("scalar", "enum"):
            scalar = _scalar_type(schema, f)
            number = _number(scalar, _enum_value(schema, f.of, value, at) if f.kind == "enum" else value, at)
            if number != f.default:
                values.append((f.slot, _SCALARS[scalar], number))
        elif f.kind == "union":
            member = _enum_value(schema, f.of, obj.get(f"{f.name}_type"), f"{at}_type")
            if member == 0:
                raise ProtocolError(f"'{f.name}' has no '{f.name}_type'", f"{at}_type")
            values.append((f.slot, "o", (schema.unions[f.of][member - 1], value, at)))
        else:
            values.append((f.slot, "o", (f, value, at)))
    values.sort(key=lambda v: -_SIZE[v[1]])
    rel, offsets = 4, {}  # after the table's soffset to its vtable
    for slot, code, _ in values:
        rel += -rel % _SIZE[code]
        offsets[slot] = rel
        rel += _SIZE[code]
    slots = fields[-1].slot + 1 if fields else 0
    _pad(out, 2)
    vtable = len(out)
    out += struct.pack(f"<{2 + slots}H", 4 + 2 * slots, rel, *[offsets.get(s, 0) for s in range(slots)])
    _pad(out, max([4] + [_SIZE[code] for _, code, _ in values]))
    pos = len(out)
    out += bytes(rel)
    _I32.pack_into(out, pos, pos - vtable)
    children = []
    for slot, code, value in values:
        if code == "o":
            children.append((pos + offsets[slot], value))
        else:
            struct.pack_into("<" + code, out, pos + offsets[slot], value)
    for field_at, (what, value, place) in children:
        target = (_write_table(schema, out, what, value, place) if isinstance(what, str)
                  else _write_child(schema, out, what, value, place))
        _U32.pack_into(out, field_at, target - field_at)
    return pos


def _write_child(schema: Schema, out: bytearray, f: Field, value: Any, where: str) -> int:
    """Append the string, table or vector of field ``f``; its position."""
    if f.kind == "string":
        return _write_string(out, _typed(value, str, "a string", where))
    if f.kind == "table":
        return _write_table(schema, out, f.of, value, where)
    items = _typed(value, list, "an array", where)
    if f.of in _SCALARS or f.of in schema.enums:
        scalar = f.of if f.of in _SCALARS else schema.enums[f.of][0]
        code = _SCALARS[scalar]
        numbers = [_number(scalar, _enum_value(schema, f.of, v, f"{where}[{i}]") if f.of in schema.enums else v,
                           f"{where}[{i}]") for i, v in enumerate(items)]
        while len(out) % 4 or (len(out) + 4) % _SIZE[code]:  # the count, then aligned items
            out.append(0)
        pos = len(out)
        out += _U32.pack(len(numbers)) + struct.pack(f"<{len(numbers)}{code}", *numbers)
        return pos
    _pad(out, 4)
    pos = len(out)
    out += _U32.pack(len(items)) + bytes(4 * len(items))
    for i, item in enumerate(items):
        at = pos + 4 + 4 * i
        target = (_write_string(out, _typed(item, str, "a string", f"{where}[{i}]")) if f.of == "string"
                  else _write_table(schema, out, f.of, item, f"{where}[{i}]"))
        _U32.pack_into(out, at, target - at)
    return pos


def _write_string(out: bytearray, text: str) -> int:
    _pad(out, 4)
    pos = len(out)
    data = text.encode("utf-8")
    out += _U32.pack(len(data)) + data + b"\0"
    return pos


def _enum_value(schema: Schema, enum: str, value: Any, where: str) -> int:
    """An enum's or union type's value given by name (as flatc writes it) or number."""
    values = _enum_values(schema, enum)
    if isinstance(value, str):
        if value not in values:
            raise ProtocolError(f"{enum} has no member {value!r}", where)
        return values[value]
    if value is None:
        return 0
    number = _typed(value, int, f"a member of {enum}", where)
    if number not in values.values():
        raise ProtocolError(f"{enum} has no member {number}", where)
    return int(number)


def _number(scalar: str, value: Any, where: str) -> Any:
    code = _SCALARS[scalar]
    if code == "?":
        return _typed(value, bool, "true or false", where)
    if code in "fd":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProtocolError(f"expected a number, not {_shown(value)}", where)
        return float(value)
    number = _typed(value, int, "an integer", where)
    try:
        struct.pack("<" + code, number)
    except struct.error:
        raise ProtocolError(f"{number} does not fit a {scalar}", where) from None
    return number


def _typed(value: Any, kind: type, what: str, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(f"expected {what}, not {_shown(value)}", where)
    return value


def _shown(value: Any) -> str:
    return json.dumps(value)[:60]


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


# -- reading a buffer -------------------------------------------------------------
class Corrupt(Exception):
    """The buffer is not a valid FlatBuffer at ``args[0]`` (a field name)."""


class Reader:
    """Bounds-checked access to the tables of one buffer."""

    __slots__ = ("buf", "size")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.size = len(buf)

    def check(self, pos: int, n: int, what: str) -> None:
        """``Corrupt`` unless ``n`` bytes at ``pos`` are inside the buffer."""
        if pos < 0 or pos + n > self.size:
            raise Corrupt(what)

    def table(self, pos: int, what: str) -> tuple[int, int, int]:
        """(table position, vtable position, number of slots)."""
        self.check(pos, 4, what)
        vt = pos - _I32.unpack_from(self.buf, pos)[0]
        self.check(vt, 4, what)
        vt_size = _U16.unpack_from(self.buf, vt)[0]
        if vt_size < 4 or vt_size % 2:
            raise Corrupt(what)
        self.check(vt, vt_size, what)
        return pos, vt, (vt_size - 4) // 2

    def field(self, t: tuple[int, int, int], slot: int, size: int, what: str) -> int:
        """The absolute position of field ``slot`` (0: absent)."""
        pos, vt, nslots = t
        if slot >= nslots:
            return 0
        rel: int = _U16.unpack_from(self.buf, vt + 4 + 2 * slot)[0]
        if not rel:
            return 0
        self.check(pos + rel, size, what)
        return pos + rel

    def scalar(self, t: tuple[int, int, int], slot: int, fmt: struct.Struct, default: Any, what: str) -> Any:
        at = self.field(t, slot, fmt.size, what)
        return fmt.unpack_from(self.buf, at)[0] if at else default

    def target(self, t: tuple[int, int, int], slot: int, what: str) -> int:
        at = self.field(t, slot, 4, what)
        if not at:
            raise ProtocolError(f"the required field {what.rpartition('.')[2]!r} is missing", what)
        offset: int = _U32.unpack_from(self.buf, at)[0]
        return at + offset

    def string(self, t: tuple[int, int, int], slot: int, what: str) -> str:
        return self.string_at(self.target(t, slot, what), what)

    def string_at(self, at: int, what: str) -> str:
        """The string at ``at`` (its length, then its bytes)."""
        self.check(at, 4, what)
        n = _U32.unpack_from(self.buf, at)[0]
        self.check(at + 4, n, what)
        return self.buf[at + 4:at + 4 + n].decode("utf-8")

    def vector(self, t: tuple[int, int, int], slot: int, width: int, what: str) -> tuple[int, int]:
        """(position of the first item, count) of the vector of ``width``-byte items."""
        at = self.target(t, slot, what)
        self.check(at, 4, what)
        count: int = _U32.unpack_from(self.buf, at)[0]
        self.check(at + 4, width * count, what)
        return at + 4, count

    def tables(self, t: tuple[int, int, int], slot: int, what: str) -> list[tuple[int, int, int]]:
        """The tables of a vector of tables."""
        start, count = self.vector(t, slot, 4, what)
        return [self.table(at + _U32.unpack_from(self.buf, at)[0], f"{what}[{index}]")
                for index, at in enumerate(range(start, start + 4 * count, 4))]


def read_message(buf: bytes) -> tuple[float, list[tuple[int, float, int]], Reader]:
    """``now`` and the events' (union type, timestamp, table position)."""
    r = Reader(buf)
    r.check(0, 4, "root")
    msg = r.table(_U32.unpack_from(buf, 0)[0], "message")
    now = r.scalar(msg, 0, _F64, 0.0, "now")
    vec = r.target(msg, 1, "events")
    r.check(vec, 4, "events")
    count = _U32.unpack_from(buf, vec)[0]
    r.check(vec + 4, 4 * count, "events")
    items = []
    for index in range(count):
        at = vec + 4 + 4 * index
        item = r.table(at + _U32.unpack_from(buf, at)[0], f"events[{index}]")
        kind = r.scalar(item, 1, _U8, 0, f"events[{index}].event_type")
        stamp = r.scalar(item, 0, _F64, 0.0, f"events[{index}].timestamp")
        items.append((kind, stamp, r.target(item, 2, f"events[{index}].event")))
    return now, items, r
