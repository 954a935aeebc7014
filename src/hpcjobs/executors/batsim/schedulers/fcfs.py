"""First come, first served: jobs start in queue order (priority, then submission);
nothing overtakes the job at the head, even when a later one would fit."""

from __future__ import annotations

from .base import QueueScheduler

__all__ = ["FCFSScheduler"]


class FCFSScheduler(QueueScheduler):
    """Strict FCFS over whole nodes (RFC 27 scheduler; see :mod:`.base`)."""

    def schedule(self, now: float) -> None:
        queue = self.queue
        while queue and queue[0].nodes <= self.free_count:
            self.start(queue[0], now)
        self.annotate_queue(now)
