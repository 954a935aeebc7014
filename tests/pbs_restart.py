"""A PBS server restarted on purpose by one test group, seen by the others.

The test groups run side by side (scripts/pytest_groups.py), and one PBS test stops and
restarts the server (tests/pbs/test_pbs_resilience.py). A test of another group that
asks then whether a server answers would take the planned restart for a missing
server: while the restart lasts, a flag file says so, and the check waits it out.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: exists while a test has stopped the PBS server on purpose
FLAG = Path(tempfile.gettempdir()) / f"hpcjobs-pbs-restarting-{os.getuid()}"
#: a flag older than this was left by a killed run: not waited for
STALE = 300.0


@contextmanager
def restarting() -> Iterator[None]:
    """Mark the server as being restarted on purpose for the block's duration."""
    FLAG.write_text(str(os.getpid()))
    try:
        yield
    finally:
        FLAG.unlink(missing_ok=True)


def wait_for_restart(timeout: float = 180.0) -> None:
    """Return once no planned restart is in progress (at most ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            age = time.time() - FLAG.stat().st_mtime
        except FileNotFoundError:
            return
        if age > STALE:
            return
        time.sleep(1)
