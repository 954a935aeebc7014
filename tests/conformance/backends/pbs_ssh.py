"""Conformance provider for the PBS executor over ssh: the real OpenPBS server reached
through the test login node (scripts/sshd.sh), as another user; see _ssh.py for why
``executes`` is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

from . import _ssh, pbs

NAME = "pbs"
LAUNCHERS = ["single", "multiple"]
MARKERS = ["pbs", "remote"]
CAPABILITIES = {"exit_code", "cancel", "list", "attach", "attach_after_client_death",
                "signal_exit", "parallel"}


def unavailable() -> Optional[str]:
    return pbs.unavailable() or _ssh.unavailable()


def make_executor(work_dir: Path) -> JobExecutor:
    return _ssh.make_executor(NAME, work_dir)
