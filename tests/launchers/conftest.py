"""Fixtures of the launcher script tests: run a launcher's real command line.

``run_launcher`` builds the command with the launcher class (the same argument list an
executor gets), runs it with ``/bin/sh`` in the test's directory and returns the
finished process plus the records its ranks wrote (see ``launcher_probe.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

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


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The directory the launcher runs in (relative pre/post paths resolve here)."""
    d = tmp_path / "job"
    d.mkdir()
    return d


@pytest.fixture
def probe_dir(tmp_path: Path) -> Path:
    d = tmp_path / "probe"
    d.mkdir()
    return d


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A directory put first on PATH, for stand-in commands."""
    d = tmp_path / "bin"
    d.mkdir()
    return d


@pytest.fixture
def run_launcher(workdir: Path, probe_dir: Path, bin_dir: Path) -> RunLauncher:
    """``run_launcher(launcher, args, pre=, post=, n=, ppn=, codes=, env=, stdin=)``.

    Runs the probe as the job with ``args`` as its arguments; ``codes`` maps rank to
    exit code. ``env`` entries are added to (``None``: removed from) the environment.
    """

    def run(launcher: str, args: Sequence[str] = (), *, pre: Optional[str] = None,
            post: Optional[str] = None, n: int = 1, ppn: Optional[int] = None,
            codes: Optional[Mapping[int, int]] = None,
            env: Optional[Mapping[str, Optional[str]]] = None, stdin: bytes = b"",
            argv: Optional[Sequence[str]] = None) -> Result:
        spec = ",".join(f"{r}={c}" for r, c in (codes or {}).items())
        job = list(argv) if argv is not None else [sys.executable, str(PROBE), spec, *args]
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("SLURM_", "PBS_", "HPCJOBS_", "PSIJ_", "OMPI_"))}
        environ["PATH"] = f"{bin_dir}{os.pathsep}{environ['PATH']}"
        environ["PROBE_DIR"] = str(probe_dir)
        for k, v in (env or {}).items():
            if v is None:
                environ.pop(k, None)
            else:
                environ[k] = v
        proc = subprocess.run(launch_command(launcher, job, pre, post, n, ppn),
                              cwd=workdir, env=environ, input=stdin, capture_output=True,
                              timeout=TIMEOUT)
        records = {}
        for f in probe_dir.glob("*.json"):
            record = json.loads(f.read_text())
            records[record["rank"]] = record
        return Result(proc, records)

    return run
