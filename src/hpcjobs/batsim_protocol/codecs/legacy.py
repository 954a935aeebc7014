"""The legacy text protocol of Batsim < 1.0 (spec/batsim-protocol-legacy-socket.txt),
versions 0-3: ``VERSION:NOW|TIME:STAMP[:CONTENT]|...``, ASCII. Job data are not in the
messages but in Redis (:mod:`..redis_store`).

===========  ===============================  =========================================
stamp        event                            content
===========  ===============================  =========================================
A (3+)       SIMULATION_BEGINS                none (nb_res is in Redis)
Z (3+)       SIMULATION_ENDS                  none
S            JOB_SUBMITTED                    ``WLOAD!JOB_ID``
C            JOB_COMPLETED                    ``WLOAD!JOB_ID`` (no final state: Redis)
J            EXECUTE_JOB (one per job)        ``WLOAD!JID=MID,MIDa-MIDb[;...]``
R            REJECT_JOB                       ``WLOAD!JOB_ID``
n (1+)       CALL_ME_LATER                    ``TIME``
N            REQUESTED_CALL (from Batsim),    none
             NOP (from the decision process)
===========  ===============================  =========================================

The page's table says S, C, J and R exist from version 2, but every example on the page
uses them in version-0 messages: they are accepted from version 0, and a stamp the
table and the examples agree is newer (n, P, p, E, e before 1; A, Z, F, f before 3) is
refused in an older message. P/p (power states), E/e (energy) and F/f (machine
failures) are refused by name: hpcjobs models none of them (Batsim answers E only in
its energy mode). Machine ids in J are kept in their order: an order other than
ascending becomes the executor ``mapping``, as the JSON protocol says it. Times are
written with ``repr`` (the shortest exact decimal), so nothing is lost in transit.
"""

from __future__ import annotations

import math
from typing import Any

from .. import intervals
from ..errors import ProtocolError
from ..events import Event, Message

__all__ = ["Codec", "VERSION"]

#: the version this codec writes (A and Z need 3)
VERSION = 3
#: the first version that has each stamp (see the module docstring for S, C, J, R)
_SINCE = {"N": 0, "S": 0, "C": 0, "J": 0, "R": 0, "n": 1, "P": 1, "p": 1, "E": 1, "e": 1,
          "A": 3, "Z": 3, "F": 3, "f": 3}
_REFUSED = {
    "P": "P (power state change) is not modelled by hpcjobs",
    "p": "p (power state changed) is not modelled by hpcjobs",
    "E": "E (energy consumed) works only in Batsim's energy mode, which hpcjobs does not model",
    "e": "e (energy consumed) works only in Batsim's energy mode, which hpcjobs does not model",
    "F": "F (machines failed) is not modelled by hpcjobs",
    "f": "f (machines repaired) is not modelled by hpcjobs",
}
_NO_CONTENT = {"A": "SIMULATION_BEGINS", "Z": "SIMULATION_ENDS", "N": "NOP"}
_JOB_CONTENT = {"S": "JOB_SUBMITTED", "C": "JOB_COMPLETED", "R": "REJECT_JOB"}


def _time(text: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ProtocolError(f"{text!r} is not a time", field) from None
    if not math.isfinite(value):
        raise ProtocolError(f"time {text!r} is not finite", field)
    return value


def _machines(text: str, field: str) -> list[int]:
    """``1,2,0,3`` / ``0-2`` -> machine ids in the order given."""
    ids: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not (lo.isascii() and lo.isdigit() and (not sep or (hi.isascii() and hi.isdigit()))):
            raise ProtocolError(f"{part!r} is not a machine id or an interval a-b", field)
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ProtocolError(f"interval {part!r} is empty", field)
        ids.extend(range(first, last + 1))
    return ids


def _execute(t: float, content: str, field: str) -> list[Event]:
    out: list[Event] = []
    for item in content.split(";"):
        job_id, sep, machines = item.partition("=")
        if not sep or not job_id:
            raise ProtocolError(f"{item!r} is not JOB_ID=MACHINES", field)
        ids = _machines(machines, field)
        alloc = sorted(set(ids))
        data: dict[str, Any] = {"job_id": job_id, "alloc": intervals.format_ids(alloc)}
        if ids != alloc:
            data["mapping"] = {str(rank): alloc.index(mid) for rank, mid in enumerate(ids)}
        out.append({"timestamp": t, "type": "EXECUTE_JOB", "data": data})
    return out


class Codec:
    """Batsim's legacy text protocol."""

    name = "legacy"
    hello = False

    def encode(self, message: Message) -> bytes:
        parts = [f"{VERSION}:{message.now!r}"]
        for index, event in enumerate(message.events):
            kind, data, t = event["type"], event["data"], event["timestamp"]
            if kind == "SIMULATION_BEGINS":
                parts.append(f"{t!r}:A")
            elif kind == "SIMULATION_ENDS":
                parts.append(f"{t!r}:Z")
            elif kind in ("REQUESTED_CALL", "NOP"):
                parts.append(f"{t!r}:N")
            elif kind == "JOB_SUBMITTED":
                parts.append(f"{t!r}:S:{data['job_id']}")
            elif kind == "JOB_COMPLETED":
                parts.append(f"{t!r}:C:{data['job_id']}")
            elif kind == "REJECT_JOB":
                parts.append(f"{t!r}:R:{data['job_id']}")
            elif kind == "CALL_ME_LATER":
                parts.append(f"{t!r}:n:{float(data['timestamp'])!r}")
            elif kind == "EXECUTE_JOB":
                ids = intervals.parse(data["alloc"], "EXECUTE_JOB alloc")
                mapping = data.get("mapping")
                if mapping:
                    ids = [ids[int(mapping[str(rank)])] for rank in range(len(mapping))]
                parts.append(f"{t!r}:J:{data['job_id']}={','.join(map(str, ids))}")
            elif kind == "NOTIFY" and data.get("type") == "no_more_static_job_to_submit":
                continue  # Batsim < 1.0 had no such notification: nothing to say
            else:
                raise ProtocolError(f"the legacy protocol has no event {kind}", f"events[{index}].type")
        if len(parts) == 1:  # a message has at least one event: "nothing happened"
            parts.append(f"{message.now!r}:N")
        return "|".join(parts).encode("ascii")

    def decode(self, raw: bytes) -> Message:
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"byte {e.start} ({raw[e.start]:#x}) is not ASCII", "message") from None
        head, *items = text.split("|")
        version_text, sep, now_text = head.partition(":")
        if not sep or not version_text.isdigit() or int(version_text) > VERSION:
            raise ProtocolError(f"{head!r} does not start with a protocol version 0-{VERSION} and a time",
                                "version")
        version = int(version_text)
        now = _time(now_text, "now")
        if not items:
            raise ProtocolError("the message has no event", "events")
        events: list[Event] = []
        for index, item in enumerate(items):
            field = f"events[{index}]"
            stamp_time, sep, rest = item.partition(":")
            stamp, _, content = rest.partition(":")
            if not sep or not stamp:
                raise ProtocolError(f"{item!r} is not TIME:STAMP[:CONTENT]", field)
            t = _time(stamp_time, f"{field}.time")
            since = _SINCE.get(stamp)
            if since is None:
                raise ProtocolError(f"unknown stamp {stamp!r}", f"{field}.stamp")
            if since > version:
                raise ProtocolError(f"stamp {stamp!r} needs protocol version {since}, the message says "
                                    f"{version}", f"{field}.stamp")
            if stamp in _REFUSED:
                raise ProtocolError(_REFUSED[stamp], f"{field}.stamp")
            if stamp in _NO_CONTENT:
                if content:
                    raise ProtocolError(f"stamp {stamp!r} takes no content ({content!r})", f"{field}.content")
                events.append({"timestamp": t, "type": _NO_CONTENT[stamp], "data": {}})
            elif stamp in _JOB_CONTENT:
                if not content:
                    raise ProtocolError(f"stamp {stamp!r} needs a job id", f"{field}.content")
                events.append({"timestamp": t, "type": _JOB_CONTENT[stamp], "data": {"job_id": content}})
            elif stamp == "n":
                events.append({"timestamp": t, "type": "CALL_ME_LATER",
                               "data": {"timestamp": _time(content, f"{field}.content")}})
            else:  # J
                events.extend(_execute(t, content, f"{field}.content"))
        return Message(now, events)
