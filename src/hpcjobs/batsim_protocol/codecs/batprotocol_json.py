"""batprotocol's JSON form: Batsim 5's messages as FlatBuffers' standard JSON mapping
of the same schema (schema/batprotocol.fbs), as ``flatc --json --strict-json
--defaults-json`` writes them and ``flatc -b`` reads them.

This is the text Batsim 5 exchanges when its JSON format is switched on: batprotocol's
C++ library turns its FlatBuffer into text with FlatBuffers' own JSON generator (strict
JSON, default scalars written, no indentation) and parses the text back with the same
schema. In that mapping a table is an object keyed by the schema's field names, an enum
value is its name (``"state": "COMPLETED_FAILED"``), a union field ``x`` is the pair
``"x_type"`` (the member's name) and ``"x"`` (the member table), a scalar left at its
default is written with its default, and an optional scalar that is absent is ``null``.

The codec is the binary one (``batprotocol``) behind a translation between the two
forms, both driven by the schema file (``batprotocol_schema.py``): decoding builds the FlatBuffer the text
describes and decodes it as the binary codec does (so both forms verify and refuse
alike, naming the same fields), encoding writes the binary codec's FlatBuffer as text.
Text that is not the schema's (an unknown field, a string where a number belongs, an
enum or union member the schema lacks) is refused naming its place, e.g.
``events[0].event.state``. Floats are written as Python writes them (the shortest text
that reads back to the same number; flatc rounds to 15 decimals).
"""

from __future__ import annotations

import json

from ..errors import ProtocolError
from ..events import Message
from . import batprotocol
from . import json as json_codec
from .batprotocol_schema import from_json, load_schema, to_json

__all__ = ["Codec"]


# -- the codec -----------------------------------------------------------------------
class Codec:
    """Batsim 5's batprotocol in FlatBuffers' JSON form."""

    name = "batprotocol (JSON form)"
    hello = True

    def __init__(self) -> None:
        self._binary = batprotocol.Codec()
        self._schema = load_schema()

    def encode(self, message: Message) -> bytes:
        obj = to_json(self._schema, self._binary.encode(message))
        try:
            return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
        except ValueError as e:  # NaN or infinity: not JSON
            raise ProtocolError(f"cannot encode the message: {e}") from None

    def decode(self, raw: bytes) -> Message:
        # batprotocol's C++ library reads the text as a C string: a final NUL is allowed
        obj = json_codec.parse(raw[:-1] if raw.endswith(b"\0") else raw)
        return self._binary.decode(from_json(self._schema, obj))
