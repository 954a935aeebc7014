"""Benchmark: submission throughput of the Slurm executor against a raw sbatch loop.

Submits N held jobs (so the cluster stays idle while we measure) with a plain
``sbatch --hold`` over a ready-made script and N with hpcjobs (render the script, make
the job directory, sbatch), alternating, in the same run; cancels them all afterwards.
Prints one JSON line: jobs per second of each and their ratio, and the ratio of the
median submission times (target >= 0.9).

    .venv/bin/python bench/slurm_submit.py [--jobs 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    n = parser.parse_args().jobs
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-") as tmp:
        directory = Path(tmp)
        raw_s, ours_s, ids = compare(n, directory)
        for i in range(0, len(ids), 500):
            subprocess.run(["scancel", *ids[i:i + 500]], check=False)
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
    }))


if __name__ == "__main__":
    main()
