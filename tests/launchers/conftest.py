"""Fixtures of the launcher script tests: run a launcher's real command line.

``run_launcher`` builds the command with the launcher class (the same argument list an
executor gets), runs it with ``/bin/sh`` in the test's directory and returns the
finished process plus the records its ranks wrote (see ``launcher_probe.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pytest

from launcher_helpers import PROBE, TIMEOUT, Result, RunLauncher, launch_command


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
