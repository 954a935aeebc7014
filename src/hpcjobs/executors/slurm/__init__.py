"""The Slurm backend: ``get_instance('slurm')``, its state table and its template
(``slurm.mustache``), over the shared batch machinery of :mod:`hpcjobs.executors.batch`."""

from .executor import SLURM_STATES, Slurm, SlurmJobExecutor

__all__ = ["Slurm", "SlurmJobExecutor", "SLURM_STATES"]
