"""What the pilot tests share (a uniquely named module: several test directories have a
conftest): the bound on waits and the test pilot's settings."""

from __future__ import annotations

import importlib
import os
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

#: under CI the tests that cannot run here fail instead of skipping
IN_CI = os.environ.get("CI", "").lower() == "true"
#: a generous bound on anything a test waits for (never a timing assertion)
WAIT = 180.0
#: the pilot's size in the tests: one node (the machine has one), a few of its cores
CORES = 4


def flux_problem() -> str | None:
    """Why no real Flux can run here (None: it can)."""
    if shutil.which("flux") is None:
        return "the flux command is not on PATH (flux-core)"
    try:
        importlib.import_module("flux.job")
    except ImportError as e:
        return f"flux-core's Python bindings do not import ({e})"
    return None


def pilot_config(tmp: Path, **more: Any) -> dict[str, Any]:
    """A one-node Slurm pilot of ``CORES`` cores whose files live under ``tmp``."""
    return {"backend": "slurm", "cores_per_node": CORES, "walltime": timedelta(minutes=30),
            "work_directory": tmp / "pilot",
            "backend_config": {"work_directory": tmp / "slurm"}, **more}


def pbs_command(name: str) -> str:
    """A PBS client command, from ``PBS_EXEC`` in PBS's configuration file (where the
    OpenPBS commands are; /usr/bin may hold other schedulers' look-alikes)."""
    conf = Path(os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf"))
    try:
        for line in conf.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "PBS_EXEC" and value.strip():
                return str(Path(value.strip()) / "bin" / name)
    except OSError:
        pass
    return name
