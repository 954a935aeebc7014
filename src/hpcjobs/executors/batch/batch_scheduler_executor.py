"""psij-python's module ``psij.executors.batch.batch_scheduler_executor``: the base
class of batch-scheduler executors (defined in :mod:`hpcjobs.executors.batch.executor`).

It exists so that code written for psij-python runs with only the import changed; the
methods a psij-python backend overrides differ (see docs/psij-compat.md).
"""

from .executor import BatchSchedulerExecutor

__all__ = ["BatchSchedulerExecutor"]
