"""The decision-process side of the protocol against the recorded real Batsim 4.2.1 run
with dynamic jobs (fixtures/batsim-4.2.1/dynack): our codec reads every message Batsim
sent, and our event builders produce exactly the decisions that run sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpcjobs.executors.batsim import protocol

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1" / "dynack/trace.jsonl"


@pytest.fixture(scope="module")
def trace() -> list[dict[str, Any]]:
    if not TRACE.is_file():
        pytest.skip("Batsim fixtures not present")
    return [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]


def test_codec_reads_every_batsim_message(trace: list[dict[str, Any]]) -> None:
    codec = protocol.JsonCodec()
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


@pytest.mark.parametrize("raw, match", [
    (b"not json", "invalid JSON"),
    (b'{"now": 1}', "without 'events'"),
    (b'{"now": "x", "events": []}', "numeric 'now'"),
    (b'{"now": 1, "events": [{"type": "X"}]}', "malformed event"),
])
def test_codec_refuses_broken_messages(raw: bytes, match: str) -> None:
    with pytest.raises(protocol.ProtocolError, match=match):
        protocol.JsonCodec().decode(raw)
