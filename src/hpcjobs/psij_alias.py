"""Run code written for psij-python unchanged: ``import psij`` gives hpcjobs.

``install()`` puts an import hook first on ``sys.meta_path`` that answers every
``psij`` and ``psij.<name>`` import with the hpcjobs module of the same name
(``psij.job_spec`` is ``hpcjobs.job_spec``), or with the module that took its place
where hpcjobs names it differently (``psij.executors.batch.slurm`` is
``hpcjobs.executors.slurm``). The two names are one module object, so a class is
the same class under either name. A name hpcjobs has no counterpart for raises
``ModuleNotFoundError`` saying so. The hook wins over a real psij-python installed
beside hpcjobs, so it must be installed before anything imports ``psij``.

From the command line, ``python -m hpcjobs.psij_alias script.py ARGS`` and
``python -m hpcjobs.psij_alias -m module ARGS`` run a script or a module with the
alias installed (``-m pytest`` runs a psij-python test suite on hpcjobs).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
from collections.abc import Sequence
from types import ModuleType

ALIAS = "psij"

# psij-python module names whose hpcjobs counterpart has another name (each batch
# backend is a package of its own in hpcjobs, not a module of executors.batch; the
# launchers' base class lives with the launchers)
RENAMED = {
    "psij.executors.batch.slurm": "hpcjobs.executors.slurm",
    "psij.executors.batch.pbs": "hpcjobs.executors.pbs",
    "psij.launcher": "hpcjobs.launchers.base",
}


def hpcjobs_name(name: str) -> str:
    """The hpcjobs module a psij-python module name stands for."""
    if name in RENAMED:
        return RENAMED[name]
    if name != ALIAS and not name.startswith(ALIAS + "."):
        raise ValueError(f"{name!r} is not a psij module name")
    return "hpcjobs" + name[len(ALIAS):]


class _AliasHook(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``psij.*`` names and loads each as the existing hpcjobs module."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        target_name = hpcjobs_name(fullname)
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as error:
            if error.name != target_name:
                raise  # a module hpcjobs's own module needs is missing: say that one
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: hpcjobs has no {target_name!r} "
                "(see 'Coming from psij-python' in hpcjobs's documentation)",
                name=fullname) from None
        # the import system writes the alias's spec into the module; the original is
        # kept here and put back by exec_module, so hpcjobs's module stays itself
        return importlib.machinery.ModuleSpec(
            fullname, self, loader_state=module.__spec__,
            is_package=hasattr(module, "__path__"))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(hpcjobs_name(spec.name))

    def exec_module(self, module: ModuleType) -> None:
        alias_spec = module.__spec__
        assert alias_spec is not None
        module.__spec__ = alias_spec.loader_state


def installed() -> bool:
    """Whether ``import psij`` gives hpcjobs in this interpreter."""
    return any(isinstance(hook, _AliasHook) for hook in sys.meta_path)


def install() -> None:
    """Make ``import psij`` (and every ``psij.<name>``) give hpcjobs from now on.

    Raises ``RuntimeError`` if the real psij-python is already imported: its modules
    would stay in use under the name. Installing twice does nothing more.
    """
    if installed():
        return
    real = sys.modules.get(ALIAS)
    if real is not None:
        raise RuntimeError(f"psij-python is already imported (from {real.__file__}); "
                           "install the alias before anything imports psij")
    sys.meta_path.insert(0, _AliasHook())


_USAGE = ("usage: python -m hpcjobs.psij_alias script.py [ARGS...]\n"
          "       python -m hpcjobs.psij_alias -m module [ARGS...]")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a script or module (as ``python`` would) with the alias installed."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args == ["-m"] or (args[0].startswith("-") and args[0] != "-m"):
        print(_USAGE, file=sys.stderr)
        return 2
    install()
    if args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        # as `python script.py` does: the script's folder comes first on the path
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # the hook must be this module's, not a copy run as __main__: installed() and a
    # second install() look for it by its class
    from hpcjobs import psij_alias
    sys.exit(psij_alias.main())
