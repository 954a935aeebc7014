"""Benchmark: submission throughput of the PBS executor against a raw qsub loop.

N jobs with a plain ``qsub`` loop over a ready-made script, and N with hpcjobs'
``submit()`` (render the script, make the job directory, qsub), in the same run, in the
order raw, hpcjobs, hpcjobs, raw, ... (``--rounds`` pairs) so that a drift in the
machine's load evens out; each loop's jobs are deleted (qdel) after it and the server
is given a few seconds to settle. Both loops' jobs are short sleeps that PBS starts
while the loop submits (hpcjobs cannot ask for a held job: ``qsub -h`` is no ``-W``
attribute), so both compete alike with the server's work of starting them.

``ratio``: hpcjobs' jobs per second over the raw loop's (target >= 0.9), with the rates
of every loop; ``cpu_ms_per_submit``: the CPU this process (all its threads) used per
submit in each kind of loop, mean over the loops (steadier than the rates on a busy
machine: a raw loop's is what starting ``qsub`` costs, hpcjobs' adds its own work).

Needs a PBS server (as scripts/test.sh starts one).

    .venv/bin/python bench/pbs_submit.py [--jobs 200] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fs_probe import file_create_us
from hpcjobs import Job, JobExecutor, JobSpec
from hpcjobs.executors.pbs import pbs_exec_bin


def command(name: str) -> str:
    directory = pbs_exec_bin()
    return str(directory / name) if directory else name


def delete(ids: list[str]) -> None:
    for i in range(0, len(ids), 100):
        subprocess.run([command("qdel"), *ids[i:i + 100]], capture_output=True, check=False)
    time.sleep(5)  # let the server and MoM settle before the next loop


def raw_loop(n: int, script: Path) -> tuple[float, float]:
    """Jobs per second of a plain qsub loop, and this process's CPU seconds per submit."""
    ids = []
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        p = subprocess.run([command("qsub"), str(script)], capture_output=True, text=True,
                           check=True, cwd="/tmp")
        ids.append(p.stdout.strip())
    rate, cpu = n / (time.perf_counter() - start), (time.process_time() - cpu) / n
    delete(ids)
    return rate, cpu


def hpcjobs_loop(n: int, work: Path) -> tuple[float, float]:
    """Jobs per second of hpcjobs' submit(), and this process's CPU seconds per submit
    (all its threads: the executor's monitor too)."""
    with JobExecutor.get_instance("pbs", config={"work_directory": work}) as ex:
        jobs = [Job(JobSpec("/bin/sleep", ["1"])) for _ in range(n)]
        start, cpu = time.perf_counter(), time.process_time()
        for job in jobs:
            ex.submit(job)
        rate, cpu = n / (time.perf_counter() - start), (time.process_time() - cpu) / n
        delete([str(j.native_id) for j in jobs])
    return rate, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    raw: list[float] = []
    ours: list[float] = []
    cpu: dict[str, list[float]] = {"raw": [], "hpcjobs": []}
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        file_cost = file_create_us(root)  # (see fs_probe.py: the ratio follows it)
        script = root / "job.sh"
        script.write_text(f"#!/bin/sh\n#PBS -o {root}/raw.out\n#PBS -j oe\n"
                          "#PBS -l walltime=0:10:00\nsleep 1\n")
        for r in range(args.rounds):
            order = ("raw", "ours") if r % 2 == 0 else ("ours", "raw")
            for which in order:
                if which == "raw":
                    rate, seconds = raw_loop(args.jobs, script)
                    raw.append(rate)
                    cpu["raw"].append(seconds)
                else:
                    rate, seconds = hpcjobs_loop(args.jobs, root / f"work{r}")
                    ours.append(rate)
                    cpu["hpcjobs"].append(seconds)
    print(json.dumps({
        "benchmark": "pbs_submit", "jobs": args.jobs, "rounds": args.rounds,
        "raw_jobs_per_s": [round(x, 1) for x in raw],
        "hpcjobs_jobs_per_s": [round(x, 1) for x in ours],
        "ratio": round(statistics.median(ours) / statistics.median(raw), 3),
        "target_ratio": 0.9,
        "cpu_ms_per_submit": {k: round(statistics.mean(v) * 1000, 2) for k, v in cpu.items()},
        "file_create_us": file_cost,
    }))


if __name__ == "__main__":
    main()
