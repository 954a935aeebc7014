"""Schedulers for the Batsim executor, behind Flux RFC 27's interface (:mod:`.base`).

Shipped: ``fcfs`` (:class:`.fcfs.FCFSScheduler`) and ``easy``
(:class:`.easy.EasyBackfillScheduler`); others come from the entry-point group
``hpcjobs.batsim_schedulers``. :func:`load` finds one by name.
"""

from __future__ import annotations

from ....plugins import load as _load_plugin
from .base import Scheduler

__all__ = ["Scheduler", "load", "GROUP"]

#: entry-point group of scheduler plugins
GROUP = "hpcjobs.batsim_schedulers"


def load(name: str) -> Scheduler:
    """A new scheduler of the named kind (case-insensitive)."""
    cls = _load_plugin(GROUP, name)
    scheduler = cls()
    if not isinstance(scheduler, Scheduler):
        raise TypeError(f"scheduler plugin {name!r} is not an RFC 27 Scheduler: {cls!r}")
    return scheduler
