"""Fixtures of the Torque-flavour tests: Debian's ``slurm-wlm-torque`` wrappers
(``/usr/bin/qsub``, ``qstat``, ``qdel``) over the real single-node Slurm of
scripts/slurm-cluster.sh, chosen by full path (``bin_directory``) as a site with OpenPBS
in /opt/pbs/bin too would.

Without them they skip, except under ``CI=true`` (scripts/install-test-deps.sh installs
the package), where they FAIL.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import JobExecutor

WRAPPERS = Path("/usr/bin")
CLUSTER_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-cluster.sh"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _problem() -> str:
    qstat = WRAPPERS / "qstat"
    try:
        if "Slurm" not in qstat.read_text(errors="replace")[:2000]:
            return f"{qstat} is not Slurm's Torque-style wrapper (apt install slurm-wlm-torque)"
        p = subprocess.run(["bash", str(CLUSTER_SCRIPT), "status"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return "" if p.returncode == 0 else f"the Slurm test cluster is not up: {p.stdout}{p.stderr}"


@pytest.fixture(scope="session")
def torque_wrappers() -> Path:
    """Where the wrappers are; skips (fails under CI=true) without them or Slurm."""
    problem = _problem()
    if problem:
        if IN_CI:
            pytest.fail(f"{problem} (CI=true: the Torque tests must run, not skip)")
        pytest.skip(problem)
    return WRAPPERS


@pytest.fixture
def executor(torque_wrappers: Path, tmp_path: Path) -> Iterator[JobExecutor]:
    """A Torque-flavour executor on the wrappers, with its own work directory."""
    ex = JobExecutor.get_instance("torque", config={"bin_directory": torque_wrappers,
                                                    "work_directory": tmp_path / "work"})
    try:
        yield ex
    finally:
        ex.close()
