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

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from batch_latency import arguments, counter, end_latencies, report, status_commands_per_minute

STATUS_COMMANDS = ("squeue", "sacct")


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


def main() -> None:
    args = arguments(__doc__.splitlines()[0], jobs=50)
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        calls = root / "status-commands"
        wrappers = root / "bin"
        wrappers.mkdir()
        for name in STATUS_COMMANDS:  # count every status command hpcjobs runs
            real = shutil.which(name)
            assert real, f"{name} is not installed"
            (wrappers / name).write_text(f'#!/bin/sh\necho {name} >> "{calls}"\nexec {real} "$@"\n')
            (wrappers / name).chmod(0o755)
        latencies = end_latencies("slurm", args.jobs, root / "work1")
        baseline = slurm_latencies(min(args.jobs, 20), root)
        os.environ["PATH"] = f"{wrappers}{os.pathsep}{os.environ['PATH']}"
        per_minute = status_commands_per_minute(
            "slurm", {"work_directory": root / "work2"}, args.in_flight, counter(calls),
            ["scancel"], args.warmup, args.window)
    report("slurm", args, latencies, baseline, per_minute)


if __name__ == "__main__":
    main()
