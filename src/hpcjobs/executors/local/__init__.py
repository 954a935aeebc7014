"""The local executor: PSI/J jobs as processes on this machine (see docs/local.md).

executor.py   LocalJobExecutor: submit, cancel, list, attach
nanny.py      the per-executor process that spawns, reaps and records jobs
link.py       the client's end of a nanny (its pipes and reader thread)
journal.py    the per-job records under the work directory
watcher.py    following jobs another process's nanny runs (attach)
"""

from .executor import LocalJobExecutor, LocalJobExecutorConfig

__all__ = ["LocalJobExecutor", "LocalJobExecutorConfig"]
