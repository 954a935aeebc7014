"""hpcjobs: the PSI/J job-management API over local processes, Slurm, Flux and a
simulated (Batsim) cluster.

The public names use the PSI/J spellings, so existing PSI/J code runs with
``import hpcjobs as psij``. Importing this package has no side effects: no threads,
signal handlers, sockets or plugin imports.
"""

import logging as _logging

from .attributes import JobAttributes
from .errors import (BulkSubmitException, InvalidJobException, InvalidJobStateError,
                     InvalidStateException, SubmitException, WaitFromCallbackError)
from .executor import JobExecutor, JobExecutorConfig
from .job import Job, JobStatusCallback
from .resources import ResourceSpec, ResourceSpecV1
from .spec import JobSpec
from .state import JobState, JobStatus

__version__ = "0.1.0"

__all__ = [
    "Job", "JobSpec", "JobAttributes", "ResourceSpec", "ResourceSpecV1",
    "JobState", "JobStatus", "JobStatusCallback", "JobExecutor", "JobExecutorConfig",
    "InvalidJobException", "SubmitException", "BulkSubmitException", "InvalidJobStateError",
    "InvalidStateException", "WaitFromCallbackError", "Launcher", "Descriptor",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())


def __getattr__(name: str) -> object:
    # Launcher pulls in the plugin machinery; load it only when asked for
    if name == "Launcher":
        from .launchers.base import Launcher
        return Launcher
    if name == "Descriptor":  # psij-python's plugin record (imports packaging)
        from .descriptor import Descriptor
        return Descriptor
    raise AttributeError(f"module 'hpcjobs' has no attribute {name!r}")
