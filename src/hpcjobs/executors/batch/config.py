"""``BatchConfig``: the settings every batch backend shares (its fields' docstring says
what each is for; docs/batch.md and docs/slurm.md why they are what they are)."""

from __future__ import annotations

import dataclasses

from ...executor import JobExecutorConfig

__all__ = ["BatchConfig"]


@dataclasses.dataclass
class BatchConfig(JobExecutorConfig):
    """Settings shared by the batch backends.

    ``file_poll_interval``: seconds between looks at the live jobs' files.
    ``min_query_interval`` / ``max_query_interval``: a job's status is asked of the
    scheduler this soon after its submit, then with a doubling interval up to the maximum.
    ``blind_query_interval``: the maximum instead for a job without job files (attached,
    submitted by other means): the scheduler is then its only witness.
    ``command_timeout``: seconds any scheduler command may take.
    ``query_chunk_size``: job ids per status command (ARG_MAX, scheduler RPC size).
    ``burst_window``: seconds a burst of concurrent submits stays open to share one
    scheduler array (arrays.py; 0: every ``submit()`` goes alone).
    ``max_array_size``: the most tasks per array (0: the scheduler's own limit).
    ``max_query_hold``: seconds past due a routine status query may wait while this
    executor is submitting (a submit less than ``file_poll_interval`` ago): a status
    command over many jobs holds the scheduler's job lock and CPU that its submits need
    (docs/batch.md); the job files still show every start and end meanwhile. 0: never.
    """

    file_poll_interval: float = 0.25
    min_query_interval: float = 2.0
    max_query_interval: float = 60.0
    blind_query_interval: float = 15.0
    command_timeout: float = 30.0
    query_chunk_size: int = 500
    burst_window: float = 0.005
    max_array_size: int = 0
    max_query_hold: float = 10.0
