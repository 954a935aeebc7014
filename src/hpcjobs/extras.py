"""The optional parts of hpcjobs, installed as pip extras (``pip install 'hpcjobs[batsim]'``).

``batsim``: the Batsim executor, the simulator (``hpcjobs-sim``) and the standalone
decision process (``hpcjobs-schedule``) with the Batsim protocols they speak, which
need pyzmq and redis. :func:`require` is called where such a part is
imported (:mod:`hpcjobs.batsim_protocol`, which all of them import first), so asking for
it without the extra fails at once with :class:`~hpcjobs.errors.MissingExtraError`
naming the install command, not later with some library's ``ModuleNotFoundError``.
The console scripts of the extra start here, to say so on one line.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

from .errors import MissingExtraError

__all__ = ["NEEDS", "require", "sim_main", "schedule_main"]

#: extra -> the (module, distribution) pairs it brings
NEEDS = {"batsim": (("zmq", "pyzmq"), ("redis", "redis"))}


def _installed(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(extra: str, part: str) -> None:
    """``MissingExtraError`` unless every module of ``extra`` can be imported; ``part``
    says what needs them (plural, for the message)."""
    missing = [dist for module, dist in NEEDS[extra] if not _installed(module)]
    if missing:
        raise MissingExtraError(f"{part} need the {extra} extra: pip install 'hpcjobs[{extra}]' "
                                f"(missing: {', '.join(missing)})", extra)


def _console(prog: str, module: str) -> int:
    try:
        main = importlib.import_module(module).main
    except MissingExtraError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    code: int = main()
    return code


def sim_main() -> int:
    """``hpcjobs-sim``: :mod:`hpcjobs.sim`'s command line."""
    return _console("hpcjobs-sim", "hpcjobs.sim.__main__")


def schedule_main() -> int:
    """``hpcjobs-schedule``: :mod:`hpcjobs.executors.batsim.decide`'s command line."""
    return _console("hpcjobs-schedule", "hpcjobs.executors.batsim.decide")
