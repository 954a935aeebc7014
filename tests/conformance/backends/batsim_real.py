"""Conformance provider for the Batsim executor on the real Batsim 4.2.1 program.

The same executor and the same expectations as ``batsim.py`` (the embedded simulator):
only the ``simulator`` setting differs, so every behaviour the suite checks is held to
the real simulator too. ``batsim`` is found as a user's configuration finds it: on PATH
(scripts/test.sh installs it when the project's real-systems builds are at hand);
without it these tests skip, and fail under ``CI=true``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

from . import batsim as embedded

NAME = embedded.NAME
LAUNCHERS = embedded.LAUNCHERS
CAPABILITIES = embedded.CAPABILITIES


def unavailable() -> Optional[str]:
    """Real Batsim needs its program on PATH (and pyzmq, as the embedded one)."""
    if shutil.which("batsim") is None:
        return "no 'batsim' program on PATH (scripts/test.sh installs the real Batsim 4.2.1)"
    return embedded.unavailable()


def make_executor(work_dir: Path) -> JobExecutor:
    """A Batsim executor on the real Batsim, simulating 64 hosts."""
    return JobExecutor.get_instance(NAME, config={"work_directory": work_dir, "hosts": 64,
                                                  "simulator": "batsim"})
