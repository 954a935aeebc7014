"""Benchmark: many small jobs through a one-node pilot, against the batch scheduler and
against Flux alone, in the same run (the real Slurm, the real flux-core).

Each round: one pilot, then a raw ``sbatch`` loop; with ``--rounds`` > 1 the two
alternate (pilot, sbatch, pilot, sbatch, ...) so a drift of the machine's load evens out.

* ``pilot``: N ``/bin/true`` jobs through ``get_instance('pilot')`` (one Slurm job of
  one node running Flux), submitted at once, before the pilot runs. ``jobs_per_s``: N
  over the time from the pilot's batch job starting (Slurm's ``StartTime``, 1 s
  resolution) to the last final callback: the pilot's start-up is included, the wait in
  the shared queue behind other users' jobs is not (``queued_s``; ``jobs_per_s_queue``
  includes it too);
* ``batch``: M ``/bin/true`` jobs as a raw ``sbatch --wrap`` loop, until ``squeue``
  lists none of them (``--backend pbs``: a pilot of OpenPBS, and a raw ``qsub`` loop
  until ``qstat -x`` shows them all finished); M may be smaller than N (the machine has
  2 cores): the rate of M stands for N, and ``batch_estimated`` says so. On a shared
  Slurm, ``others_running_s`` is how long other jobs than these ran meanwhile (sampled):
  a loop that waited behind another user's whole-node job measures that job, not sbatch;
* ``flux``: N ``/bin/true`` as a raw loop of ``flux.job.submit`` (the bindings, faster
  than the ``flux submit`` command) into the same pilot's instance, then
  ``flux.job.wait`` on each: Flux alone in the same allocation, start-up excluded;
* ``running_to_first_start_s``: from the pilot's instance running (its URI file
  written) to the first job's ``start`` event in Flux's eventlog;
* ``end_to_callback_ms``: for each job, from its end (the timestamp of the ``finish``
  event in its Flux eventlog) to its final callback in this process (median, p95, max).

The line ends with the medians over the rounds, min-max spreads, the ratios
(``ratio_vs_batch``: pilot rate over the sbatch (qsub) loop's, target >= 10; ``ratio_vs_flux``:
pilot over raw Flux, target >= 0.5) and whether each target is met. Needs the Slurm
test cluster, ``flux`` on PATH and its bindings.

    .venv/bin/python bench/pilot.py [--jobs 1000] [--sbatch-jobs 100] [--rounds 1]
                                    [--backend slurm|pbs]
"""

from __future__ import annotations

import argparse
import datetime
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
from hpcjobs.executors.pbs import pbs_exec_bin

WAIT = 1800.0  # bound for one part (never a timing assertion: a stuck part fails)
QUEUE_WAIT = 4 * 3600.0  # bound on the pilot's wait in a shared queue
#: the targets, "ratio_vs_batch" being the one over the raw sbatch (or qsub) loop
TARGETS = {"ratio_vs_batch": 10.0, "ratio_vs_flux": 0.5, "running_to_first_start_s": 2.0,
           "end_to_callback_ms": 500.0}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def pbs(name: str) -> str:
    """An OpenPBS command (where PBS_EXEC says: /usr/bin may hold Slurm's look-alikes)."""
    directory = pbs_exec_bin()
    return str(directory / name) if directory else name


def batch_start(backend: str, native_id: str) -> float:
    """When the batch system started the job (whole seconds): Slurm's StartTime, PBS's
    stime."""
    if backend == "pbs":
        out = subprocess.run([pbs("qstat"), "-x", "-f", native_id], capture_output=True,
                             text=True, check=True).stdout
        stamp = next(line.split("=", 1)[1].strip() for line in out.splitlines()
                     if line.strip().startswith("stime ="))
        return datetime.datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y").timestamp()
    out = subprocess.run(["scontrol", "show", "job", native_id], capture_output=True,
                         text=True, check=True).stdout
    stamp = next(word.split("=", 1)[1] for word in out.split() if word.startswith("StartTime="))
    return datetime.datetime.fromisoformat(stamp).timestamp()


def flux_events(handle: Any, native_id: str) -> dict[str, float]:
    """The job's main eventlog from the pilot's Flux: event name -> timestamp."""
    import flux.job

    found = flux.job.job_kvs_lookup(handle, flux.job.JobID(native_id), keys=["eventlog"],
                                    decode=False)
    return {event["name"]: event["timestamp"]
            for event in map(json.loads, found["eventlog"].splitlines())}


def through_pilot(backend: str, n: int, cores: int,
                  work: Path) -> tuple[dict[str, Any], JobExecutor, str]:
    """N jobs through a new pilot; returns the figures, the executor (still open: the
    raw Flux loop runs in its allocation) and its instance's URI."""
    called_back: dict[str, float] = {}  # native id -> when its final callback ran
    done = threading.Event()
    lock = threading.Lock()

    def on_status(job: Job, status: JobStatus) -> None:
        if status.state.final:
            now = time.time()
            with lock:
                called_back[job.id] = now
                if len(called_back) == n:
                    done.set()

    made = time.time()
    ex = JobExecutor.get_instance("pilot", config={
        "backend": backend, "cores_per_node": cores, "walltime": timedelta(hours=1),
        "memory_per_node": 4 << 30,  # Flux holds the inactive jobs: 1,000 outgrow 512 MiB
        "work_directory": work / "pilot", "backend_config": {"work_directory": work / backend}})
    try:
        ex.set_job_status_callback(on_status)
        # a duration the pilot's hour leaves room for (PSI/J's default is 10 minutes)
        jobs = [Job(JobSpec("/bin/true", attributes=JobAttributes(duration=timedelta(minutes=1))))
                for _ in range(n)]
        for job in jobs:
            ex.submit(job)
        queue_deadline = time.monotonic() + QUEUE_WAIT
        while ex.pilot_status.state is JobState.QUEUED:  # others' jobs first: not timed
            if time.monotonic() > queue_deadline:
                raise SystemExit(f"the pilot waited in the queue for {QUEUE_WAIT:.0f} s")
            time.sleep(1)
        if not done.wait(WAIT):
            raise SystemExit("the pilot's jobs did not all end")
        last = max(called_back.values())
        failed = [job.status for job in jobs if job.status.state is not JobState.COMPLETED]
        if failed:
            raise SystemExit(f"{len(failed)} pilot jobs did not complete: {failed[0]}")
        uri_file = next(ex.work_directory.glob("pilot-*/uri"))
        uri = uri_file.read_text().split("\n")[0]
        running_at = uri_file.stat().st_mtime
        assert ex.pilot_native_id is not None
        started = batch_start(backend, ex.pilot_native_id)
        import flux

        handle = flux.Flux(uri)
        ends, starts = [], []
        for job in jobs:
            assert job.native_id is not None
            events = flux_events(handle, job.native_id)
            ends.append(called_back[job.id] - events["finish"])
            starts.append(events["start"])
    except BaseException:
        ex.close()  # the pilot ends with it: never left holding the node
        raise
    return {"jobs": n, "jobs_per_s": round(n / (last - started), 1),
            "jobs_per_s_queue": round(n / (last - made), 1),
            "queued_s": round(started - made, 1), "startup_s": round(running_at - started, 1),
            "running_to_first_start_s": round(min(starts) - running_at, 3),
            "end_to_callback_ms": {"median": round(statistics.median(ends) * 1e3, 1),
                                   "p95": round(percentile(ends, 0.95) * 1e3, 1),
                                   "max": round(max(ends) * 1e3, 1)}}, ex, uri


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
    others = 0.0  # seconds in which the queue ran other jobs than these (a shared queue)
    while time.time() < deadline:
        listed = subprocess.run(["squeue", "--noheader", "--format=%i", f"--jobs={','.join(ids)}"],
                                capture_output=True, text=True).stdout.split()
        if not listed:
            break
        running = subprocess.run(["squeue", "--noheader", "--states=R", "--format=%i"],
                                 capture_output=True, text=True).stdout.split()
        before = time.time()
        time.sleep(0.2)
        if set(running) - set(ids):
            others += time.time() - before
    else:
        subprocess.run(["scancel", *ids], check=False)
        raise SystemExit("the sbatch jobs did not all end")
    elapsed = time.time() - start
    return {"jobs": m, "jobs_per_s": round(m / elapsed, 1), "elapsed_s": round(elapsed, 2),
            "others_running_s": round(others, 1)}


def raw_qsub(m: int, work: Path) -> dict[str, Any]:
    start = time.time()
    ids = [subprocess.run([pbs("qsub"), "-o", "/dev/null", "-j", "oe", "--", "/bin/true"],
                          check=True, capture_output=True, text=True, cwd=work).stdout.strip()
           for _ in range(m)]
    deadline = start + WAIT
    while time.time() < deadline:
        out = subprocess.run([pbs("qstat"), "-x", *ids], capture_output=True, text=True).stdout
        finished = sum(1 for line in out.splitlines()
                       if len(line.split()) >= 6 and line.split()[4] == "F")
        if finished == m:
            break
        time.sleep(0.2)
    else:
        subprocess.run([pbs("qdel"), *ids], check=False)
        raise SystemExit("the qsub jobs did not all end")
    elapsed = time.time() - start
    return {"jobs": m, "jobs_per_s": round(m / elapsed, 1), "elapsed_s": round(elapsed, 2)}


def one_round(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    pilot, ex, uri = through_pilot(args.backend, args.jobs, args.cores, work)
    print(json.dumps({"pilot": pilot}), file=sys.stderr, flush=True)  # progress
    try:
        flux_alone = raw_flux(args.jobs, uri)
    except OSError as e:
        raise SystemExit(f"the raw Flux loop failed ({e}); the pilot: {ex.pilot_status}")
    finally:
        ex.close()
    print(json.dumps({"flux": flux_alone}), file=sys.stderr, flush=True)
    batch = (raw_qsub if args.backend == "pbs" else raw_sbatch)(args.sbatch_jobs, work)
    print(json.dumps({"batch": batch}), file=sys.stderr, flush=True)
    return {"pilot": pilot, "flux": flux_alone, "batch": batch,
            "ratio_vs_batch": round(pilot["jobs_per_s"] / batch["jobs_per_s"], 2),
            "ratio_vs_flux": round(pilot["jobs_per_s"] / flux_alone["jobs_per_s"], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--sbatch-jobs", type=int, default=100,
                        help="jobs of the raw batch loop (sbatch, or qsub)")
    parser.add_argument("--cores", type=int, default=2, help="the pilot's cores")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--backend", choices=["slurm", "pbs"], default="slurm",
                        help="the pilot's batch system; pbs: the raw loop is qsub")
    args = parser.parse_args()
    rounds = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-pilot-") as tmp:
            rounds.append(one_round(args, Path(tmp)))
    figures = {
        "ratio_vs_batch": spread([r["ratio_vs_batch"] for r in rounds]),
        "ratio_vs_flux": spread([r["ratio_vs_flux"] for r in rounds]),
        "running_to_first_start_s": spread([r["pilot"]["running_to_first_start_s"]
                                            for r in rounds]),
        "end_to_callback_ms": spread([r["pilot"]["end_to_callback_ms"]["median"]
                                      for r in rounds])}
    met = {name: (figures[name]["median"] >= target if name.startswith("ratio")
                  else figures[name]["median"] <= target) for name, target in TARGETS.items()}
    print(json.dumps({
        "bench": "pilot", "backend": args.backend, "jobs": args.jobs, "rounds": args.rounds,
        "batch_loop": "qsub" if args.backend == "pbs" else "sbatch",
        "batch_jobs": args.sbatch_jobs, "batch_estimated": args.sbatch_jobs < args.jobs,
        **figures, "targets": TARGETS, "met": met, "per_round": rounds}))


if __name__ == "__main__":
    main()
