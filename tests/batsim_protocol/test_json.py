"""The JSON protocol against the recorded real Batsim 4.2.1 run with dynamic jobs
(fixtures/batsim-4.2.1/dynack): our codec reads every message Batsim sent, our event
builders produce exactly the decisions that run sent, and a broken message is refused
naming the offending field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpcjobs.batsim_protocol import events as protocol
from hpcjobs.batsim_protocol.codecs import get_codec
from hpcjobs.batsim_protocol.errors import ProtocolError
from hpcjobs.batsim_protocol.transports import Decoder

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1" / "dynack/trace.jsonl"


@pytest.fixture(scope="module")
def trace() -> list[dict[str, Any]]:
    if not TRACE.is_file():
        pytest.skip("Batsim fixtures not present")
    return [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]


def test_codec_reads_every_batsim_message(trace: list[dict[str, Any]]) -> None:
    codec = get_codec("json")
    for entry in trace:
        raw = json.dumps(entry["msg"]).encode()
        msg = codec.decode(raw)
        assert msg.now == entry["msg"]["now"] and msg.events == entry["msg"]["events"]
        assert json.loads(codec.encode(msg)) == entry["msg"]


def test_builders_match_the_recorded_decisions(trace: list[dict[str, Any]]) -> None:
    sent = [e for entry in trace if entry["dir"] == "out" for e in entry["msg"]["events"]]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in sent:
        by_type.setdefault(event["type"], []).append(event)
    rebuilt = {
        "REGISTER_PROFILE": [protocol.register_profile(e["timestamp"], e["data"]["workload_name"],
                                                       e["data"]["profile_name"], e["data"]["profile"])
                             for e in by_type["REGISTER_PROFILE"]],
        "EXECUTE_JOB": [protocol.execute_job(e["timestamp"], e["data"]["job_id"], e["data"]["alloc"])
                        for e in by_type["EXECUTE_JOB"]],
        "CALL_ME_LATER": [protocol.call_me_later(e["timestamp"], e["data"]["timestamp"])
                          for e in by_type["CALL_ME_LATER"]],
        "NOTIFY": [protocol.notify(e["timestamp"], e["data"]["type"]) for e in by_type["NOTIFY"]],
    }
    for kind, events in rebuilt.items():
        assert events == by_type[kind], kind
    # REGISTER_JOB: the recorded run sent the same fields (walltime where it had one)
    for e in by_type["REGISTER_JOB"]:
        job = e["data"]["job"]
        ours = protocol.register_job(e["timestamp"], e["data"]["job_id"], job["res"], job["profile"],
                                     job.get("walltime", -1))
        assert ours["data"]["job"] == {**job, "walltime": job.get("walltime", -1)}
        assert ours["data"]["job"]["subtime"] == e["timestamp"]  # Batsim requires subtime


@pytest.mark.parametrize("raw, field, match", [
    (b"not json", "message", "invalid JSON"),
    (b'{"now": 1, "events": ["\xff"]}', "message", "not UTF-8 at byte 23"),
    (b"[]", "message", "not a JSON object"),
    (b'{"now": 1}', "events", "'events' is missing or not an array"),
    (b'{"now": "x", "events": []}', "now", "'now' is missing or not a number"),
    (b'{"now": NaN, "events": []}', "now", "'now' is missing or not a number"),
    (b'{"now": 1, "events": [{"type": "X"}]}', "events[0].timestamp", "'timestamp' is missing"),
    (b'{"now": 1, "events": [{"timestamp": 1, "type": 3, "data": {}}]}', "events[0].type", "'type'"),
    (b'{"now": 1, "events": [{"timestamp": 1, "type": "X", "data": []}]}', "events[0].data", "'data'"),
])
def test_codec_refuses_broken_messages(raw: bytes, field: str, match: str) -> None:
    decoder = Decoder(get_codec("json"))
    decoder.decode(b'{"now": 0, "events": []}')
    with pytest.raises(ProtocolError, match=match) as caught:
        decoder.decode(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith("JSON protocol, message 2, ") and field in str(caught.value)


def test_codec_refuses_to_send_nan() -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        get_codec("json").encode(protocol.Message(float("nan"), []))


def test_unknown_protocol_is_refused_by_name() -> None:
    with pytest.raises(Exception, match="unknown Batsim protocol 'smoke-signals'"):
        get_codec("smoke-signals")
