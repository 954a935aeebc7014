"""More protocol paths through the real process: TCP endpoints, several workloads,
CHANGE_JOB_STATE, continue_registration, hostile job and profile names."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from simharness import INPUTS, write_json

ZL = str(INPUTS / "zero_latency_platform.xml")


def ev(stamp: float, kind: str, **data: Any) -> dict[str, Any]:
    return {"timestamp": stamp, "type": kind, "data": data}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_tcp_endpoint_and_two_workloads(start_sim: Any, tmp_path: Path) -> None:
    """Two workloads submitting at the same instant: as real Batsim 4.2.1 does (checked
    against it), both submissions and the NOTIFY travel in one message (Batsim's server
    is still busy with the second submission when the first submitter says goodbye)."""
    w0 = write_json(tmp_path / "a.json", {"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                                          "profiles": {"d": {"type": "delay", "delay": 2}}})
    w1 = write_json(tmp_path / "b.json", {"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                                          "profiles": {"d": {"type": "delay", "delay": 3}}})
    sim = start_sim(["-p", ZL, "-w", w0, "-w", w1], f"tcp://127.0.0.1:{free_port()}")
    messages = []
    msg = sim.dp.recv()
    while msg is not None:
        messages.append([(e["type"], e["data"].get("job_id", e["data"].get("type"))) for e in msg["events"]])
        if msg["events"][-1]["type"] == "SIMULATION_ENDS":
            sim.dp.send(msg["now"])
            break
        out = [ev(msg["now"], "EXECUTE_JOB", job_id=e["data"]["job_id"], alloc="0" if e["data"]["job_id"] == "w0!1"
                  else "1") for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        sim.dp.send(msg["now"], out)
        msg = sim.dp.recv()
    assert sim.finish()[0] == 0
    assert messages[1:] == [[("JOB_SUBMITTED", "w0!1"), ("JOB_SUBMITTED", "w1!1"),
                             ("NOTIFY", "no_more_static_job_to_submit")],
                            [("JOB_COMPLETED", "w0!1")],
                            [("JOB_COMPLETED", "w1!1")], [("SIMULATION_ENDS", None)]]
    assert [r["job_id"] + r["workload_name"] for r in sim.jobs_csv()] == ["1w0", "1w1"]


def test_registration_can_continue_and_jobs_change_state(start_sim: Any, tmp_path: Path) -> None:
    name = "dyn!a b 'c' é$`x`{"  # (Batsim refuses ids with any of ,()|}\")
    profile = {"type": "delay", "delay": 1}
    sim = start_sim(["-p", ZL, "--enable-dynamic-jobs"])
    now = sim.begin()["now"]
    sim.dp.send(now, [ev(now, "REGISTER_PROFILE", workload_name="dyn", profile_name="p,1", profile=profile),
                      ev(now, "REGISTER_JOB", job_id=name, job={"id": name, "subtime": 0, "res": 1,
                                                                "profile": "p,1"}),
                      ev(now, "REGISTER_JOB", job_id="dyn!z", job={"id": "dyn!z", "subtime": 0, "res": 1,
                                                                   "profile": "p,1"}),
                      ev(now, "CHANGE_JOB_STATE", job_id="dyn!z", job_state="COMPLETED_FAILED"),
                      ev(now, "NOTIFY", type="registration_finished"),
                      ev(now, "NOTIFY", type="continue_registration"),
                      ev(now, "EXECUTE_JOB", job_id=name, alloc="2"),
                      ev(now, "CALL_ME_LATER", timestamp=5)])
    msg = sim.dp.recv()
    assert msg is not None and msg["events"][0]["data"]["job_id"] == name
    sim.dp.send(msg["now"])
    msg = sim.dp.recv()
    assert msg is not None and [e["type"] for e in msg["events"]] == ["REQUESTED_CALL"]
    sim.dp.send(5.0, [ev(5.0, "NOTIFY", type="registration_finished")])
    msg = sim.dp.recv()
    assert msg is not None and msg["events"][0]["type"] == "SIMULATION_ENDS" and msg["now"] == 5.0
    sim.dp.send(5.0)
    assert sim.finish()[0] == 0
    rows = sim.jobs_csv()
    assert [(r["job_id"], r["profile"], r["final_state"]) for r in rows] == [
        ("z", "p,1", "COMPLETED_FAILED"), (name.split("!", 1)[1], "p,1", "COMPLETED_SUCCESSFULLY")]


def test_reply_with_non_finite_now_is_refused(start_sim: Any) -> None:
    sim = start_sim(["-p", ZL])
    sim.begin()
    sim.dp.sock.send(b'{"now": NaN, "events": []}')
    code, err = sim.finish()
    assert code == 3 and "'now' is missing or not a number" in err, err


@pytest.mark.parametrize("protocol", ["batprotocol", "batprotocol_json"])
def test_simulation_begins_carries_the_command_line(protocol: str, tmp_path: Path) -> None:
    """batprotocol's SimulationBeginsEvent.batsim_arguments: "Batsim's command-line
    arguments as received by Batsim" (the program first), read by a decision process
    of our own protocol stack; the JSON protocol's SIMULATION_BEGINS has no such field."""
    import subprocess
    import sys

    from hpcjobs.batsim_protocol.events import Message, edc_hello
    from hpcjobs.executors.batsim.decide import open_endpoint
    from hpcjobs.executors.batsim.platform import write_platform

    platform = str(write_platform(tmp_path / "p.xml", 2, 1, "1Gf"))
    endpoint = f"ipc://{tmp_path}/s"
    args = ["--protocol", protocol, "-p", platform, "-s", endpoint, "-e", str(tmp_path / "out"), "-q",
            "--enable-dynamic-jobs"]
    dp = open_endpoint(protocol, endpoint, None, 30.0)
    sim = subprocess.Popen([sys.executable, "-m", "hpcjobs.sim", *args], stderr=subprocess.PIPE, text=True)
    try:
        msg = dp.receive(lambda: None)
        dp.send(Message(msg.now, [edc_hello(msg.now)]))
        begins = dp.receive(lambda: None)
        data = begins.events[0]["data"]
        assert begins.events[0]["type"] == "SIMULATION_BEGINS"
        assert data["batsim_arguments"][1:] == args and data["batsim_arguments"][0].endswith("__main__.py")
        dp.send(Message(begins.now, [ev(begins.now, "NOTIFY", type="registration_finished")]))
        while not any(e["type"] == "SIMULATION_ENDS" for e in dp.receive(lambda: None).events):
            dp.send(Message(0.0, []))
        dp.send(Message(0.0, []))
        assert sim.wait(30) == 0, sim.stderr.read() if sim.stderr else ""
    finally:
        dp.close()
        if sim.poll() is None:
            sim.kill()
        sim.communicate()


@pytest.mark.parametrize("field, value, words", [
    ("decision_component_name", "my,dp", "decision_component_name 'my,dp' contains a comma or a double quote"),
    ("decision_component_version", '1"2', "decision_component_version '1\"2' contains a comma"),
    ("decision_component_commit", "abc,def", "decision_component_commit 'abc,def' contains a comma"),
    ("batprotocol_version", "latest", "batprotocol_version 'latest' is not a released version"),
])
def test_a_hello_against_the_schema_is_refused_naming_the_field(tmp_path: Path, field: str, value: str,
                                                                words: str) -> None:
    """EDCHelloEvent: the schema forbids a comma or a double quote in the decision
    component's name, version and commit, and expects a released batprotocol version."""
    import subprocess
    import sys

    from hpcjobs.batsim_protocol.events import Message, edc_hello
    from hpcjobs.executors.batsim.decide import open_endpoint
    from hpcjobs.executors.batsim.platform import write_platform

    platform = str(write_platform(tmp_path / "p.xml", 2, 1, "1Gf"))
    endpoint = f"ipc://{tmp_path}/s"
    dp = open_endpoint("batprotocol", endpoint, None, 30.0)
    sim = subprocess.Popen([sys.executable, "-m", "hpcjobs.sim", "--protocol", "batprotocol", "-p", platform,
                            "-s", endpoint, "-e", str(tmp_path / "out"), "-q"], stderr=subprocess.PIPE, text=True)
    try:
        msg = dp.receive(lambda: None)
        hello = edc_hello(msg.now)
        hello["data"][field] = value
        dp.send(Message(msg.now, [hello]))
        _, err = sim.communicate(timeout=30)
        assert sim.returncode == 3 and "batprotocol protocol, message 1: EDCHelloEvent: " + words in err, err
    finally:
        dp.close()
        if sim.poll() is None:
            sim.kill()
            sim.communicate()
