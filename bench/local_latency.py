"""Local executor latency: from a job's exit to its final status callback.

Each job is ``/bin/date +%s.%N``: it prints the time and exits at once, so the printed
time is (within the process teardown) its exit time. The callback records when the
final status arrives. Baseline in the same run: a raw ``subprocess.Popen`` + ``wait()``
of the same command (the time the parent sees the exit). Jobs run one at a time.
Prints one JSON line: median and p95 in ms (target: median <= 5 ms).
Usage: python bench/local_latency.py [N]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import hpcjobs as psij

DATE = ["/bin/date", "+%s.%N"]


def _stats(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    return {"median_ms": round(statistics.median(ms), 3),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3)}


def hpcjobs(n: int, work: Path) -> list[float]:
    samples = []
    with psij.JobExecutor.get_instance("local", config={"work_directory": work}) as ex:
        for i in range(-3, n):  # three warm-up jobs (the first starts the nanny)
            out = work / f"t{i}"
            done = threading.Event()
            seen: list[float] = []

            def on_status(job: psij.Job, status: psij.JobStatus) -> None:
                if status.state.final:
                    seen.append(time.time())
                    done.set()
            job = psij.Job(psij.JobSpec(DATE[0], DATE[1:], stdout_path=out))
            job.set_job_status_callback(on_status)
            ex.submit(job)
            assert done.wait(60), job.status
            if i >= 0:
                samples.append(seen[0] - float(out.read_text()))
    return samples


def raw(n: int) -> list[float]:
    samples = []
    for _ in range(n):
        p = subprocess.Popen(DATE, stdout=subprocess.PIPE)
        assert p.stdout is not None
        printed = p.stdout.read()
        p.wait()
        samples.append(time.time() - float(printed))
    return samples


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as work:
        ours = _stats(hpcjobs(n, Path(work)))
    base = _stats(raw(n))
    print(json.dumps({"bench": "local_latency", "jobs": n,
                      "hpcjobs_exit_to_callback": ours, "popen_exit_to_wait": base,
                      "target_median_ms": 5.0}))


if __name__ == "__main__":
    main()
