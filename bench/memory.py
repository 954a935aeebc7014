"""Memory per ``Job`` + ``JobSpec`` (tracemalloc), for 20,000 jobs.

Each job is ``Job(JobSpec("/bin/echo", ["hello"]))`` (strings shared, as a workflow
system's would mostly be), so the figure is the model's own overhead.
Prints one JSON line with bytes per job (target: <= 1.5 KiB = 1536 bytes).
Usage: python bench/memory.py [N]
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc

import hpcjobs as psij


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    args = ["hello"]
    psij.Job(psij.JobSpec("/bin/echo", args))  # first use: lazy imports, caches
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    jobs = [psij.Job(psij.JobSpec("/bin/echo", args)) for _ in range(n)]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_job = (after - before) / len(jobs)
    print(json.dumps({"bench": "memory", "jobs": n, "bytes_per_job": round(per_job, 1),
                      "target_bytes": 1536}))


if __name__ == "__main__":
    main()
