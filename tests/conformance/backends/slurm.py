"""Conformance provider for the Slurm executor: the real single-node cluster started by
``scripts/slurm-cluster.sh up`` (required under CI=true)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

NAME = "slurm"
LAUNCHERS = ["single", "multiple", "mpirun", "srun"]
MARKERS = ["slurm"]
CAPABILITIES = {"executes", "exit_code", "stdin", "cancel", "list", "attach",
                "attach_after_client_death", "signal_exit", "parallel"}
_STATUS = Path(__file__).resolve().parents[3] / "scripts" / "slurm-cluster.sh"


def unavailable() -> Optional[str]:
    """None if the test cluster accepts jobs (``scripts/slurm-cluster.sh status``)."""
    if shutil.which("sbatch") is None:
        return "Slurm is not installed (run scripts/slurm-cluster.sh up)"
    p = subprocess.run(["bash", str(_STATUS), "status"], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        return f"the Slurm test cluster is not up (scripts/slurm-cluster.sh up): {p.stdout}"
    return None


def launcher_unavailable(launcher: str) -> Optional[str]:
    """``mpirun`` needs Open MPI (scripts/install-test-deps.sh)."""
    if launcher == "mpirun" and shutil.which("mpirun") is None:
        return "mpirun is not on PATH (scripts/install-test-deps.sh)"
    return None


def make_executor(work_dir: Path) -> JobExecutor:
    """A Slurm executor keeping its job files under ``work_dir`` (one node: local disk is
    shared with the compute node)."""
    return JobExecutor.get_instance(NAME, config={"work_directory": work_dir})
