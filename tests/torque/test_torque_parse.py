"""The Torque flavour's ``qstat -f`` text parser and state table, on what Slurm's
Torque-style wrappers printed (tests/fixtures/slurm-torque-22.05, recorded; INDEX.md
there says what each shows) and on the record format of a real Torque (documented, not
recorded: there is no Torque server here). Needs no scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcjobs import JobState
from hpcjobs.executors.pbs.torque import parse_qstat_f, torque_native
from hpcjobs.final_status import Cause

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-torque-22.05" / "raw"


def recorded(step: str) -> str:
    return (RAW / f"{step}.stdout").read_text(encoding="utf-8")


@pytest.mark.parametrize("step, letter, state, cause", [
    ("02-qstat-f-held", "Q", JobState.QUEUED, None),
    ("03-qstat-f-running", "R", JobState.ACTIVE, None),
    ("05-qstat-f-finished-exit-3", "C", JobState.FAILED, None),
    ("13-qstat-f-cancelled", "C", JobState.FAILED, None),
    # ran 78 s of a 1-minute walltime: the wrappers' only sign of Slurm's TIMEOUT
    ("17-qstat-f-walltime-killed", "C", JobState.FAILED, Cause.WALLTIME),
])
def test_recorded_wrapper_records(step: str, letter: str, state: JobState,
                                  cause: Cause | None) -> None:
    jobs = parse_qstat_f(recorded(step))
    [(native_id, job)] = jobs.items()
    assert native_id.isdigit() and job["Job_Owner"] == "root@localhost"
    assert job["Job_Name"] == ("long.sh" if cause else "rec-job")
    assert job["Resource_List.ncpus"] == ("1" if cause else "2")
    ns = torque_native(native_id, job)
    assert (ns.native_state, ns.state, ns.exit_code, ns.cause) == (letter, state, None, cause)
    if letter == "C":  # the wrappers never show an exit status: saying so, not guessing
        assert ns.message is not None and "no exit status" in ns.message
    if letter != "Q":
        assert ns.metadata["nodes"] == ("vm/1" if cause else "vm/2")


def test_a_purged_job_is_no_record() -> None:
    assert (RAW / "06-qstat-f-gone.rc").read_text().strip() == "153"
    assert parse_qstat_f(recorded("06-qstat-f-gone")) == {}


TORQUE = """Job Id: 522083.server.example
    Job_Name = timeout.pbs
    job_state = C
    Variable_List = PBS_O_QUEUE=route,PBS_O_HOME=/home/a,
\tPBS_O_LOGNAME=alice
    exit_status = {status}
    comp_time = 1508498095

Job Id: 522084.server.example
    job_state = H
"""


@pytest.mark.parametrize("status, state, code, cause", [
    ("0", JobState.COMPLETED, 0, None),
    ("3", JobState.FAILED, 3, None),
    ("271", JobState.FAILED, -15, None),   # 256+15: killed by SIGTERM (qdel)
    ("137", JobState.FAILED, -9, None),    # a shell's 128+9
    ("-11", JobState.FAILED, None, Cause.WALLTIME),
    ("-10", JobState.FAILED, None, Cause.OUT_OF_MEMORY),
    ("-4", JobState.FAILED, None, None),
])
def test_real_torque_records(status: str, state: JobState, code: int | None,
                             cause: Cause | None) -> None:
    jobs = parse_qstat_f(TORQUE.format(status=status))
    assert set(jobs) == {"522083.server.example", "522084.server.example"}
    # a wrapped value is joined
    assert jobs["522083.server.example"]["Variable_List"].endswith("/home/a,PBS_O_LOGNAME=alice")
    ns = torque_native("522083.server.example", jobs["522083.server.example"])
    assert (ns.state, ns.exit_code, ns.cause) == (state, code, cause), ns
    assert ns.time == 1508498095.0
    if status == "-4":
        assert ns.message is not None and "JOB_EXEC code -4" in ns.message
    held = torque_native("522084.server.example", jobs["522084.server.example"])
    assert held.state is JobState.QUEUED


def test_unknown_letters_are_no_state() -> None:
    assert torque_native("1", {"job_state": "U"}).state is None
