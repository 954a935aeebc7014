"""The machinery every batch-scheduler backend shares (Slurm, PBS).

A backend subclasses :class:`BatchSchedulerExecutor`, names its template and fills in
a few hooks (command lines and the parsing of their output) plus a state table; the
job directory, the rendering of the job script, the watching of the files the script
writes about itself and the bulk, adaptive reconciliation with the scheduler live here.
docs/batch.md describes the design.
"""

from .config import BatchConfig
from .executor import BatchSchedulerExecutor
from .jobdir import ExitRecord, JobDir
from .native import NativeStatus
from .script import Expandable, render, shell_quote

__all__ = ["BatchConfig", "BatchSchedulerExecutor", "ExitRecord", "JobDir", "NativeStatus",
           "Expandable", "render", "shell_quote"]
