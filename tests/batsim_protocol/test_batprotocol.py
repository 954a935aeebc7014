"""batprotocol (Batsim 5): every message of a recorded real Batsim run survives the binary
codec, what the codec writes is what flatc reads with the committed schema, the schema's
documented defaults are read as the schema says, and broken buffers (built here with the
flatbuffers runtime's own builder) are refused naming the protocol, the message number
and the field."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any, Callable

import flatbuffers
import pytest

from hpcjobs.batsim_protocol.codecs import batprotocol_fast as fast
from hpcjobs.batsim_protocol.codecs import get_codec
from hpcjobs.batsim_protocol.codecs.batprotocol_schema import SCHEMA_FILE, load_schema, scalar_code, to_json
from hpcjobs.batsim_protocol.errors import ProtocolError
from hpcjobs.batsim_protocol.events import Message, call_me_later, edc_hello
from hpcjobs.batsim_protocol.transports import Decoder

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "fixtures" / "batsim-4.2.1" / "dynack" / "trace.jsonl"
IN_CI = os.environ.get("CI", "").lower() == "true"

codec = get_codec("batprotocol")


def _flatc_json(tmp_path: Path, raw: bytes) -> Any:
    """flatc's reading of ``raw`` with the committed schema (it verifies the buffer)."""
    if shutil.which("flatc") is None:
        if IN_CI:
            pytest.fail("flatc (Debian package flatbuffers-compiler) is needed under CI=true")
        pytest.skip("flatc (Debian package flatbuffers-compiler) is not installed")
    (tmp_path / "m.bin").write_bytes(raw)
    subprocess.run(["flatc", "--json", "--strict-json", "--defaults-json", "--raw-binary", "-o", str(tmp_path),
                    str(SCHEMA_FILE), "--", str(tmp_path / "m.bin")], check=True, capture_output=True)
    return json.loads((tmp_path / "m.json").read_text())


def test_flatc_reads_both_layouts_as_the_schema_reader_does(tmp_path: Path) -> None:
    """The schema is the one description of the layout: flatc, given the committed
    schema, reads the hot path's blocks and the schema writer's tables as ours does
    (test_batprotocol_json.py does the same for every message of a real run)."""
    for raw in (codec.encode(_PER_JOB), codec.encode_by_schema(_PER_JOB)):
        assert _flatc_json(tmp_path, raw) == to_json(load_schema(), raw)


def _normalised(event: dict[str, Any]) -> dict[str, Any]:
    """A JSON-protocol event as batprotocol can carry it (what batprotocol lacks or
    states differently: JOB_COMPLETED has no alloc, a job without walltime says -1, a
    call has an id, SIMULATION_BEGINS has no sharing flags and describes hosts)."""
    data = json.loads(json.dumps(event["data"]))
    kind = event["type"]
    if kind == "JOB_COMPLETED":
        del data["alloc"]
    if kind in ("JOB_SUBMITTED", "REGISTER_JOB"):
        data["job"].setdefault("walltime", -1)
    if kind == "CALL_ME_LATER":
        data["id"] = ""
    if kind == "REQUESTED_CALL":
        data.update(id="", last_periodic_call=False)
    if kind == "SIMULATION_BEGINS":
        for key in ("allow_compute_sharing", "allow_storage_sharing"):
            del data[key]
        data["batsim_version"], data["batsim_arguments"] = "hpcjobs.sim", []
        for r in data["compute_resources"]:
            r.update(core_count=1, computation_speed=[])
    return {"timestamp": event["timestamp"], "type": kind, "data": data}


def test_every_message_of_a_real_batsim_run_survives_the_codec() -> None:
    trace = [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]
    kinds = set()
    for entry in trace:
        msg = entry["msg"]
        back = codec.decode(codec.encode(Message(msg["now"], msg["events"])))
        assert back.now == msg["now"]
        assert back.events == [_normalised(e) for e in msg["events"]]
        kinds.update(e["type"] for e in msg["events"])
    assert {"SIMULATION_BEGINS", "REGISTER_PROFILE", "REGISTER_JOB", "JOB_SUBMITTED", "EXECUTE_JOB",
            "JOB_COMPLETED", "CALL_ME_LATER", "REQUESTED_CALL", "NOTIFY", "SIMULATION_ENDS"} <= kinds


# union members, slots and enum values as schema/batprotocol.fbs numbers them (written
# out here, not taken from the schema reader, so that these buffers test it)
JOB_COMPLETED, CREATE_PROBE, CALL_ME_LATER, REQUESTED_CALL, SIMULATION_BEGINS = 2, 9, 14, 15, 18
ONE_SHOT, MILLISECOND = 1, 1


def _message(add_event: Callable[[flatbuffers.Builder], tuple[int, int]], now: float = 3.0) -> bytes:
    """A buffer built with the flatbuffers runtime's builder, fields left out on purpose."""
    b = flatbuffers.Builder(64)
    kind, table = add_event(b)
    b.StartObject(3)  # EventAndTimestamp: timestamp, event_type, event
    b.PrependFloat64Slot(0, now, 0.0)
    b.PrependUint8Slot(1, kind, 0)
    b.PrependUOffsetTRelativeSlot(2, table, 0)
    item = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(item)
    events = b.EndVector()
    b.StartObject(2)  # Message: now, events
    b.PrependFloat64Slot(0, now, 0.0)
    b.PrependUOffsetTRelativeSlot(1, events, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def _one_shot_in_ms(b: flatbuffers.Builder) -> tuple[int, int]:
    name = b.CreateString("tick")
    b.StartObject(2)  # OneShot: time, time_unit
    b.PrependUint64Slot(0, 4500, 0)
    b.PrependInt8Slot(1, MILLISECOND, 0)
    when = b.EndObject()
    b.StartObject(3)  # CallMeLaterEvent: call_me_later_id, when_type, when
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependUint8Slot(1, ONE_SHOT, 0)
    b.PrependUOffsetTRelativeSlot(2, when, 0)
    return CALL_ME_LATER, b.EndObject()


def _completed_without_state(b: flatbuffers.Builder) -> tuple[int, int]:
    job_id = b.CreateString("w0!1")
    b.StartObject(3)  # JobCompletedEvent: job_id, state, return_code
    b.PrependUOffsetTRelativeSlot(0, job_id, 0)
    return JOB_COMPLETED, b.EndObject()


def _requested_call_without_flag(b: flatbuffers.Builder) -> tuple[int, int]:
    name = b.CreateString("tick")
    b.StartObject(2)  # RequestedCallEvent: call_me_later_id, last_periodic_call
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    return REQUESTED_CALL, b.EndObject()


@pytest.mark.parametrize("build, expected", [
    # "time_unit: TimeUnit = Second" is only a default: milliseconds are honoured
    (_one_shot_in_ms, {"type": "CALL_ME_LATER", "data": {"id": "tick", "timestamp": 4.5}}),
    # "state: FinalJobState" defaults to its first value, "return_code: int32 = 0"
    (_completed_without_state, {"type": "JOB_COMPLETED", "data": {
        "job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0}}),
    # "last_periodic_call: bool = false"
    (_requested_call_without_flag, {"type": "REQUESTED_CALL", "data": {
        "id": "tick", "last_periodic_call": False}}),
])
def test_schema_defaults(build: Callable[[flatbuffers.Builder], tuple[int, int]],
                         expected: dict[str, Any]) -> None:
    (event,) = codec.decode(_message(build)).events
    assert event == {"timestamp": 3.0, **expected}


def test_times_go_out_in_seconds_or_rounded_up_milliseconds() -> None:
    for when, unit, value in [(7.0, "Second", 7), (7.0015, "Millisecond", 7002)]:
        raw = codec.encode(Message(1.0, [call_me_later(1.0, when)]))
        call = to_json(load_schema(), raw)["events"][0]["event"]
        assert (call["when"]["time_unit"], call["when"]["time"]) == (unit, value)


def test_periodic_calls_round_trip() -> None:
    for count in (3, None):
        event = {"timestamp": 2.0, "type": "CALL_ME_LATER",
                 "data": {"id": "p", "period": 10.0, "offset": 5.0, "count": count}}
        assert codec.decode(codec.encode(Message(2.0, [event]))).events == [event]


def test_hello_round_trip() -> None:
    hello = edc_hello(0.0, dynamic_registration=True, acknowledge_dynamic_jobs=True)
    (event,) = codec.decode(codec.encode(Message(0.0, [hello]))).events
    assert event["type"] == "EDC_HELLO"
    features = event["data"]["requested_simulation_features"]
    assert features["dynamic_registration"] and features["acknowledge_dynamic_jobs"]
    assert not features["forward_profiles_on_simulation_begins"]


def _probe(b: flatbuffers.Builder) -> tuple[int, int]:
    b.StartObject(10)
    return CREATE_PROBE, b.EndObject()


def _no_job_id(b: flatbuffers.Builder) -> tuple[int, int]:
    b.StartObject(3)
    return JOB_COMPLETED, b.EndObject()


def _bad_utf8(b: flatbuffers.Builder) -> tuple[int, int]:
    job_id = b.CreateString(b"w0!\xff")
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, job_id, 0)
    return JOB_COMPLETED, b.EndObject()


def _unknown_type(b: flatbuffers.Builder) -> tuple[int, int]:
    b.StartObject(3)
    return 200, b.EndObject()


@pytest.mark.parametrize("raw, field, match", [
    (_message(_probe), "events[0] (CreateProbeEvent)", "CreateProbeEvent is not modelled"),
    (_message(_no_job_id), "events[0] (JobCompletedEvent).job_id", "required field 'job_id' is missing"),
    (_message(_bad_utf8), "events[0] (JobCompletedEvent)", "not UTF-8"),
    (_message(_unknown_type), "events[0]", "unknown event type 200"),
    (b"\x01\x02", "message", "too short"),
    (b"\xff\xff\x00\x00" + bytes(8), "message", "an offset leaves the buffer"),
    (_message(_completed_without_state)[:-12], "events[0] (JobCompletedEvent).job_id", "fails verification"),
], ids=["probe", "required", "utf8", "union", "short", "root", "truncated"])
def test_broken_buffers_are_refused_naming_the_field(raw: bytes, field: str, match: str) -> None:
    decoder = Decoder(codec)
    decoder.decode(_message(_requested_call_without_flag))
    with pytest.raises(ProtocolError, match=match) as caught:
        decoder.decode(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"batprotocol protocol, message 2, field {field!r}: ")


def test_events_batprotocol_lacks_are_refused_when_sending() -> None:
    notify = {"timestamp": 0.0, "type": "NOTIFY", "data": {"type": "continue_registration"}}
    with pytest.raises(ProtocolError, match="continue_registration"):
        codec.encode(Message(0.0, [notify]))
    with pytest.raises(ProtocolError, match="batprotocol has no event QUERY"):
        codec.encode(Message(0.0, [{"timestamp": 0.0, "type": "QUERY", "data": {}}]))


def test_the_hot_path_and_the_schema_writer_agree() -> None:
    """The per-job events are written by the hot path (batprotocol_fast) in their own
    layout: the schema's reader reads them field by field as the schema says."""
    events = [
        {"timestamp": 1.5, "type": "JOB_SUBMITTED", "data": {"job_id": "w0!7", "job": {
            "id": "w0!7", "subtime": 1.5, "res": 3, "profile": "d12", "walltime": 60.0}}},
        {"timestamp": 1.5, "type": "JOB_SUBMITTED", "data": {"job_id": "w0!8", "job": {
            "id": "w0!8", "subtime": 1.5, "res": 1, "profile": "d1", "walltime": -1}}},
        {"timestamp": 2.0, "type": "JOB_COMPLETED", "data": {
            "job_id": "w0!5", "job_state": "COMPLETED_WALLTIME_REACHED", "return_code": -1}},
        {"timestamp": 2.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!7", "alloc": "0-2"}},
        {"timestamp": 2.0, "type": "REQUESTED_CALL", "data": {"id": "tick", "last_periodic_call": True}},
        {"timestamp": 2.0, "type": "SIMULATION_ENDS", "data": {}},
    ]
    message = Message(2.0, events)
    hot = codec.encode(message)
    by_schema = codec.encode_by_schema(message)
    assert hot != by_schema  # two layouts...
    assert codec.decode(hot) == codec.decode(by_schema) == codec.decode_carefully(hot) == message  # one meaning
    parsed = to_json(load_schema(), hot)
    assert parsed["now"] == 2.0 and [e["event_type"] for e in parsed["events"]] == [
        "JobSubmittedEvent", "JobSubmittedEvent", "JobCompletedEvent", "ExecuteJobEvent", "RequestedCallEvent",
        "SimulationEndsEvent"]
    first = parsed["events"][0]["event"]
    assert (first["job_id"], first["job"]["resource_request"], first["job"]["walltime"], first["job"]["profile_id"],
            first["submission_time"]) == ("w0!7", 3, 60.0, "d12", 1.5)
    assert parsed["events"][1]["event"]["job"]["walltime"] is None
    assert parsed["events"][2]["event"]["state"] == "COMPLETED_WALLTIME_REACHED"
    assert parsed["events"][3]["event"]["allocation"]["host_allocation"] == "0-2"
    assert parsed["events"][4]["event"]["last_periodic_call"] is True


_PER_JOB = Message(2.0, [
    {"timestamp": 1.5, "type": "JOB_SUBMITTED", "data": {"job_id": "w0!7", "job": {
        "id": "w0!7", "subtime": 1.5, "res": 3, "profile": "d12", "walltime": 60.0}}},
    {"timestamp": 2.0, "type": "JOB_COMPLETED", "data": {
        "job_id": "w0!5", "job_state": "COMPLETED_KILLED", "return_code": -9}},
    {"timestamp": 2.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!7", "alloc": "0-2"}},
    {"timestamp": 2.0, "type": "CALL_ME_LATER", "data": {"id": "", "timestamp": 30.0}},
    {"timestamp": 2.0, "type": "REQUESTED_CALL", "data": {"id": "tick", "last_periodic_call": False}},
    {"timestamp": 2.0, "type": "SIMULATION_ENDS", "data": {}},
])


def test_the_fast_reader_never_answers_differently_from_the_careful_one() -> None:
    """Every truncation and every one-byte corruption of a message of the per-job
    events: when the fast path answers, the careful reader (which refuses broken
    buffers naming the field) gives the same answer; otherwise it decides alone."""
    raw = codec.encode(_PER_JOB)
    assert fast.decode(raw) == (_PER_JOB.now, _PER_JOB.events)
    variants = [raw[:n] for n in range(len(raw))]
    variants += [raw[:i] + bytes([b]) + raw[i + 1:] for i in range(len(raw)) for b in (0x00, 0x7f, 0xff)
                 if raw[i] != b]
    answered = 0
    for variant in variants:
        usual = fast.decode(variant)
        if usual is None:
            continue
        answered += 1
        assert repr(codec.decode_carefully(variant)) == repr(Message(*usual))  # repr: NaN is NaN
    assert 0 < answered < len(variants)  # padding and values change; offsets do not pass


def test_the_fast_reader_reads_its_own_blocks_and_leaves_other_layouts_to_the_careful_one() -> None:
    """Blocks as the fast writer lays them out are recognised whole (one unpack of their
    tables); the schema writer's layout (as flatc's or Batsim 5's) is not, and the
    careful reader reads it the same."""
    assert fast.decode(codec.encode(_PER_JOB)) == (_PER_JOB.now, _PER_JOB.events)
    by_schema = codec.encode_by_schema(_PER_JOB)
    assert fast.decode(by_schema) is None
    assert codec.decode(by_schema) == _PER_JOB


def test_the_fast_writer_is_read_by_the_schema_reader() -> None:
    raw = codec.encode(_PER_JOB)
    assert raw != codec.encode_by_schema(_PER_JOB)
    call = to_json(load_schema(), raw)["events"][3]["event"]
    assert (call["call_me_later_id"], call["when_type"], call["when"]["time"], call["when"]["time_unit"]) == (
        "", "OneShot", 30, "Second")
    assert codec.decode_carefully(raw) == _PER_JOB


_HOSTS = [{"id": 0, "name": "node0", "state": "computing", "properties": {"role": "compute", "rack": "r1"},
           "zone_properties": {"zone": "z0"}, "core_count": 16, "computation_speed": [1e9, 5e8]},
          {"id": 1, "name": "ñode1", "state": "idle", "properties": {}, "zone_properties": {},
           "core_count": 1, "computation_speed": [2e9]}]


def test_simulation_begins_hosts_round_trip_and_a_nameless_host_is_refused() -> None:
    """The hosts of SimulationBegins as the schema's reader sees them, and a required
    field missing is named with the host's index."""
    begins = {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 2, "nb_compute_resources": 2, "nb_storage_resources": 0,
        "compute_resources": _HOSTS, "storage_resources": [], "config": {"a": 1},
        "batsim_version": "hpcjobs.sim", "batsim_arguments": [], "workloads": {"w0": "w.json"}}}
    raw = codec.encode(Message(0.0, [begins]))
    assert codec.decode(raw) == Message(0.0, [begins])
    hosts = to_json(load_schema(), raw)["events"][0]["event"]["computation_hosts"]
    assert [(h["id"], h["name"], h["core_count"], h["computation_speed"], h["state"],
             {p["key"]: p["value"] for p in h["properties"]}) for h in hosts] == [
        (h["id"], h["name"], h["core_count"], h["computation_speed"], str(h["state"]).upper(), h["properties"])
        for h in _HOSTS]

    def nameless_host(b: flatbuffers.Builder) -> tuple[int, int]:
        strings = [b.CreateString(text) for text in ("0.1.0", "hpcjobs.sim", "{}")]
        b.StartVector(8, 0, 8)
        speeds = b.EndVector()
        b.StartObject(9)  # Host: name (slot 1) left out
        b.PrependUOffsetTRelativeSlot(8, speeds, 0)
        host = b.EndObject()
        b.StartVector(4, 1, 4)
        b.PrependUOffsetTRelative(host)
        hosts = b.EndVector()
        empty = []
        for _ in range(4):  # storage hosts, arguments, workloads, external event lists
            b.StartVector(4, 0, 4)
            empty.append(b.EndVector())
        b.StartObject(13)  # SimulationBeginsEvent
        for slot, offset in zip((0, 1, 9, 5, 7, 8, 10, 11), (*strings, hosts, *empty)):
            b.PrependUOffsetTRelativeSlot(slot, offset, 0)
        return SIMULATION_BEGINS, b.EndObject()

    with pytest.raises(ProtocolError, match="required field") as caught:
        codec.decode(_message(nameless_host))
    assert caught.value.field == "events[0] (SimulationBeginsEvent).computation_hosts[0].name"


def _misaligned(raw: bytes) -> list[str]:
    """What a C++ FlatBuffers verifier (Batsim 5's) would refuse as misaligned: tables
    and vectors on 4 bytes, vtables on 2, every scalar on its own size (flatc, which
    reads unaligned data on this machine, does not check it)."""
    schema = load_schema()
    sizes = {"?": 1, "b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}
    found = []

    def u32(at: int) -> int:
        value: int = struct.unpack_from("<I", raw, at)[0]
        return value

    def table(name: str, pos: int, where: str) -> None:
        vtable = pos - struct.unpack_from("<i", raw, pos)[0]
        if pos % 4 or vtable % 2:
            found.append(where)
        slots = (struct.unpack_from("<H", raw, vtable)[0] - 4) // 2
        types: dict[str, int] = {}
        for f in schema.tables[name]:
            rel = struct.unpack_from("<H", raw, vtable + 4 + 2 * f.slot)[0] if f.slot < slots else 0
            code = scalar_code(schema, f)
            if rel and (pos + rel) % sizes.get(code, 4):
                found.append(f"{where}.{f.name}")
            if not rel or code != "o":
                types[f.name] = struct.unpack_from("<B", raw, pos + rel)[0] if rel and code == "B" else 0
                continue
            target = pos + rel + u32(pos + rel)
            if f.kind == "table":
                table(f.of, target, f"{where}.{f.name}")
            elif f.kind == "union":
                table(schema.unions[f.of][types[f"{f.name}_type"] - 1], target, f"{where}.{f.name}")
            elif target % 4:
                found.append(f"{where}.{f.name}")  # a string or a vector's count
            elif f.kind == "vector" and f.of in schema.tables:
                for i in range(u32(target)):
                    at = target + 4 + 4 * i
                    table(f.of, at + u32(at), f"{where}.{f.name}[{i}]")
            elif f.kind == "vector" and f.of != "string":
                element = schema.enums[f.of][0] if f.of in schema.enums else f.of
                if (target + 4) % struct.calcsize("<" + {"float64": "d", "uint64": "Q", "int64": "q"}.get(element, "B")):
                    found.append(f"{where}.{f.name}")

    table(schema.root, u32(0), "message")
    return found


def test_both_writers_align_what_a_verifier_checks() -> None:
    profiles = {"w": {"p": {"type": "parallel", "cpu": [1.0, 2.0], "com": [0.0] * 4},
                      "c": {"type": "composed", "seq": ["p", "p"], "repeat": 2}}}
    begins = {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 2, "nb_compute_resources": 2, "nb_storage_resources": 0, "compute_resources": _HOSTS,
        "storage_resources": [], "config": {"a": 1}, "batsim_version": "v", "batsim_arguments": ["-q"],
        "workloads": {"w0": "w.json"}, "profiles": profiles}}
    odd = Message(1.0, [begins, edc_hello(0.0, dynamic_registration=True), call_me_later(1.0, 7.5),
                        {"timestamp": 1.0, "type": "EXECUTE_JOB", "data": {"job_id": "x", "alloc": "0-1",
                                                                            "mapping": {"0": 1, "1": 0}}}])
    for message in (_PER_JOB, odd):
        for raw in (codec.encode(message), codec.encode_by_schema(message)):
            assert _misaligned(raw) == []
