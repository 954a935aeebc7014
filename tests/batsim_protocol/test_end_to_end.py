"""One static workload, one scheduler, every protocol: the standalone decision process
(``python -m hpcjobs.executors.batsim.decide``, FCFS) against ``hpcjobs.sim`` gives the
same ``_jobs.csv`` whatever the protocol, and the same as the recorded real Batsim 4.2.1
run of that workload (fixtures/batsim-4.2.1/zl, JSON, zero-latency platform, where
times are exact). With a real Batsim 4.2.1 on PATH, it also drives that Batsim live.
A broken message ends both processes with a message naming protocol, message and field.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import zmq

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState
from hpcjobs.batsim_protocol.codecs import NAMES, get_codec
from hpcjobs.batsim_protocol.events import Message, edc_hello
from hpcjobs.executors.batsim import BatsimExecutorConfig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1"
INPUTS = FIXTURES / "inputs"
PLATFORM = INPUTS / "zero_latency_platform.xml"
WORKLOAD = INPUTS / "wl_mixed.json"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _endpoint(tmp_path: Path, protocol: str) -> str:
    # legacy: Batsim serves a Unix socket at this path; the others: ZeroMQ ipc://
    path = f"{tmp_path}/{protocol}.sock"
    return path if protocol == "legacy" else f"ipc://{path}"


def _decide(endpoint: str, protocol: str, scheduler: str = "fcfs", redis: str = "") -> "subprocess.Popen[str]":
    extra = ["--redis-url", redis] if protocol == "legacy" else []
    return subprocess.Popen([sys.executable, "-m", "hpcjobs.executors.batsim.decide", "-s", endpoint,
                             "--protocol", protocol, "--scheduler", scheduler, "-q", "--timeout", "60",
                             *extra], stderr=subprocess.PIPE, text=True)


def _simulate(simulator: list[str], endpoint: str, prefix: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*simulator, "-p", str(PLATFORM), "-w", str(WORKLOAD), "-s", endpoint,
                           "-e", str(prefix)], capture_output=True, text=True, timeout=120)


def _ours(protocol: str, redis: str) -> list[str]:
    extra = ["--redis-url", redis] if protocol == "legacy" else []
    return [sys.executable, "-m", "hpcjobs.sim", "-q", "--protocol", protocol, *extra]


def _run(tmp_path: Path, protocol: str, simulator: list[str], scheduler: str = "fcfs", redis: str = "") -> str:
    endpoint = _endpoint(tmp_path, protocol)
    dp = _decide(endpoint, protocol, scheduler, redis)
    sim = _simulate(simulator, endpoint, tmp_path / protocol)
    _, err = dp.communicate(timeout=60)
    assert sim.returncode == 0, sim.stderr
    assert dp.returncode == 0, err
    return (tmp_path / f"{protocol}_jobs.csv").read_text()


@pytest.fixture(params=NAMES)
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def redis(protocol: str, request: pytest.FixtureRequest) -> str:
    """The Redis URL the legacy protocol needs ('' for the others)."""
    return str(request.getfixturevalue("redis_url")) if protocol == "legacy" else ""


def test_same_jobs_whatever_the_protocol(tmp_path: Path, protocol: str, redis: str) -> None:
    jobs = _run(tmp_path, protocol, _ours(protocol, redis), redis=redis)
    assert jobs == (FIXTURES / "zl" / "out_jobs.csv").read_text()


def test_easy_backfilling_is_the_same_whatever_the_protocol(tmp_path: Path, protocol: str, redis: str) -> None:
    jobs = _run(tmp_path, protocol, _ours(protocol, redis), "easy", redis)
    reference = jobs
    if protocol != "json":
        (tmp_path / "json").mkdir()
        reference = _run(tmp_path / "json", "json", _ours("json", ""), "easy")
    assert jobs == reference and jobs.count("\n") == 7


def test_real_batsim_4_2_1_gives_the_same_jobs(tmp_path: Path) -> None:
    batsim = shutil.which("batsim")
    if batsim is None:
        if IN_CI:
            pytest.fail("real Batsim 4.2.1 is needed under CI=true (scripts/test.sh installs it)")
        pytest.skip("no real batsim on PATH")
    assert _run(tmp_path, "json", [batsim]) == (FIXTURES / "zl" / "out_jobs.csv").read_text()


@pytest.mark.parametrize("protocol, garbage, field", [
    ("json", b'{"now": 0, "events": [{"timestamp": 0, "type": "EXECUTE_JOB", "data": 3}]}',
     "events[0].data"),
    ("json", b'{"now": 0, "events": ["\xff"]}', "message"),
    ("batprotocol", b"\x04\x00\x00\x00garbage!", "message"),
    ("batprotocol_json", b'{"now": 0, "events": [{"event_type": "RejectJobEvent", "event": {"job": 1}}]}',
     "events[0].event.job"),
])
def test_a_broken_reply_ends_the_simulation_naming_where(tmp_path: Path, protocol: str, garbage: bytes,
                                                         field: str) -> None:
    endpoint = f"ipc://{tmp_path}/bad.sock"
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(endpoint)
    codec = get_codec(protocol)
    sim = subprocess.Popen([sys.executable, "-m", "hpcjobs.sim", "-q", "--protocol", protocol, "-p",
                            str(PLATFORM), "-w", str(WORKLOAD), "-s", endpoint, "-e", str(tmp_path / "o")],
                           stderr=subprocess.PIPE, text=True)
    try:
        assert sock.poll(30_000)
        first = codec.decode(sock.recv())
        number = 1  # the replies the simulator has received, this one included
        if codec.hello:
            sock.send(codec.encode(Message(first.now, [edc_hello(first.now)])))
            assert sock.poll(30_000)
            codec.decode(sock.recv())
            number = 2
        sock.send(garbage)
        _, err = sim.communicate(timeout=30)
        assert sim.returncode == 3
        assert f"{codec.name} protocol, message {number}, field" in err, err
        assert field in err and "Traceback" not in err, err
        if codec.hello:
            # Batsim 5 tells the decision process why it stops: a clean end for it too
            assert sock.poll(5_000)
            (event,) = codec.decode(sock.recv()).events
            assert event["type"] == "SIMULATION_ERROR" and field in event["data"]["error"]
    finally:
        if sim.poll() is None:
            sim.kill()
        sock.close(linger=0)
        ctx.term()


@pytest.mark.parametrize("frame, field", [
    (struct.pack("=I", 12)[:3], "length prefix"),  # cut inside the 32-bit length prefix
    (struct.pack("=I", 7) + b"3:0|0:X", "events[0].stamp"),  # unknown stamp
    (struct.pack("=I", 10) + b"3:0|0:S:\xff", "message"),  # not ASCII
    (struct.pack("=I", 7) + b"2:0|0:Z", "events[0].stamp"),  # Z is not in version 2
], ids=["prefix", "stamp", "ascii", "version"])
def test_a_broken_legacy_frame_ends_the_simulation_naming_where(tmp_path: Path, redis_url: str, frame: bytes,
                                                                field: str) -> None:
    path = tmp_path / "legacy.sock"
    sim = subprocess.Popen([*_ours("legacy", redis_url), "-p", str(PLATFORM), "-w", str(WORKLOAD),
                            "-s", str(path), "-e", str(tmp_path / "o")], stderr=subprocess.PIPE, text=True)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client.connect(str(path))
                break
            except OSError:
                assert time.monotonic() < deadline and sim.poll() is None, "the simulator did not listen"
                time.sleep(0.05)
        client.settimeout(30)
        (size,) = struct.unpack("=I", client.recv(4))
        assert client.recv(size).endswith(b":A")  # SIMULATION_BEGINS
        client.sendall(frame)
        client.shutdown(socket.SHUT_WR)
        _, err = sim.communicate(timeout=30)
        assert sim.returncode == 3, err
        assert f"legacy protocol, message 1, field {field!r}" in err and "Traceback" not in err, err
        assert not path.exists()  # the socket file is removed on the way out
    finally:
        client.close()
        if sim.poll() is None:
            sim.kill()


def _executor_run(tmp_path: Path, protocol: str) -> str:
    """PSI/J jobs through the Batsim executor (virtual time): sleeps, a failing command,
    a cancelled job."""
    ex = JobExecutor.get_instance("batsim", config=BatsimExecutorConfig(
        protocol=protocol, virtual_time=True, hosts=3, simulator="hpcjobs.sim",
        work_directory=tmp_path / protocol))
    jobs = [Job(JobSpec(executable="/bin/sleep", arguments=[str(10 + i)],
                        attributes=JobAttributes(duration=timedelta(seconds=100)))) for i in range(5)]
    jobs.append(Job(JobSpec(executable="/bin/false", attributes=JobAttributes(duration=timedelta(seconds=100)))))
    for job in jobs:
        ex.submit(job)
    jobs[4].cancel()
    states = [job.wait(timeout=timedelta(seconds=60)) for job in jobs]
    ex.close()
    assert [(s.state, s.exit_code) for s in states if s is not None] == [
        (JobState.COMPLETED, 0)] * 4 + [(JobState.CANCELED, None), (JobState.FAILED, 1)]
    prefix = ex.export_prefix
    assert prefix is not None and jobs[0].native_id is not None
    # the workload is named after the run (native ids are unique per simulation)
    workload = jobs[0].native_id.split("!")[0]
    return Path(f"{prefix}_jobs.csv").read_text().replace(workload, "<workload>")


def test_the_executor_gives_the_same_jobs_on_every_protocol_with_dynamic_jobs(tmp_path: Path) -> None:
    reference = _executor_run(tmp_path, "json")
    assert _executor_run(tmp_path, "batprotocol") == reference
    assert _executor_run(tmp_path, "batprotocol_json") == reference


def test_the_executor_refuses_the_legacy_protocol() -> None:
    with pytest.raises(ValueError, match="hpcjobs-schedule"):
        BatsimExecutorConfig(protocol="legacy")


def test_the_schedule_command_says_why_it_cannot_start(tmp_path: Path) -> None:
    # a real process, as a user runs it: the error is one line on stderr, through the
    # command's logging (its prefix and level), and the exit status says it failed
    done = subprocess.run([sys.executable, "-m", "hpcjobs.executors.batsim.decide",
                           "-s", f"ipc://{tmp_path}/dp.sock", "--scheduler", "no-such-policy"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hpcjobs-schedule: ERROR: "), done.stderr
    assert "no-such-policy" in lines[0]
