"""Conformance provider for the Batsim executor's default: hpcjobs.sim in the
executor's own process (no socket, no second process).

The same executor and the same expectations as ``batsim.py`` (hpcjobs.sim as a process
over ZeroMQ): only the ``simulator`` setting differs (here left at its default), so
every behaviour the suite checks holds in-process too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

from . import batsim as embedded

NAME = embedded.NAME
LAUNCHERS = embedded.LAUNCHERS
CAPABILITIES = embedded.CAPABILITIES


def unavailable() -> Optional[str]:
    """Nothing beyond the batsim extra, as the embedded simulator's process."""
    return embedded.unavailable()


def make_executor(work_dir: Path) -> JobExecutor:
    """A Batsim executor on its default simulator, simulating 64 hosts."""
    return JobExecutor.get_instance(NAME, config={"work_directory": work_dir, "hosts": 64})
