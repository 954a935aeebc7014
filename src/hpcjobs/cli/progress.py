"""The live count of job states shown while ``hpcjobs run`` waits on several jobs.

On a terminal the line is redrawn in place at every change; otherwise (a log file, a
CI console) a plain line is written at most once a second, so a thousand jobs do not
produce thousands of lines. The last line is always written, from the jobs' final
statuses, so it is exact even if a callback is still in flight.
"""

from __future__ import annotations

import threading
import time
from typing import Sequence, TextIO

from ..job import Job
from ..state import JobState, JobStatus

__all__ = ["Progress"]

_PLAIN_INTERVAL = 1.0  # seconds between lines when not on a terminal


class Progress:
    """Counts jobs per state from status callbacks and writes the counts to ``stream``."""

    def __init__(self, jobs: Sequence[Job], stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._lock = threading.Lock()
        self._states = {job.id: JobState.NEW for job in jobs}
        self._counts = {s: 0 for s in JobState}
        self._counts[JobState.NEW] = len(jobs)
        self._last_plain = float("-inf")
        self._done = False

    def job_status_changed(self, job: Job, status: JobStatus) -> None:
        """Executor-level status callback: ``job`` entered ``status.state``."""
        with self._lock:
            old = self._states.get(job.id)
            if self._done or old is None:
                return
            self._states[job.id] = status.state
            self._counts[old] -= 1
            self._counts[status.state] += 1
            now = time.monotonic()
            if self._tty:
                self._stream.write("\r" + self.line() + "\x1b[K")
                self._stream.flush()
            elif now - self._last_plain >= _PLAIN_INTERVAL:
                self._last_plain = now
                self._stream.write(self.line() + "\n")
                self._stream.flush()

    def line(self) -> str:
        """``5 jobs: 1 QUEUED, 2 ACTIVE, 2 COMPLETED`` (states with no job left out)."""
        counts = ", ".join(f"{n} {s.name}" for s, n in self._counts.items() if n)
        return f"{len(self._states)} jobs: {counts}"

    def finish(self, jobs: Sequence[Job]) -> None:
        """Write the final counts (taken from the jobs themselves) and stop drawing."""
        with self._lock:
            self._done = True
            self._counts = {s: 0 for s in JobState}
            for job in jobs:
                self._counts[job.status.state] += 1
            self._stream.write(("\r" if self._tty else "") + self.line()
                               + ("\x1b[K" if self._tty else "") + "\n")
            self._stream.flush()
