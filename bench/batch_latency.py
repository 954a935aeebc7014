"""What the batch latency benchmarks (slurm_latency.py, pbs_latency.py) share: the end
latency of N short jobs through an executor, and the status commands it runs per minute
with M long jobs in flight. Each benchmark adds its scheduler's own baseline."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from hpcjobs import Job, JobExecutor, JobSpec, JobStatus


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def end_latencies(name: str, n: int, work: Path) -> list[float]:
    """Seconds from each job's exit-code file mtime to its final callback."""
    done: dict[str, float] = {}
    all_done = threading.Event()

    def on_status(job: Job, status: JobStatus) -> None:
        if status.final:
            done[job.id] = time.time()
            if len(done) == n:
                all_done.set()

    with JobExecutor.get_instance(name, config={"work_directory": work}) as ex:
        ex.set_job_status_callback(on_status)
        jobs = [Job(JobSpec("/bin/sleep", ["2"])) for _ in range(n)]
        for job in jobs:
            ex.submit(job)
        if not all_done.wait(600):
            raise SystemExit(f"only {len(done)} of {n} jobs ended within 600 s")
    return [done[j.id] - (work / j.id / "exitcode").stat().st_mtime for j in jobs]


def status_commands_per_minute(name: str, config: Mapping[str, Any], m: int,
                               count: Callable[[], int], cancel: list[str],
                               warmup: float, window: float) -> float:
    """Status commands per minute (``count()`` tells how many so far) while ``m`` long
    jobs are in flight, after ``warmup`` seconds; ``cancel`` + ids ends the jobs."""
    with JobExecutor.get_instance(name, config=config) as ex:
        jobs = [Job(JobSpec("/bin/sleep", ["3600"])) for _ in range(m)]
        try:
            for job in jobs:
                ex.submit(job)
            time.sleep(warmup)
            before = count()
            time.sleep(window)
            calls = count() - before
        finally:
            ids = [str(j.native_id) for j in jobs if j.native_id]
            subprocess.run([*cancel, *ids], check=False, capture_output=True)
            for job in jobs:  # their scripts still write their files: let them finish
                job.wait(timeout=120)
    return calls * 60.0 / window


def counter(path: Path) -> Callable[[], int]:
    """How many lines a counting wrapper has appended to ``path`` so far."""
    return lambda: len(path.read_text().splitlines()) if path.exists() else 0


def arguments(description: str, jobs: int) -> argparse.Namespace:
    """The benchmarks' options: --jobs (default ``jobs``), --in-flight, --warmup, --window."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=jobs)
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--warmup", type=float, default=60.0)
    parser.add_argument("--window", type=float, default=120.0)
    return parser.parse_args()


def report(scheduler: str, args: argparse.Namespace, latencies: list[float],
           baseline: list[float], per_minute: float) -> None:
    """Print the benchmark's one JSON line."""
    print(json.dumps({
        "benchmark": f"{scheduler}_latency", "jobs": args.jobs,
        "end_to_callback_median_s": round(statistics.median(latencies), 3),
        "end_to_callback_p95_s": round(percentile(latencies, 0.95), 3),
        f"baseline_{scheduler}_reports_final_median_s": round(statistics.median(baseline), 3),
        f"baseline_{scheduler}_reports_final_p95_s": round(percentile(baseline, 0.95), 3),
        "in_flight": args.in_flight,
        "status_commands_per_minute": round(per_minute, 2),
        "target_median_s": 1.0, "target_status_commands_per_minute": 2.0,
    }))
