"""Helpers of the Slurm tests: plain Slurm commands, used to set up and check jobs."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

WAIT = 180.0  # upper bound for any wait (never a timing assertion)


def sbatch(*args: str) -> str:
    """Submit with plain sbatch (not hpcjobs); returns the job id."""
    p = subprocess.run(["sbatch", "--parsable", "--output=/dev/null", *args],
                       capture_output=True, text=True, check=True, timeout=60)
    return p.stdout.strip().split(";")[0]


def squeue_state(native_id: str) -> str:
    """The job's state in squeue -t all ('' once Slurm has purged it)."""
    p = subprocess.run(["squeue", "-h", "-t", "all", "-j", native_id, "-o", "%T"],
                       capture_output=True, text=True, timeout=60)
    return p.stdout.strip() if p.returncode == 0 else ""


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``predicate`` every 0.5 s; fail the test with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)



def shim(directory: Path, command: str, body: str) -> Path:
    """Write ``directory/command``, a /bin/sh script standing in for the real command
    (``$REAL`` is the real one's path); put ``directory`` first on PATH to use it."""
    real = shutil.which(command)
    assert real is not None, f"{command} is not installed"
    directory.mkdir(exist_ok=True)
    path = directory / command
    path.write_text(f"#!/bin/sh\nREAL={real}\n{body}\n")
    path.chmod(0o755)
    return directory
