"""Benchmark: many small jobs through a one-node pilot, against the batch scheduler and
against Flux alone, in the same run (the real Slurm, the real flux-core).

* ``pilot``: N ``/bin/true`` jobs through ``get_instance('pilot')`` (one Slurm job of
  one node running Flux), submitted at once, before the pilot runs; the time runs from
  making the executor (the pilot's start-up included) to the last final callback.
* ``sbatch``: M ``/bin/true`` jobs as a raw ``sbatch --wrap`` loop, until ``squeue``
  lists none of them (M may be smaller than N: the rate is what is compared).
* ``flux``: N ``/bin/true`` jobs as a raw loop of ``flux.job.submit`` (the bindings,
  faster than the ``flux submit`` command) into the same pilot's instance, then
  ``flux.job.wait`` on each: Flux alone in the same allocation, start-up excluded.
* ``ratio_vs_sbatch`` / ``ratio_vs_flux``: the pilot's rate over theirs (targets >= 10
  and >= 0.5);
* ``running_to_first_start_s``: from the pilot's instance running (its URI file written)
  to the first job's start (Flux's ``alloc``);
* ``end_to_callback_ms``: from each job's end (Flux's ``finish`` time) to its final
  callback (median, p95).

Prints one JSON line. Needs the Slurm test cluster, ``flux`` on PATH and its bindings.

    .venv/bin/python bench/pilot.py [--jobs 1000] [--sbatch-jobs 200] [--cores 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState, JobStatus

WAIT = 1800.0  # bound for one part (never a timing assertion: a stuck part fails)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def through_pilot(n: int, cores: int, work: Path) -> tuple[dict[str, Any], JobExecutor]:
    ends: list[float] = []
    first_start: list[float] = []
    done = threading.Event()
    lock = threading.Lock()

    def on_status(_job: Job, status: JobStatus) -> None:
        now = time.time()
        with lock:
            if status.state is JobState.ACTIVE and status.time is not None:
                first_start.append(status.time)
            if status.state.final:
                if status.time is not None:
                    ends.append(now - status.time)
                if len(ends) == n:
                    done.set()

    start = time.time()
    ex = JobExecutor.get_instance("pilot", config={
        "backend": "slurm", "cores_per_node": cores, "walltime": timedelta(hours=1),
        "memory_per_node": 4 << 30,  # Flux holds the inactive jobs: 1,000 outgrow 512 MiB
        "work_directory": work / "pilot", "backend_config": {"work_directory": work / "slurm"}})
    ex.set_job_status_callback(on_status)
    # a duration the pilot's hour leaves room for (PSI/J's default is 10 minutes)
    jobs = [Job(JobSpec("/bin/true", attributes=JobAttributes(duration=timedelta(minutes=1))))
            for _ in range(n)]
    for job in jobs:
        ex.submit(job)
    if not done.wait(WAIT):
        raise SystemExit("the pilot's jobs did not all end")
    elapsed = time.time() - start
    failed = [job.status for job in jobs if job.status.state is not JobState.COMPLETED]
    if failed:
        raise SystemExit(f"{len(failed)} pilot jobs did not complete: {failed[0]}")
    uri_file = next((work / "pilot").glob("pilot-*/uri"))
    running_at = uri_file.stat().st_mtime
    return {"jobs": n, "jobs_per_s": round(n / elapsed, 1), "elapsed_s": round(elapsed, 2),
            "running_to_first_start_s": round(min(first_start) - running_at, 3),
            "end_to_callback_ms": {"median": round(statistics.median(ends) * 1e3, 1),
                                   "p95": round(percentile(ends, 0.95) * 1e3, 1)}}, ex


def raw_flux(n: int, uri: str) -> dict[str, Any]:
    import flux
    import flux.job

    handle = flux.Flux(uri)
    spec = flux.job.JobspecV1.from_command(["/bin/true"])
    spec.duration = 60
    start = time.time()
    ids = []
    for i in range(n):
        try:
            ids.append(flux.job.submit(handle, spec, waitable=True))
        except OSError as e:
            raise OSError(e.errno, f"submit {i} of the raw loop: {e}") from e
    for jobid in ids:
        result = flux.job.wait(handle, jobid)
        if not result.success:
            raise SystemExit(f"raw flux job {jobid} failed: {result.errstr}")
    elapsed = time.time() - start
    return {"jobs": n, "jobs_per_s": round(n / elapsed, 1), "elapsed_s": round(elapsed, 2)}


def raw_sbatch(m: int, work: Path) -> dict[str, Any]:
    out = work / "sbatch-%j.out"
    start = time.time()
    ids = [subprocess.run(["sbatch", "--parsable", f"--output={out}", "--wrap", "/bin/true"],
                          check=True, capture_output=True, text=True).stdout.strip()
           for _ in range(m)]
    deadline = start + WAIT
    while time.time() < deadline:
        listed = subprocess.run(["squeue", "--noheader", "--format=%i", f"--jobs={','.join(ids)}"],
                                capture_output=True, text=True).stdout.split()
        if not listed:
            break
        time.sleep(0.2)
    else:
        raise SystemExit("the sbatch jobs did not all end")
    elapsed = time.time() - start
    return {"jobs": m, "jobs_per_s": round(m / elapsed, 1), "elapsed_s": round(elapsed, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--sbatch-jobs", type=int, default=200)
    parser.add_argument("--cores", type=int, default=2, help="the pilot's cores")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-pilot-") as tmp:
        work = Path(tmp)
        pilot, ex = through_pilot(args.jobs, args.cores, work)
        print(json.dumps({"pilot": pilot}), file=sys.stderr, flush=True)  # progress
        try:
            uri = next((work / "pilot").glob("pilot-*/uri")).read_text().split("\n")[0]
            flux_alone = raw_flux(args.jobs, uri)
        except OSError as e:
            raise SystemExit(f"the raw Flux loop failed ({e}); the pilot: {ex.pilot_status}")
        finally:
            ex.close()
        sbatch = raw_sbatch(args.sbatch_jobs, work)
    print(json.dumps({
        "bench": "pilot", "pilot": pilot, "flux": flux_alone, "sbatch": sbatch,
        "ratio_vs_sbatch": round(pilot["jobs_per_s"] / sbatch["jobs_per_s"], 2),
        "ratio_vs_flux": round(pilot["jobs_per_s"] / flux_alone["jobs_per_s"], 2)}))


if __name__ == "__main__":
    main()
