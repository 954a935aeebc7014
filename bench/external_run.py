"""Benchmark: hpcjobs.external.run against plain subprocess.run, for the same commands.

Each command is run ``--calls`` times per round through each, in alternated rounds (so
that a busy machine weighs on both alike): a short command (``true``), ``sbatch
--version`` (the program a submit runs, no controller), and a real submit of a held job
(``sbatch --hold``, the figure a user feels; the jobs are cancelled at the end). The
baseline is ``subprocess.run(argv, stdin=DEVNULL, capture_output=True, timeout=...)``
with the output decoded, which is what ``external.run`` must give back.

Prints one JSON line: per command, the median milliseconds per call of each, their
ratio (hpcjobs / baseline; < 1: external.run is faster) and the spread of the per-round
ratios (min, max).

    .venv/bin/python bench/external_run.py [--rounds 7] [--calls 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from typing import Callable, Sequence

from hpcjobs import external


def baseline(argv: Sequence[str]) -> str:
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    return p.stdout.decode("utf-8", errors="replace")


def hpcjobs_run(argv: Sequence[str]) -> str:
    return external.run(argv, timeout=30).stdout


def per_call(run: Callable[[Sequence[str]], str], argv: Sequence[str], calls: int,
             out: list[str]) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        out.append(run(argv))
    return (time.perf_counter() - t0) / calls * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    commands = {"true": ["true"]}
    if shutil.which("sbatch"):
        commands["sbatch --version"] = ["sbatch", "--version"]
        commands["sbatch --hold (submit)"] = ["sbatch", "--parsable", "--hold",
                                              "--output=/dev/null", "--wrap=true"]
    figures = {}
    submitted: list[str] = []
    try:
        for name, argv in commands.items():
            ours, base = [], []
            for r in range(args.rounds):
                order = [(hpcjobs_run, ours), (baseline, base)]
                for run, times in (order if r % 2 == 0 else order[::-1]):
                    times.append(per_call(run, argv, args.calls, submitted))
            ratios = [o / b for o, b in zip(ours, base)]
            figures[name] = {"hpcjobs_ms": round(statistics.median(ours), 3),
                             "subprocess_run_ms": round(statistics.median(base), 3),
                             "ratio": round(statistics.median(ours) / statistics.median(base), 3),
                             "ratio_min": round(min(ratios), 3),
                             "ratio_max": round(max(ratios), 3)}
    finally:
        ids = [s.strip().split(";")[0] for s in submitted if s.strip().isdigit()
               or s.strip().split(";")[0].isdigit()]
        for i in range(0, len(ids), 200):
            subprocess.run(["scancel", *ids[i:i + 200]], check=False)
    print(json.dumps({"bench": "external_run", "rounds": args.rounds, "calls": args.calls,
                      "commands": figures}))


if __name__ == "__main__":
    main()
