"""The PBS backend (OpenPBS, PBS Professional): ``get_instance('pbs')`` (also ``pbspro``,
``openpbs``), its state table and its template (``pbs.mustache``), over the shared batch
machinery of :mod:`hpcjobs.executors.batch`."""

from .executor import PBS_STATES, PBSConfig, PBSJobExecutor, pbs_exec_bin

__all__ = ["PBSJobExecutor", "PBSConfig", "PBS_STATES", "pbs_exec_bin"]
