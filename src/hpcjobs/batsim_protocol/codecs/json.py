"""Batsim 3-4's JSON protocol (spec/batsim-protocol-json.txt): the message object
``{"now": t, "events": [...]}`` as UTF-8 JSON, events as :mod:`..events` has them."""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import ProtocolError
from ..events import NOT_JSON, Message

__all__ = ["Codec", "parse", "check"]

_isfinite = math.isfinite


def parse(raw: bytes) -> Any:
    """The JSON value of ``raw``; ``ProtocolError`` if it is not UTF-8 JSON."""
    try:
        return json.loads(raw)
    except UnicodeDecodeError as e:
        raise ProtocolError(f"not UTF-8 at byte {e.start}", "message") from None
    except ValueError as e:
        raise ProtocolError(f"invalid JSON: {e}", "message") from None


class Codec:
    """Batsim's JSON protocol (the one Batsim 4 speaks over ZeroMQ)."""

    name = "JSON"
    hello = False

    def __init__(self) -> None:
        # NaN and Infinity are not JSON: refuse to send them
        self._encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False,
                                         allow_nan=False)

    def encode(self, message: Message) -> bytes:
        for index, event in enumerate(message.events):
            if event["type"] in NOT_JSON:
                raise ProtocolError(f"the JSON protocol has no event {event['type']}", f"events[{index}].type")
        try:
            return self._encoder.encode({"now": message.now, "events": message.events}).encode()
        except ValueError as e:
            raise ProtocolError(f"cannot encode the message: {e}") from None

    def decode(self, raw: bytes) -> Message:
        msg = parse(raw)
        if not isinstance(msg, dict):
            raise ProtocolError("the message is not a JSON object", "message")
        return _envelope(msg.get("now"), msg.get("events"))


def check(message: Message) -> Message:
    """``message`` as the decoder would give it back (``now`` a float), or the
    ``ProtocolError`` the decoder would raise on its envelope: for a message handed
    over in one process, without encoding (:mod:`..transports.direct`)."""
    return _envelope(message.now, message.events)


def _envelope(now: Any, events: Any) -> Message:
    """The envelope's rules: a finite ``now``; events with a finite ``timestamp``, a
    type of the JSON protocol and a ``data`` object."""
    # json accepts NaN and Infinity; a clock cannot be either
    if isinstance(now, bool) or not isinstance(now, (int, float)) or not _isfinite(now):
        raise ProtocolError(f"'now' is missing or not a number ({now!r})", "now")
    if not isinstance(events, list):
        raise ProtocolError(f"'events' is missing or not an array ({events!r})"[:300], "events")
    for index, event in enumerate(events):
        if type(event) is not dict:
            raise ProtocolError(f"event #{index} is not an object", f"events[{index}]")
        stamp = event.get("timestamp")
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not _isfinite(stamp):
            raise ProtocolError(f"event #{index}: 'timestamp' is missing or not a number",
                                f"events[{index}].timestamp")
        kind = event.get("type")
        if not isinstance(kind, str) or kind in NOT_JSON:
            raise ProtocolError(f"event #{index}: 'type' is missing, not a string or not an event of "
                                f"the JSON protocol ({kind!r})", f"events[{index}].type")
        if not isinstance(event.get("data"), dict):
            raise ProtocolError(f"event #{index} ({event['type']}): 'data' is missing or not an object",
                                f"events[{index}].data")
    return Message(float(now), events)
