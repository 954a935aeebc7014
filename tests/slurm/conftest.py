"""Fixtures of the Slurm tests: the real single-node cluster of scripts/slurm-cluster.sh.

Every test here needs it: without it they skip, except under ``CI=true``, where a
missing cluster FAILS them (CI must prove that Slurm works, not skip it).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import JobExecutor

CLUSTER_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-cluster.sh"
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def slurm_cluster() -> str:
    """The cluster's status summary; skips (fails under CI=true) if it is not up."""
    try:
        p = subprocess.run(["bash", str(CLUSTER_SCRIPT), "status"], capture_output=True,
                           text=True, timeout=60)
        problem = "" if p.returncode == 0 else p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = str(e)
    if problem:
        message = f"the Slurm test cluster is not up (scripts/slurm-cluster.sh up): {problem}"
        if IN_CI:
            pytest.fail(message + " (CI=true: Slurm tests must run, not skip)")
        pytest.skip(message)
    return p.stdout


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """The executor's work directory (job directories live here)."""
    return tmp_path / "work"


@pytest.fixture
def executor(slurm_cluster: str, work_dir: Path) -> Iterator[JobExecutor]:
    """A Slurm executor with its own work directory, closed after the test."""
    ex = JobExecutor.get_instance("slurm", config={"work_directory": work_dir})
    try:
        yield ex
    finally:
        ex.close()
