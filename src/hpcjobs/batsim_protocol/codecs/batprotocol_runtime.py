"""PyPI's ``flatbuffers`` runtime and the flatc-generated ``batprotocol_fb``, imported
without numpy: the batprotocol codecs import them from here.

The runtime imports numpy whenever it is installed (``flatbuffers.compat.import_numpy``,
called as its modules and the generated module load) for its ``...AsNumpy`` readers and
``CreateNumpyVector``, which hpcjobs does not use. numpy is installed wherever evalys is
(the test environment), and importing it costs 0.2 s of CPU at the start of every
process that speaks batprotocol — for ``hpcjobs.sim``, on the clock of every run — and
makes the generated object API answer numpy arrays instead of lists for vectors of
scalars. Imported here first, the runtime and the generated module find no numpy:
``compat`` is loaded before the package with ``import_numpy`` answering None while they
load, then restored. If the runtime was imported before (by a program that also uses
it), it is left as it is, numpy or not: the codecs read vectors as sequences either way.
Should the runtime's layout ever change (no ``compat.import_numpy``), the plain import
is used.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import TYPE_CHECKING, Any

__all__ = ["flatbuffers", "fb"]


def _without_numpy() -> Any:
    """The runtime, imported with numpy hidden from it when it is not loaded yet."""
    if "flatbuffers" in sys.modules:
        import flatbuffers as loaded
        return loaded
    try:
        spec = importlib.util.find_spec("flatbuffers")  # a top-level package: not imported
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("flatbuffers")
        path = os.path.join(list(spec.submodule_search_locations)[0], "compat.py")
        compat_spec = importlib.util.spec_from_file_location("flatbuffers.compat", path)
        if compat_spec is None or compat_spec.loader is None:
            raise ImportError("flatbuffers.compat")
        compat = importlib.util.module_from_spec(compat_spec)
        compat_spec.loader.exec_module(compat)
        real = compat.import_numpy
    except (ImportError, OSError, AttributeError):
        import flatbuffers as plain
        return plain
    compat.import_numpy = lambda: None  # type: ignore[attr-defined]
    sys.modules["flatbuffers.compat"] = compat
    try:
        import flatbuffers as hidden  # its modules take compat from sys.modules

        from . import batprotocol_fb  # noqa: F401 (it calls import_numpy too)
        hidden.compat = compat  # what a plain import binds
    except BaseException:
        for name in [n for n in sys.modules if n == "flatbuffers" or n.startswith("flatbuffers.")]:
            del sys.modules[name]
        raise
    finally:
        compat.import_numpy = real  # type: ignore[attr-defined]
    return hidden


if TYPE_CHECKING:
    import flatbuffers
else:
    flatbuffers = _without_numpy()

from . import batprotocol_fb  # noqa: E402 (after the runtime, on purpose)

fb: Any = batprotocol_fb  # generated, untyped: typed here by use
