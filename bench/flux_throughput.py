"""Benchmark: the Flux executor against the bare bindings, on a real Flux instance.

N ``/bin/true`` jobs through ``FluxJobExecutor.submit`` (each with a status callback),
against the same N through ``flux.job.submit`` with one job-manager journal watch on its
own thread (what a hand-written client does), in the same run, each round on a fresh
instance (``flux start --test-size=2``, started here: an instance slows down as it keeps
more inactive jobs, which would favour the first round; or ``--uri`` of one you have).
The rounds run one after the other in the order raw, hpcjobs, hpcjobs, raw, ...
(``--rounds`` pairs), so a drift of the machine's load evens out.

* ``jobs_per_s``: N over the time from the first submit to the last job's final
  report (the callback for hpcjobs, the journal's ``finish`` event for the raw client);
  ``ratio``: hpcjobs' over the raw client's (target >= 0.8);
* ``end_to_final_ms``: from the job's end (the timestamp of Flux's ``finish`` event) to
  the final report reaching the program (median and p95), for both.

Prints one JSON line. Needs ``flux`` on PATH and its bindings importable.

    .venv/bin/python bench/flux_throughput.py [--jobs 1000] [--rounds 1] [--uri URI]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
from typing import Any

from hpcjobs import Job, JobExecutor, JobSpec, JobState, JobStatus

WAIT = 600.0  # bound for one round (never a timing assertion: a stuck round fails)


def start_instance() -> tuple[subprocess.Popen[str], str]:
    """``flux start --test-size=2`` living until its stdin closes; returns it and its URI."""
    process = subprocess.Popen(
        ["flux", "start", "--test-size=2", "sh", "-c",
         'printf "%s\\n" "$FLUX_URI"; exec cat >/dev/null'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    uri = process.stdout.readline().strip()
    if not uri:
        raise SystemExit("flux start printed no URI")
    return process, uri


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(n: int, elapsed: float, latencies: list[float]) -> dict[str, Any]:
    return {"jobs_per_s": round(n / elapsed, 1), "elapsed_s": round(elapsed, 2),
            "end_to_final_ms": {"median": round(statistics.median(latencies) * 1e3, 1),
                                "p95": round(percentile(latencies, 0.95) * 1e3, 1)}}


def raw_round(uri: str, n: int) -> dict[str, Any]:
    """``flux.job.submit`` N times; one journal watch on a thread sees them finish. The
    watch takes no lock the submit loop holds (it notes every job's end, ours picked
    after), so it is never held up by a submit's round trip."""
    import flux
    import flux.job

    handle = flux.Flux(uri)
    jobspec = flux.job.JobspecV1.from_command(["/bin/true"], environment=dict(os.environ),
                                              cwd=os.getcwd())
    # Flux id -> (finish to seen here, in s; when seen, perf_counter)
    finished: dict[int, tuple[float, float]] = {}
    arrived = threading.Event()
    stop = threading.Event()
    watching = threading.Event()

    def watch() -> None:
        consumer = flux.job.JournalConsumer(flux.Flux(uri), full=False).start()
        watching.set()
        while not stop.is_set():
            try:
                event = consumer.poll(0.25)
            except TimeoutError:
                continue
            if event is None:
                break
            if event.name == "finish":
                finished[int(event.jobid)] = (time.time() - event.timestamp,
                                              time.perf_counter())
                arrived.set()
        consumer.stop()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    watching.wait(WAIT)
    start = time.perf_counter()
    ours = [int(flux.job.submit(handle, jobspec)) for _ in range(n)]
    deadline = time.monotonic() + WAIT
    while not all(jobid in finished for jobid in ours):
        if time.monotonic() > deadline:
            raise SystemExit("raw round: not every job finished")
        arrived.wait(0.25)
        arrived.clear()
    stop.set()
    seen = [finished[jobid] for jobid in ours]
    return summary(n, max(at for _lag, at in seen) - start, [lag for lag, _at in seen])


def hpcjobs_round(uri: str, n: int, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """N jobs through the executor, each with a callback noting its final report."""
    latencies: list[float] = []
    lock = threading.Lock()
    done = threading.Event()
    last = [0.0]

    def on_status(_job: Job, status: JobStatus) -> None:
        if not status.state.final:
            return
        now = time.time()
        if status.state is not JobState.COMPLETED:
            raise SystemExit(f"a /bin/true job ended {status}")
        with lock:
            latencies.append(now - status.time)
            if len(latencies) == n:
                last[0] = time.perf_counter()
                done.set()

    with JobExecutor.get_instance("flux", url=uri, config=config) as ex:
        jobs = [Job(JobSpec("/bin/true")) for _ in range(n)]
        for job in jobs:
            job.set_job_status_callback(on_status)
        start = time.perf_counter()
        for job in jobs:
            ex.submit(job)
        if not done.wait(WAIT):
            raise SystemExit("hpcjobs round: not every job reported its end")
        connection = getattr(ex, "ssh_connection", None)  # (a URL ssh://...)
        trips = {} if connection is None else {"ssh_round_trips": connection.round_trips,
                                               "ssh_logins": connection.logins}
    return {**summary(n, last[0] - start, latencies), **trips}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1, help="pairs of rounds")
    parser.add_argument("--uri", help="a running instance (default: start one here)")
    args = parser.parse_args()
    raw: list[dict[str, Any]] = []
    ours: list[dict[str, Any]] = []
    for pair in range(args.rounds):
        order = [(raw, raw_round), (ours, hpcjobs_round)]
        for results, run in order if pair % 2 == 0 else order[::-1]:
            instance, uri = (None, args.uri) if args.uri else start_instance()
            try:
                results.append(run(uri, args.jobs))
            finally:
                if instance is not None:
                    assert instance.stdin is not None
                    instance.stdin.close()
                    instance.wait()
    best_raw = max(r["jobs_per_s"] for r in raw)
    best_ours = max(r["jobs_per_s"] for r in ours)
    print(json.dumps({
        "benchmark": "flux_throughput", "jobs": args.jobs, "rounds": args.rounds,
        "raw": raw, "hpcjobs": ours,
        "ratio": round(best_ours / best_raw, 3),
        "ratio_per_round": [round(o["jobs_per_s"] / r["jobs_per_s"], 3)
                            for o, r in zip(ours, raw)],
        "target_ratio": 0.8}))


if __name__ == "__main__":
    main()
