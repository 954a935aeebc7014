"""Local executor throughput: N x /bin/true, submit all then wait all.

Baseline in the same run: a raw ``subprocess.Popen`` of each, then ``wait()`` on each.
Prints one JSON line: jobs/s of both and their ratio (target: ratio >= 0.7). The two are
run alternately for a few rounds and the best round of each counts, so that load from
other processes on the machine disturbs the comparison as little as possible.
Usage: python bench/local_throughput.py [N] [ROUNDS]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

import hpcjobs as psij


def raw(n: int) -> float:
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["/bin/true"]) for _ in range(n)]
    for p in procs:
        p.wait()
    return n / (time.perf_counter() - t0)


def hpcjobs(n: int, work: str) -> float:
    with psij.JobExecutor.get_instance("local", config={"work_directory": work}) as ex:
        warm = psij.Job(psij.JobSpec("/bin/true"))  # starts the nanny: not a per-job cost
        ex.submit(warm)
        warm.wait()
        jobs = [psij.Job(psij.JobSpec("/bin/true")) for _ in range(n)]
        t0 = time.perf_counter()
        for job in jobs:
            ex.submit(job)
        for job in jobs:
            status = job.wait()
            assert status is not None and status.state is psij.JobState.COMPLETED, status
        return n / (time.perf_counter() - t0)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    ours = base = 0.0
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as work:
            ours = max(ours, hpcjobs(n, work))
        base = max(base, raw(n))
    print(json.dumps({"bench": "local_throughput", "jobs": n, "rounds": rounds, "hpcjobs_jobs_per_s": round(ours, 1),
                      "popen_jobs_per_s": round(base, 1), "ratio": round(ours / base, 3),
                      "target_ratio": 0.7}))


if __name__ == "__main__":
    main()
