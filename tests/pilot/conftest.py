"""Fixtures of the pilot tests: the real Slurm (and OpenPBS) of this machine start the
pilot, a real flux-core runs inside it (the ``flux`` on PATH, with its bindings).

Without them the tests skip, except under ``CI=true``, where they FAIL.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pilot_support import IN_CI, flux_problem, pbs_command, pilot_config

from hpcjobs import JobExecutor
from hpcjobs.executors.pilot import PilotJobExecutor

CLUSTER_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-cluster.sh"


def _require(problem: str | None) -> None:
    if problem:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: pilot tests must run, not skip)")
        pytest.skip(problem)


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Skips (fails under CI=true) unless the Slurm test cluster and Flux are here."""
    try:
        p = subprocess.run(["bash", str(CLUSTER_SCRIPT), "status"], capture_output=True,
                           text=True, timeout=60)
        problem = None if p.returncode == 0 else \
            f"the Slurm test cluster is not up: {p.stdout}{p.stderr}"
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = f"the Slurm test cluster is not up: {e}"
    _require(problem or flux_problem())


@pytest.fixture(scope="session")
def pbs_server() -> None:
    """Skips (fails under CI=true) unless a PBS server answers ``qstat -B`` and Flux is
    here."""
    try:
        p = subprocess.run([pbs_command("qstat"), "-B"], capture_output=True, text=True, timeout=60)
        problem = None if p.returncode == 0 else f"no PBS server answers: {p.stderr}"
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = f"no PBS server answers: {e}"
    _require(problem or flux_problem())


@pytest.fixture
def make_pbs_pilot(pbs_server: None, tmp_path: Path) -> Iterator[Callable[..., PilotJobExecutor]]:
    """``make_pilot`` for pilots started by OpenPBS."""
    yield from _maker(tmp_path, {"backend": "pbs", "backend_config": {
        "work_directory": tmp_path / "pbs"}})


@pytest.fixture
def make_pilot(slurm_cluster: None, tmp_path: Path) -> Iterator[Callable[..., PilotJobExecutor]]:
    """Makes pilot executors (PilotConfig settings as keywords); all closed afterwards
    (their jobs cancelled, the pilot ended)."""
    yield from _maker(tmp_path, {})


def _maker(tmp_path: Path, backend: dict[str, Any]) -> Iterator[Callable[..., PilotJobExecutor]]:
    made: list[PilotJobExecutor] = []

    def make(**more: Any) -> PilotJobExecutor:
        ex = JobExecutor.get_instance("pilot", config=pilot_config(tmp_path, **backend, **more))
        assert isinstance(ex, PilotJobExecutor)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close()
        if not ex.pilot_status.state.final and ex.pilot_native_id:  # a detached pilot
            cancel = "scancel" if ex.pilot_native_id.isdigit() else pbs_command("qdel")
            subprocess.run([cancel, ex.pilot_native_id], timeout=60, check=False)
