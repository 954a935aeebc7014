"""EASY backfilling (Lifka, "The ANL/IBM SP scheduling system", 1995): FCFS, except
that when the head of the queue cannot start, it gets a reservation at the earliest
time enough nodes will be free if running jobs end at their walltime (the "shadow
time"), and later jobs may start now if they do not delay it: they end before the
shadow time (by their walltime), or use only the nodes the head will not need then.

Only the first ``depth`` queued jobs are considered for backfilling per scheduling
pass (as Slurm's ``bf_max_job_test``), which bounds its cost on a long queue.
"""

from __future__ import annotations

from .base import QueueScheduler

__all__ = ["EasyBackfillScheduler"]


class EasyBackfillScheduler(QueueScheduler):
    """EASY backfilling over whole nodes, using the jobs' walltimes (RFC 27 scheduler)."""

    def __init__(self, depth: int = 500) -> None:
        super().__init__()
        if type(depth) is not int or depth < 1:
            raise ValueError(f"EasyBackfillScheduler: depth must be an int >= 1, got {depth!r}")
        self.depth = depth

    def schedule(self, now: float) -> None:
        queue = self.queue
        while queue and queue[0].nodes <= self.free_count:
            self.start(queue[0], now)
        if not queue:
            return
        head = queue[0]
        shadow, extra = self.estimated_start(head.nodes, now)
        # iterate over a snapshot: start() removes jobs from the queue
        for job in queue[1:self.depth + 1]:
            if self.free_count == 0:
                break
            if job.nodes > self.free_count:
                continue
            if now + job.duration <= shadow:
                self.start(job, now)
            elif job.nodes <= extra:
                extra -= job.nodes  # runs past the shadow time on nodes the head leaves
                self.start(job, now)
        self.annotate_queue(now, shadow)
