"""Benchmark hpcjobs.sim: delay jobs with Poisson arrivals (1-8 hosts each) on a
1,000-host platform, driven by the minimal FCFS decision process below.

Prints one JSON line per protocol (``--protocol json batprotocol``; default all): simulated
jobs per wall-clock second, the ratio to JSON's in the same run (target for the binary
protocol: >= 1; with ``--rounds``, also per round and as JSON's CPU over this protocol's,
median of the rounds), the CPU seconds of the simulator and of the decision process
(steadier than wall time on a busy machine), the simulator's peak RSS,
and, as the baseline measured in the same run, the bare JSON/ZeroMQ round-trip rate
between two processes of this machine (the floor no simulator over this protocol can
beat). Over ZeroMQ, each round also runs a null peer in the simulator's place: a process
that only sends the simulator's requests of that run, recorded beforehand, byte for byte,
and takes the replies, to the same decision process (``null_peer_jobs_per_s``; the
simulator's rate over it, paired by round, is ``ratio_to_null_peer``: what the
simulator's own work costs; target >= 0.8). When a real ``batsim`` is at hand (PATH, or ``--batsim PROGRAM``; ``--batsim ''``
skips it), the same workload also runs on it in the same run, driven by the same decision
process over JSON, and one more line (protocol ``batsim-4.2.1``) gives its figures and
hpcjobs.sim's speed-up and memory share against it (targets: >= 5x its jobs/s, <= 40 %
of its peak RSS), and how many jobs ended otherwise on it (``jobs_with_other_outcome``:
start, finish, state or hosts; ``--time-resolution 0.001`` gives the differential test's
large workloads). Peak RSS is each simulator process's own (wait4).

Usage: python bench/sim_throughput.py [--jobs 100000] [--hosts 1000] [--seed 1] [--time-resolution 1]
                                     [--protocol json batprotocol] [--batsim PROGRAM] [--cold-imports]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import struct
import sys
import tempfile
import time
from collections import deque
from typing import Callable

import zmq

from hpcjobs.batsim_protocol.codecs import NAMES, get_codec
from hpcjobs.batsim_protocol.events import Message, edc_hello, execute_job
from hpcjobs.batsim_protocol.transports import Endpoint
from hpcjobs.executors.batsim.decide import open_endpoint
from hpcjobs.sim.inprocess import open_simulation

#: the simulator in this process (a "protocol" of this benchmark: no wire at all)
IN_PROCESS = "in-process"

TARGET_JOBS_PER_S = 5000.0
TARGET_PEAK_MB = 200.0
#: hpcjobs.sim against real Batsim on the same workload: at least this much faster, with
#: at most this share of its peak memory
TARGET_SPEEDUP_VS_BATSIM = 5.0
TARGET_RSS_SHARE_VS_BATSIM = 0.4
#: the simulator's rate over a null peer's, same decision process and messages
TARGET_RATIO_TO_NULL_PEER = 0.8

#: the null peer: sends the recorded requests (a file of 4-byte big-endian lengths and
#: messages) one by one over REQ, takes each reply, and reads nothing in it
NULL_PEER = """import struct, sys, zmq
data = open(sys.argv[2], "rb").read()
ctx = zmq.Context(); sock = ctx.socket(zmq.REQ); sock.connect(sys.argv[1])
at = 0
while at < len(data):
    (size,) = struct.unpack_from(">I", data, at)
    sock.send(data[at + 4:at + 4 + size]); sock.recv()
    at += 4 + size
sock.close(linger=0); ctx.term()
"""


def arrival_rate(nb_hosts: int) -> float:
    """Poisson arrival rate (jobs/s): 90 % of what the platform can run."""
    return 0.9 * nb_hosts / (4.5 * 60.5)


def write_inputs(folder: str, nb_jobs: int, nb_hosts: int, seed: int, resolution: float) -> tuple[str, str]:
    rng = random.Random(seed)
    platform = os.path.join(folder, "platform.xml")
    with open(platform, "w", encoding="utf-8") as out:
        out.write(f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="AS0" routing="Full">
    <cluster id="C" prefix="node" suffix="" radical="0-{nb_hosts - 1}" speed="1Gf" bw="1GBps" lat="0us"/>
    <cluster id="M" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="1GBps" lat="0us">
      <prop id="role" value="master"/>
    </cluster>
    <link id="backbone" bandwidth="10GBps" latency="0us"/>
    <zoneRoute src="C" dst="M" gw_src="nodeC_router" gw_dst="master_hostM_router">
      <link_ctn id="backbone"/>
    </zoneRoute>
  </zone>
</platform>
""")
    # Like workloads made from SWF traces, times are whole seconds. Delays of 1-120 s
    # (mean 60.5) on 1-8 hosts (mean 4.5) give a capacity of hosts / 272 jobs/s; jobs
    # arrive at 90 % of it, so the platform is busy but the queue stays bounded.
    delays = list(range(1, 121))
    profiles = {f"d{d}": {"type": "delay", "delay": d} for d in delays}
    jobs = []
    now = 0.0
    for i in range(nb_jobs):
        now += rng.expovariate(arrival_rate(nb_hosts))
        subtime = float(int(now / resolution) * resolution) if resolution > 0 else now
        jobs.append({"id": i, "subtime": subtime, "res": rng.randint(1, 8),
                     "profile": f"d{rng.choice(delays)}", "walltime": -1})
    workload = os.path.join(folder, "workload.json")
    with open(workload, "w", encoding="utf-8") as out:
        json.dump({"nb_res": nb_hosts, "jobs": jobs, "profiles": profiles}, out)
    return platform, workload


def fcfs(endpoint: Endpoint, hello: bool) -> int:
    """First-come first-served: start queued jobs in order while the head fits (a
    decision process on the protocol stack, so every protocol is driven alike)."""
    queue: deque[tuple[str, int]] = deque()
    free: list[int] = []
    allocs: dict[str, list[int]] = {}  # batprotocol's JOB_COMPLETED has no alloc
    messages = 0
    msg = endpoint.receive(_alive)
    if hello:
        endpoint.send(Message(msg.now, [edc_hello(msg.now)]))
        msg = endpoint.receive(_alive)
    while True:
        messages += 1
        now = msg.now
        decisions = []
        for event in msg.events:
            kind = event["type"]
            data = event["data"]
            if kind == "JOB_SUBMITTED":
                queue.append((data["job_id"], data["job"]["res"]))
            elif kind == "JOB_COMPLETED":
                free.extend(allocs.pop(data["job_id"]))
            elif kind == "SIMULATION_BEGINS":
                free = list(range(data["nb_compute_resources"]))
            elif kind == "SIMULATION_ENDS":
                endpoint.send(Message(now, []))
                return messages
        while queue and queue[0][1] <= len(free):
            job_id, res = queue.popleft()
            alloc = allocs[job_id] = [free.pop() for _ in range(res)]
            decisions.append(execute_job(now, job_id, " ".join(map(str, alloc))))
        endpoint.send(Message(now, decisions))
        msg = endpoint.receive(_alive)


class Recording:
    """An endpoint that keeps every request it receives, encoded again by ``codec``
    (the simulator's own encoder), for the null peer to send."""

    def __init__(self, endpoint: Endpoint, protocol: str) -> None:
        self.endpoint = endpoint
        self.encode = get_codec(protocol).encode
        self.requests: list[bytes] = []

    def receive(self, alive: Callable[[], None]) -> Message:
        message = self.endpoint.receive(alive)
        self.requests.append(self.encode(message))
        return message

    def send(self, message: Message) -> None:
        self.endpoint.send(message)

    def close(self) -> None:
        self.endpoint.close()


def record_requests(protocol: str, platform: str, workload: str, folder: str,
                    env: "dict[str, str] | None") -> str:
    """Run the workload once on hpcjobs.sim (not timed), keeping the simulator's
    requests; the file the null peer sends them from."""
    where = f"ipc://{folder}/record-{protocol}.sock"
    channel = Recording(open_endpoint(protocol, where, None, 30.0), protocol)
    sim = subprocess.Popen([sys.executable, "-m", "hpcjobs.sim", "--protocol", protocol, "-p", platform,
                            "-w", workload, "-s", where, "-e", os.path.join(folder, f"record-{protocol}"), "-q"],
                           env=env)
    fcfs(channel, get_codec(protocol).hello)
    if sim.wait() != 0:
        raise RuntimeError(f"hpcjobs.sim failed recording the {protocol} requests")
    channel.close()
    path = os.path.join(folder, f"requests-{protocol}.bin")
    with open(path, "wb") as out:
        for request in channel.requests:
            out.write(struct.pack(">I", len(request)) + request)
    return path


def run_null_peer(protocol: str, requests: str, folder: str, nb_jobs: int) -> float:
    """The same decision process against the null peer; jobs per wall-clock second
    (timed as :func:`run` times the simulator: start to the peer's exit)."""
    where = f"ipc://{folder}/null-{protocol}.sock"
    start = time.perf_counter()
    channel = open_endpoint(protocol, where, None, 30.0)
    peer = subprocess.Popen([sys.executable, "-c", NULL_PEER, where, requests])
    fcfs(channel, get_codec(protocol).hello)
    code = peer.wait()
    elapsed = time.perf_counter() - start
    channel.close()
    if code != 0:
        raise RuntimeError(f"the null peer failed ({code})")
    return nb_jobs / elapsed


def _alive() -> None:
    """The simulator's exit is noticed by the main loop's wait."""


def zmq_baseline(endpoint: str, count: int) -> float:
    """Round trips per second of a comparable JSON message between two processes."""
    echo = ("import sys, zmq\nc = zmq.Context(); s = c.socket(zmq.REQ); s.connect(sys.argv[1])\n"
            "m = b'{\"now\": 1.0, \"events\": [{\"timestamp\": 1.0, \"type\": \"JOB_COMPLETED\", "
            "\"data\": {\"job_id\": \"w0!1\", \"job_state\": \"COMPLETED_SUCCESSFULLY\", "
            "\"return_code\": 0, \"alloc\": \"1-4\"}}]}'\n"
            f"for _ in range({count}):\n    s.send(m); s.recv()\n")
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(endpoint)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", echo, endpoint])
    for _ in range(count):
        msg = json.loads(sock.recv())
        sock.send(json.dumps({"now": msg["now"], "events": []}).encode())
    elapsed = time.perf_counter() - start
    proc.wait(timeout=60)
    sock.close(linger=0)
    ctx.term()
    return count / elapsed


def warm_imports(protocols: list[str], folder: str) -> dict[str, str]:
    """Import every codec here (the decision process) and let the simulator's Python
    cache compiled modules in a private folder, filled before the clock starts: what an
    installed package (whose modules pip compiles) does. The figures then compare the
    protocols, not the compile time of their modules, which is the same for any run
    length (batprotocol's generated module alone takes some 0.2 s to compile)."""
    for protocol in protocols:
        get_codec(protocol)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")
    modules = ["hpcjobs.sim.cli", *(f"hpcjobs.batsim_protocol.codecs.{p}" for p in protocols)]
    subprocess.run([sys.executable, "-c", f"import {', '.join(modules)}"], env=env, check=True)
    return env


def _median(results: list[dict[str, object]]) -> dict[str, object]:
    """The run of median wall time (the faster of the two middle ones)."""
    ordered = sorted(results, key=lambda r: float(r["wall_s"]))  # type: ignore[arg-type]
    return ordered[(len(ordered) - 1) // 2]


def _wait(proc: "subprocess.Popen[bytes]") -> tuple[int, float]:
    """Exit code and peak RSS (MB) of this one child process."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


def run(protocol: str, platform: str, workload: str, folder: str, redis_url: str,
        batsim: str = "", env: "dict[str, str] | None" = None) -> dict[str, object]:
    """One end-to-end run of the workload over ``protocol`` (JSON on the real ``batsim``
    program when one is given)."""
    if protocol == IN_PROCESS:
        return run_in_process(platform, workload, folder)
    # legacy: Batsim serves a Unix socket and the decision process connects to it
    legacy = protocol == "legacy"
    where = f"{folder}/{protocol}.sock" if legacy else f"ipc://{folder}/{protocol}.sock"
    prefix = os.path.join(folder, "batsim" if batsim else protocol)
    cpu_sim, cpu_dp = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF)
    start = time.perf_counter()
    channel = None if legacy else open_endpoint(protocol, where, None, 30.0)
    program = [batsim] if batsim else [sys.executable, "-m", "hpcjobs.sim", "--protocol", protocol,
                                       *(["--redis-url", redis_url] if legacy else [])]
    sim = subprocess.Popen([*program, "-p", platform, "-w", workload, "-s", where, "-e", prefix, "-q"],
                           stderr=subprocess.DEVNULL if batsim else None, env=env)
    if channel is None:
        channel = open_endpoint(protocol, where, redis_url, 30.0)
    messages = fcfs(channel, get_codec(protocol).hello)
    code, peak_mb = _wait(sim)
    elapsed = time.perf_counter() - start
    # the simulator was reaped by _wait: its CPU time is in RUSAGE_CHILDREN now
    cpu_sim, cpu_dp = _cpu(resource.RUSAGE_CHILDREN) - cpu_sim, _cpu(resource.RUSAGE_SELF) - cpu_dp
    channel.close()
    with open(f"{prefix}_jobs.csv", encoding="utf-8") as out:
        finished = sum(1 for _ in out) - 1
    return {"exit_code": code, "jobs_finished": finished, "messages": messages, "wall_s": round(elapsed, 3),
            "peak_rss_mb": round(peak_mb, 1), "cpu_s": {"simulator": round(cpu_sim, 2),
                                                        "decision_process": round(cpu_dp, 2)}}


def run_in_process(platform: str, workload: str, folder: str) -> dict[str, object]:
    """The workload on hpcjobs.sim in this very process (the Batsim executor's default:
    no socket, no encoding), driven by the same decision process; one process, so one
    CPU figure (under "decision_process") and no peak RSS of the simulator's own."""
    prefix = os.path.join(folder, IN_PROCESS)
    cpu = _cpu(resource.RUSAGE_SELF)
    start = time.perf_counter()
    endpoint = open_simulation(["-p", platform, "-w", workload, "-e", prefix, "-q"])
    messages = fcfs(endpoint, False)
    if endpoint.pending_error is not None:  # (writing the outputs failed)
        raise endpoint.pending_error
    elapsed = time.perf_counter() - start
    cpu = _cpu(resource.RUSAGE_SELF) - cpu
    endpoint.close()
    with open(f"{prefix}_jobs.csv", encoding="utf-8") as out:
        finished = sum(1 for _ in out) - 1
    return {"exit_code": 0, "jobs_finished": finished, "messages": messages, "wall_s": round(elapsed, 3),
            "peak_rss_mb": 0.0, "cpu_s": {"simulator": 0.0, "decision_process": round(cpu, 2)}}


def outcomes_differing(folder: str) -> int:
    """Jobs whose outcome (start, finish, final state, allocation) differs between the
    JSON run of hpcjobs.sim and real Batsim's, both in ``folder``."""
    rows = []
    for prefix in ("json", "batsim"):
        with open(os.path.join(folder, f"{prefix}_jobs.csv"), encoding="utf-8", newline="") as out:
            rows.append({row["job_id"]: tuple(row[k] for k in ("starting_time", "finish_time", "final_state",
                                                                   "allocated_resources"))
                         for row in csv.DictReader(out)})
    ours, real = rows
    return sum(1 for job in ours.keys() | real.keys() if ours.get(job) != real.get(job))


def _null_peer_figures(nb_jobs: int, results: list[dict[str, object]],
                       null_rates: "list[float] | None") -> dict[str, object]:
    """The null peer's rate and the simulator's over it, paired by round."""
    if not null_rates:
        return {}
    ratios = [nb_jobs / float(r["wall_s"]) / null  # type: ignore[arg-type]
              for r, null in zip(results, null_rates)]
    return {"null_peer_jobs_per_s": round(statistics.median(null_rates), 1),
            "null_peer_jobs_per_s_rounds": [round(rate, 1) for rate in null_rates],
            "ratio_to_null_peer": round(statistics.median(ratios), 3),
            "ratio_to_null_peer_rounds": [round(ratio, 3) for ratio in ratios],
            "ratio_to_null_peer_spread": [round(min(ratios), 3), round(max(ratios), 3)],
            "target_ratio_to_null_peer": TARGET_RATIO_TO_NULL_PEER}


def _cpu_total(result: dict[str, object]) -> float:
    """CPU seconds of both processes of a run."""
    cpu: dict[str, float] = result["cpu_s"]  # type: ignore[assignment]
    return cpu["simulator"] + cpu["decision_process"]


def _cpu(who: int) -> float:
    """CPU seconds used so far (user + system): less blurred by a busy machine than wall time."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-resolution", type=float, default=1.0,
                        help="subtimes are multiples of this (s); 0: continuous, so almost every "
                             "event gets a message of its own (about 2 per job)")
    parser.add_argument("--protocol", nargs="+", choices=[*NAMES, IN_PROCESS], default=list(NAMES),
                        help="protocols to run, one JSON line each (default: all but in-process, the "
                             "simulator in this process with no wire)")
    parser.add_argument("--batsim", default=shutil.which("batsim") or "",
                        help="a real Batsim 4.2.1 program to compare with (default: batsim on PATH; "
                             "'' skips it)")
    parser.add_argument("--redis-url", default=os.environ.get("HPCJOBS_TEST_REDIS"),
                        help="the Redis of the legacy protocol (default: $HPCJOBS_TEST_REDIS, "
                             "which scripts/redis.sh up prints)")
    parser.add_argument("--cold-imports", action="store_true",
                        help="time Python's imports too: compiling the modules (this environment sets "
                             "PYTHONDONTWRITEBYTECODE), numpy pulled in by the flatbuffers runtime when "
                             "installed; by default both ends import and compile before the clock starts")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every protocol this many times, each round in another order (whichever "
                             "runs later in a round was seen to get slower here); each line gives the run "
                             "of median wall time and lists all rounds")
    args = parser.parse_args()
    if "legacy" in args.protocol and not args.redis_url:
        parser.error("--protocol legacy needs a Redis: --redis-url, or eval \"$(scripts/redis.sh up)\"")
    with tempfile.TemporaryDirectory() as folder:
        platform, workload = write_inputs(folder, args.jobs, args.hosts, args.seed, args.time_resolution)
        wired = [p for p in args.protocol if p != IN_PROCESS]
        env = None if args.cold_imports else warm_imports(wired, folder)
        rounds: dict[str, list[dict[str, object]]] = {protocol: [] for protocol in args.protocol}
        # the null peer stands in for the simulator over ZeroMQ (not legacy's Unix socket)
        requests = {protocol: record_requests(protocol, platform, workload, folder, env)
                    for protocol in wired if protocol != "legacy"}
        null_rates: dict[str, list[float]] = {protocol: [] for protocol in requests}
        for index in range(args.rounds):
            shift = index % len(args.protocol)
            for protocol in args.protocol[shift:] + args.protocol[:shift]:
                # the null peer just before or just after, by turns
                if protocol in requests and index % 2:
                    null_rates[protocol].append(run_null_peer(protocol, requests[protocol], folder, args.jobs))
                rounds[protocol].append(run(protocol, platform, workload, folder, args.redis_url, env=env))
                if protocol in requests and not index % 2:
                    null_rates[protocol].append(run_null_peer(protocol, requests[protocol], folder, args.jobs))
        runs = {protocol: _median(results) for protocol, results in rounds.items()}
        real = run("json", platform, workload, folder, "", args.batsim) if args.batsim else None
        differing = None if real is None or "json" not in runs else outcomes_differing(folder)
        messages = max(int(r["messages"]) for r in runs.values())  # type: ignore[call-overload]
        baseline = zmq_baseline(f"ipc://{folder}/baseline.sock", min(messages, 50_000))
    json_rate = args.jobs / float(runs["json"]["wall_s"]) if "json" in runs else None  # type: ignore[arg-type]
    for protocol, result in runs.items():
        jobs_per_s = args.jobs / float(result["wall_s"])  # type: ignore[arg-type]
        peak_mb = float(result["peak_rss_mb"])  # type: ignore[arg-type]
        messages = int(result["messages"])  # type: ignore[call-overload]
        print(json.dumps({
            "bench": "sim_throughput", "protocol": protocol, "jobs": args.jobs, "hosts": args.hosts,
            "exit_code": result["exit_code"], "jobs_finished": result["jobs_finished"],
            "arrival_rate_per_s": round(arrival_rate(args.hosts), 3),
            "time_resolution_s": args.time_resolution, "messages": messages,
            "messages_per_job": round(messages / args.jobs, 3), "wall_s": result["wall_s"],
            "jobs_per_s": round(jobs_per_s, 1), "peak_rss_mb": peak_mb, "cpu_s": result["cpu_s"],
            "ratio_to_json": None if json_rate is None else round(jobs_per_s / json_rate, 3),
            "baseline_zmq_json_roundtrips_per_s": round(baseline, 1),
            "roundtrip_floor_jobs_per_s": round(baseline * args.jobs / messages, 1),
            "target": {"jobs_per_s": TARGET_JOBS_PER_S, "peak_mb": TARGET_PEAK_MB},
            "meets_target": jobs_per_s >= TARGET_JOBS_PER_S and peak_mb <= TARGET_PEAK_MB,
            "warm_imports": not args.cold_imports, "rounds": args.rounds,
            "wall_s_rounds": [r["wall_s"] for r in rounds[protocol]],
            "cpu_s_rounds": [r["cpu_s"] for r in rounds[protocol]],
            # paired by round (each round runs every protocol): steadier than the medians'
            # ratio above on a busy machine
            "ratio_to_json_rounds": None if "json" not in rounds else [
                round(float(j["wall_s"]) / float(r["wall_s"]), 3)  # type: ignore[arg-type]
                for j, r in zip(rounds["json"], rounds[protocol])],
            "cpu_ratio_to_json": None if "json" not in rounds else round(statistics.median(
                _cpu_total(j) / _cpu_total(r) for j, r in zip(rounds["json"], rounds[protocol])), 3),
            **_null_peer_figures(args.jobs, rounds[protocol], null_rates.get(protocol)),
        }))
    if real is not None and json_rate is not None:
        batsim_rate = args.jobs / float(real["wall_s"])  # type: ignore[arg-type]
        speedup = json_rate / batsim_rate
        rss_share = float(runs["json"]["peak_rss_mb"]) / float(real["peak_rss_mb"])  # type: ignore[arg-type]
        print(json.dumps({
            "bench": "sim_throughput", "protocol": "batsim-4.2.1", "program": args.batsim, "jobs": args.jobs,
            "hosts": args.hosts, "time_resolution_s": args.time_resolution, **real,
            "jobs_per_s": round(batsim_rate, 1),
            "hpcjobs_sim_speedup": round(speedup, 2), "hpcjobs_sim_rss_share": round(rss_share, 3),
            # the same decisions on both: jobs whose start, finish, state or hosts differ
            # (tests/sim/test_differential_large.py; docs/sim.md, known differences)
            "jobs_with_other_outcome": differing,
            # the simulator in this process, same decision process, against real Batsim
            "in_process_speedup": None if IN_PROCESS not in runs else round(
                args.jobs / float(runs[IN_PROCESS]["wall_s"]) / batsim_rate, 2),  # type: ignore[arg-type]
            "target": {"speedup": TARGET_SPEEDUP_VS_BATSIM, "rss_share": TARGET_RSS_SHARE_VS_BATSIM},
            "meets_target": speedup >= TARGET_SPEEDUP_VS_BATSIM and rss_share <= TARGET_RSS_SHARE_VS_BATSIM,
        }))


if __name__ == "__main__":
    main()
