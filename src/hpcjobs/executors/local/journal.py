"""The local executor's journal: one directory per job under the work directory.

Layout (everything mode 0700/0600, private to the user)::

    <work>/jobs/<native id>/     created by the submitting client (mkdir is atomic, so
                                 concurrent clients never need a lock to add a job)
        pid  exit  cancel        the nanny's records (see nanny.py)
    <work>/nannies/<token>       "<pid> <start ticks>": which process runs the jobs whose
                                 native ids start with ``<token>-``
    <work>/journal.lock          filelock held while old records are purged

The directory of job directories *is* the journal: ``list()`` reads it, ``attach()``
reads one entry, from any process. Only purging rewrites it, under the filelock.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ...state import JobState, JobStatus
from .nanny import CANCEL_FILE, EXIT_FILE, PID_FILE, process_alive, read_record, write_record

__all__ = ["Journal", "Observation", "final_status"]

log = logging.getLogger(__name__)

_NATIVE_ID = re.compile(r"([0-9a-f]{8})-[0-9]+\Z")


def final_status(exit_code: int, when: float, canceled: bool) -> JobStatus:
    """The final status of a job that ended with ``exit_code`` (negative: the signal)."""
    if canceled:
        return JobStatus(JobState.CANCELED, when, "cancelled", exit_code)
    if exit_code == 0:
        return JobStatus(JobState.COMPLETED, when, exit_code=0)
    if exit_code > 0:
        return JobStatus(JobState.FAILED, when, f"exited with code {exit_code}", exit_code)
    try:
        name = f" ({signal.Signals(-exit_code).name})"
    except ValueError:
        name = ""
    return JobStatus(JobState.FAILED, when, f"killed by signal {-exit_code}{name}", exit_code,
                     metadata={"signal": -exit_code})


@dataclass(frozen=True)
class Observation:
    """What the records say about a job: ``status`` when final; else ``pid``/``ticks``
    when it runs; else ``pending`` (not started yet) or ``settling`` (its process is
    gone and its nanny has yet to write the exit record)."""

    status: Optional[JobStatus] = None
    pid: int = 0
    ticks: Optional[int] = None
    pending: bool = False
    settling: bool = False


class Journal:
    """Reads and writes the job records under one work directory."""

    def __init__(self, work_directory: Path) -> None:
        self.jobs = work_directory / "jobs"
        self.nannies = work_directory / "nannies"
        self.lock_path = work_directory / "journal.lock"
        for d in (self.jobs, self.nannies):
            d.mkdir(mode=0o700, exist_ok=True)

    def job_dir(self, native_id: str) -> str:
        """The directory of job ``native_id``."""
        return f"{self.jobs}/{native_id}"

    def create(self, native_id: str) -> str:
        """Make the directory of a new job; returns it."""
        d = self.job_dir(native_id)
        os.mkdir(d, 0o700)
        return d

    def remove(self, native_id: str) -> None:
        """Forget a job that was never handed to a nanny."""
        shutil.rmtree(self.job_dir(native_id), ignore_errors=True)

    def list(self) -> list[str]:
        """Native ids of every job in the journal, oldest nanny first."""
        try:
            names = os.listdir(self.jobs)
        except FileNotFoundError:
            return []
        return sorted((n for n in names if _NATIVE_ID.match(n)),
                      key=lambda n: (n[:8], int(n[9:])))

    def record_nanny(self, token: str, pid: int, ticks: Optional[int]) -> None:
        """Remember which process runs the jobs of ``token``."""
        write_record(f"{self.nannies}/{token}", f"{pid} {ticks}\n")

    def nanny_alive(self, native_id: str) -> bool:
        """True if the nanny that runs job ``native_id`` is still alive."""
        m = _NATIVE_ID.match(native_id)
        fields = read_record(f"{self.nannies}/{m.group(1)}") if m else None
        return fields is not None and process_alive(int(fields[0]), _int(fields[1]))

    def request_cancel(self, native_id: str) -> None:
        """Leave the mark that makes the nanny record the job as cancelled."""
        write_record(f"{self.job_dir(native_id)}/{CANCEL_FILE}", "\n")

    def cancel_requested(self, native_id: str) -> bool:
        """True if someone asked to cancel job ``native_id``."""
        return os.path.exists(f"{self.job_dir(native_id)}/{CANCEL_FILE}")

    def exit_status(self, native_id: str) -> Optional[JobStatus]:
        """The final status from the job's exit record, if it has one."""
        fields = read_record(f"{self.job_dir(native_id)}/{EXIT_FILE}")
        if fields is None:
            return None
        return final_status(int(fields[0]), float(fields[1]), fields[2] == "1")

    def inspect(self, native_id: str) -> Observation:
        """What the records (and the process table) say about job ``native_id`` now."""
        d = self.job_dir(native_id)
        if not _NATIVE_ID.match(native_id) or not os.path.isdir(d):
            return Observation(JobStatus(JobState.FAILED, message=f"no such local job: {native_id!r}"))
        status = self.exit_status(native_id)
        if status is not None:
            return Observation(status)
        fields = read_record(f"{d}/{PID_FILE}")
        if fields is not None:
            pid, ticks = int(fields[0]), _int(fields[1])
            if process_alive(pid, ticks):
                return Observation(pid=pid, ticks=ticks)
        if self.nanny_alive(native_id):
            return Observation(pending=fields is None, settling=fields is not None)
        # the nanny may have written the record just before it exited: look once more
        status = self.exit_status(native_id)
        if status is not None:
            return Observation(status)
        if fields is None:
            why = ("was not recorded as started before the process that was to start it "
                   "died; its state is unknown")
        else:
            why = ("ended, but its exit status is unknown: the process that watched it "
                   "died before the job ended")
        return Observation(JobStatus(JobState.FAILED, message=f"local job {native_id} {why}"))

    def purge(self, older_than: float) -> None:
        """Remove the records of jobs that ended more than ``older_than`` seconds ago."""
        from filelock import FileLock, Timeout
        limit = time.time() - older_than
        try:
            # another process purging already does the work: don't queue behind it
            with FileLock(str(self.lock_path), timeout=0):
                for native_id in self.list():
                    try:
                        ended = os.stat(f"{self.job_dir(native_id)}/{EXIT_FILE}").st_mtime
                    except FileNotFoundError:
                        continue
                    if ended < limit:
                        log.debug("purging the records of local job %s", native_id)
                        shutil.rmtree(self.job_dir(native_id), ignore_errors=True)
                self._purge_nannies()
        except Timeout:
            pass

    def _purge_nannies(self) -> None:
        # a dead nanny's record (and log) matters only while records of its jobs remain
        tokens = {native_id[:8] for native_id in self.list()}
        for path in self.nannies.iterdir():
            token = path.name.split(".", 1)[0]
            if token in tokens or path.suffix:
                continue
            fields = read_record(str(path))
            if fields is None or not process_alive(int(fields[0]), _int(fields[1])):
                log.debug("purging the records of local job nanny %s", token)
                for stale in (path, path.with_name(f"{token}.log")):
                    stale.unlink(missing_ok=True)


def _int(text: str) -> Optional[int]:
    return None if text == "None" else int(text)
