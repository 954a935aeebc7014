"""Conformance provider for the Slurm executor over ssh: the real Slurm cluster
(scripts/slurm-cluster.sh) reached through the test login node (scripts/sshd.sh), as
another user; see _ssh.py for why ``executes`` is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

from . import _ssh, slurm

NAME = "slurm"
LAUNCHERS = ["single", "multiple", "srun"]
MARKERS = ["slurm", "remote"]
CAPABILITIES = {"exit_code", "cancel", "list", "attach", "attach_after_client_death",
                "signal_exit", "parallel"}


def unavailable() -> Optional[str]:
    return slurm.unavailable() or _ssh.unavailable()


def make_executor(work_dir: Path) -> JobExecutor:
    return _ssh.make_executor(NAME, work_dir)
