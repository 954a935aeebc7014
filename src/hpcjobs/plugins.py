"""Finding plugins (executors, launchers, Batsim schedulers) by name via entry points.

Entry-point groups: ``hpcjobs.executors``, ``hpcjobs.launchers``,
``hpcjobs.batsim_schedulers``. Names are case-insensitive; a few aliases map the names
people use for the same system. Nothing is imported until a plugin is asked for.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .errors import ExecutorNotFoundError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["load", "available"]

ALIASES = {
    "hpcjobs.executors": {"pbspro": "pbs", "openpbs": "pbs", "torque": "pbs"},
}


@functools.lru_cache(maxsize=None)
def _entry_points(group: str) -> dict[str, "EntryPoint"]:
    # Installed metadata does not change while we run; reading it costs milliseconds
    # (and importlib.metadata ~20 ms to import), so it is read once, on first need.
    from importlib import metadata
    return {ep.name.lower(): ep for ep in metadata.entry_points(group=group)}


def available(group: str) -> list[str]:
    """The names installed in ``group``, sorted."""
    return sorted(_entry_points(group))


def load(group: str, name: str) -> Any:
    """The object registered as ``name`` in ``group``; ``ExecutorNotFoundError`` if none."""
    if not isinstance(name, str):
        raise TypeError(f"plugin name must be str, got {type(name).__name__}")
    key = name.lower()
    key = ALIASES.get(group, {}).get(key, key)
    eps = _entry_points(group)
    if key not in eps:
        kind = group.rsplit(".", 1)[-1]
        raise ExecutorNotFoundError(
            f"no {kind[:-1] if kind.endswith('s') else kind} named {name!r}"
            f"{f' ({key})' if key != name.lower() else ''} is installed "
            f"(available: {', '.join(sorted(eps)) or 'none'})")
    return eps[key].load()
