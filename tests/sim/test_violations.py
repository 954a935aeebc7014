"""Protocol violations and bad input: like Batsim the simulator stops, but always with a
precise message on stderr and a non-zero exit code, never a hang or a silent answer."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from simharness import INPUTS, write_json

ZL = str(INPUTS / "zero_latency_platform.xml")
Reply = Callable[[dict[str, Any]], tuple[float, list[dict[str, Any]]]]
DYN = ("--enable-dynamic-jobs",)


def ev(stamp: float, kind: str, **data: Any) -> dict[str, Any]:
    return {"timestamp": stamp, "type": kind, "data": data}


def at_now(*events: tuple[str, dict[str, Any]]) -> Reply:
    """A reply whose events all happen at the request's time."""
    return lambda msg: (msg["now"], [ev(msg["now"], kind, **data) for kind, data in events])


def fails(start_sim: Any, tmp_path: Path, replies: list[Reply], expected: str, flags: tuple[str, ...] = (),
          jobs: list[dict[str, Any]] | None = None, code: int = 3) -> None:
    profiles = {"d5": {"type": "delay", "delay": 5}}
    workload = write_json(tmp_path / "wl.json", {"nb_res": 4, "jobs": jobs or [], "profiles": profiles})
    sim = start_sim(["-p", ZL, "-w", workload, *flags])
    for reply in replies:
        msg = sim.dp.recv()
        assert msg is not None, sim.finish()
        sim.dp.send(*reply(msg))
    got_code, err = sim.finish()
    assert got_code == code, err
    assert expected in err, err
    assert err.startswith("hpcjobs.sim: error: ")


ONE_JOB = [{"id": "a", "subtime": 0, "res": 1, "profile": "d5"}]
TWO_JOBS = ONE_JOB + [{"id": "b", "subtime": 0, "res": 1, "profile": "d5"}]
REG_P = ("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p",
                              "profile": {"type": "delay", "delay": 1}})


def reg_job(name: str) -> tuple[str, dict[str, Any]]:
    return ("REGISTER_JOB", {"job_id": f"dyn!{name}",
                             "job": {"id": f"dyn!{name}", "subtime": 0.0, "res": 1, "profile": "p"}})


CASES: dict[str, tuple[list[Reply], str, tuple[str, ...], list[dict[str, Any]] | None]] = {
    "event later than now": (
        [lambda m: (0.0, [ev(1.0, "CALL_ME_LATER", timestamp=5.0)])],
        # named by protocol and message number, as every other refusal
        "JSON protocol, message 1: event #0 (CALL_ME_LATER) has timestamp 1.0, later than the message's 'now'", (),
        None),
    "events out of order": (
        [lambda m: (2.0, [ev(1.0, "CALL_ME_LATER", timestamp=5.0), ev(0.5, "CALL_ME_LATER", timestamp=6.0)])],
        "JSON protocol, message 1: event #1 (CALL_ME_LATER) has timestamp 0.5, earlier than", (), None),
    "reply earlier than request": (
        [at_now(), lambda m: (m["now"] - 1, [])], "earlier than the request's 'now'", (),
        [{"id": "a", "subtime": 3, "res": 1, "profile": "d5"}]),
    "call me later at the current time": (
        [at_now(), at_now(("CALL_ME_LATER", {"timestamp": 0.0}))], "You asked to be awaken in the past!", (),
        ONE_JOB),
    "unknown job": (
        [at_now(), at_now(("EXECUTE_JOB", {"job_id": "w0!nope", "alloc": "0"}))], "unknown job 'w0!nope'", (), ONE_JOB),
    "busy resource": (
        [at_now(), at_now(("EXECUTE_JOB", {"job_id": "w0!a", "alloc": "1"}),
                          ("EXECUTE_JOB", {"job_id": "w0!b", "alloc": "0-1"}))],
        "resource 1 is busy with job 'w0!a'", (), TWO_JOBS),
    "non-existent resource": (
        [at_now(), at_now(("EXECUTE_JOB", {"job_id": "w0!a", "alloc": "2-7"}))], "resource 4 does not exist", (),
        ONE_JOB),
    "absurd range": (
        [at_now(), at_now(("EXECUTE_JOB", {"job_id": "w0!a", "alloc": "0-999999999999"}))],
        "resource 4 does not exist", (), ONE_JOB),
    "executing twice": (
        [at_now(), at_now(("EXECUTE_JOB", {"job_id": "w0!a", "alloc": "0"}),
                          ("EXECUTE_JOB", {"job_id": "w0!a", "alloc": "1"}))], "it is RUNNING", (), ONE_JOB),
    "bad interval set": (
        [at_now(), at_now(("EXECUTE_JOB", {"job_id": "w0!a", "alloc": "3-1"}))], "bad range '3-1'", (), ONE_JOB),
    "duplicate job": ([at_now(REG_P, reg_job("x"), reg_job("x"))], "duplicate job id 'dyn!x'", DYN, None),
    "duplicate profile": ([at_now(REG_P, REG_P)], "duplicate profile 'p'", DYN, None),
    "unknown profile": ([at_now(reg_job("x"))], "unknown profile 'p'", DYN, None),
    "more executors than the job's res": (
        [at_now(REG_P, ("REGISTER_JOB", {"job_id": "dyn!x", "job": {"id": "dyn!x", "subtime": 0, "res": 5,
                                                                    "profile": "p"}}),
                ("EXECUTE_JOB", {"job_id": "dyn!x", "alloc": "0-3"}))],
        "the job requests 5 resources but its allocation '0-3' has 4", DYN, None),
    # Batsim 4.2.1 aborts at the REGISTER_JOB itself (measured: no JOB_SUBMITTED, even
    # though the job is never executed): "the requested number of resources (1) do NOT
    # match the number of resources of the associated profile 'p2' (2)"
    "a parallel profile with more executors than the job's res": (
        [at_now(("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p2", "profile": {
                   "type": "parallel", "cpu": [1e9, 1e9], "com": [0, 0, 0, 0]}}),
                ("REGISTER_JOB", {"job_id": "dyn!x", "job": {"id": "dyn!x", "subtime": 0, "res": 1,
                                                            "profile": "p2"}}),
                ("CALL_ME_LATER", {"timestamp": 5.0}))],
        "REGISTER_JOB 'dyn!x': 'res' (1) does not match the number of executors of its 'parallel' profile "
        "'p2' (2)", DYN, None),
    # Batsim 4.2.1 reads a registered profile as it prints it, floats to six decimals
    "a registered delay that rounds to 0": (
        [at_now(("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "tiny",
                                      "profile": {"type": "delay", "delay": 4e-7}}))],
        "profile 'tiny' has a non-strictly-positive 'delay' field (0.0)", DYN, None),
    "an id Batsim cannot rewrite": ([at_now(REG_P, reg_job("a,b"))], "Batsim cannot rewrite an id containing ','",
                                    DYN, None),
    "registration without the flag": ([at_now(REG_P)], "--enable-dynamic-jobs", (), None),
    "subtime is required": (
        [at_now(REG_P, ("REGISTER_JOB", {"job_id": "dyn!x", "job": {"id": "dyn!x", "res": 1, "profile": "p"}}))],
        "'subtime'", DYN, None),
    "profile reuse after garbage collection": (
        [at_now(REG_P, reg_job("x"), ("EXECUTE_JOB", {"job_id": "dyn!x", "alloc": "0"})),  # x ends at 1
         at_now(),  # NOTIFY no_more_static_job_to_submit
         at_now(reg_job("y"))], "it existed some time ago but is no longer accessible", DYN, None),
    "unknown event type": ([at_now(("SET_RESOURCE_STATE", {"resources": "0", "state": "1"}))],
                           "unsupported or unknown event type 'SET_RESOURCE_STATE'", (), None),
    # replies: SIMULATION_BEGINS, (JOB_SUBMITTED,) NOTIFY no_more_static_job_to_submit
    "deadlock: job never executed": ([at_now(), at_now(), at_now()], "1 submitted job(s) were never executed",
                                     (), ONE_JOB),
    "deadlock: registration never finished": ([at_now(), at_now()], "never sent NOTIFY registration_finished",
                                              DYN, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_violation(start_sim: Any, tmp_path: Path, case: str) -> None:
    replies, expected, flags, jobs = CASES[case]
    fails(start_sim, tmp_path, replies, expected, flags, jobs)


@pytest.mark.parametrize("transport", ["ipc", "tcp"])
def test_decision_process_goes_away(start_sim: Any, transport: str) -> None:
    endpoint = None
    if transport == "tcp":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            endpoint = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    sim = start_sim(["-p", ZL], endpoint)
    sim.begin()
    sim.dp.close()
    code, err = sim.finish()
    assert code == 4 and "closed the connection" in err, err


def test_no_reply_times_out(start_sim: Any, tmp_path: Path) -> None:
    sim = start_sim(["-p", ZL, "--timeout", "1"])
    sim.begin()
    code, err = sim.finish()
    assert code == 4 and "no reply from the decision process" in err, err


@pytest.mark.parametrize("args, expected", [
    (["-E"], "unsupported Batsim option(s) -E"),
    (["--enable-profile-reuse"], "--enable-profile-reuse needs --enable-dynamic-jobs"),
    (["-s", "inproc://x"], "only tcp:// and ipc://"),
    (["-w", "x.json"], "the following arguments are required: -p/--platform"),
    (["--enable-dynamic"], "unknown option(s) or argument(s): --enable-dynamic"),
    (["-e", "/nonexistent/dir/out"], "folder '/nonexistent/dir' does not exist"),
])
def test_bad_command_line(start_sim: Any, args: list[str], expected: str) -> None:
    sim = start_sim(args if args[0] == "-w" else ["-p", ZL, *args])
    code, err = sim.finish()
    assert code == 1 and expected in err, err


@pytest.mark.parametrize("profile, expected", [
    ({"type": "delay", "delay": 0}, "profile 'p' has a non-strictly-positive 'delay' field (0)"),
    ({"type": "data_staging"}, "unsupported type 'data_staging'"),
    ({"type": "parallel", "cpu": [1, 2], "com": [0]}, "a list of 4 non-negative numbers"),
    ({"type": "composed", "seq": ["missing"]}, "uses unknown profile 'missing'"),
])
def test_bad_workload(start_sim: Any, tmp_path: Path, profile: dict[str, Any], expected: str) -> None:
    workload = write_json(tmp_path / "wl.json", {"nb_res": 1, "jobs": [], "profiles": {"p": profile}})
    sim = start_sim(["-p", ZL, "-w", workload])
    code, err = sim.finish()
    assert code == 1 and expected in err, err


def test_bad_platform(start_sim: Any, tmp_path: Path) -> None:
    platform = tmp_path / "p.xml"
    platform.write_text('<?xml version="1.0"?><!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
                        '<platform version="4.1"><zone id="z" routing="Full">'
                        '<host id="master_host" speed="1Gf"/><disk id="d"/></zone></platform>')
    sim = start_sim(["-p", str(platform)])
    code, err = sim.finish()
    assert code == 1 and "unsupported element <disk>" in err, err


def test_non_finite_numbers_in_a_workload_are_refused(start_sim: Any, tmp_path: Path) -> None:
    path = tmp_path / "wl.json"
    path.write_text('{"nb_res": 1, "jobs": [{"id": 1, "subtime": NaN, "res": 1, "profile": "d"}],'
                    ' "profiles": {"d": {"type": "delay", "delay": 1}}}')
    sim = start_sim(["-p", ZL, "-w", str(path)])
    code, err = sim.finish()
    assert code == 1 and "invalid or missing 'subtime' (nan)" in err, err
