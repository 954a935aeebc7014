"""The executors, one package each, found by name through ``JobExecutor.get_instance``.

The classes are also importable from here as in psij-python
(``from hpcjobs.executors import LocalJobExecutor``); each backend's package is
imported only when its class is asked for.
"""

from __future__ import annotations

import importlib

_CLASSES = {"LocalJobExecutor": "local", "SlurmJobExecutor": "slurm",
            "PBSJobExecutor": "pbs", "FluxJobExecutor": "flux",
            "BatsimJobExecutor": "batsim"}

__all__ = sorted(_CLASSES)


def __getattr__(name: str) -> object:
    package = _CLASSES.get(name)
    if package is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{package}"), name)
