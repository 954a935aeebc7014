"""psij-python's module ``psij.job_executor``: the executor interface
(defined in :mod:`hpcjobs.executor`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .executor import JobExecutor

__all__ = ["JobExecutor"]
