"""Fixtures of the pilot tests: the real Slurm (and OpenPBS) of this machine start the
pilot, a real flux-core runs inside it (the ``flux`` on PATH, with its bindings).

Without them the tests skip, except under ``CI=true``, where they FAIL.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TYPE_CHECKING

import pytest

from hpcjobs import JobExecutor
from hpcjobs.executors.pilot import PilotJobExecutor as PilotJobExecutorClass

if TYPE_CHECKING:
    from hpcjobs.executors.pilot import PilotJobExecutor

IN_CI = os.environ.get("CI", "").lower() == "true"
CLUSTER_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-cluster.sh"
#: a generous bound on anything a test waits for (never a timing assertion)
WAIT = 180.0
#: the pilot's size in the tests: one node (the machine has one), a few of its cores
CORES = 4


def _require(problem: str | None) -> None:
    if problem:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: pilot tests must run, not skip)")
        pytest.skip(problem)


def flux_problem() -> str | None:
    if shutil.which("flux") is None:
        return "the flux command is not on PATH (flux-core)"
    try:
        importlib.import_module("flux.job")
    except ImportError as e:
        return f"flux-core's Python bindings do not import ({e})"
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Skips (fails under CI=true) unless the Slurm test cluster and Flux are here."""
    try:
        p = subprocess.run(["bash", str(CLUSTER_SCRIPT), "status"], capture_output=True,
                           text=True, timeout=60)
        problem = None if p.returncode == 0 else f"the Slurm test cluster is not up: {p.stdout}{p.stderr}"
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = f"the Slurm test cluster is not up: {e}"
    _require(problem or flux_problem())


def pilot_config(tmp: Path, **more: Any) -> dict[str, Any]:
    """A one-node Slurm pilot of ``CORES`` cores whose files live under ``tmp``."""
    return {"backend": "slurm", "cores_per_node": CORES, "walltime": timedelta(minutes=30),
            "work_directory": tmp / "pilot",
            "backend_config": {"work_directory": tmp / "slurm"}, **more}


@pytest.fixture
def make_pilot(slurm_cluster: None, tmp_path: Path) -> Iterator[Callable[..., PilotJobExecutor]]:
    """Makes pilot executors (PilotConfig settings as keywords); all closed afterwards
    (their jobs cancelled, the pilot ended)."""
    made: list[PilotJobExecutor] = []

    def make(**more: Any) -> PilotJobExecutor:
        ex = JobExecutor.get_instance("pilot", config=pilot_config(tmp_path, **more))
        assert isinstance(ex, PilotJobExecutorClass)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close()
        if not ex.pilot_status.state.final and ex.pilot_native_id:  # a detached pilot
            subprocess.run(["scancel", ex.pilot_native_id], timeout=60, check=False)
