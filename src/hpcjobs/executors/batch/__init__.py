"""The machinery every batch-scheduler backend shares (Slurm, PBS).

A backend is a :class:`Scheduler` (its facts, command lines, parsers, state table and
template) and an executor class naming it (a :class:`BatchSchedulerExecutor` with
``scheduler_class`` set); docs/writing-a-backend.md is the guide. The job directory,
the job script's body, the status monitor that follows jobs through their files and
one bulk status query per tick, and job arrays for bursts live here, on a
:class:`Host` (this machine).
"""

from .arrays import ArrayDir
from .config import BatchConfig
from .executor import BatchSchedulerExecutor
from .host import LOCAL, FileData, Host
from .jobdir import ExitRecord, JobDir
from .native import NativeStatus, local_time
from .scheduler import Scheduler
from .script import Expandable, directive_value, render, safe_job_name, shell_quote, walltime

__all__ = ["ArrayDir", "BatchConfig", "BatchSchedulerExecutor", "ExitRecord", "FileData", "Host",
           "JobDir", "LOCAL", "NativeStatus", "Scheduler", "Expandable",
           "directive_value", "local_time", "render", "safe_job_name", "shell_quote",
           "walltime"]
