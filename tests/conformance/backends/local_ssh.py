"""Conformance provider for the local executor over ssh (executors/shell): jobs started
on the test login node (scripts/sshd.sh) by its shell, as another user; see _ssh.py
for why ``executes`` is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

from . import _ssh

NAME = "local"
LAUNCHERS = ["single", "multiple"]
MARKERS = ["remote"]
CAPABILITIES = {"exit_code", "cancel", "list", "attach", "attach_after_client_death",
                "signal_exit", "parallel"}


def unavailable() -> Optional[str]:
    return _ssh.unavailable()


def make_executor(work_dir: Path) -> JobExecutor:
    return _ssh.make_executor(NAME, work_dir)
