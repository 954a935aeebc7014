"""``mpirun``: the job's ranks started by an MPI ``mpirun`` (Open MPI preferred).

Which ``mpirun`` and which options are decided by ``scripts/mpirun.sh`` on the node
that runs the job, after pre-launch (which may load an MPI module); see
docs/launchers.md.
"""

from __future__ import annotations

from .base import ScriptLauncher

__all__ = ["MpirunLauncher", "MPILauncher"]


class MpirunLauncher(ScriptLauncher):
    """Runs ``mpirun -n <process_count>`` on the job's command."""

    name = "mpirun"
    script = "mpirun.sh"


#: psij-python's name for this launcher's class
MPILauncher = MpirunLauncher
