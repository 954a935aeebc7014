"""hpcjobs: the PSI/J job-management API over local processes, Slurm, Flux and a
simulated (Batsim) cluster.

The public names use the PSI/J spellings, so existing PSI/J code runs with
``import hpcjobs as psij``. Importing this package has no side effects: no threads,
signal handlers, sockets or plugin imports. The executor machinery (``JobExecutor``,
``JobExecutorConfig``: threads, the callback dispatcher, plugins) and the plugin
records (``Launcher``, ``Descriptor``) are imported when first named, so a program
that only builds or reads jobs does not pay for them.
"""

import logging as _logging
from typing import TYPE_CHECKING

from .attributes import JobAttributes
from .errors import (BulkSubmitException, InvalidJobException, InvalidJobStateError,
                     InvalidStateException, SubmitException, WaitFromCallbackError)
from .job import Job, JobStatusCallback
from .resources import ResourceSpec, ResourceSpecV1
from .spec import JobSpec
from .state import JobState, JobStatus

if TYPE_CHECKING:  # what type checkers see of the names imported when first asked for
    from .descriptor import Descriptor
    from .executor import JobExecutor, JobExecutorConfig
    from .executors.batch.user_script import batch_script_spec
    from .launchers.base import Launcher

__version__ = "0.1.0"

__all__ = [
    "Job", "JobSpec", "JobAttributes", "ResourceSpec", "ResourceSpecV1",
    "JobState", "JobStatus", "JobStatusCallback", "JobExecutor", "JobExecutorConfig",
    "InvalidJobException", "SubmitException", "BulkSubmitException", "InvalidJobStateError",
    "InvalidStateException", "WaitFromCallbackError", "Launcher", "Descriptor",
    "batch_script_spec",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())


#: the public names imported when first asked for: name -> module
_LAZY = {"JobExecutor": ".executor", "JobExecutorConfig": ".executor",
         "Launcher": ".launchers.base", "Descriptor": ".descriptor",
         "batch_script_spec": ".executors.batch.user_script"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hpcjobs' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
