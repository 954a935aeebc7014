"""Benchmark: submission throughput of the Slurm executor against a raw sbatch loop.

Submits N held jobs (so the cluster stays idle while we measure) with a plain
``sbatch --hold`` over a ready-made script and N with hpcjobs (render the script, make
the job directory, sbatch), alternating, in the same run; cancels them all afterwards.
Prints one JSON line: jobs per second of each and their ratio, and the ratio of the
median submission times (target >= 0.9: a lone submit pays nothing for job arrays).

Then the bursts (docs/arrays.md): ``--burst`` held jobs submitted with one
``submit_many`` call, of one shape and of ten shapes (walltimes), against a raw loop of
as many ``sbatch --hold`` calls in the same run: the wall time of each (the jobs are
built before the clock starts), their ratio (targets >= 20 and >= 10) and the number
of sbatch calls hpcjobs made (counted by a PATH wrapper; target <= 5 for one shape).

    .venv/bin/python bench/slurm_submit.py [--jobs 200] [--burst 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec


def compare(n: int, directory: Path) -> tuple[list[float], list[float], list[str]]:
    """Seconds of each of n raw sbatch calls and of n hpcjobs submits, interleaved one
    by one so that both see the same queue length and machine load."""
    script = directory / "raw.sh"
    script.write_text("#!/bin/bash\n#SBATCH --time=0:10:00\n/bin/true\n")
    raw_argv = ["sbatch", "--parsable", "--hold", f"--output={directory}/raw.out", str(script)]
    attributes = JobAttributes(custom_attributes={"slurm.hold": True})
    raw_s: list[float] = []
    ours_s: list[float] = []
    ids: list[str] = []
    with JobExecutor.get_instance("slurm", config={"work_directory": directory / "work"}) as ex:
        for i in range(n + 1):  # the first round warms up (imports, template parsing)
            t0 = time.perf_counter()
            p = subprocess.run(raw_argv, capture_output=True, text=True, check=True)
            t1 = time.perf_counter()
            job = Job(JobSpec("/bin/true", attributes=attributes))
            ex.submit(job)
            t2 = time.perf_counter()
            if i:
                raw_s.append(t1 - t0)
                ours_s.append(t2 - t1)
            ids += [p.stdout.strip().split(";")[0], str(job.native_id)]
    return raw_s, ours_s, ids


def raw_burst(n: int, shapes: int, directory: Path, sbatch: str) -> tuple[float, list[str]]:
    """Seconds for n plain ``sbatch --hold`` calls (walltimes cycling over ``shapes``)."""
    script = directory / "raw-burst.sh"
    script.write_text("#!/bin/bash\n/bin/true\n")
    ids = []
    start = time.perf_counter()
    for i in range(n):
        p = subprocess.run([sbatch, "--parsable", "--hold", f"--time={10 + i % shapes}",
                            f"--output={directory}/raw.out", str(script)],
                           capture_output=True, text=True, check=True)
        ids.append(p.stdout.strip().split(";")[0])
    return time.perf_counter() - start, ids


def hpcjobs_burst(n: int, shapes: int, directory: Path) -> tuple[float, int, list[str]]:
    """Seconds for one submit_many of n held jobs of ``shapes`` shapes, and the number of
    sbatch calls it made (a PATH wrapper counts them)."""
    counter = directory / "sbatch-calls"
    wrappers = directory / "bin"
    wrappers.mkdir(exist_ok=True)
    wrapper = wrappers / "sbatch"
    wrapper.write_text(f'#!/bin/sh\necho >> "{counter}"\nexec {shutil.which("sbatch")} "$@"\n')
    wrapper.chmod(0o755)
    path = os.environ["PATH"]
    os.environ["PATH"] = f"{wrappers}{os.pathsep}{path}"
    try:
        work = directory / f"work-{shapes}"
        with JobExecutor.get_instance("slurm", config={"work_directory": work}) as ex:
            jobs = [Job(JobSpec("/bin/true", attributes=JobAttributes(
                duration=timedelta(minutes=10 + i % shapes),
                custom_attributes={"slurm.hold": True}))) for i in range(n)]
            start = time.perf_counter()
            ex.submit_many(jobs)
            seconds = time.perf_counter() - start
    finally:
        os.environ["PATH"] = path
    calls = len(counter.read_text().splitlines())
    return seconds, calls, [str(job.native_id) for job in jobs]


def bursts(n: int, directory: Path) -> dict[str, Any]:
    sbatch = shutil.which("sbatch")
    assert sbatch is not None, "sbatch is not installed"
    out: dict[str, Any] = {"burst_jobs": n}
    for shapes, target in ((1, 20), (10, 10)):
        raw_s, raw_ids = raw_burst(n, shapes, directory, sbatch)
        cancel(raw_ids)
        ours_s, calls, ids = hpcjobs_burst(n, shapes, directory)
        cancel(ids)
        key = f"burst_{shapes}_shape{'s' if shapes > 1 else ''}"
        out[key] = {"raw_s": round(raw_s, 3), "hpcjobs_s": round(ours_s, 3),
                    "ratio": round(raw_s / ours_s, 1), "target_ratio": target,
                    "sbatch_calls": calls, "arrays": len({i.split("_")[0] for i in ids})}
    return out


def cancel(ids: list[str]) -> None:
    for i in range(0, len(ids), 500):
        subprocess.run(["scancel", *ids[i:i + 500]], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--burst", type=int, default=1000)
    args = parser.parse_args()
    n = args.jobs
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-") as tmp:
        directory = Path(tmp)
        raw_s, ours_s, ids = compare(n, directory)
        cancel(ids)
        burst = bursts(args.burst, directory) if args.burst else {}
    raw_rate, ours_rate = n / sum(raw_s), n / sum(ours_s)
    # the medians are robust to other load on the machine (a 2-core CI box)
    median_ratio = statistics.median(raw_s) / statistics.median(ours_s)
    print(json.dumps({
        "benchmark": "slurm_submit", "jobs": n,
        "raw_sbatch_jobs_per_s": round(raw_rate, 1),
        "hpcjobs_jobs_per_s": round(ours_rate, 1),
        "ratio": round(ours_rate / raw_rate, 3),
        "raw_median_ms": round(statistics.median(raw_s) * 1000, 2),
        "hpcjobs_median_ms": round(statistics.median(ours_s) * 1000, 2),
        "median_ratio": round(median_ratio, 3), "target_ratio": 0.9,
        **burst,
    }))


if __name__ == "__main__":
    main()
