"""batprotocol's hot path (codecs/batprotocol_fast.py): its bytes are a known answer,
messages mixing every shape it writes (string lengths, long and non-ASCII strings,
optional fields) go through it and mean the same to the schema's reader and the careful
reader, it leaves what it does not write to the schema's writer, its caches are
bounded, and vectors read as lists even where the runtime uses numpy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpcjobs.batsim_protocol.codecs import batprotocol_fast as fast
from hpcjobs.batsim_protocol.codecs import get_codec
from hpcjobs.batsim_protocol.codecs.batprotocol_schema import load_schema, to_json
from hpcjobs.batsim_protocol.errors import ProtocolError
from hpcjobs.batsim_protocol.events import Message, call_me_later, execute_job

ROOT = Path(__file__).resolve().parents[2]
codec = get_codec("batprotocol")


def _submitted(t: float, job_id: str, profile: str, res: int = 1, walltime: float = -1) -> dict[str, Any]:
    return {"timestamp": t, "type": "JOB_SUBMITTED", "data": {"job_id": job_id, "job": {
        "id": job_id, "subtime": t, "res": res, "profile": profile, "walltime": walltime}}}


def _completed(t: float, job_id: str, state: str = "COMPLETED_SUCCESSFULLY", code: int = 0) -> dict[str, Any]:
    return {"timestamp": t, "type": "JOB_COMPLETED", "data": {"job_id": job_id, "job_state": state,
                                                              "return_code": code}}


def _called(t: float, call_id: str, last: bool) -> dict[str, Any]:
    return {"timestamp": t, "type": "REQUESTED_CALL", "data": {"id": call_id, "last_periodic_call": last}}


_ENDS = {"timestamp": 9.0, "type": "SIMULATION_ENDS", "data": {}}

#: every block the fast path writes, strings of many lengths (0 to 9,000 bytes, with
#: 2-, 3- and 4-byte UTF-8), with and without walltime, same kinds in a row
_MIXED = Message(9.0, [
    _submitted(1.0, "w0!1", "d1"), _submitted(1.0, "w0!123456789", "a-much-longer-profile-name", 8, 3600.0),
    _submitted(1.5, "wörkload!ジョブ🙂", "", 1, 0.5), _submitted(1.5, "", "p", 2**32 - 1),
    _completed(2.0, "w0!1"), _completed(2.0, "w0!123456789", "COMPLETED_KILLED", -9),
    _completed(2.0, "ид", "REJECTED", 2**31 - 1), execute_job(3.0, "w0!2", "0-3 5 7-9"),
    execute_job(3.0, "w0!3", " ".join(str(i) for i in range(2000))), execute_job(3.0, "x", ""),
    {"timestamp": 4.0, "type": "CALL_ME_LATER", "data": {"id": "", "timestamp": 30.0}}, {"timestamp": 4.0, "type": "CALL_ME_LATER", "data": {"id": "tick", "timestamp": 2.0**40}},
    _called(5.0, "tick", True), _called(5.0, "", False), _ENDS])


def test_the_fast_writer_writes_a_known_layout() -> None:
    """The bytes of a small message (as the fast writer has laid it out since it was
    written: the schema reader and flatc read it in test_batprotocol.py)."""
    message = Message(2.0, [_completed(1.5, "w0!5", "COMPLETED_KILLED", -9), execute_job(2.0, "w0!7", "0-2")])
    known = bytes.fromhex(
        "100000000800100008000400000000000c0000000c0000000000000000000040"
        "020000001c00000068000000000000000a001500080014001000000000000000"
        "1000000000000000000000000000f83f1000000002000a000d0004000c000800"
        "0a0000000c000000f7ffffff0300000004000000773021350000000000000000"
        "0a00150008001400100000000000000010000000000000000000000000000040"
        "1800000004000c000c0004000800000000000000000000001200000030000000"
        "100000000a000d0004000c00080000000c000000240000001000000001000600"
        "04000000000000000a00000004000000773021370000000003000000302d3200")
    assert fast.encode(message.now, message.events) == known
    assert fast.decode(known) == (message.now, message.events)
    assert codec.decode_carefully(known) == message


def test_messages_mixing_every_shape_go_through_the_fast_path_and_mean_the_same_everywhere() -> None:
    raw = fast.encode(_MIXED.now, _MIXED.events)
    assert raw is not None and codec.encode(_MIXED) == raw
    assert fast.decode(raw) == (_MIXED.now, _MIXED.events)
    assert codec.decode_carefully(raw) == _MIXED
    # the schema's reader sees the same fields
    parsed = to_json(load_schema(), raw)["events"]
    assert [e["timestamp"] for e in parsed] == [e["timestamp"] for e in _MIXED.events]
    third = parsed[2]["event"]
    assert (third["job_id"], third["job"]["profile_id"], third["job"]["walltime"]) == ("wörkload!ジョブ🙂", "", 0.5)
    assert parsed[3]["event"]["job"]["resource_request"] == 2**32 - 1 and parsed[3]["event"]["job_id"] == ""
    assert parsed[8]["event"]["allocation"]["host_allocation"] == _MIXED.events[8]["data"]["alloc"]
    assert parsed[11]["event"]["when"]["time"] == 2**40
    # and the schema writer's layout of the same message is left to the careful reader
    assert fast.decode(codec.encode_by_schema(_MIXED)) is None
    assert codec.decode(codec.encode_by_schema(_MIXED)) == _MIXED


def test_the_fast_reader_never_answers_differently_from_the_careful_one_on_mixed_shapes() -> None:
    """As test_batprotocol's test of the same name, on a message of every shape (its
    long strings shortened: the corruptions are exhaustive)."""
    message = Message(9.0, [e for e in _MIXED.events if len(str(e["data"])) < 200])
    raw = codec.encode(message)
    variants = [raw[:n] for n in range(0, len(raw), 3)]
    variants += [raw[:i] + bytes([b]) + raw[i + 1:] for i in range(len(raw)) for b in (0x00, 0xff) if raw[i] != b]
    answered = 0
    for variant in variants:
        usual = fast.decode(variant)
        if usual is not None:
            answered += 1
            assert repr(codec.decode_carefully(variant)) == repr(Message(*usual))
    assert 0 < answered < len(variants)


@pytest.mark.parametrize("event", [
    {**_submitted(1.0, "w0!1", "d1"), "data": {**_submitted(1.0, "w0!1", "d1")["data"],
                                              "profile": {"type": "delay", "delay": 3.0}}},
    _submitted(1.0, "w0!1", "d1") | {"data": {"job_id": "w0!1", "job": {
        "id": "w0!1", "subtime": 1.0, "res": 1, "profile": "d1", "walltime": -1, "user": "alice"}}},
    {"timestamp": 1.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0-1", "mapping": {"0": 1, "1": 0}}},
    {"timestamp": 1.0, "type": "CALL_ME_LATER", "data": {"id": "p", "period": 10.0, "offset": 0.0, "count": None}},
    call_me_later(1.0, 7.5),
    {"timestamp": 1.0, "type": "NOTIFY", "data": {"type": "registration_finished"}},
], ids=["forwarded-profile", "extra-data", "mapping", "periodic", "milliseconds", "other-event"])
def test_the_fast_writer_leaves_what_it_does_not_write_to_the_schema_writer(event: dict[str, Any]) -> None:
    message = Message(1.0, [_completed(1.0, "w0!0"), event])
    assert fast.encode(message.now, message.events) is None
    raw = codec.encode(message)
    assert raw == codec.encode_by_schema(message)
    assert codec.decode(raw).events[0] == message.events[0]


@pytest.mark.parametrize("job, field", [
    ({"id": "w0!1", "subtime": 1.0, "res": -1, "profile": "d1"}, "events[1]"),
    ({"id": "w0!1", "subtime": 1.0, "res": 2**32, "profile": "d1"}, "events[1]"),
    ({"id": "w0!1", "subtime": "soon", "res": 1, "profile": "d1"}, "events[1].data"),
])
def test_values_a_field_cannot_hold_are_refused_naming_the_event(job: dict[str, Any], field: str) -> None:
    message = Message(1.0, [_ENDS, {"timestamp": 1.0, "type": "JOB_SUBMITTED", "data": {"job_id": "w0!1", "job": job}}])
    assert fast.encode(message.now, message.events) is None
    with pytest.raises(ProtocolError, match="cannot encode JOB_SUBMITTED") as caught:
        codec.encode(message)
    assert caught.value.field == field


def test_a_non_finite_timestamp_is_left_to_the_careful_reader() -> None:
    raw = codec.encode(Message(1.0, [_completed(float("nan"), "w0!1")]))
    assert fast.decode(raw) is None
    with pytest.raises(ProtocolError, match="not finite") as caught:
        codec.decode(raw)
    assert caught.value.field == "events[0] (JobCompletedEvent).timestamp"


def test_the_shape_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast, "_MAX_SHAPES", 3)
    monkeypatch.setattr(fast._COMPLETED, "shapes", {})
    monkeypatch.setattr(fast, "_COMPLETED_SHAPES", fast._COMPLETED.shapes)
    events = [_completed(1.0, "j" * n) for n in range(1, 11)]
    raw = fast.encode(1.0, events)
    assert raw is not None and fast.decode(raw) == (1.0, events)
    assert 0 < len(fast._COMPLETED.shapes) <= 3


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_codec_reads_vectors_when_the_runtime_came_with_numpy() -> None:
    """Where numpy is installed, the flatbuffers runtime imports it; vectors still
    read back as lists of Python numbers."""
    pytest.importorskip("numpy")
    out = _python(
        "import numpy, flatbuffers\n"
        "from hpcjobs.batsim_protocol.codecs import get_codec\n"
        "from hpcjobs.batsim_protocol.events import Message, register_profile\n"
        "assert flatbuffers.builder.np is numpy\n"
        "c = get_codec('batprotocol')\n"
        "m = Message(1.0, [register_profile(1.0, 'w', 'p', {'type': 'parallel', 'cpu': [1.0, 2.0], 'com': [0.0] * 4}),\n"
        "  {'timestamp': 1.0, 'type': 'EXECUTE_JOB', 'data': {'job_id': 'w0!1', 'alloc': '0-2',\n"
        "                                                     'mapping': {'0': 0, '1': 2, '2': 1}}}])\n"
        "back = c.decode(c.encode(m))\n"
        "print(back == m, type(back.events[1]['data']['mapping']['1']).__name__)")
    assert out.split() == ["True", "int"]
