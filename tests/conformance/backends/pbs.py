"""Conformance provider for the PBS executor: a real OpenPBS server reachable as a user
reaches one (``/etc/pbs.conf`` or ``PBS_CONF_FILE`` naming ``PBS_EXEC``, or qstat on
PATH); scripts/test.sh starts one when the prebuilt OpenPBS is beside the checkout
(required under CI=true)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor
from hpcjobs.executors.pbs import pbs_exec_bin

NAME = "pbs"
LAUNCHERS = ["single", "multiple", "mpirun"]
MARKERS = ["pbs"]
CAPABILITIES = {"executes", "exit_code", "stdin", "cancel", "list", "attach",
                "attach_after_client_death", "signal_exit", "parallel"}


def unavailable() -> Optional[str]:
    """None if a PBS server answers ``qstat -B``."""
    directory = pbs_exec_bin()
    qstat = str(directory / "qstat") if directory else shutil.which("qstat")
    if qstat is None:
        return "PBS is not installed (no PBS_EXEC in /etc/pbs.conf, no qstat on PATH)"
    p = subprocess.run([qstat, "-B"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        # another test group may be restarting the server on purpose: wait that out
        # (imported here: a job's subprocess loads this module without tests/ on its path)
        from pbs_restart import wait_for_restart
        wait_for_restart()
        p = subprocess.run([qstat, "-B"], capture_output=True, text=True, timeout=60)
    return None if p.returncode == 0 else f"no PBS server answers: {p.stderr.strip()}"


def launcher_unavailable(launcher: str) -> Optional[str]:
    """``mpirun`` needs Open MPI (scripts/install-test-deps.sh)."""
    if launcher == "mpirun" and shutil.which("mpirun") is None:
        return "mpirun is not on PATH (scripts/install-test-deps.sh)"
    return None


def make_executor(work_dir: Path) -> JobExecutor:
    """A PBS executor keeping its job files under ``work_dir`` (one node: local disk is
    shared with the compute node)."""
    return JobExecutor.get_instance(NAME, config={"work_directory": work_dir})
