"""Finding plugins (executors, launchers, Batsim schedulers) by name via entry points.

Entry-point groups: ``hpcjobs.executors``, ``hpcjobs.launchers``,
``hpcjobs.batsim_schedulers``. Names are case-insensitive; a few aliases map the names
people use for the same system. Nothing is imported until a plugin is asked for.

psij-python's way, a :class:`~hpcjobs.descriptor.Descriptor` given to
``JobExecutor.register_executor`` or ``Launcher.register_launcher``, adds a name at
run time (:func:`register`); it takes precedence over an installed entry point.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Optional

from .errors import ExecutorNotFoundError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from .descriptor import Descriptor

__all__ = ["load", "available", "register", "names", "check_version"]

ALIASES = {
    "hpcjobs.executors": {"pbspro": "pbs", "openpbs": "pbs"},
}


@functools.lru_cache(maxsize=None)
def _entry_points(group: str) -> dict[str, "EntryPoint"]:
    # Installed metadata does not change while we run; reading it costs milliseconds
    # (and importlib.metadata ~20 ms to import), so it is read once, on first need.
    from importlib import metadata
    return {ep.name.lower(): ep for ep in metadata.entry_points(group=group)}


#: group -> name -> "package.module.Class", from register()
_registered: dict[str, dict[str, str]] = {}


def register(group: str, desc: "Descriptor") -> None:
    """Make the class ``desc.cls`` (a fully qualified name, imported when first asked
    for) available in ``group`` as ``desc.name`` and each of ``desc.aliases``."""
    module, _, attr = desc.cls.rpartition(".")
    if not module or not attr:
        raise ValueError(f"{desc.cls!r} is not a fully qualified class name (package.module.Class)")
    for name in (desc.name, *(desc.aliases or ())):
        _registered.setdefault(group, {})[name.lower()] = desc.cls


def names(group: str) -> set[str]:
    """The names ``load`` accepts in ``group`` (installed and registered)."""
    return set(available(group))


def check_version(kind: str, name: str, version: str, constraint: Optional[str]) -> None:
    """``ExecutorNotFoundError`` unless ``version`` satisfies the PEP 440 ``constraint``
    (None: anything goes)."""
    if constraint is None:
        return
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
    if Version(version) not in SpecifierSet(constraint):
        raise ExecutorNotFoundError(f"{kind} {name!r} has version {version}, which does not "
                                    f"satisfy {constraint!r}")


def available(group: str) -> list[str]:
    """The names installed or registered in ``group``, sorted."""
    return sorted(set(_entry_points(group)) | set(_registered.get(group, {})))


def load(group: str, name: str) -> Any:
    """The object registered as ``name`` in ``group``; ``ExecutorNotFoundError`` if none."""
    if not isinstance(name, str):
        raise TypeError(f"plugin name must be str, got {type(name).__name__}")
    key = name.lower()
    key = ALIASES.get(group, {}).get(key, key)
    target = _registered.get(group, {}).get(key)
    if target is not None:
        import importlib
        module, _, attr = target.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise ExecutorNotFoundError(f"cannot load {name!r} from {target!r}: {e}") from None
    eps = _entry_points(group)
    if key not in eps:
        kind = group.rsplit(".", 1)[-1]
        raise ExecutorNotFoundError(
            f"no {kind[:-1] if kind.endswith('s') else kind} named {name!r}"
            f"{f' ({key})' if key != name.lower() else ''} is installed "
            f"(available: {', '.join(available(group)) or 'none'})")
    return eps[key].load()
