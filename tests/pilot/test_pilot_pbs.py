"""The pilot executor on the real OpenPBS, with the real flux-core inside the pilot: one
PBS job on this machine's single node running ``flux start`` (one broker)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from collections.abc import Callable

import pytest
from pilot_support import WAIT, pbs_command

from hpcjobs import Job, JobSpec, JobState
from hpcjobs.executors.pilot import PilotJobExecutor

pytestmark = pytest.mark.pbs

MakePilot = Callable[..., PilotJobExecutor]


def test_jobs_run_in_a_pbs_pilot(make_pbs_pilot: MakePilot) -> None:
    """Jobs submitted at once wait for the PBS pilot, then run in it with their true
    exit codes; close() ends the pilot's PBS job as COMPLETED."""
    ex = make_pbs_pilot()
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {code}"])) for code in (0, 4)]
    for job in jobs:
        ex.submit(job)
    statuses = [job.wait(timeout=WAIT) for job in jobs]
    assert [(s.state, s.exit_code) for s in statuses if s] == [
        (JobState.COMPLETED, 0), (JobState.FAILED, 4)]
    ex.close()
    assert ex.pilot_status.state is JobState.COMPLETED, ex.pilot_status


def test_qdel_from_outside(make_pbs_pilot: MakePilot) -> None:
    """qdel of the pilot while a job runs: the job ends FAILED saying the pilot ended."""
    ex = make_pbs_pilot()
    job = Job(JobSpec("/bin/sleep", ["300"]))
    ex.submit(job)
    job.wait(timeout=WAIT, target_states=JobState.ACTIVE)
    subprocess.run([pbs_command("qdel"), str(ex.pilot_native_id)], check=True, timeout=60)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED, status
    assert status.message is not None and status.message.startswith("the pilot"), status


def test_a_pilot_never_closed_is_cancelled_at_exit(pbs_server: None, tmp_path: Path) -> None:
    """A program that made a pilot executor and ended without closing it leaves no
    allocation holding the node to its walltime (psij-python's own suite makes every
    installed executor to look at its class, and drops it)."""
    import json
    import sys
    import time
    from datetime import timedelta

    from pilot_support import CORES
    config = {"backend": "pbs", "cores_per_node": CORES, "walltime": str(timedelta(minutes=30)),
              "work_directory": str(tmp_path / "pilot"),
              "backend_config": {"work_directory": str(tmp_path / "pbs")}}
    program = ("import json, sys, datetime\n"
               "from hpcjobs import JobExecutor\n"
               "c = json.loads(sys.argv[1]); h, m, s = map(int, c['walltime'].split(':'))\n"
               "c['walltime'] = datetime.timedelta(hours=h, minutes=m, seconds=s)\n"
               "ex = JobExecutor.get_instance('pilot', config=c)\n"
               "print(ex.pilot_native_id, flush=True)\n")
    p = subprocess.run([sys.executable, "-c", program, json.dumps(config)], capture_output=True,
                       text=True, timeout=WAIT)
    assert p.returncode == 0, p.stderr
    native_id = p.stdout.strip()
    deadline = time.monotonic() + WAIT
    while True:
        q = subprocess.run([pbs_command("qstat"), "-x", "-f", "-F", "json", native_id],
                           capture_output=True, text=True, timeout=60)
        state = json.loads(q.stdout)["Jobs"][native_id]["job_state"] if q.returncode == 0 else "?"
        if state in ("F", "?"):
            break
        assert time.monotonic() < deadline, f"pilot {native_id} still {state}"
        time.sleep(1)
