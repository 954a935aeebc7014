"""psij-python's module ``psij.job_executor_config``: the executor configuration
(defined in :mod:`hpcjobs.executor`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .executor import JobExecutorConfig

__all__ = ["JobExecutorConfig"]
