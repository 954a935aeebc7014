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
import subprocess
import sys
from pathlib import Path

import pytest
import zmq

from hpcjobs.batsim_protocol.codecs import get_codec
from hpcjobs.batsim_protocol.events import Message, edc_hello

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1"
INPUTS = FIXTURES / "inputs"
PLATFORM = INPUTS / "zero_latency_platform.xml"
WORKLOAD = INPUTS / "wl_mixed.json"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _decide(endpoint: str, protocol: str, scheduler: str = "fcfs") -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, "-m", "hpcjobs.executors.batsim.decide", "-s", endpoint,
                             "--protocol", protocol, "--scheduler", scheduler, "-q", "--timeout", "60"],
                            stderr=subprocess.PIPE, text=True)


def _simulate(simulator: list[str], endpoint: str, prefix: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*simulator, "-p", str(PLATFORM), "-w", str(WORKLOAD), "-s", endpoint,
                           "-e", str(prefix)], capture_output=True, text=True, timeout=120)


def _run(tmp_path: Path, protocol: str, simulator: list[str]) -> str:
    endpoint = f"ipc://{tmp_path}/{protocol}.sock"
    dp = _decide(endpoint, protocol)
    sim = _simulate(simulator, endpoint, tmp_path / protocol)
    _, err = dp.communicate(timeout=60)
    assert sim.returncode == 0, sim.stderr
    assert dp.returncode == 0, err
    return (tmp_path / f"{protocol}_jobs.csv").read_text()


@pytest.mark.parametrize("protocol", ["json", "batprotocol"])
def test_same_jobs_whatever_the_protocol(tmp_path: Path, protocol: str) -> None:
    ours = [sys.executable, "-m", "hpcjobs.sim", "-q", "--protocol", protocol]
    assert _run(tmp_path, protocol, ours) == (FIXTURES / "zl" / "out_jobs.csv").read_text()


def test_easy_backfilling_is_the_same_on_both_protocols(tmp_path: Path) -> None:
    results = []
    for protocol in ("json", "batprotocol"):
        endpoint = f"ipc://{tmp_path}/{protocol}.sock"
        dp = _decide(endpoint, protocol, "easy")
        sim = _simulate([sys.executable, "-m", "hpcjobs.sim", "-q", "--protocol", protocol], endpoint,
                        tmp_path / protocol)
        assert sim.returncode == 0 and dp.wait(60) == 0, sim.stderr
        results.append((tmp_path / f"{protocol}_jobs.csv").read_text())
    assert results[0] == results[1] and results[0].count("\n") == 7


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
    ("batprotocol", b"\x04\x00\x00\x00garbage!", "now"),
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
        if protocol == "batprotocol":
            sock.send(codec.encode(Message(first.now, [edc_hello(first.now)])))
            assert sock.poll(30_000)
            codec.decode(sock.recv())
            number = 2
        sock.send(garbage)
        _, err = sim.communicate(timeout=30)
        assert sim.returncode == 3
        assert f"{codec.name} protocol, message {number}, field" in err, err
        assert field in err and "Traceback" not in err, err
        if protocol == "batprotocol":
            # Batsim 5 tells the decision process why it stops: a clean end for it too
            assert sock.poll(5_000)
            (event,) = codec.decode(sock.recv()).events
            assert event["type"] == "SIMULATION_ERROR" and field in event["data"]["error"]
    finally:
        if sim.poll() is None:
            sim.kill()
        sock.close(linger=0)
        ctx.term()
