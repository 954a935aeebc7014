"""Known-answer tests: every profile type, walltime, kills with progress, the mapping,
decision time, dynamic registration, metadata and rejection, on the zero-latency
platform where every time is exact. The simulator runs as a real process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from simharness import INPUTS, read_csv, write_json

from hpcjobs.batsim_protocol import intervals

ZL = str(INPUTS / "zero_latency_platform.xml")
Event = dict[str, Any]
Policy = Callable[[dict[str, Any]], tuple[float, list[Event]]]


def ev(stamp: float, kind: str, **data: Any) -> Event:
    return {"timestamp": stamp, "type": kind, "data": data}


def run(start_sim: Any, tmp_path: Path, jobs: list[dict[str, Any]], profiles: dict[str, Any],
        policy: Policy, flags: tuple[str, ...] = ()) -> tuple[Any, list[Event]]:
    """Drive one simulation to its end; returns the Sim and every event Batsim sent."""
    workload = write_json(tmp_path / "wl.json", {"nb_res": 4, "jobs": jobs, "profiles": profiles})
    sim = start_sim(["-p", ZL, "-w", workload, *flags])
    received: list[Event] = []
    while True:
        msg = sim.dp.recv()
        assert msg is not None, sim.finish()
        received.extend(msg["events"])
        if msg["events"][-1]["type"] == "SIMULATION_ENDS":
            sim.dp.send(msg["now"])
            break
        now, events = policy(msg)
        sim.dp.send(now, events)
    code, err = sim.finish()
    assert code == 0, err
    return sim, received


def execute_on(allocs: dict[str, str], extra: dict[str, dict[str, Any]] | None = None) -> Policy:
    """Start each submitted job as soon as it is submitted, on the given allocation."""
    def policy(msg: dict[str, Any]) -> tuple[float, list[Event]]:
        now = msg["now"]
        out = [ev(now, "EXECUTE_JOB", job_id=e["data"]["job_id"], alloc=allocs[e["data"]["job_id"]],
                  **(extra or {}).get(e["data"]["job_id"], {}))
               for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        return now, out
    return policy


def completions(events: list[Event]) -> dict[str, tuple[float, str, int]]:
    return {e["data"]["job_id"]: (e["timestamp"], e["data"]["job_state"], e["data"]["return_code"])
            for e in events if e["type"] == "JOB_COMPLETED"}


def job(jid: str, profile: str, res: int = 1, walltime: float = -1, subtime: float = 0) -> dict[str, Any]:
    return {"id": jid, "subtime": subtime, "res": res, "profile": profile, "walltime": walltime}


@pytest.mark.parametrize("profile, alloc, expected", [
    ({"type": "delay", "delay": 7}, "0", 7.0),
    # 1 Gflop per host on 1 Gflop/s hosts, no communication
    ({"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}, "0-1", 1.0),
    # 2 GB each way between two hosts over 1 GB/s split-duplex host links: links dominate
    ({"type": "parallel_homogeneous", "cpu": 1e9, "com": 2e9}, "0-1", 2.0),
    # the total is spread: 4 Gflop over 2 hosts
    ({"type": "parallel_homogeneous_total", "cpu": 4e9, "com": 0}, "0-1", 2.0),
    # 6 GB total over 3 hosts = 1 GB per ordered pair; each host link carries 2 GB
    ({"type": "parallel_homogeneous_total", "cpu": 0, "com": 6e9}, "0-2", 2.0),
    ({"type": "parallel", "cpu": [1e9, 3e9], "com": [0, 0, 0, 0]}, "2-3", 3.0),
    ({"type": "parallel", "cpu": [0, 0], "com": [0, 5e8, 0, 0]}, "0 3", 0.5),
])
def test_profile_durations(start_sim: Any, tmp_path: Path, profile: dict[str, Any], alloc: str,
                           expected: float) -> None:
    res = len(intervals.parse(alloc))
    sim, events = run(start_sim, tmp_path, [job("j", "p", res)], {"p": profile}, execute_on({"w0!j": alloc}))
    assert completions(events) == {"w0!j": (expected, "COMPLETED_SUCCESSFULLY", 0)}
    row = sim.jobs_csv()[0]
    assert (row["execution_time"], row["allocated_resources"]) == (f"{expected:f}", alloc)


def test_mapping_changes_the_result(start_sim: Any, tmp_path: Path) -> None:
    """Two ranks of 1 and 3 Gflop mapped onto the first host of the allocation share it: 4 s."""
    profiles = {"p": {"type": "parallel", "cpu": [1e9, 3e9], "com": [0, 0, 0, 0]}}
    _, events = run(start_sim, tmp_path, [job("j", "p", 2)], profiles,
                    execute_on({"w0!j": "1-2"}, {"w0!j": {"mapping": {"0": "0", "1": "0"}}}))
    assert completions(events) == {"w0!j": (4.0, "COMPLETED_SUCCESSFULLY", 0)}


def test_composed_repeat_and_first_failing_step(start_sim: Any, tmp_path: Path) -> None:
    profiles = {"d2": {"type": "delay", "delay": 2}, "d3": {"type": "delay", "delay": 3},
                "d3_ret5": {"type": "delay", "delay": 3, "ret": 5}, "d4": {"type": "delay", "delay": 4},
                "ok": {"type": "composed", "repeat": 2, "seq": ["d2", "d3"]},
                "bad": {"type": "composed", "repeat": 3, "seq": ["d2", "d3_ret5", "d4"]}}
    sim, events = run(start_sim, tmp_path, [job("ok", "ok"), job("bad", "bad")], profiles,
                      execute_on({"w0!ok": "0", "w0!bad": "1"}))
    assert completions(events) == {"w0!ok": (10.0, "COMPLETED_SUCCESSFULLY", 0),
                                   "w0!bad": (5.0, "COMPLETED_FAILED", 5)}
    assert [r["success"] for r in sim.jobs_csv()] == ["0", "1"]


def test_walltime_kill(start_sim: Any, tmp_path: Path) -> None:
    sim, events = run(start_sim, tmp_path, [job("j", "d", walltime=4)], {"d": {"type": "delay", "delay": 10}},
                      execute_on({"w0!j": "0"}))
    assert completions(events) == {"w0!j": (4.0, "COMPLETED_WALLTIME_REACHED", -1)}
    assert sim.jobs_csv()[0]["final_state"] == "COMPLETED_WALLTIME_REACHED"


def kill_at(when: float, allocs: dict[str, str]) -> Policy:
    """Execute at submission, ask to be called at ``when``, then kill every job."""
    def policy(msg: dict[str, Any]) -> tuple[float, list[Event]]:
        now = msg["now"]
        kinds = [e["type"] for e in msg["events"]]
        if "JOB_SUBMITTED" in kinds:
            return now, [ev(now, "EXECUTE_JOB", job_id=j, alloc=a) for j, a in allocs.items()] + [
                ev(now, "CALL_ME_LATER", timestamp=when)]
        if "REQUESTED_CALL" in kinds:
            return now, [ev(now, "KILL_JOB", job_ids=sorted(allocs))]
        return now, []
    return policy


def test_kill_progress_simple_and_sequence(start_sim: Any, tmp_path: Path) -> None:
    profiles = {"d10": {"type": "delay", "delay": 10}, "d2": {"type": "delay", "delay": 2},
                "seq": {"type": "composed", "seq": ["d2", "d10"]},
                "hg": {"type": "parallel_homogeneous", "cpu": 8e9, "com": 0}}
    jobs = [job("a", "d10"), job("b", "seq"), job("c", "hg", 2)]
    sim, events = run(start_sim, tmp_path, jobs, profiles,
                      kill_at(4.0, {"w0!a": "0", "w0!b": "1", "w0!c": "2-3"}))
    killed = [e for e in events if e["type"] == "JOB_KILLED"]
    assert killed == [ev(4.0, "JOB_KILLED", job_ids=["w0!a", "w0!b", "w0!c"], job_progress={
        "w0!a": {"profile_name": "d10", "progress": 0.4},
        "w0!b": {"profile_name": "seq", "current_task_index": 1, "current_task": {"profile_name": "d10", "progress": 0.2}},
        "w0!c": {"profile_name": "hg", "progress": 0.5}})]
    # Batsim 4.2.1 also reports each killed job's end (before the JOB_KILLED): return
    # code -1 when killed in a delay step, -2 in a parallel task
    assert completions(events) == {"w0!a": (4.0, "COMPLETED_KILLED", -1), "w0!b": (4.0, "COMPLETED_KILLED", -1),
                                   "w0!c": (4.0, "COMPLETED_KILLED", -2)}
    assert events[-1] == ev(4.0, "SIMULATION_ENDS")  # the killed jobs' planned ends do not count
    assert {r["job_id"]: r["final_state"] for r in sim.jobs_csv()} == dict.fromkeys("abc", "COMPLETED_KILLED")


def test_kill_after_completion_has_no_progress(start_sim: Any, tmp_path: Path) -> None:
    _, events = run(start_sim, tmp_path, [job("a", "d1")], {"d1": {"type": "delay", "delay": 1}},
                    kill_at(3.0, {"w0!a": "0"}))
    # Batsim 4.2.1 sends job_progress even when it is empty (differential test)
    assert [e for e in events if e["type"] == "JOB_KILLED"] == [ev(3.0, "JOB_KILLED", job_ids=["w0!a"],
                                                                   job_progress={})]
    assert completions(events) == {"w0!a": (1.0, "COMPLETED_SUCCESSFULLY", 0)}


def test_kill_progress_is_written_to_the_microsecond(start_sim: Any, tmp_path: Path) -> None:
    """Batsim writes a progress as it writes times ("%f"): a third of a delay is 0.333333
    (real Batsim 4.2.1, differential seed 6000035)."""
    _, events = run(start_sim, tmp_path, [job("a", "d3")], {"d3": {"type": "delay", "delay": 3}},
                    kill_at(1.0, {"w0!a": "0"}))
    assert [e["data"]["job_progress"] for e in events if e["type"] == "JOB_KILLED"] == [
        {"w0!a": {"profile_name": "d3", "progress": 0.333333}}]


def test_a_run_in_no_time_lasts_epsilon_in_the_jobs_file(start_sim: Any, tmp_path: Path) -> None:
    """A parallel task with nothing to do ends at once in the messages, but Batsim gives it
    a run time of 1e-5 s ("computed in null time. Putting epsilon instead") in _jobs.csv;
    a job killed as it starts keeps 0 (real Batsim 4.2.1, differential seed 6000029)."""
    profiles = {"empty": {"type": "parallel", "cpu": [0], "com": [0]}, "d5": {"type": "delay", "delay": 5}}

    def policy(msg: dict[str, Any]) -> tuple[float, list[Event]]:
        now, out = msg["now"], []
        for e in msg["events"]:
            if e["type"] == "JOB_SUBMITTED":
                jid = e["data"]["job_id"]
                out.append(ev(now, "EXECUTE_JOB", job_id=jid, alloc={"w0!a": "0", "w0!b": "1"}[jid]))
                if jid == "w0!b":
                    out.append(ev(now, "KILL_JOB", job_ids=[jid]))
        return now, out
    sim, events = run(start_sim, tmp_path, [job("a", "empty", subtime=2), job("b", "d5", subtime=2)], profiles, policy)
    assert completions(events)["w0!a"] == (2.0, "COMPLETED_SUCCESSFULLY", 0)
    rows = {r["job_id"]: r for r in sim.jobs_csv()}
    assert [rows["a"][k] for k in ("starting_time", "execution_time", "finish_time", "turnaround_time")] == [
        "2.000000", "0.000010", "2.000010", "0.000010"]
    # the stretch divides by those 10 us: Batsim's internal messages before the start
    # (1e-10 s each on this platform, docs/sim.md) show in it, as in Batsim's
    assert 1.0 <= float(rows["a"]["stretch"]) < 1.001
    assert [rows["b"][k] for k in ("execution_time", "finish_time")] == ["0.000000", "2.000000"]


def test_decision_time_delays_decisions(start_sim: Any, tmp_path: Path) -> None:
    """A reply 2 s later than its request: the job starts at 2; events that happen while
    the decision process 'thinks' arrive together in the next message."""
    def slow(msg: dict[str, Any]) -> tuple[float, list[Event]]:
        now = msg["now"] + 2.0
        return now, [ev(now, "EXECUTE_JOB", job_id=e["data"]["job_id"], alloc=str(i))
                     for i, e in enumerate(msg["events"]) if e["type"] == "JOB_SUBMITTED"]
    jobs = [job("a", "d1"), job("b", "d1", subtime=1)]
    sim, events = run(start_sim, tmp_path, jobs, {"d1": {"type": "delay", "delay": 1}}, slow)
    # BEGINS answered at 2: both submissions (0 and 1) come in one message at now=2
    assert [(e["type"], e["timestamp"]) for e in events[1:3]] == [("JOB_SUBMITTED", 0.0), ("JOB_SUBMITTED", 1.0)]
    rows = {r["job_id"]: r for r in sim.jobs_csv()}
    assert (rows["a"]["starting_time"], rows["b"]["starting_time"]) == ("4.000000", "4.000000")


def test_dynamic_registration_ack_forward_metadata(start_sim: Any, tmp_path: Path) -> None:
    hostile = 'a "quoted", $HOME `x`\nnewline é'
    profile = {"type": "delay", "delay": 3}

    def policy(msg: dict[str, Any]) -> tuple[float, list[Event]]:
        now = msg["now"]
        first = msg["events"][0]
        if first["type"] == "SIMULATION_BEGINS":
            return now, [ev(now, "REGISTER_PROFILE", workload_name="dyn", profile_name="p", profile=profile),
                         ev(now, "REGISTER_JOB", job_id="dyn!x", job={"id": "dyn!x", "subtime": now, "res": 1,
                                                                      "profile": "p"}),
                         ev(now, "REGISTER_JOB", job_id="dyn!r", job={"id": "dyn!r", "subtime": now, "res": 1,
                                                                      "profile": "p"}),
                         ev(now, "NOTIFY", type="registration_finished")]
        if first["type"] == "JOB_SUBMITTED":
            return now, [ev(now, "EXECUTE_JOB", job_id="dyn!x", alloc="3"),
                         ev(now, "SET_JOB_METADATA", job_id="dyn!x", metadata=hostile),
                         ev(now, "REJECT_JOB", job_id="dyn!r")]
        return now, []
    sim = start_sim(["-p", ZL, "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
                     "--forward-profiles-on-submission"])
    begins = sim.begin()
    assert begins["events"][0]["data"]["config"]["profiles-forwarded-on-submission"] is True
    received: list[Event] = []
    msg = begins
    while msg["events"][-1]["type"] != "SIMULATION_ENDS":
        sim.dp.send(*policy(msg))
        nxt = sim.dp.recv()
        assert nxt is not None, sim.finish()
        msg = nxt
        received.extend(msg["events"])
    sim.dp.send(msg["now"])
    assert sim.finish()[0] == 0
    assert received[0] == ev(0.0, "JOB_SUBMITTED", job_id="dyn!x", job={"id": "dyn!x", "subtime": 0.0, "res": 1,
                                                                       "profile": "p"}, profile=profile)
    assert completions(received) == {"dyn!x": (3.0, "COMPLETED_SUCCESSFULLY", 0)}
    rows = sim.jobs_csv()
    # Batsim lists a rejected job too, when it is rejected, with its request only
    assert [(r["job_id"], r["final_state"], r["metadata"]) for r in rows] == [
        ("r", "REJECTED", ""), ("x", "COMPLETED_SUCCESSFULLY", hostile)]
    assert rows[0]["starting_time"] == rows[0]["allocated_resources"] == ""
    schedule = read_csv(Path(sim.prefix + "_schedule.csv"))[0]
    assert (schedule["nb_jobs"], schedule["nb_jobs_rejected"], schedule["nb_jobs_success"]) == ("2", "1", "1")


def test_energy_query_gets_an_error_answer(start_sim: Any, tmp_path: Path) -> None:
    def policy(msg: dict[str, Any]) -> tuple[float, list[Event]]:
        now = msg["now"]
        if msg["events"][0]["type"] == "JOB_SUBMITTED":
            return now, [ev(now, "QUERY", requests={"consumed_energy": {}}),
                         ev(now, "EXECUTE_JOB", job_id="w0!j", alloc="0")]
        return now, []
    _, events = run(start_sim, tmp_path, [job("j", "d")], {"d": {"type": "delay", "delay": 1}}, policy)
    answers = [e for e in events if e["type"] == "ANSWER"]
    assert len(answers) == 1 and answers[0]["data"]["consumed_energy"] is None
    assert "energy" in answers[0]["data"]["error"]


def test_simulation_begins_fields(start_sim: Any, tmp_path: Path) -> None:
    workload = write_json(tmp_path / "w.json", {"nb_res": 1, "jobs": [], "profiles": {}})
    sim = start_sim(["-p", ZL, "-w", workload, "--sched-cfg", '{"k": "v w"}'])
    data = sim.begin()["events"][0]["data"]
    assert data["config"]["sched-config"] == '{"k": "v w"}'
    assert [(r["id"], r["name"]) for r in data["compute_resources"]] == [(i, f"node{i}") for i in range(4)]
    assert data["workloads"] == {"w0": workload} and data["profiles"] == {"w0": {}}
    json.dumps(data)


def test_evalys_reads_the_jobs_file(start_sim: Any, tmp_path: Path) -> None:
    """evalys (the Batsim ecosystem's analysis library) loads our jobs file, kills,
    failures and an odd job id included (Batsim refuses ids with a ',' or '"': one
    with quotes and a brace is as hostile as a workload gets). Skipped where evalys is
    not installed."""
    jobset_module = pytest.importorskip("evalys.jobset")
    profiles = {"d10": {"type": "delay", "delay": 10}, "f": {"type": "delay", "delay": 1, "ret": 3}}
    sim, _ = run(start_sim, tmp_path, [job("a", "d10"), job("b 'x'{", "f", 2)], profiles,
                 kill_at(4.0, {"w0!a": "0", "w0!b 'x'{": "1-2"}))
    jobset = jobset_module.JobSet.from_csv(sim.prefix + "_jobs.csv")
    frame = jobset.df.set_index("jobID")
    assert frame.loc["a", "final_state"] == "COMPLETED_KILLED"
    assert frame.loc["b 'x'{", "execution_time"] == 1.0
    assert str(frame.loc["b 'x'{", "allocated_resources"]) == "1-2"


def test_a_return_code_of_minus_1_is_a_walltime_kill(start_sim: Any, tmp_path: Path) -> None:
    # Batsim 4.2.1 decides a job's end state from its return code alone: -1 is what its
    # walltime kill returns, so a profile returning -1 ends COMPLETED_WALLTIME_REACHED
    # (measured with the real program), also as the failing step of a sequence
    profiles = {"m1": {"type": "delay", "delay": 3, "ret": -1}, "d2": {"type": "delay", "delay": 2},
                "seq": {"type": "composed", "seq": ["d2", "m1", "d2"]}}
    _, events = run(start_sim, tmp_path, [job("j", "m1", walltime=100), job("s", "seq")], profiles,
                    execute_on({"w0!j": "0", "w0!s": "1"}))
    assert completions(events) == {"w0!j": (3.0, "COMPLETED_WALLTIME_REACHED", -1),
                                   "w0!s": (5.0, "COMPLETED_WALLTIME_REACHED", -1)}


def drive_to_exit(sim: Any) -> tuple[int, str, list[Event]]:
    """Start every job at once on its own host; answer until the simulator exits."""
    received: list[Event] = []
    for _ in range(300):  # (a bound: 300 messages or polls of 0.1 s)
        msg = sim.dp.recv(timeout=0.1)
        if msg is None:
            if sim.proc.poll() is not None:
                break
            continue
        received.extend(msg["events"])
        submitted = [e["data"]["job_id"] for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        sim.dp.send(msg["now"], [ev(msg["now"], "EXECUTE_JOB", job_id=j, alloc=str(i))
                                 for i, j in enumerate(submitted)])
        if received[-1]["type"] == "SIMULATION_ENDS":
            break
    code, err = sim.finish()
    return code, err, received


def test_a_return_code_below_minus_2_aborts_the_simulation(start_sim: Any, tmp_path: Path) -> None:
    # Batsim 4.2.1: "Job 'w0!j' completed with unknown return code: -3" (SIGABRT), when
    # the job ends
    profiles = {"m3": {"type": "delay", "delay": 3, "ret": -3}, "d5": {"type": "delay", "delay": 5}}
    workload = write_json(tmp_path / "wl.json", {"nb_res": 4, "jobs": [job("j", "m3"), job("k", "d5")],
                                                 "profiles": profiles})
    code, err, events = drive_to_exit(start_sim(["-p", ZL, "-w", workload]))
    assert code != 0 and "Job 'w0!j' completed with unknown return code: -3" in err
    assert completions(events) == {}


def test_a_return_code_of_minus_2_loses_the_job(start_sim: Any, tmp_path: Path) -> None:
    # Batsim 4.2.1 takes -2 for its kill by the scheduler, whose end the kill reports:
    # the job is never reported, the others go on, and the simulation cannot end
    profiles = {"m2": {"type": "delay", "delay": 3, "ret": -2}, "d5": {"type": "delay", "delay": 5}}
    workload = write_json(tmp_path / "wl.json", {"nb_res": 4, "jobs": [job("j", "m2"), job("k", "d5")],
                                                 "profiles": profiles})
    code, err, events = drive_to_exit(start_sim(["-p", ZL, "-w", workload]))
    assert completions(events) == {"w0!k": (5.0, "COMPLETED_SUCCESSFULLY", 0)}
    assert code == 3 and "deadlock" in err and "w0!j" in err


def test_a_call_due_within_10us_comes_10us_later(start_sim: Any) -> None:
    # Batsim 4.2.1's waiter sleeps at least 1e-5 s (shorter sleeps do not move SimGrid's
    # clock): a CALL_ME_LATER due sooner comes 1e-5 s after the time it was asked at,
    # one due later at its time (measured with the real program, this very exchange)
    sim = start_sim(["-p", ZL, "--enable-dynamic-jobs"])
    calls = []
    msg = sim.begin()
    for wait in (5e-7, 1.2e-6, 2e-5, None):
        now = msg["now"]
        sim.dp.send(now, [ev(now, "CALL_ME_LATER", timestamp=now + wait) if wait is not None else
                          ev(now, "NOTIFY", type="registration_finished")])
        msg = sim.dp.recv()
        assert msg is not None, sim.finish()
        calls += [e["timestamp"] for e in msg["events"] if e["type"] == "REQUESTED_CALL"]
    assert msg["events"][-1]["type"] == "SIMULATION_ENDS"
    sim.dp.send(msg["now"])
    assert sim.finish()[0] == 0
    assert calls == [1e-5, 2e-5, 4e-5]


def test_a_registered_profile_is_read_to_six_decimals(start_sim: Any) -> None:
    # Batsim 4.2.1 reads a REGISTER_PROFILE as it prints it, every float rounded to six
    # decimals (a workload file's profiles are run as given): a delay of 0.9999996 is
    # 1.0, and reaches a walltime of 1 (measured with the real program through the
    # Batsim executor)
    sim = start_sim(["-p", ZL, "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs"])
    msg = sim.begin()
    now = msg["now"]
    sim.dp.send(now, [ev(now, "REGISTER_PROFILE", workload_name="dyn", profile_name="d",
                         profile={"type": "delay", "delay": 0.9999996}),
                      ev(now, "REGISTER_JOB", job_id="dyn!j",
                         job={"id": "dyn!j", "subtime": 0, "res": 1, "profile": "d", "walltime": 1})])
    events: list[Event] = []
    for reply in ([("EXECUTE_JOB", {"job_id": "dyn!j", "alloc": "0"})],
                  [("NOTIFY", {"type": "registration_finished"})], []):
        msg = sim.dp.recv()
        assert msg is not None, sim.finish()
        events += msg["events"]
        sim.dp.send(msg["now"], [ev(msg["now"], kind, **data) for kind, data in reply])
    assert sim.finish()[0] == 0
    assert completions(events) == {"dyn!j": (1.0, "COMPLETED_WALLTIME_REACHED", -1)}
