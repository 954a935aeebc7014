"""``srun``: the job's ranks started by Slurm's ``srun`` as a job step.

Inside a Slurm allocation (a job of the ``slurm`` executor) the step uses the
allocation's nodes; elsewhere srun asks Slurm for an allocation of its own. See
``scripts/srun.sh`` and docs/slurm.md.
"""

from __future__ import annotations

from .base import ScriptLauncher

__all__ = ["SrunLauncher"]


class SrunLauncher(ScriptLauncher):
    """Runs ``srun --ntasks=<process_count>`` on the job's command."""

    name = "srun"
    script = "srun.sh"
