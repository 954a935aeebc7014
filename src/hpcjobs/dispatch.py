"""Callback delivery: one named daemon thread per executor that runs status callbacks
in order, outside every lock; a failing callback is logged and the next one runs.

A batch that ends in a final state marks its job (``Job.final_callbacks_queued``)
when it is queued and clears the mark when its callbacks have returned, so that
``Job.wait()`` can return a final status only after the callbacks for it ran. Queueing
and stopping share a lock, so a batch is either queued before the end marker (and
delivered) or refused (and its job not marked): a wait can never hang on a batch that
no thread will run.

It holds no reference to its executor; the executor stops it when closed (and through
``weakref.finalize`` when it is collected).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Optional, Sequence

from .job import Job, in_callback
from .state import JobStatus

__all__ = ["CallbackDispatcher"]

log = logging.getLogger(__name__)

_Fn = Callable[[Job, JobStatus], None]
_Item = Optional[tuple[Job, Sequence[JobStatus], Sequence[_Fn]]]


class CallbackDispatcher:
    """Delivers (job, statuses, callbacks) batches on one thread, in submission order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: "queue.SimpleQueue[_Item]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._stopped = False

    def deliver(self, job: Job, statuses: Sequence[JobStatus], callbacks: Sequence[_Fn]) -> None:
        """Queue ``callbacks`` to be called with each of ``statuses`` in order.

        Called with the job's lock held (by ``Job.advance``), which guards the mark.
        After ``stop()`` nothing is queued any more.
        """
        if not callbacks or not statuses:
            return
        with self._lock:
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=_run_dispatch, name=self._name,
                                                args=(self._queue,), daemon=True)
                self._thread.start()
            if statuses[-1].state.final:
                job.final_callbacks_queued()
            self._queue.put((job, statuses, callbacks))

    def stop(self, wait: bool = True) -> None:
        """Deliver what is queued, then end the thread (idempotent)."""
        with self._lock:
            self._stopped = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            if wait and thread is not threading.current_thread():
                thread.join()


def _run_dispatch(q: "queue.SimpleQueue[_Item]") -> None:
    in_callback.active = True
    while True:
        item = q.get()
        if item is None:
            return
        job, statuses, callbacks = item
        for status in statuses:
            for cb in callbacks:
                try:
                    cb(job, status)
                except BaseException:  # even sys.exit(): this thread must go on, or waits hang
                    log.exception("status callback %r failed for job %s (%s); ignored",
                                  cb, job.id, status.state)
        if statuses[-1].state.final:
            job.final_callbacks_returned()
