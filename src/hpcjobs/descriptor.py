"""``Descriptor``: psij-python's record that registers an executor or launcher class.

``JobExecutor.register_executor(Descriptor(name, version, cls))`` (and
``Launcher.register_launcher``) make ``cls`` available to ``get_instance(name)`` and
``get_executor_names()``. hpcjobs finds its own plugins through entry points instead
of psij-python's ``psij-descriptors`` directories (see docs/psij-compat.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = ["Descriptor"]


class Descriptor:
    """Names a plugin class: ``name`` (plus ``aliases``), its ``version`` and ``cls``,
    the fully qualified name of the class (``package.module.Class``)."""

    def __init__(self, name: str, version: Union["Version", str], cls: str,
                 aliases: Optional[List[str]] = None, nice_name: Optional[str] = None) -> None:
        from packaging.version import Version
        self.name = name
        self.version = version if isinstance(version, Version) else Version(version)
        self.cls = cls
        self.aliases = aliases
        self.nice_name = nice_name if nice_name is not None else name
        #: where the plugin was found (psij-python sets it while scanning; unused here)
        self.path: Optional[str] = None

    def __repr__(self) -> str:
        return f"Descriptor(name={self.name}, version={self.version}, cls={self.cls})"
