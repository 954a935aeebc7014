"""Conformance provider for PBS's Torque flavour: Debian's ``slurm-wlm-torque`` wrappers
(``/usr/bin/qsub``, ``qstat``, ``qdel``, installed by scripts/install-test-deps.sh) over
the real single-node Slurm of ``scripts/slurm-cluster.sh up`` (both required under
CI=true). The wrappers show no exit status: the suite's exit codes all come from the
job's own files (docs/pbs.md, "Torque"). (Standalone: the attach test loads providers
by path in a process of their own.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

NAME = "torque"
LAUNCHERS = ["single", "multiple", "mpirun"]
MARKERS = ["slurm"]
CAPABILITIES = {"executes", "exit_code", "stdin", "cancel", "list", "attach",
                "attach_after_client_death", "signal_exit", "parallel"}
WRAPPERS = Path("/usr/bin")
_CLUSTER = Path(__file__).resolve().parents[3] / "scripts" / "slurm-cluster.sh"


def unavailable() -> Optional[str]:
    """None if the wrappers are installed and the Slurm test cluster is up."""
    qstat = WRAPPERS / "qstat"
    if not qstat.exists() or "Slurm" not in qstat.read_text(errors="replace")[:2000]:
        return f"{qstat} is not Slurm's Torque-style wrapper (apt install slurm-wlm-torque)"
    up = subprocess.run(["bash", str(_CLUSTER), "status"], capture_output=True, text=True,
                        timeout=60)
    return None if up.returncode == 0 else f"the Slurm test cluster is not up: {up.stdout}"


def launcher_unavailable(launcher: str) -> Optional[str]:
    """``mpirun`` needs Open MPI (scripts/install-test-deps.sh)."""
    return "mpirun is not on PATH" if launcher == "mpirun" and not shutil.which("mpirun") \
        else None


def make_executor(work_dir: Path) -> JobExecutor:
    """A Torque executor on the wrappers by full path (as a site with OpenPBS in
    /opt/pbs/bin too would), keeping its job files under ``work_dir``."""
    return JobExecutor.get_instance(NAME, config={"bin_directory": WRAPPERS,
                                                  "work_directory": work_dir})
