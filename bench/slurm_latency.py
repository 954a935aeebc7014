"""Benchmark: how soon the Slurm executor sees jobs end, and how little it asks Slurm.

1. End latency: N short jobs; for each, the time from the job's end (its exit-code
   file's mtime) to its final status callback. Baseline, same run: how soon Slurm
   itself reports a job final (squeue polled every 0.1 s) after its script's last write.
2. Scheduler load: M long jobs in flight; the status commands (squeue, sacct) hpcjobs
   runs per minute in steady state, counted by a PATH wrapper, after a warm-up.

Prints one JSON line (targets: median latency <= 1 s, <= 2 status commands per minute).

    .venv/bin/python bench/slurm_latency.py [--jobs 50] [--in-flight 100]
                                            [--warmup 60] [--window 120]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from hpcjobs import Job, JobExecutor, JobSpec, JobStatus

STATUS_COMMANDS = ("squeue", "sacct")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def end_latencies(n: int, work: Path) -> list[float]:
    """Seconds from each job's exit-code file mtime to its final callback."""
    done: dict[str, float] = {}
    all_done = threading.Event()

    def on_status(job: Job, status: JobStatus) -> None:
        if status.final:
            done[job.id] = time.time()
            if len(done) == n:
                all_done.set()

    with JobExecutor.get_instance("slurm", config={"work_directory": work}) as ex:
        ex.set_job_status_callback(on_status)
        jobs = [Job(JobSpec("/bin/sleep", ["2"])) for _ in range(n)]
        for job in jobs:
            ex.submit(job)
        if not all_done.wait(600):
            raise SystemExit(f"only {len(done)} of {n} jobs ended within 600 s")
    return [done[j.id] - (work / j.id / "exitcode").stat().st_mtime for j in jobs]


def slurm_latencies(n: int, scratch: Path) -> list[float]:
    """Baseline: seconds from a raw job's last write to squeue showing it final."""
    ids = {}
    for i in range(n):
        marker = scratch / f"end.{i}"
        p = subprocess.run(["sbatch", "--parsable", "--output=/dev/null",
                            f"--wrap=sleep 2; touch {marker}"],
                           capture_output=True, text=True, check=True)
        ids[p.stdout.strip().split(";")[0]] = marker
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 600
    while len(seen) < n and time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i %T"],
                             capture_output=True, text=True).stdout
        now = time.time()
        for line in out.splitlines():
            native_id, state = line.split()
            if native_id not in seen and state not in ("PENDING", "RUNNING", "COMPLETING",
                                                       "CONFIGURING"):
                seen[native_id] = now
        time.sleep(0.1)
    return [seen[i] - ids[i].stat().st_mtime for i in seen]


def status_commands_per_minute(m: int, work: Path, counter: Path, warmup: float,
                               window: float) -> float:
    def count() -> int:
        return len(counter.read_text().splitlines()) if counter.exists() else 0

    with JobExecutor.get_instance("slurm", config={"work_directory": work}) as ex:
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
            subprocess.run(["scancel", *ids], check=False)
            for job in jobs:  # their scripts still write their files: let them finish
                job.wait(timeout=120)
    return calls * 60.0 / window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--warmup", type=float, default=60.0)
    parser.add_argument("--window", type=float, default=120.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        counter = root / "status-commands"
        wrappers = root / "bin"
        wrappers.mkdir()
        for name in STATUS_COMMANDS:  # count every status command hpcjobs runs
            real = shutil.which(name)
            assert real, f"{name} is not installed"
            (wrappers / name).write_text(f'#!/bin/sh\necho {name} >> "{counter}"\nexec {real} "$@"\n')
            (wrappers / name).chmod(0o755)
        latencies = end_latencies(args.jobs, root / "work1")
        baseline = slurm_latencies(min(args.jobs, 20), root)
        os.environ["PATH"] = f"{wrappers}{os.pathsep}{os.environ['PATH']}"
        per_minute = status_commands_per_minute(args.in_flight, root / "work2", counter,
                                                args.warmup, args.window)
    print(json.dumps({
        "benchmark": "slurm_latency", "jobs": args.jobs,
        "end_to_callback_median_s": round(statistics.median(latencies), 3),
        "end_to_callback_p95_s": round(percentile(latencies, 0.95), 3),
        "baseline_slurm_reports_final_median_s": round(statistics.median(baseline), 3),
        "baseline_slurm_reports_final_p95_s": round(percentile(baseline, 0.95), 3),
        "in_flight": args.in_flight,
        "status_commands_per_minute": round(per_minute, 2),
        "target_median_s": 1.0, "target_status_commands_per_minute": 2.0,
    }))


if __name__ == "__main__":
    main()
