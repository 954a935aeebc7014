"""The Flux executor (``JobExecutor.get_instance('flux', url=...)``).

executor.py   FluxJobExecutor: submit, cancel, list, attach
jobspec.py    PSI/J JobSpec -> Flux jobspec
watcher.py    the one event-watching thread per executor (journal or per-job watches)
events.py     one job's Flux events -> PSI/J statuses (pure, unit-tested)

Importing this package does not import flux-core's bindings; making an executor does.
"""

from .executor import FluxJobExecutor

__all__ = ["FluxJobExecutor"]
