"""The suite's care of the machine it runs on: what a killed run or a killed job can
leave behind that would slow every later test (used by tests/conftest.py)."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

#: pyenv's rehash holds its lock for well under a second
_STALE_AFTER = 15.0


def clear_stale_pyenv_lock() -> None:
    """Remove pyenv's rehash lock when whoever took it has long gone.

    Where root's Python comes from pyenv (as on the machines that run this suite), every
    root login shell runs ``pyenv rehash``, and OpenPBS starts each job in one (so do
    Slurm's Torque wrappers, through ``sbatch --get-user-env``). A shell killed while it
    held the lock (a cancelled job, a killed run) leaves the lock file behind, and every
    later job then waits ``PYENV_REHASH_TIMEOUT`` (60 s) before it starts: one stale lock
    made a whole run several times slower. This is the test machine's hygiene, not the
    library's business: a site without pyenv has no such file."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    lock = root / "shims" / ".pyenv-shim"
    try:
        age = time.time() - lock.stat().st_mtime
    except OSError:
        return
    if age > _STALE_AFTER:
        lock.unlink(missing_ok=True)
        warnings.warn(f"removed pyenv's stale rehash lock {lock} ({age:.0f} s old): a login "
                      "shell killed in `pyenv rehash` left it, and every job would wait 60 s")
