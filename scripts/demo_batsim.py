"""Demo: a short workflow on a simulated 64-node cluster (Batsim executor).

The same PSI/J code that would run on Slurm: a preparation job, a fan-out of
simulations of different widths (EASY backfilling starts two short checks before a wide
job without delaying it), then an analysis job that depends on all of them. Virtual time, so it takes a second or two and prints
the same simulated times on every run. Prints where (hosts) and when (simulated
seconds) each job ran; draws the schedule as a PNG when matplotlib is installed.

Usage: python scripts/demo_batsim.py [work-directory]
"""

from __future__ import annotations

import sys
import tempfile
import threading
from datetime import timedelta
from pathlib import Path

import hpcjobs as psij
from hpcjobs.executors.batsim.schedulers.base import idset


def job(name: str, seconds: int, nodes: int, walltime: int) -> psij.Job:
    """A job that runs ``seconds`` simulated seconds on ``nodes`` nodes."""
    return psij.Job(psij.JobSpec("sleep", [str(seconds)], name=name,
                                 resources=psij.ResourceSpecV1(node_count=nodes),
                                 attributes=psij.JobAttributes(duration=timedelta(seconds=walltime))))


def main() -> int:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="hpcjobs-demo-"))
    started: dict[str, float] = {}
    lock = threading.Lock()

    def on_status(j: psij.Job, status: psij.JobStatus) -> None:
        if status.state is psij.JobState.ACTIVE:
            with lock:
                started[j.id] = status.time

    config = {"work_directory": work, "hosts": 64, "cores": 32, "scheduler": "easy",
              "virtual_time": True}
    with psij.JobExecutor.get_instance("batsim", config=config) as ex:
        ex.set_job_status_callback(on_status)
        prepare = job("prepare", 60, 4, 120)
        ex.submit(prepare)
        prepare.wait()
        # six 8-node runs, then a 40-node one that must wait for three of them; the two
        # short checks submitted after it start at once without delaying it (backfilling)
        sims = [job(f"sim-{i}", 120 + 60 * i, 8, 180 + 60 * i) for i in range(6)]
        sims += [job("sim-wide", 300, 40, 400), job("check-a", 100, 4, 120), job("check-b", 90, 4, 120)]
        for j in sims:
            ex.submit(j)
        for j in sims:
            j.wait()
        analyse = job("analyse", 60, 16, 120)
        ex.submit(analyse)
        analyse.wait()
        jobs = [prepare, *sims, analyse]
    print(f"simulated cluster: 64 hosts x 32 cores, EASY backfilling (work directory {work})")
    print(f"{'job':<10} {'state':<10} {'start':>7} {'end':>7}  nodes")
    for j in jobs:
        status = j.status
        meta = status.metadata or {}
        hosts = meta.get("nodes", [])
        where = "node[" + idset(sorted(int(h[4:]) for h in hosts)) + "]" if hosts else "-"
        name = j.spec.name if j.spec is not None else j.id
        print(f"{name:<10} {status.state.name:<10} {started.get(j.id, float('nan')):7.0f} "
              f"{status.time:7.0f}  {len(hosts):2d} {where}")
    jobs_csv = Path(f"{ex.export_prefix}_jobs.csv")
    print(f"Batsim's output: {jobs_csv}")
    try:
        from hpcjobs.executors.batsim.gantt import GanttUnavailable, draw
        names = {str(j.native_id): j.spec.name for j in jobs if j.spec is not None and j.spec.name}
        print(f"Gantt chart: {draw(jobs_csv, work / 'schedule.png', 'hpcjobs demo workflow', names)}")
    except GanttUnavailable as e:
        print(f"(no Gantt chart: {e})")
    return 0 if all(j.status.state is psij.JobState.COMPLETED for j in jobs) else 1


if __name__ == "__main__":
    sys.exit(main())
