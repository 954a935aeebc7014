"""Following local jobs that another process's nanny runs (attach, or our nanny died).

One thread per executor, started on first need. A running job is watched through a
pidfd (Linux ``pidfd_open``): it becomes readable when the process ends, then the job's
exit record is read. Only the short in-between states are re-checked on a timer with
backoff: a job not yet started by its nanny, and a job whose process has ended but whose
nanny has yet to write the exit record. If that nanny is gone too, the exit status is
lost and the job ends FAILED saying so.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import threading
import time
from typing import Callable, Optional

from ...state import JobState, JobStatus
from ...threads import OwnedThread, weak_callable
from .journal import Journal, Observation
from .nanny import process_alive

__all__ = ["Watcher"]

log = logging.getLogger(__name__)

#: report(native_id, status): a status observed for the job ``native_id``
Report = Callable[[str, JobStatus], None]

_FIRST_RECHECK = 0.01
_LAST_RECHECK = 1.0


class _Entry:
    __slots__ = ("native_id", "pidfd", "pid", "ticks", "recheck_at", "backoff", "kill_at",
                 "canceled")

    def __init__(self, native_id: str) -> None:
        self.native_id = native_id
        self.pidfd = -1
        self.pid = 0
        self.ticks: Optional[int] = None
        self.recheck_at: Optional[float] = 0.0
        self.backoff = _FIRST_RECHECK
        self.kill_at: Optional[float] = None
        self.canceled = False


class Watcher:
    """Watches jobs by native id and reports their statuses."""

    def __init__(self, name: str, journal: Journal, grace: float, report: Report) -> None:
        self._journal = journal
        self._grace = grace
        self._report = weak_callable(report)
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._sel.register(self._wake_r, selectors.EVENT_READ)
        self._stopped = False
        self._thread = OwnedThread(f"{name}-watcher", self._loop, self._wake, self._release)
        self._thread.start()

    def watch(self, native_id: str) -> None:
        """Follow job ``native_id`` (idempotent) until it ends."""
        with self._lock:
            self._entries.setdefault(native_id, _Entry(native_id))
        self._wake()

    def cancel(self, native_id: str) -> None:
        """Cancel job ``native_id``: mark it, SIGTERM its process group, SIGKILL after
        the grace period if it still runs."""
        self._journal.request_cancel(native_id)
        obs = self._journal.inspect(native_id)
        with self._lock:
            entry = self._entries.setdefault(native_id, _Entry(native_id))
            entry.canceled = True
            if obs.status is None and obs.pid:
                _killpg_checked(obs.pid, obs.ticks, signal.SIGTERM)
                entry.pid, entry.ticks = obs.pid, obs.ticks
                entry.kill_at = time.monotonic() + self._grace
            entry.recheck_at = 0.0
        self._wake()

    def stop(self) -> None:
        """End the thread and close every pidfd."""
        if self._stopped:
            return
        self._stopped = True
        self._thread.stop()  # (on this thread: it releases on its way out)

    def _release(self) -> None:
        for entry in self._entries.values():
            if entry.pidfd >= 0:
                os.close(entry.pidfd)
        self._sel.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:  # a wake-up is pending anyway
            pass

    def _loop(self) -> None:
        while not self._stopped:
            with self._lock:
                due = [t for e in self._entries.values()
                       for t in (e.recheck_at, e.kill_at) if t is not None]
            timeout = max(0.0, min(due) - time.monotonic()) if due else None
            for key, _ in self._sel.select(timeout):
                if key.fd == self._wake_r:
                    try:
                        os.read(self._wake_r, 4096)
                    except BlockingIOError:
                        pass
                else:
                    entry = key.data
                    self._sel.unregister(key.fd)
                    os.close(entry.pidfd)
                    entry.pidfd = -1
                    entry.recheck_at = 0.0
            if self._stopped:
                return
            now = time.monotonic()
            with self._lock:
                entries = list(self._entries.values())
            for entry in entries:
                if entry.kill_at is not None and entry.kill_at <= now:
                    entry.kill_at = None
                    if entry.pid:
                        _killpg_checked(entry.pid, entry.ticks, signal.SIGKILL)
                if entry.recheck_at is not None and entry.recheck_at <= now:
                    try:
                        self._check(entry, now)
                    except Exception:  # unreadable records, say: never the thread's end
                        log.exception("local job %s: check failed; retrying in %s s",
                                      entry.native_id, _LAST_RECHECK)
                        entry.recheck_at = now + _LAST_RECHECK

    def _check(self, entry: _Entry, now: float) -> None:
        obs = self._journal.inspect(entry.native_id)
        status = self._status(entry, obs)
        report = self._report()
        if report is None:  # the executor is gone: its finaliser is stopping us
            entry.recheck_at = None
            return
        report(entry.native_id, status)
        del report
        if self._stopped:
            return
        if status.state.final:
            with self._lock:
                del self._entries[entry.native_id]
            return
        if obs.pid and self._follow(entry, obs):
            entry.recheck_at = None  # the pidfd says when it ends
            return
        entry.recheck_at = now + entry.backoff
        entry.backoff = min(entry.backoff * 2, _LAST_RECHECK)

    def _status(self, entry: _Entry, obs: Observation) -> JobStatus:
        if obs.status is not None:
            s = obs.status
            if entry.canceled and s.state is JobState.FAILED and s.exit_code is None:
                return JobStatus(JobState.CANCELED, s.time, f"cancelled; {s.message}")
            return s
        if obs.pid:
            if entry.canceled and entry.kill_at is None and entry.pid != obs.pid:
                # cancelled before it started: stop it now that it has
                _killpg_checked(obs.pid, obs.ticks, signal.SIGTERM)
                entry.kill_at = time.monotonic() + self._grace
            entry.pid, entry.ticks = obs.pid, obs.ticks
            return JobStatus(JobState.ACTIVE)
        return JobStatus(JobState.ACTIVE if obs.settling else JobState.QUEUED)

    def _follow(self, entry: _Entry, obs: Observation) -> bool:
        """Watch the job's process through a pidfd; False if it has already ended."""
        if entry.pidfd >= 0:
            return True
        try:
            fd = os.pidfd_open(obs.pid)
        except ProcessLookupError:
            return False
        # the pidfd names one process for good; check it is the job's, not a reused pid
        if not process_alive(obs.pid, obs.ticks):
            os.close(fd)
            return False
        entry.pidfd = fd
        self._sel.register(fd, selectors.EVENT_READ, entry)
        return True


def _killpg_checked(pid: int, ticks: Optional[int], sig: int) -> None:
    # the job leads its own process group (its pgid is its pid); check the pid still
    # names the job before signalling, so a reused pid is never hit
    if process_alive(pid, ticks):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError) as e:
            log.debug("signal %d to process group %d: %s", sig, pid, e)
