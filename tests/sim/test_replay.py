"""Replays of real Batsim 4.2.1 runs (fixtures/batsim-4.2.1): the simulator, as a real
process over real ZeroMQ, is driven with the recorded decision-process replies and must
send the recorded Batsim messages: same event types, data and order, message by message.

Timestamps: exact on the zero-latency platform. On small_platform Batsim's own messages
cross the simulated network (fixtures README): each start is some tens of microseconds
and each completion about 2 ms later than here, and these delays add up along a chain
of jobs that wait for each other; so there a recorded time may exceed ours by at most
LATENCY_SLACK, and never be earlier.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from simharness import FIXTURES, INPUTS, read_csv

LATENCY_SLACK = 0.025
TIME_KEYS = {"now", "timestamp"}
CSV_TIME_COLUMNS = {"starting_time", "finish_time", "waiting_time", "turnaround_time", "stretch"}

RUNS: dict[str, tuple[str, str, list[str]]] = {
    "static": ("small_platform.xml", "test_delays.json", []),
    "delay": ("small_platform.xml", "test_delays.json", []),
    "dynack": ("small_platform.xml", "test_delays.json",
               ["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse"]),
    "dynreuse": ("small_platform.xml", "test_delays.json", ["--enable-dynamic-jobs", "--enable-profile-reuse"]),
    "zl": ("zero_latency_platform.xml", "wl_mixed.json", []),
}


def load_trace(run: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    lines = [json.loads(line) for line in (FIXTURES / run / "trace.jsonl").read_text().splitlines()]
    pairs = []
    for i in range(0, len(lines) - 1, 2):
        assert lines[i]["dir"] == "in" and lines[i + 1]["dir"] == "out"
        pairs.append((lines[i]["msg"], lines[i + 1]["msg"]))
    return pairs


def same_time(actual: float, recorded: float, exact: bool) -> bool:
    if exact:
        return math.isclose(actual, recorded, rel_tol=0, abs_tol=1e-9)
    return -1e-9 <= recorded - actual <= LATENCY_SLACK


def compare(actual: Any, recorded: Any, exact: bool, path: str = "") -> None:
    """Deep equality; only 'now' and 'timestamp' values get the latency tolerance."""
    if isinstance(recorded, dict):
        assert isinstance(actual, dict) and set(actual) == set(recorded), f"{path}: {actual} != {recorded}"
        for key in recorded:
            if key in TIME_KEYS and path.count("data") == 0:
                assert same_time(actual[key], recorded[key], exact), f"{path}.{key}: {actual[key]} vs {recorded[key]}"
            else:
                compare(actual[key], recorded[key], exact, f"{path}.{key}")
    elif isinstance(recorded, list):
        assert isinstance(actual, list) and len(actual) == len(recorded), f"{path}: {actual} != {recorded}"
        for i, (a, r) in enumerate(zip(actual, recorded)):
            compare(a, r, exact, f"{path}[{i}]")
    else:
        assert actual == recorded and type(actual) is type(recorded) or (
            isinstance(actual, (int, float)) and isinstance(recorded, (int, float)) and actual == recorded
        ), f"{path}: {actual!r} != {recorded!r}"


def adjust_reply(reply: dict[str, Any], rec_request_now: float, sim_now: float) -> dict[str, Any]:
    """Move a recorded reply onto the simulator's clock, keeping its decision time."""
    now = sim_now + (reply["now"] - rec_request_now)
    events = []
    for event in reply["events"]:
        stamp = min(now, max(sim_now, sim_now + (event["timestamp"] - rec_request_now)))
        events.append({**event, "timestamp": stamp})
    return {"now": now, "events": events}


def replay(start_sim: Any, run: str) -> Any:
    platform, workload, flags = RUNS[run]
    sim = start_sim(["-p", str(INPUTS / platform), "-w", workload, *flags])
    exact = platform == "zero_latency_platform.xml"
    for index, (recorded, reply) in enumerate(load_trace(run)):
        msg = sim.dp.recv()
        assert msg is not None, f"message #{index}: nothing received; simulator: {sim.finish()}"
        if index == 0:
            # the workload path is echoed as given on the command line
            recorded = json.loads(json.dumps(recorded))
            recorded["events"][0]["data"]["workloads"] = {"w0": workload}
        try:
            compare(msg, recorded, exact, f"message #{index}")
        except AssertionError:
            sim.dp.send(msg["now"])
            raise
        sim.dp.sock.send(json.dumps(adjust_reply(reply, recorded["now"], msg["now"])).encode())
    return sim


def compare_csv(actual: list[dict[str, str]], recorded: list[dict[str, str]], exact: bool) -> None:
    assert [r["job_id"] for r in actual] == [r["job_id"] for r in recorded]
    assert list(actual[0]) == list(recorded[0])
    for got, want in zip(actual, recorded):
        for column, value in want.items():
            if column in CSV_TIME_COLUMNS:
                diff = abs(float(got[column]) - float(value))
                assert diff <= (1e-6 if exact else LATENCY_SLACK), (want["job_id"], column, got[column], value)
            else:
                assert got[column] == value, (want["job_id"], column, got[column], value)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_replay(start_sim: Any, run: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message and every _jobs.csv row as real Batsim 4.2.1 produced them."""
    monkeypatch.chdir(INPUTS)  # workload paths are echoed as given: keep them short
    sim = replay(start_sim, run)
    extra = sim.dp.recv(timeout=2)
    assert extra is None, f"unexpected message after the recorded run: {extra}"
    code, err = sim.finish()
    assert code == 0, err
    exact = RUNS[run][0] == "zero_latency_platform.xml"
    compare_csv(sim.jobs_csv(), read_csv(FIXTURES / run / "out_jobs.csv"), exact)
    if exact:  # same times: the very same bytes as Batsim's file
        assert Path(sim.prefix + "_jobs.csv").read_bytes() == (FIXTURES / run / "out_jobs.csv").read_bytes()
    got = read_csv(Path(sim.prefix + "_schedule.csv"))[0]
    want = read_csv(FIXTURES / run / "out_schedule.csv")[0]
    for column, value in want.items():
        if column in ("scheduling_time", "simulation_time"):
            continue  # wall-clock figures
        if column in ("batsim_version",) or column.startswith("nb_"):
            assert got[column] == value, column
        else:
            assert abs(float(got[column]) - float(value)) <= (1e-6 if exact else 0.1), (column, got[column], value)


def test_nofinish_is_a_deadlock_error(start_sim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The nofinish run (dynreuse without NOTIFY registration_finished): Batsim's SimGrid
    reports a deadlock after the last completion; we fail with a precise message and a
    non-zero exit instead of Batsim's silent exit 0, and still write the jobs file."""
    monkeypatch.chdir(INPUTS)
    platform, workload, flags = RUNS["dynreuse"]
    sim = start_sim(["-p", str(INPUTS / platform), "-w", workload, *flags])
    pairs = load_trace("dynreuse")
    for recorded, reply in pairs[:-1]:  # the last exchange is SIMULATION_ENDS, which must not come
        msg = sim.dp.recv()
        assert msg is not None, sim.finish()
        assert [e["type"] for e in msg["events"]] == [e["type"] for e in recorded["events"]]
        adjusted = adjust_reply(reply, recorded["now"], msg["now"])
        adjusted["events"] = [e for e in adjusted["events"] if e["data"].get("type") != "registration_finished"]
        sim.dp.sock.send(json.dumps(adjusted).encode())
    code, err = sim.finish()
    assert code == 3
    assert "deadlock" in err and "registration_finished" in err
    compare_csv(sim.jobs_csv(), read_csv(FIXTURES / "nofinish" / "out_jobs.csv"), exact=False)
