"""The PBS backend (OpenPBS, PBS Professional, and Torque as a flavour):
``get_instance('pbs')`` (also ``pbspro``, ``openpbs``) and ``get_instance('torque')``,
its state tables and its template (``pbs.mustache``), over the shared batch machinery of
:mod:`hpcjobs.executors.batch`."""

from .commands import pbs_exec_bin
from .executor import OpenPBS, PBSConfig, PBSJobExecutor
from .status import PBS_STATES
from .torque import TORQUE_STATES, Torque, TorqueJobExecutor

__all__ = ["OpenPBS", "Torque", "PBSJobExecutor", "PBSConfig", "PBS_STATES", "TORQUE_STATES", "TorqueJobExecutor",
           "pbs_exec_bin"]
