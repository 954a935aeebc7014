"""Helpers of the launcher script tests (a unique module name: several test directories
have a conftest.py, so tests never import from ``conftest``)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pytest

from hpcjobs.launchers.base import SCRIPTS, Launcher
from hpcjobs.resources import ResourceSpecV1
from hpcjobs.spec import JobSpec

PROBE = Path(__file__).with_name("launcher_probe.py")
SCRIPTS_DIR = SCRIPTS
IN_CI = os.environ.get("CI", "").lower() == "true"
TIMEOUT = 120  # generous bound so a hung script fails the test instead of the run


def openmpi_mpirun() -> Optional[str]:
    """OpenMPI's mpirun, whatever /usr/bin/mpirun points at."""
    return shutil.which("mpirun.openmpi") or (
        shutil.which("mpirun") if "Open MPI" in _version("mpirun") else None)


def _version(cmd: str) -> str:
    if shutil.which(cmd) is None:
        return ""
    return subprocess.run([cmd, "--version"], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL).stdout


def need_openmpi() -> None:
    """Skip (fail under CI=true) unless OpenMPI is installed."""
    if openmpi_mpirun() is None:
        msg = "OpenMPI's mpirun is not installed (bash scripts/install-test-deps.sh)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)


@dataclass
class Result:
    """A finished launcher run."""

    proc: "subprocess.CompletedProcess[bytes]"
    records: dict[int, dict[str, Any]]

    @property
    def returncode(self) -> int:
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return self.proc.stderr.decode(errors="replace")

    @property
    def stdout(self) -> str:
        return self.proc.stdout.decode(errors="replace")

    def argv(self, rank: int) -> list[bytes]:
        """The arguments rank ``rank`` received (after its exit code spec)."""
        return [bytes.fromhex(a) for a in self.records[rank]["argv"]]


RunLauncher = Callable[..., Result]


def launch_command(launcher: str, argv: Sequence[str], pre: Optional[str] = None,
                   post: Optional[str] = None, n: int = 1, ppn: Optional[int] = None) -> list[str]:
    """The command line the launcher class builds for such a job."""
    spec = JobSpec(executable=argv[0], arguments=list(argv[1:]), pre_launch=pre,
                   post_launch=post,
                   resources=ResourceSpecV1(process_count=n, processes_per_node=ppn))
    return Launcher.get_instance(launcher).get_launch_command(spec)


def write_script(path: Path, text: str) -> Path:
    """An executable file with ``text`` (shell stand-ins for mpirun, scontrol...)."""
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
