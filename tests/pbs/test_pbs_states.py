"""PBS's state table and Exit_status conventions, on the outputs a real OpenPBS 23.06
printed (tests/fixtures/openpbs-23.06, recorded; INDEX.md there says what each shows).
Needs no server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpcjobs import JobState
from hpcjobs.executors.pbs.status import native as _native
from hpcjobs.final_status import Cause

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "openpbs-23.06" / "raw"


def jobs(name: str) -> dict[str, Any]:
    """The records of a recorded ``qstat -f -F json`` (decoded as the executor does)."""
    text = (RAW / f"{name}.stdout").read_bytes().decode("utf-8", "replace")
    records: dict[str, Any] = json.loads(text, strict=False)["Jobs"]
    return records


@pytest.mark.parametrize("record, native_id, state, code, cause, words", [
    ("01-basic-lifecycle.12", "0.vm", JobState.COMPLETED, 0, None, None),
    ("02-exit-3.04", "1.vm", JobState.FAILED, 3, None, "and failed"),
    ("03-walltime-kill.05", "2.vm", JobState.FAILED, None, Cause.WALLTIME, "walltime"),
    ("05-qdel-running.07", "4.vm", JobState.CANCELED, None, Cause.CANCELED, "by pbsuser@vm"),
    ("14-exit-codes-and-failures.07", "40.vm", JobState.FAILED, 255, None, None),
    ("14-exit-codes-and-failures.07", "41.vm", JobState.FAILED, -9, None, None),   # 128+9
    ("14-exit-codes-and-failures.07", "42.vm", JobState.FAILED, -11, None, None),  # 256+11
    ("13-qsub-options-and-json-quirks.27", "37.vm", JobState.COMPLETED, 0, None, None),
])
def test_finished_jobs(record: str, native_id: str, state: JobState, code: int | None,
                       cause: Cause | None, words: str | None) -> None:
    ns = _native(native_id, jobs(record)[native_id])
    assert (ns.state, ns.exit_code, ns.cause) == (state, code, cause), ns
    if words:
        assert words in (ns.message or "")
    assert ns.metadata["native_state"] == "F" and ns.metadata["nodes"].startswith("vm/")


def test_a_running_job_with_a_rerun_exit_status_is_still_running() -> None:
    # after qrerun PBS leaves Exit_status -11 on the running job: not an ending
    ns = _native("45.vm", jobs("15-other-states.16")["45.vm"])
    assert ns.state is JobState.ACTIVE and ns.exit_code is None


def test_can_never_run_fails_and_not_running_stays_queued() -> None:
    never = {"job_state": "Q", "comment": "Can Never Run: Insufficient amount of resource: "
                                          "ncpus (R: 999 A: 2 T: 2)"}
    ns = _native("5.vm", never)
    assert ns.state is JobState.FAILED and "ncpus (R: 999" in (ns.message or "")
    waiting = {"job_state": "Q", "comment": "Not Running: Not enough free nodes available",
               "estimated": {"start_time": "Mon Nov 23 13:17:42 2026"}}
    ns = _native("6.vm", waiting)
    assert ns.state is JobState.QUEUED
    assert ns.metadata["reason_pending"].startswith("Not Running")
    assert isinstance(ns.metadata["t_estimate"], float)


def test_unknown_letters_are_no_state() -> None:
    assert _native("7.vm", {"job_state": "M"}).state is None


def test_pbs_commands_come_from_pbs_conf_not_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a site with Debian's Torque-style wrappers first on PATH and OpenPBS elsewhere
    from hpcjobs import JobExecutor
    from hpcjobs.executors.pbs import pbs_exec_bin
    torque, pbs = tmp_path / "usr-bin", tmp_path / "opt-pbs"
    for where in (torque, pbs / "bin"):
        where.mkdir(parents=True)
        (where / "qstat").write_text("#!/bin/sh\n")
    conf = tmp_path / "pbs.conf"
    conf.write_text(f"PBS_SERVER=vm\nPBS_EXEC={pbs}\nPBS_HOME=/var/spool/pbs\n")
    monkeypatch.setenv("PATH", f"{torque}:/usr/bin:/bin")
    monkeypatch.setenv("PBS_CONF_FILE", str(conf))
    assert pbs_exec_bin() == pbs / "bin"
    ex = JobExecutor.get_instance("pbs", config={"work_directory": tmp_path / "w"})
    assert ex.scheduler.command("qsub", "x") == [str(pbs / "bin" / "qsub"), "x"]  # type: ignore[attr-defined]
    chosen = JobExecutor.get_instance("pbs", config={"work_directory": tmp_path / "w",
                                                     "bin_directory": torque})
    assert chosen.scheduler.command("qstat") == [str(torque / "qstat")]  # type: ignore[attr-defined]
    # no PBS configuration: PATH decides
    monkeypatch.setenv("PBS_CONF_FILE", str(tmp_path / "none"))
    assert pbs_exec_bin() is None
