"""The legacy text protocol (Batsim < 1.0): every example message of its page
(tests/fixtures/batsim-legacy/examples.txt) decodes to the events the page describes,
and what we write reads back the same; the Unix socket's length-prefixed frames, and
broken ones refused naming protocol, message number and field."""

from __future__ import annotations

import re
import socket
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

from hpcjobs.batsim_protocol import redis_store
from hpcjobs.batsim_protocol.codecs import get_codec
from hpcjobs.batsim_protocol.errors import PeerGone, ProtocolError
from hpcjobs.batsim_protocol.events import Message
from hpcjobs.batsim_protocol.transports import Decoder
from hpcjobs.batsim_protocol.transports.unix import UnixClientEndpoint, UnixServerChannel

EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-legacy" / "examples.txt"
codec = get_codec("legacy")


def _examples() -> dict[str, str]:
    """Title -> message, as the page lists them."""
    out: dict[str, str] = {}
    for block in EXAMPLES.read_text().split("\n## ")[1:]:
        title, *lines = block.splitlines()
        out[title.strip("# ")] = "\n".join(line for line in lines if line.strip())
    return out


def ev(t: float, kind: str, **data: Any) -> dict[str, Any]:
    return {"timestamp": t, "type": kind, "data": data}


# what each example means, in the shared events (the page's own words in the comments)
KNOWN = {
    "Simulation starts": (0.0, [ev(0.0, "SIMULATION_BEGINS")]),
    "Simulation ends": (46.556835, [ev(46.556835, "JOB_COMPLETED", job_id="workload_profiles/test_workload_profile.json!2"),
                                    ev(46.556835, "SIMULATION_ENDS")]),
    "Static Job Submission 1": (10.000015, [ev(10.000015, "JOB_SUBMITTED", job_id="static!1")]),
    "Static Job Submission 2": (13.0, [ev(12.0, "JOB_SUBMITTED", job_id="static!2"),
                                       ev(12.5, "JOB_SUBMITTED", job_id="static!3"),
                                       ev(13.0, "JOB_SUBMITTED", job_id="static!4")]),
    "Static Job Completion 1": (15.836694, [ev(15.836694, "JOB_COMPLETED", job_id="static!1")]),
    "Static Job Completion 2": (40.00132, [ev(25.0, "JOB_COMPLETED", job_id="static!2"),
                                           ev(38.002565, "JOB_COMPLETED", job_id="static!3")]),
    # "tells to put job JID1 ... on machines MID1, ..., MIDn": the order 1,2,0,3 is the
    # executors' placement; several jobs in one event are several decisions
    "Static Job Allocation 1": (15.000015, [
        ev(15.000015, "EXECUTE_JOB", job_id="static!1", alloc="0-3",
           mapping={"0": 1, "1": 2, "2": 0, "3": 3}),
        ev(15.000015, "EXECUTE_JOB", job_id="static!2", alloc="3")]),
    "Static Job Allocation 2": (45.00132, [ev(45.00132, "EXECUTE_JOB", job_id="static!4", alloc="0-3",
                                              mapping={"0": 3, "1": 1, "2": 2, "3": 0})]),
    "NOP 1": (2.0, [ev(2.0, "NOP")]),
    "NOP 2": (42.0, [ev(10.0, "NOP"), ev(20.0, "NOP"), ev(30.0, "NOP"), ev(40.0, "NOP")]),
    "Static Job Rejection": (50.0, [ev(50.0, "REJECT_JOB", job_id="static!5")]),
    "NOP Me Later": (100.0, [ev(100.0, "CALL_ME_LATER", timestamp=142.0)]),
    "NOP Me Later, expected result": (142.000001, [ev(142.000001, "NOP")]),
}
REFUSED = {  # what hpcjobs does not model, refused by name
    "PState Modification Request 1": "power state", "PState Modification Request 2": "power state",
    "PState Modification Acknowledgement 1": "power state",
    "PState Modification Acknowledgement 2": "power state",
    "Ask about energy consumption": "energy mode", "Ask about energy consumption, expected result": "energy mode",
}


def test_the_examples_file_has_every_example_of_the_page() -> None:
    assert set(_examples()) == set(KNOWN) | set(REFUSED)


@pytest.mark.parametrize("title", sorted(KNOWN))
def test_known_answers(title: str) -> None:
    now, events = KNOWN[title]
    msg = codec.decode(_examples()[title].encode())
    assert msg == Message(now, events)
    # what we write of it reads back the same (we write version 3, exact times)
    assert codec.decode(codec.encode(msg)) == msg


@pytest.mark.parametrize("title", sorted(REFUSED))
def test_unmodelled_stamps_are_refused_by_name(title: str) -> None:
    with pytest.raises(ProtocolError, match=REFUSED[title]) as caught:
        codec.decode(_examples()[title].encode())
    assert caught.value.field == "events[0].stamp"


def test_an_empty_reply_is_a_nop() -> None:
    assert codec.encode(Message(7.5, [])) == b"3:7.5|7.5:N"


@pytest.mark.parametrize("raw, field, match", [
    (b"3:1|1:X:foo", "events[0].stamp", "unknown stamp 'X'"),
    (b"2:1|1:A", "events[0].stamp", "needs protocol version 3"),
    (b"0:1|1:n:5", "events[0].stamp", "needs protocol version 1"),
    (b"4:1|1:N", "version", "protocol version 0-3"),
    (b"3:1|1:S:w\xc3\xa9!1", "message", "byte 9 (0xc3) is not ASCII"),
    (b"3:1|1:J:w!1=2-1", "events[0].content", "interval '2-1' is empty"),
    (b"3:1|x:N", "events[0].time", "'x' is not a time"),
    (b"3:1", "events", "no event"),
    (b"3:1|1:A:surprise", "events[0].content", "takes no content"),
])
def test_broken_messages_name_the_field(raw: bytes, field: str, match: str) -> None:
    decoder = Decoder(codec)
    with pytest.raises(ProtocolError, match=re.escape(match)) as caught:
        decoder.decode(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"legacy protocol, message 1, field {field!r}")


def test_unix_socket_frames_and_broken_frames(tmp_path: Path) -> None:
    path = str(tmp_path / "batsim.sock")
    server = UnixServerChannel(path, codec, timeout=10)
    replies: list[Any] = []

    def batsim() -> None:
        try:
            replies.append(server.exchange(Message(0.0, [ev(0.0, "SIMULATION_BEGINS")])))
            replies.append(server.exchange(Message(1.0, [ev(1.0, "JOB_SUBMITTED", job_id="w!1")])))
        except Exception as e:  # the test looks at it below
            replies.append(e)

    thread = threading.Thread(target=batsim)
    thread.start()
    client = UnixClientEndpoint(path, codec)
    assert client.receive(lambda: None) == Message(0.0, [ev(0.0, "SIMULATION_BEGINS")])
    client.send(Message(0.0, []))
    assert client.receive(lambda: None).events[0]["data"] == {"job_id": "w!1"}
    # a frame cut inside its 32-bit length prefix, then the connection ends
    client._sock.sendall(struct.pack("=I", 40)[:2])
    client._sock.shutdown(socket.SHUT_WR)
    thread.join(10)
    client.close()
    server.close()
    assert replies[0] == Message(0.0, [ev(0.0, "NOP")])
    error = replies[1]
    assert isinstance(error, ProtocolError) and error.field == "length prefix"
    assert str(error).startswith("legacy protocol, message 2, field 'length prefix': the connection "
                                 "ended after 2 of the 4 bytes")


def test_a_peer_that_leaves_between_messages_is_gone(tmp_path: Path) -> None:
    path = str(tmp_path / "batsim.sock")
    server = UnixServerChannel(path, codec, timeout=10)
    errors: list[Exception] = []

    def batsim() -> None:
        try:
            server.exchange(Message(0.0, [ev(0.0, "SIMULATION_BEGINS")]))
        except Exception as e:
            errors.append(e)

    thread = threading.Thread(target=batsim)
    thread.start()
    client = UnixClientEndpoint(path, codec)
    client.receive(lambda: None)
    client.close()
    thread.join(10)
    server.close()
    assert len(errors) == 1 and isinstance(errors[0], PeerGone)


def test_job_data_travel_through_redis_and_a_missing_key_is_named(tmp_path: Path, redis_url: str) -> None:
    path = str(tmp_path / "batsim.sock")
    client = redis_store.connect(redis_url)
    prefix = redis_store.prefix_for(path)
    server = redis_store.PublishingChannel(UnixServerChannel(path, codec, timeout=10), client, prefix)
    job = {"id": "w!1", "subtime": 0.0, "res": 2, "profile": "p", "walltime": 30}
    errors: list[Exception] = []

    def batsim() -> None:
        try:
            server.exchange(Message(0.0, [ev(0.0, "SIMULATION_BEGINS", nb_compute_resources=4)]))
            server.exchange(Message(1.0, [ev(1.0, "JOB_SUBMITTED", job_id="w!1", job=job,
                                             profile={"type": "delay", "delay": 5})]))
            client.delete(prefix + "job_w!2")
            server._inner.exchange(Message(2.0, [ev(2.0, "JOB_SUBMITTED", job_id="w!2")]))  # unpublished
        except Exception as e:
            errors.append(e)

    thread = threading.Thread(target=batsim)
    thread.start()
    dp = redis_store.ReadingEndpoint(UnixClientEndpoint(path, codec), client, prefix)
    begins = dp.receive(lambda: None).events[0]["data"]
    assert begins["nb_compute_resources"] == 4 and [r["id"] for r in begins["compute_resources"]] == [0, 1, 2, 3]
    dp.send(Message(0.0, []))
    submitted = dp.receive(lambda: None).events[0]["data"]
    assert submitted["job"] == job and submitted["profile"] == {"type": "delay", "delay": 5}
    assert client.get(prefix + "job_w!1") is not None and client.get(prefix + "nb_res") == b"4"
    dp.send(Message(1.0, []))
    with pytest.raises(ProtocolError, match=re.escape(f"did not set '{prefix}job_w!2'")):
        dp.receive(lambda: None)
    dp.close()
    thread.join(10)
    server.close()
    client.delete(*client.keys(prefix.replace("[", "\\[") + "*"))


@pytest.mark.parametrize("job_id, job, document", [
    # the specification's example: the job number as a number, every required key
    ("w!1", {"id": "w!1", "subtime": 10, "walltime": 100, "res": 4, "profile": "2"},
     {"id": 1, "subtime": 10, "walltime": 100, "res": 4, "profile": "2"}),
    # no walltime in the workload: -1, Batsim's "none"; other keys follow the required ones
    ("w!7", {"id": "w!7", "subtime": 0.5, "res": 1, "profile": "p", "user": "a"},
     {"id": 7, "subtime": 0.5, "walltime": -1, "res": 1, "profile": "p", "user": "a"}),
    # a named job has no number: its name
    ("w!j1", {"id": "w!j1", "subtime": 0, "res": 1, "profile": "p", "walltime": 5.0},
     {"id": "j1", "subtime": 0, "walltime": 5.0, "res": 1, "profile": "p"}),
    ("w!007", {"id": "w!007", "subtime": 0, "res": 1, "profile": "p"},
     {"id": "007", "subtime": 0, "walltime": -1, "res": 1, "profile": "p"}),
])
def test_job_documents_in_redis_hold_what_the_specification_requires(
        tmp_path: Path, redis_url: str, job_id: str, job: dict[str, Any], document: dict[str, Any]) -> None:
    """Read as a decision process written from the data-storage page would: the raw
    ``job_<id>`` key, with id, subtime, walltime, res and profile; our own reading end
    gives the job back as the JSON protocol has it."""
    import json

    path = str(tmp_path / "batsim.sock")
    client = redis_store.connect(redis_url)
    prefix = redis_store.prefix_for(path)
    server = redis_store.PublishingChannel(UnixServerChannel(path, codec, timeout=10), client, prefix)
    thread = threading.Thread(target=lambda: server.exchange(
        Message(1.0, [ev(1.0, "JOB_SUBMITTED", job_id=job_id, job=job, profile={"type": "delay", "delay": 1})])))
    thread.start()
    dp = redis_store.ReadingEndpoint(UnixClientEndpoint(path, codec), client, prefix)
    try:
        submitted = dp.receive(lambda: None).events[0]["data"]
        raw = json.loads(client.get(f"{prefix}job_{job_id}"))
        assert raw == document and list(raw)[:5] == ["id", "subtime", "walltime", "res", "profile"]
        assert submitted["job"] == job
        dp.send(Message(1.0, []))
    finally:
        dp.close()
        thread.join(10)
        server.close()
        client.delete(*client.keys(prefix.replace("[", "\\[") + "*"))
