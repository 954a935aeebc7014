"""Conformance provider for the local executor: real processes on this machine."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

NAME = "local"
LAUNCHERS = ["single", "multiple", "mpirun"]
CAPABILITIES = {"executes", "exit_code", "stdin", "cancel", "list", "attach",
                "attach_after_client_death", "signal_exit", "parallel"}


def unavailable() -> Optional[str]:
    """The local executor needs nothing but this machine."""
    return None


def launcher_unavailable(launcher: str) -> Optional[str]:
    """``mpirun`` needs OpenMPI installed; every launcher needs its plugin."""
    from hpcjobs.errors import ExecutorNotFoundError
    from hpcjobs.launchers.base import Launcher
    try:
        Launcher.get_instance(launcher)
    except (ExecutorNotFoundError, ImportError) as e:
        return f"launcher plugin not loadable: {e}"
    if launcher == "mpirun" and shutil.which("mpirun") is None:
        return "mpirun is not on PATH"
    return None


def make_executor(work_dir: Path) -> JobExecutor:
    """A local executor keeping its job files under ``work_dir``."""
    return JobExecutor.get_instance(NAME, config={"work_directory": work_dir})
