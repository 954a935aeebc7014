"""Benchmark: a pilot over ``ssh://`` against the same pilot made on the machine itself,
in the same run (the real Slurm or OpenPBS, the real flux-core, the test login node's
real sshd on a loopback port: ``HPCJOBS_TEST_SSH_*``, see tests/ssh_login.py).

Each round makes one pilot here and one over ssh, alternating (here, ssh, here, ssh, ...)
so that a drift of the machine's load evens out. For each: N ``/bin/true`` jobs
submitted at once, before the pilot runs;

* ``jobs_per_s``: N over the time from the pilot's batch job seen ACTIVE to the last
  final callback (the pilot's start-up included, its wait in the queue not);
* ``running_to_first_active_s``: from the instance running (its URI file written, by
  the file's mtime: the login node is this machine) to the first job's ACTIVE callback
  in this process;
* over ssh, ``round_trips`` and ``logins`` of the executor's one connection, from its
  making to its close (a WAN figure: multiply the round trips by the link's latency).

Then, in the pilot over ssh once those ran, bursts of M ``/bin/true`` submitted to the
running pilot, alternating ``loop`` (``submit`` per job: the baseline, what
``submit_many`` did before it was batched) and ``submit_many``, ``--after`` of each:
``jobs_per_s`` from the call to the last final callback, ``submit_s`` the call itself,
``submit_round_trips`` the round trips carrying ``flux job submit`` (the pilot's own
polls, some four a second, are the rest of ``round_trips``).

The line ends with the medians over the rounds, min-max spreads and the ratios
``ssh_over_local`` and ``many_over_loop`` of the rates. Needs the batch system,
``flux`` on PATH with its bindings, and the login node.

With ``--node NAME`` each round also makes a third pilot over ssh whose node is named
NAME (PilotConfig.node_name: the test node behind the login node, scripts/sshd.sh), so
its Flux is reached by a second ssh hop from the login node; ``node_over_ssh`` is its
rate over the one-hop pilot's of the same round (no bursts after it runs).

    .venv/bin/python bench/pilot_ssh.py [--jobs 200] [--rounds 2] [--burst 100]
                                        [--after 2] [--backend slurm|pbs]
                                        [--node hpcjobs-test-node]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

from hpcjobs import Job, JobExecutor, JobSpec, JobState, JobStatus
from hpcjobs.executors.pilot import PilotJobExecutor
from hpcjobs.remote import Run, SshConnection, parse_ssh_url

WAIT = 1800.0  # bound for one part (never a timing assertion: a stuck part fails)


def count_submit_trips(connection: SshConnection) -> list[int]:
    """From now on, ``[n]``: the connection's round trips that carried a ``flux job
    submit`` (each still goes: the method is wrapped, not replaced)."""
    counted = [0]
    real = connection.batch

    def batch(ops: Sequence[Any], **options: Any) -> Any:
        counted[0] += any(isinstance(op, Run) and "submit" in op.argv for op in ops)
        return real(ops, **options)

    connection.batch = batch  # type: ignore[method-assign]
    return counted


def burst(ex: PilotJobExecutor, jobs: int, submit: Callable[[list[Job]], None],
          counted: list[int]) -> dict[str, Any]:
    """``jobs`` /bin/true submitted to the running pilot ``ex`` by ``submit``."""
    connection = ex.ssh_connection
    assert connection is not None
    batch = [Job(JobSpec("/bin/true")) for _ in range(jobs)]
    trips, submits, started = connection.round_trips, counted[0], time.monotonic()
    submit(batch)
    submitted = time.monotonic()
    for job in batch:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.COMPLETED, status
    return {"jobs_per_s": round(jobs / (time.monotonic() - started), 2),
            "submit_s": round(submitted - started, 3),
            "submit_round_trips": counted[0] - submits,
            "round_trips": connection.round_trips - trips}


def after_running(ex: PilotJobExecutor, jobs: int, rounds: int) -> dict[str, list[Any]]:
    """Bursts to the running pilot, ``loop`` and ``submit_many`` alternating."""
    assert ex.ssh_connection is not None
    counted = count_submit_trips(ex.ssh_connection)

    def loop(batch: list[Job]) -> None:
        for job in batch:
            ex.submit(job)

    out: dict[str, list[Any]] = {"loop": [], "submit_many": []}
    for _ in range(rounds):
        out["loop"].append(burst(ex, jobs, loop, counted))
        out["submit_many"].append(burst(ex, jobs, ex.submit_many, counted))
    return out


def one(backend: str, jobs: int, url: str | None, work: str,
        after: tuple[int, int] = (0, 0), node: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "backend": backend, "cores_per_node": 4, "walltime": timedelta(minutes=30),
        "memory_per_node": 2 << 30, "work_directory": f"{work}/pilot",
        "backend_config": {"work_directory": f"{work}/{backend}"}}
    if url is not None:
        config.update(ssh_options=["-F", os.environ["HPCJOBS_TEST_SSH_CONFIG"]],
                      flux=shutil.which("flux"), node_name=node)
    ex = JobExecutor.get_instance("pilot", url=url, config=config)
    assert isinstance(ex, PilotJobExecutor)
    first_active: list[float] = []

    def seen(job: Job, status: JobStatus) -> None:
        if status.state is JobState.ACTIVE and not first_active:
            first_active.append(time.time())

    batch = [Job(JobSpec("/bin/true")) for _ in range(jobs)]
    for job in batch:
        job.set_job_status_callback(seen)
        ex.submit(job)
    deadline = time.monotonic() + WAIT
    while ex.pilot_status.state is not JobState.ACTIVE:
        assert time.monotonic() < deadline and not ex.pilot_status.state.final, ex.pilot_status
        time.sleep(0.05)
    started = time.time()
    for job in batch:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.COMPLETED, status
    ended = time.time()
    uri = next(Path(ex.work_directory).glob("pilot-*/uri"))  # (the login node is here)
    running = uri.stat().st_mtime
    connection = ex.ssh_connection
    out: dict[str, Any] = {"jobs_per_s": round(jobs / (ended - started), 2),
                           "running_to_first_active_s": round(first_active[0] - running, 3)}
    if connection is not None:
        out.update(round_trips=connection.round_trips, logins=connection.logins)
        if after[1]:
            out["after_running"] = after_running(ex, *after)
    ex.close()
    return out


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--burst", type=int, default=100,
                        help="jobs of each burst to the running pilot over ssh")
    parser.add_argument("--after", type=int, default=2,
                        help="bursts of each kind per pilot over ssh (0: none)")
    parser.add_argument("--backend", choices=("slurm", "pbs"), default="slurm")
    parser.add_argument("--node", help="also a pilot behind the login node, on this node")
    args = parser.parse_args()
    url = f"ssh://{os.environ['HPCJOBS_TEST_SSH_HOST']}"
    rounds: list[dict[str, Any]] = []
    local_dir = tempfile.mkdtemp(prefix="hpcjobs-bench-pilot-")
    remote_dir = f"hpcjobs-bench-pilot-{uuid.uuid4().hex[:8]}"  # (in the remote home)
    try:
        for i in range(args.rounds):
            here = one(args.backend, args.jobs, None, f"{local_dir}/{i}")
            over = one(args.backend, args.jobs, url, f"{remote_dir}/{i}",
                       (args.burst, args.after))
            rounds.append({"local": here, "ssh": over})
            if args.node:
                rounds[-1]["node"] = one(args.backend, args.jobs, url,
                                         f"{remote_dir}/{i}-node", node=args.node)
            print(json.dumps({"round": i, **rounds[-1]}), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(local_dir, ignore_errors=True)
        with SshConnection(parse_ssh_url(url), ["-F", os.environ["HPCJOBS_TEST_SSH_CONFIG"]]) as c:
            c.run(["sh", "-c", 'rm -rf "$HOME/$1"', "sh", remote_dir])
    sides = ("local", "ssh", "node") if args.node else ("local", "ssh")
    rates = {side: [r[side]["jobs_per_s"] for r in rounds] for side in sides}
    firsts = {side: [r[side]["running_to_first_active_s"] for r in rounds]
              for side in sides}
    if args.node:
        after_node = {"node_over_ssh": spread(
            [round(r["node"]["jobs_per_s"] / r["ssh"]["jobs_per_s"], 3) for r in rounds])}
    else:
        after_node = {}
    ratios = [r["ssh"]["jobs_per_s"] / r["local"]["jobs_per_s"] for r in rounds]
    bursts = {kind: [b for r in rounds for b in r["ssh"].get("after_running", {}).get(kind, [])]
              for kind in ("loop", "submit_many")}
    after: dict[str, Any] = {}
    if bursts["loop"]:
        after = {kind: {figure: spread([b[figure] for b in done])
                        for figure in ("jobs_per_s", "submit_s", "submit_round_trips",
                                       "round_trips")}
                 for kind, done in bursts.items()}
        # each submit_many burst against the loop burst just before it
        after["many_over_loop"] = spread([round(m["jobs_per_s"] / lp["jobs_per_s"], 3)
                                          for lp, m in zip(*bursts.values())])
        after["burst"] = args.burst
    print(json.dumps({
        "bench": "pilot_ssh", "backend": args.backend, "jobs": args.jobs, "rounds": rounds,
        "jobs_per_s": {side: spread(v) for side, v in rates.items()},
        "running_to_first_active_s": {side: spread(v) for side, v in firsts.items()},
        "ssh_over_local": spread([round(r, 3) for r in ratios]),
        "round_trips": spread([r["ssh"]["round_trips"] for r in rounds]),
        "logins": spread([r["ssh"]["logins"] for r in rounds]),
        "after_running": after, **after_node}))


if __name__ == "__main__":
    main()
