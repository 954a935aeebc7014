"""Batsim executor throughput: N ``sleep`` jobs through ``JobExecutor.submit`` in
virtual time on a 1,000-host simulated platform, submit all, wait all, close.

Baseline in the same run: the same simulator (``hpcjobs.sim``, a separate process) and
the same jobs, driven by a minimal decision process (this file's ``minimal``): one
reply registering every job, FIFO onto free hosts, no PSI/J, no scheduler interface.
Both include simulator start-up and the end of the simulation. Prints one JSON line per
simulator — ``hpcjobs.sim``, and the real ``batsim`` when one is on PATH (the same
executor and the same minimal decision process on it): jobs per wall-clock second of
both and their ratio (target: ratio >= 0.7). The two are run alternately for a few
rounds and the best round of each counts, so that load from other processes on the
machine disturbs the comparison as little as possible; the spread of the rounds' own
ratios is printed too, and the CPU seconds each side used (this process and the
simulator's), whose ratio other processes' load disturbs less than wall-clock time's.
Usage: python bench/batsim_executor.py [N] [HOSTS] [ROUNDS]
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from datetime import timedelta
from pathlib import Path

import zmq

import hpcjobs as psij
from hpcjobs.executors.batsim.platform import write_platform


def seconds(i: int) -> int:
    """The simulated duration of job i (1..100 s, so completions interleave)."""
    return 1 + (i * 37) % 100


#: the simulators compared: the executor's ``simulator`` setting -> the program started
SIMULATORS = {"hpcjobs.sim": [sys.executable, "-m", "hpcjobs.sim", "--timeout", "0"]}
if shutil.which("batsim"):
    SIMULATORS["batsim"] = [str(shutil.which("batsim"))]


def minimal(n: int, hosts: int, work: Path, program: list[str]) -> float:
    """The simulator driven by a bare decision process; jobs per wall-clock second."""
    platform = write_platform(work / "platform.xml", hosts, 1, "1Gf")
    endpoint = f"ipc://{work}/minimal.sock"
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(endpoint)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*program, "-p", str(platform),
                             "-e", str(work / "minimal"), "-s", endpoint, "-q",
                             "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
                             "--enable-profile-reuse"], stderr=subprocess.DEVNULL)
    free = deque(range(hosts))
    queue: deque[str] = deque()
    registered = False
    while True:
        msg = json.loads(sock.recv())
        now, out = msg["now"], []
        for event in msg["events"]:
            kind, data = event["type"], event["data"]
            if kind == "SIMULATION_ENDS":
                sock.send(json.dumps({"now": now, "events": []}).encode())
                proc.wait()
                sock.close(linger=0)
                ctx.term()
                return n / (time.perf_counter() - t0)
            if kind == "JOB_SUBMITTED":
                queue.append(data["job_id"])
            elif kind == "JOB_COMPLETED":
                free.append(int(data["alloc"]))
        if not registered:
            registered = True
            profiles = {seconds(i) for i in range(n)}
            out += [{"timestamp": now, "type": "REGISTER_PROFILE",
                     "data": {"workload_name": "b", "profile_name": f"d{s}",
                              "profile": {"type": "delay", "delay": s}}} for s in sorted(profiles)]
            out += [{"timestamp": now, "type": "REGISTER_JOB",
                     "data": {"job_id": f"b!{i}", "job": {"id": f"b!{i}", "subtime": now, "res": 1,
                                                          "profile": f"d{seconds(i)}", "walltime": 1000}}}
                    for i in range(n)]
            out.append({"timestamp": now, "type": "NOTIFY", "data": {"type": "registration_finished"}})
        while queue and free:
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": queue.popleft(), "alloc": str(free.popleft())}})
        sock.send(json.dumps({"now": now, "events": out}).encode())


def executor(n: int, hosts: int, work: Path, simulator: str) -> float:
    """The same through JobExecutor.submit; jobs per wall-clock second."""
    attrs = psij.JobAttributes(duration=timedelta(seconds=1000))
    jobs = [psij.Job(psij.JobSpec("sleep", [str(seconds(i))], attributes=attrs)) for i in range(n)]
    t0 = time.perf_counter()
    ex = psij.JobExecutor.get_instance("batsim", config={
        "work_directory": work, "hosts": hosts, "virtual_time": True, "simulator": simulator})
    for job in jobs:
        ex.submit(job)
    for job in jobs:
        status = job.wait()
        assert status is not None and status.state is psij.JobState.COMPLETED, status
    ex.close()
    return n / (time.perf_counter() - t0)


def _cpu() -> float:
    """CPU seconds used so far by this process and its reaped children (the simulator)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    hosts = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for simulator, program in SIMULATORS.items():
        baselines: list[float] = []
        ours: list[float] = []
        cpu_min: list[float] = []
        cpu_ours: list[float] = []
        with tempfile.TemporaryDirectory(prefix="bench-batsim-") as tmp:
            for i in range(rounds):
                base = Path(tmp) / f"minimal{i}"
                base.mkdir()
                cpu = _cpu()
                baselines.append(minimal(n, hosts, base, program))
                cpu_min.append(_cpu() - cpu)
                cpu = _cpu()
                ours.append(executor(n, hosts, Path(tmp) / f"executor{i}", simulator))
                cpu_ours.append(_cpu() - cpu)
        ratios = [o / b for o, b in zip(ours, baselines)]
        print(json.dumps({"benchmark": "batsim_executor", "simulator": simulator, "jobs": n, "hosts": hosts,
                          "rounds": rounds, "minimal_decision_process_jobs_per_s": round(max(baselines), 1),
                          "executor_jobs_per_s": round(max(ours), 1), "ratio": round(max(ours) / max(baselines), 3),
                          "ratio_spread": [round(min(ratios), 3), round(max(ratios), 3)],
                          "cpu_s_median": {"minimal": round(statistics.median(cpu_min), 2),
                                           "executor": round(statistics.median(cpu_ours), 2)},
                          "cpu_ratio": round(statistics.median(cpu_min) / statistics.median(cpu_ours), 3),
                          "target_ratio": 0.7}), flush=True)


if __name__ == "__main__":
    main()
