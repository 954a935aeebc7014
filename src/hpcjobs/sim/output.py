"""Batsim 4.2.1's output files: ``<prefix>_jobs.csv`` and ``<prefix>_schedule.csv``.

Columns and number formats ("%f", six decimals) follow the files Batsim wrote in
fixtures/batsim-4.2.1; evalys reads them. Jobs appear in the order they finished or
were rejected (a rejected job's row has its request and REJECTED, nothing else); the
means of _schedule.csv count rejected jobs as zeros, as Batsim's do.
"""

from __future__ import annotations

import csv
import math

from . import BATSIM_VERSION
from .engine import KILLED, REJECTED, SUCCESS, Engine

JOB_COLUMNS = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
               "requested_time,success,final_state,starting_time,execution_time,finish_time,"
               "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata")
SCHEDULE_COLUMNS = ("batsim_version,consumed_joules,makespan,max_slowdown,max_turnaround_time,"
                    "max_waiting_time,mean_slowdown,mean_turnaround_time,mean_waiting_time,"
                    "nb_computing_machines,nb_grouped_switches,nb_jobs,nb_jobs_finished,nb_jobs_killed,"
                    "nb_jobs_rejected,nb_jobs_success,nb_machine_switches,scheduling_time,"
                    "simulation_time,success_rate,time_computing,time_idle,time_sleeping,"
                    "time_switching_off,time_switching_on,time_unavailable")
#: the run time Batsim gives a job that ran in no simulated time (not a killed one)
NULL_TIME_RUNTIME = 1e-5


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _field(text: str) -> str:
    """Names are written bare, as Batsim does, unless CSV needs them quoted."""
    # (four substring tests: a generator over the characters cost a microsecond a name)
    return _quote(text) if ("," in text or '"' in text or "\r" in text or "\n" in text) else text


def write_outputs(prefix: str, engine: Engine, scheduling_time: float, simulation_time: float) -> None:
    """Write both CSV files for a finished simulation."""
    waits: list[float] = []
    turnarounds: list[float] = []
    stretches: list[float] = []
    makespan = 0.0
    nb_success = 0
    with open(f"{prefix}_jobs.csv", "w", encoding="utf-8", newline="") as out:
        out.write(JOB_COLUMNS + "\n")
        for job in engine.finished:
            spec = job.spec
            head = (f"{_field(spec.name)},{_field(spec.workload)},{_field(spec.profile)},{spec.subtime:f},"
                    f"{spec.res},{spec.walltime:f}")
            if job.state == REJECTED:
                out.write(f"{head},0,{REJECTED},,,,,,,,,{_quote(job.metadata)}\n")
                continue
            execution = job.finish - job.start
            if execution == 0 and job.state != KILLED:
                # Batsim: "Job computed in null time. Putting epsilon instead." (its
                # runtime becomes 1e-5 s; a killed job's does not: docs/sim.md)
                execution = NULL_TIME_RUNTIME
            finish = job.start + execution
            wait = job.start - spec.subtime
            turnaround = finish - spec.subtime
            stretch = turnaround / execution if execution > 0 else math.nan
            success = job.state == SUCCESS
            nb_success += success
            waits.append(wait)
            turnarounds.append(turnaround)
            stretches.append(stretch)
            makespan = max(makespan, finish)
            out.write(f"{head},{int(success)},{job.state},{job.start:f},{execution:f},"
                      f"{finish:f},{wait:f},{turnaround:f},{stretch:f},"
                      f"{job.alloc_text},{-1.0:f},{_quote(job.metadata)}\n")
    finished = len(engine.finished) - engine.nb_rejected
    nb_jobs = finished + engine.nb_rejected

    def mean(values: list[float]) -> float:
        return sum(values) / nb_jobs if nb_jobs else 0.0

    row = [BATSIM_VERSION, f"{0.0:f}", f"{makespan:f}", f"{max(stretches, default=0.0):f}",
           f"{max(turnarounds, default=0.0):f}", f"{max(waits, default=0.0):f}",
           f"{mean(stretches):f}", f"{mean(turnarounds):f}", f"{mean(waits):f}",
           str(len(engine.platform.compute)), "0", str(nb_jobs), str(finished),
           str(finished - nb_success), str(engine.nb_rejected), str(nb_success), "0",
           f"{scheduling_time:f}", f"{simulation_time:f}",
           f"{(nb_success / nb_jobs if nb_jobs else 0.0):f}", f"{engine.computing_time:f}",
           f"{engine.idle_time:f}", f"{0.0:f}", f"{0.0:f}", f"{0.0:f}", f"{0.0:f}"]
    with open(f"{prefix}_schedule.csv", "w", encoding="utf-8", newline="") as out:
        out.write(SCHEDULE_COLUMNS + "\n")
        csv.writer(out, lineterminator="\n").writerow(row)
