"""Wire codecs: turn (now, events) into bytes and back, validating the envelope.

Only Batsim's JSON protocol exists today; batprotocol (Batsim 5) and the legacy text
protocol would be further ``Codec`` implementations used by the same server loop.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple, Protocol

from .errors import ProtocolViolation


class Message(NamedTuple):
    """One protocol message: the sender's clock and its events (dicts with timestamp/type/data)."""

    now: float
    events: list[dict[str, Any]]


class Codec(Protocol):
    """What the server loop needs from a wire protocol."""

    def encode(self, now: float, events: list[dict[str, Any]]) -> bytes: ...

    def decode(self, raw: bytes) -> Message: ...


def _is_number(value: object) -> bool:
    # json accepts NaN and Infinity; a clock cannot be either
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class JsonCodec:
    """Batsim's JSON protocol (spec/batsim-protocol-json.txt)."""

    def __init__(self) -> None:
        self._encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

    def encode(self, now: float, events: list[dict[str, Any]]) -> bytes:
        return self._encoder.encode({"now": now, "events": events}).encode("utf-8")

    def decode(self, raw: bytes) -> Message:
        try:
            msg = json.loads(raw)
        except ValueError as exc:
            raise ProtocolViolation(f"the decision process sent invalid JSON: {exc}") from None
        if not isinstance(msg, dict):
            raise ProtocolViolation("message is not a JSON object")
        now = msg.get("now")
        events = msg.get("events")
        if not _is_number(now):
            raise ProtocolViolation(f"message field 'now' is missing or not a number ({now!r})")
        if not isinstance(events, list):
            raise ProtocolViolation(f"message field 'events' is missing or not an array ({events!r})")
        for index, event in enumerate(events):
            if not isinstance(event, dict):
                raise ProtocolViolation(f"event #{index} is not an object")
            if not _is_number(event.get("timestamp")):
                raise ProtocolViolation(f"event #{index}: 'timestamp' is missing or not a number")
            if not isinstance(event.get("type"), str):
                raise ProtocolViolation(f"event #{index}: 'type' is missing or not a string")
            if not isinstance(event.get("data"), dict):
                raise ProtocolViolation(f"event #{index} ({event['type']}): 'data' is missing or not an object")
        return Message(float(now), events)  # type: ignore[arg-type]
