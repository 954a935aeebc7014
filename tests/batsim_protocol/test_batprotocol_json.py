"""batprotocol's JSON form (Batsim 5 with its JSON format): the text is FlatBuffers' own
JSON mapping of the schema — checked against the real ``flatc`` (Debian's
flatbuffers-compiler) both ways on every message of a recorded real Batsim run and on
the events Batsim 5 adds (so the binary codec's reader and writer agree with the schema
as flatc reads it) — and text that is not the schema's is refused naming the protocol, the message and the place."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hpcjobs.batsim_protocol.codecs import get_codec
from hpcjobs.batsim_protocol.codecs.batprotocol_schema import SCHEMA_FILE
from hpcjobs.batsim_protocol.errors import ProtocolError
from hpcjobs.batsim_protocol.events import Message, call_me_later, edc_hello, kill_jobs, notify
from hpcjobs.batsim_protocol.transports import Decoder

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "fixtures" / "batsim-4.2.1" / "dynack" / "trace.jsonl"
IN_CI = os.environ.get("CI", "").lower() == "true"

codec = get_codec("batprotocol_json")
binary = get_codec("batprotocol")


def _trace() -> list[Message]:
    lines = [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]
    return [Message(e["msg"]["now"], e["msg"]["events"]) for e in lines]


#: what Batsim 5 adds to the recorded run's events: hello, named and periodic calls,
#: kills with progress, a job's walltime, final states, an error
BATSIM5 = [
    Message(0.0, [edc_hello(0.0, dynamic_registration=True, profile_reuse=True)]),
    Message(4.25, [
        {"timestamp": 4.0, "type": "JOB_SUBMITTED", "data": {"job_id": "w0!7", "job": {
            "id": "w0!7", "subtime": 4.0, "res": 3, "profile": "d12", "walltime": 60.5}}},
        {"timestamp": 4.25, "type": "JOB_KILLED", "data": {"job_ids": ["w0!3"], "job_progress": {"w0!3": {
            "profile": "seq", "current_repetition": 1, "current_task_index": 2,
            "current_task": {"profile": "d1", "progress": 0.375}}}}},
        {"timestamp": 4.25, "type": "JOB_COMPLETED", "data": {
            "job_id": "w0!é", "job_state": "COMPLETED_KILLED", "return_code": -9}},
        {"timestamp": 4.25, "type": "REQUESTED_CALL", "data": {"id": "tick", "last_periodic_call": True}},
        {"timestamp": 4.25, "type": "SIMULATION_ERROR", "data": {"error": "a \"quoted\" reason"}},
    ]),
    Message(4.25, [
        {"timestamp": 4.25, "type": "CALL_ME_LATER", "data": {"id": "p", "period": 2.5, "offset": 0.5,
                                                               "count": 4}},
        {"timestamp": 4.25, "type": "CALL_ME_LATER", "data": {"id": "q", "period": 10.0, "offset": 0.0,
                                                               "count": None}},
        {"timestamp": 4.25, "type": "STOP_CALL_ME_LATER", "data": {"id": "q"}},
        call_me_later(4.25, 9.0), kill_jobs(4.25, ["w0!1", "w0!2"]), notify(4.25, "registration_finished"),
        {"timestamp": 4.25, "type": "EXECUTE_JOB", "data": {"job_id": "w0!7", "alloc": "2-4",
                                                            "mapping": {"0": 2, "1": 0, "2": 1}}},
    ]),
]


def _flatc(*args: str, cwd: Path) -> None:
    if shutil.which("flatc") is None:
        if IN_CI:
            pytest.fail("flatc (Debian package flatbuffers-compiler) is needed under CI=true")
        pytest.skip("flatc (Debian package flatbuffers-compiler) is not installed")
    subprocess.run(["flatc", *args], cwd=cwd, check=True, capture_output=True)


def _alike(mine: Any, theirs: Any) -> bool:
    """Equal, floats to flatc's 15 decimals (flatc rounds them when it writes text)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return mine.keys() == theirs.keys() and all(_alike(mine[k], theirs[k]) for k in mine)
    if isinstance(mine, list) and isinstance(theirs, list):
        return len(mine) == len(theirs) and all(_alike(a, b) for a, b in zip(mine, theirs))
    if isinstance(mine, float) or isinstance(theirs, float):
        return not isinstance(mine, bool) and math.isclose(mine, theirs, rel_tol=1e-15, abs_tol=1e-15)
    return type(mine) is type(theirs) and mine == theirs


@pytest.mark.parametrize("messages", [_trace(), BATSIM5], ids=["batsim-4.2.1-run", "batsim5-events"])
def test_we_write_what_flatc_writes_and_read_what_it_reads(tmp_path: Path, messages: list[Message]) -> None:
    for number, message in enumerate(messages):
        raw = binary.encode(message)
        (tmp_path / f"m{number}.bin").write_bytes(raw)
        (tmp_path / f"t{number}.json").write_bytes(codec.encode(message))
    bins = [f"m{n}.bin" for n in range(len(messages))]
    texts = [f"t{n}.json" for n in range(len(messages))]
    # flatc's text of our binary messages, and flatc's binary of our text
    _flatc("--json", "--strict-json", "--defaults-json", "--raw-binary", "-o", "flatc", str(SCHEMA_FILE), "--",
           *bins, cwd=tmp_path)
    _flatc("--binary", "-o", "flatc", str(SCHEMA_FILE), *texts, cwd=tmp_path)
    for number, message in enumerate(messages):
        ours = (tmp_path / f"t{number}.json").read_bytes()
        theirs = (tmp_path / "flatc" / f"m{number}.json").read_bytes()
        assert _alike(json.loads(ours), json.loads(theirs)), (ours, theirs)
        expected = binary.decode(binary.encode(message))
        assert codec.decode(theirs) == expected  # we read flatc's text
        assert binary.decode((tmp_path / "flatc" / f"t{number}.bin").read_bytes()) == expected  # flatc reads ours


def test_known_text() -> None:
    """The mapping spelled out, on a JobCompletedEvent and a ExecuteJobEvent."""
    message = Message(12.5, [
        {"timestamp": 12.0, "type": "JOB_COMPLETED", "data": {
            "job_id": "w0!1", "job_state": "COMPLETED_FAILED", "return_code": 2}},
        {"timestamp": 12.5, "type": "EXECUTE_JOB", "data": {"job_id": "w0!2", "alloc": "0-3"}}])
    text = (b'{"now":12.5,"events":['
            b'{"timestamp":12.0,"event_type":"JobCompletedEvent","event":'
            b'{"job_id":"w0!1","state":"COMPLETED_FAILED","return_code":2}},'
            b'{"timestamp":12.5,"event_type":"ExecuteJobEvent","event":{"job_id":"w0!2","allocation":'
            b'{"host_allocation":"0-3","executor_placement_type":"PredefinedExecutorPlacementStrategyWrapper",'
            b'"executor_placement":{"strategy":"SpreadOverHostsFirst"}}}}]}')
    assert codec.encode(message) == text
    assert codec.decode(text) == message
    # members and enum values by number, fields in any order, defaults left out, a final NUL
    terse = (b'{"events":[{"event":{"job_id":"w0!1","state":1,"return_code":2},"event_type":2,'
             b'"timestamp":12.0}],"now":12.5}\0')
    assert codec.decode(terse).events == message.events[:1]
    assert codec.decode(b'{"now":1,"events":[{"event_type":"JobCompletedEvent","event":{"job_id":"a"}}]}'
                        ).events == [{"timestamp": 0.0, "type": "JOB_COMPLETED", "data": {
                            "job_id": "a", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0}}]


@pytest.mark.parametrize("raw, field, match", [
    (b'{"now": 1, "events": [', "message", "invalid JSON"),
    (b'\xff', "message", "not UTF-8"),
    (b'[]', "message", "a Message is a JSON object"),
    (b'{"now": 1, "events": [], "later": 2}', "later", "Message has no field 'later'"),
    (b'{"now": "soon", "events": []}', "now", "expected a number"),
    (b'{"now": 1, "events": [{"event_type": "JobCompletedEvent", "event": {"job_id": "a", "state": "DONE"}}]}',
     "events[0].event.state", "FinalJobState has no member 'DONE'"),
    (b'{"now": 1, "events": [{"event_type": "Nope", "event": {}}]}', "events[0].event_type",
     "Event has no member 'Nope'"),
    (b'{"now": 1, "events": [{"event": {"job_id": "a"}}]}', "events[0].event_type", "no 'event_type'"),
    (b'{"now": 1, "events": [{"event_type": "JobCompletedEvent", "event": {"return_code": 3e9, "job_id": "a"}}]}',
     "events[0].event.return_code", "expected an integer"),
    (b'{"now": 1, "events": [{"event_type": "JobCompletedEvent", "event": {"return_code": 3000000000}}]}',
     "events[0].event.return_code", "does not fit a int32"),
    # verified as a binary message is: the same field names
    (b'{"now": 1, "events": [{"event_type": "JobCompletedEvent", "event": {"state": "REJECTED"}}]}',
     "events[0] (JobCompletedEvent).job_id", "required field 'job_id' is missing"),
    (b'{"now": 1, "events": [{"event_type": "CreateProbeEvent", "event": {}}]}',
     "events[0] (CreateProbeEvent)", "CreateProbeEvent is not modelled"),
], ids=["json", "utf8", "array", "unknown", "type", "enum", "union", "no-type", "float", "range", "required",
        "probe"])
def test_bad_text_is_refused_naming_the_place(raw: bytes, field: str, match: str) -> None:
    decoder = Decoder(codec)
    decoder.decode(codec.encode(Message(0.0, [])))
    with pytest.raises(ProtocolError, match=match) as caught:
        decoder.decode(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"batprotocol (JSON form) protocol, message 2, field {field!r}: ")


def test_nan_is_not_sent() -> None:
    with pytest.raises(ProtocolError, match="cannot encode"):
        codec.encode(Message(math.nan, []))
