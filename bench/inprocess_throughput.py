"""Workflow simulation in one process: the Batsim executor on its default simulator
(hpcjobs.sim in the executor's process) against the same executor on real Batsim 4.2.1
(a process over JSON/ZeroMQ), same workflow, same decision policy (the executor's FCFS
scheduler), in virtual time on 1,000 hosts.

The workflow: delay jobs (1-120 s to the millisecond, 1-8 hosts) in independent
chains, each job submitted when the one before it in its chain ends, so jobs arrive
continuously over the simulated time, each at an instant of its own; 200 chains keep
the platform about 90 % busy. The client waits on the job it expects to end first
(virtual time stops at each wait's end), then submits the successor of every chain
whose job has ended: the same script, so the same workload, on both simulators.

The two run alternately (``--rounds``, each round in the other order); the line gives
each side's jobs per wall-clock second (executor created to closed: simulator start-up
and the end of the simulation included) in every round, their medians, the ratio per
round and its median (target: >= 10), and how many jobs ended otherwise on real Batsim
(start, finish, state or hosts; docs/sim.md lists the known differences) and when the
first of them started on real Batsim (past 2^14 s, Batsim's clock is behind). Real Batsim
is found on PATH (``--batsim``). One JSON line per job count.

In process, the line also splits each job's CPU between the client's thread (building the
jobs, ``submit`` and ``wait``: PSI/J's side, no simulator in it) and the rest of the
process (the executor's decision thread with the simulator it steps), medians over the
rounds, beside the time a job may take in all for the target (``budget_us_per_job``: a
tenth of real Batsim's time per job in the same round).

Usage: python bench/inprocess_throughput.py [--jobs 20000 100000] [--rounds 3] [--seed S]
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
import random
import shutil
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import hpcjobs as psij

TARGET_RATIO = 10.0
HOSTS = 1000
CHAINS = 200  # 200 x 4.5 hosts on average: about 90 % of 1,000 hosts busy


def workflow(nb_jobs: int, seed: int) -> list[list[tuple[float, int]]]:
    """Per chain, its jobs' (delay, hosts)."""
    rng = random.Random(seed)
    chains: list[list[tuple[float, int]]] = [[] for _ in range(CHAINS)]
    for i in range(nb_jobs):
        chains[i % CHAINS].append((round(rng.uniform(1.0, 120.0), 3), rng.randint(1, 8)))
    return chains


def run(chains: list[list[tuple[float, int]]], work: Path, simulator: str) -> tuple[float, Path, float, float]:
    """The workflow on ``simulator``: wall seconds, the prefix of its output files, and
    the CPU seconds of this (the client's) thread and of the whole process."""
    attrs = psij.JobAttributes(duration=timedelta(seconds=1000))
    thread_cpu, process_cpu = time.thread_time(), time.process_time()

    def job(delay: float, hosts: int) -> psij.Job:
        return psij.Job(psij.JobSpec("sleep", [f"{delay:.3f}"], attributes=attrs,
                                     resources=psij.ResourceSpecV1(node_count=hosts)))

    start = time.perf_counter()
    config: dict[str, object] = {"work_directory": work, "hosts": HOSTS, "virtual_time": True,
                                 "virtual_idle_grace": None, "scheduler": "fcfs"}
    if simulator != "in-process":
        config["simulator"] = simulator
    ex = psij.JobExecutor.get_instance("batsim", config=config)
    nexts = [0] * len(chains)
    heads: list[psij.Job] = []
    expected: list[tuple[float, int]] = []  # (expected end, chain)
    now = 0.0
    for c, chain in enumerate(chains):
        heads.append(job(*chain[0]))
        ex.submit(heads[c])
        expected.append((chain[0][0], c))
    heapq.heapify(expected)
    while expected:
        end, c = expected[0]
        status = heads[c].status
        if not status.state.final:
            waited = heads[c].wait()  # the simulation runs until this job's status changes
            assert waited is not None
            status = waited
        if status.time is not None:
            now = max(now, status.time)
        # every chain expected to have ended by now: its successor, or look again later
        while expected and expected[0][0] <= now:
            end, c = heapq.heappop(expected)
            head = heads[c]
            if not head.status.state.final:
                heapq.heappush(expected, (now + chains[c][nexts[c]][0], c))  # queued or late
                continue
            assert head.status.state is psij.JobState.COMPLETED, head.status
            nexts[c] += 1
            if nexts[c] < len(chains[c]):
                delay, hosts = chains[c][nexts[c]]
                heads[c] = job(delay, hosts)
                ex.submit(heads[c])
                heapq.heappush(expected, (now + delay, c))
        if expected and expected[0][0] > now and heads[expected[0][1]].status.state.final:
            now = expected[0][0]  # (it ended before it was expected: take it now)
    ex.close()
    elapsed = time.perf_counter() - start
    thread_cpu, process_cpu = time.thread_time() - thread_cpu, time.process_time() - process_cpu
    prefix = ex.export_prefix  # type: ignore[attr-defined]
    return elapsed, Path(prefix), thread_cpu, process_cpu


def outcomes(prefix: Path) -> dict[str, tuple[str, ...]]:
    with open(f"{prefix}_jobs.csv", encoding="utf-8", newline="") as out:
        return {row["job_id"]: tuple(row[k] for k in ("starting_time", "finish_time", "final_state",
                                                         "allocated_resources"))
                for row in csv.DictReader(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=None, help="the workflow's seed (default: a fresh one)")
    parser.add_argument("--batsim", default=shutil.which("batsim") or "", help="real Batsim 4.2.1 (default: on PATH)")
    args = parser.parse_args()
    if not args.batsim:
        parser.error("no real Batsim: put batsim on PATH or give --batsim")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    for nb_jobs in args.jobs:
        chains = workflow(nb_jobs, seed)
        rates: dict[str, list[float]] = {"in-process": [], "batsim": []}
        client_us: list[float] = []  # in process, per job: the client's thread
        rest_us: list[float] = []  # the decision thread and the simulator it steps
        differing = []
        first: list[float | None] = []  # when the first of them started (s)
        with tempfile.TemporaryDirectory(prefix="bench-inprocess-") as tmp:
            for index in range(args.rounds):
                order = ["in-process", args.batsim] if index % 2 == 0 else [args.batsim, "in-process"]
                prefixes = {}
                for simulator in order:
                    wall, prefix, client, process = run(chains, Path(tmp) / f"{index}-{Path(simulator).name}",
                                                        simulator)
                    key = "in-process" if simulator == "in-process" else "batsim"
                    if key == "in-process":
                        client_us.append(client / nb_jobs * 1e6)
                        rest_us.append((process - client) / nb_jobs * 1e6)
                    rates[key].append(nb_jobs / wall)
                    prefixes[key] = prefix
                ours, real = outcomes(prefixes["in-process"]), outcomes(prefixes["batsim"])
                assert len(ours) == len(real) == nb_jobs, (len(ours), len(real))
                # (the job ids name the run: compare by job number)
                ours_n = {k.split("!")[-1]: v for k, v in ours.items()}
                real_n = {k.split("!")[-1]: v for k, v in real.items()}
                other = [k for k in ours_n if ours_n[k] != real_n.get(k)]
                differing.append(len(other))
                # (outcome[0] is the start) past 2**14 s, Batsim's clock is behind (docs/sim.md)
                first.append(min((float(real_n[k][0]) for k in other if k in real_n), default=None))
        ratios = [a / b for a, b in zip(rates["in-process"], rates["batsim"])]
        ratio = statistics.median(ratios)
        print(json.dumps({
            "bench": "inprocess_throughput", "jobs": nb_jobs, "hosts": HOSTS, "chains": CHAINS, "seed": seed,
            "rounds": args.rounds, "scheduler": "fcfs", "batsim": args.batsim,
            "in_process_jobs_per_s": round(statistics.median(rates["in-process"]), 1),
            "batsim_jobs_per_s": round(statistics.median(rates["batsim"]), 1),
            "in_process_jobs_per_s_rounds": [round(r, 1) for r in rates["in-process"]],
            "batsim_jobs_per_s_rounds": [round(r, 1) for r in rates["batsim"]],
            "ratio_rounds": [round(r, 2) for r in ratios], "ratio": round(ratio, 2),
            "ratio_spread": [round(min(ratios), 2), round(max(ratios), 2)],
            "in_process_cpu_us_per_job": {"client_thread": round(statistics.median(client_us), 1),
                                          "decisions_and_simulator": round(statistics.median(rest_us), 1)},
            "budget_us_per_job": round(1e6 / (TARGET_RATIO * statistics.median(rates["batsim"])), 1),
            "jobs_with_other_outcome_on_batsim": differing,
            "first_other_outcome_at_s": first,
            "target_ratio": TARGET_RATIO, "meets_target": ratio >= TARGET_RATIO,
        }), flush=True)


if __name__ == "__main__":
    main()
