"""Benchmark: how soon the PBS executor sees jobs end, and how little it asks PBS.

1. End latency: N short jobs; for each, the time from the job's end (its exit-code
   file's mtime) to its final status callback. Baseline, same run: how soon PBS itself
   shows a raw job finished (``qstat -x`` polled every 0.1 s) after its last write.
2. Scheduler load: M long jobs in flight; the qstat commands hpcjobs runs per minute in
   steady state, counted by a wrapper given as the executor's ``bin_directory``, after
   a warm-up.

Needs a PBS server (as scripts/test.sh starts one). Prints one JSON line (targets:
median latency <= 1 s, <= 2 status commands per minute).

    .venv/bin/python bench/pbs_latency.py [--jobs 30] [--in-flight 100]
                                          [--warmup 60] [--window 120]
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from batch_latency import arguments, counter, end_latencies, report, status_commands_per_minute
from hpcjobs.executors.pbs import pbs_exec_bin

COMMANDS = ("qsub", "qstat", "qdel", "qselect")


def command(name: str) -> str:
    directory = pbs_exec_bin()
    return str(directory / name) if directory else name


def pbs_latencies(n: int, scratch: Path) -> list[float]:
    """Baseline: seconds from a raw job's last write to qstat -x showing it finished."""
    ids = {}
    for i in range(n):
        marker = scratch / f"end.{i}"
        p = subprocess.run([command("qsub"), "-o", "/dev/null", "-j", "oe", "--", "/bin/sh",
                            "-c", f"sleep 2; touch {marker}"],
                           capture_output=True, text=True, check=True, cwd="/tmp")
        ids[p.stdout.strip()] = marker
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 600
    while len(seen) < n and time.monotonic() < deadline:
        out = subprocess.run([command("qstat"), "-x", *ids], capture_output=True,
                             text=True).stdout
        now = time.time()
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[0] in ids and fields[4] == "F":
                seen.setdefault(fields[0], now)
        time.sleep(0.1)
    return [seen[i] - ids[i].stat().st_mtime for i in seen]


def main() -> None:
    args = arguments(__doc__.splitlines()[0], jobs=30)
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        calls = root / "status-commands"
        wrappers = root / "bin"
        wrappers.mkdir()
        for name in COMMANDS:  # count every qstat hpcjobs runs; the others as they are
            body = f'echo {name} >> "{calls}"\n' if name == "qstat" else ""
            (wrappers / name).write_text(f'#!/bin/sh\n{body}exec {command(name)} "$@"\n')
            (wrappers / name).chmod(0o755)
        latencies = end_latencies("pbs", args.jobs, root / "work1")
        baseline = pbs_latencies(min(args.jobs, 20), root)
        per_minute = status_commands_per_minute(
            "pbs", {"work_directory": root / "work2", "bin_directory": wrappers},
            args.in_flight, counter(calls), [command("qdel")], args.warmup, args.window)
    report("pbs", args, latencies, baseline, per_minute)


if __name__ == "__main__":
    main()
