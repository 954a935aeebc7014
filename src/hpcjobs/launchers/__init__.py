"""The launchers: how a job's processes are started (``single``, ``multiple``,
``mpirun``, ``srun``), by name through ``Launcher.get_instance``.

The classes are also importable from here under psij-python's names
(``from hpcjobs.launchers import MPILauncher``).
"""

from .mpirun import MPILauncher, MpirunLauncher
from .multiple import MultipleLauncher
from .single import SingleLauncher
from .srun import SrunLauncher

__all__ = ["SingleLauncher", "MultipleLauncher", "MpirunLauncher", "MPILauncher",
           "SrunLauncher"]
