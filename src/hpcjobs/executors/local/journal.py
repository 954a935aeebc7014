"""The local executor's journal: which jobs exist and what their records say.

Layout (directories mode 0700, files 0600, private to the user)::

    <work>/nannies/<token>        "<pid> <start ticks>": the nanny that runs the jobs
                                  whose native ids are ``<token>-<n>``
    <work>/nannies/<token>.jobs   the n of each job submitted to it, one per line,
                                  appended by the one client that owns that nanny
    <work>/nannies/<token>.records  the nanny's pid and exit records of those jobs
                                  (appended by the nanny; format in nanny.py)
    <work>/nannies/<token>.log    the nanny's stderr (a traceback, should it crash)
    <work>/jobs/<id>.cancel       someone asked to cancel job <id>
    <work>/jobs/<id>/             a launcher script's own files (HPCJOBS_JOB_DIR)
    <work>/journal.lock           filelock: one purger at a time

Every file has one writer, and adding a job or a record is one append to an open file,
so concurrent processes need no lock to submit, and any process can list and attach.
Only purging removes records, under the filelock, a whole nanny's worth at a time and
only once that nanny has exited (so nobody appends to what is being removed).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ...final_status import Cause, ended
from ...private import FILE_MODE, create
from ...state import JobState, JobStatus
from .nanny import CANCEL_MARK, process_alive

__all__ = ["Journal", "Observation", "final_status"]

log = logging.getLogger(__name__)

#: what the records say of a job they do not mention
_NONE: tuple[None, None, bool] = (None, None, False)
_NATIVE_ID = re.compile(r"([0-9a-f]{8})-([0-9]+)\Z")
_SUBMITTED = ".jobs"
_RECORDS = ".records"


def final_status(exit_code: int, when: float, canceled: bool) -> JobStatus:
    """The final status of a job that ended with ``exit_code`` (negative: the signal)."""
    return ended(exit_code, when, cause=Cause.CANCELED if canceled else None)


#: a held local job's reason (status metadata ``reason_pending``)
HELD_REASON = "held: submitted with hold=True, starts when released"


def cancelled_while_held(when: float, asked: bool) -> JobStatus:
    """The final status of a job cancelled before it started, while held: at someone's
    request, or because the process that held it exited (nobody else can release it)."""
    return ended(None, when, cause=Cause.CANCELED, reason=(
        "while held, before it started" if asked else
        "never started: it was held when the executor that submitted it closed or "
        "exited, and only that executor could release it"))


@dataclass(frozen=True)
class Observation:
    """What the records say about a job: ``status`` when final; else ``pid``/``ticks``
    when it runs; else ``pending`` (not started yet, ``held`` if so) or ``settling``
    (its process is gone and its nanny has yet to write the exit record)."""

    status: Optional[JobStatus] = None
    pid: int = 0
    ticks: Optional[int] = None
    pending: bool = False
    settling: bool = False
    held: bool = False


class Journal:
    """Reads and writes the job records under one work directory."""

    def __init__(self, work_directory: Path) -> None:
        self.jobs = work_directory / "jobs"
        self.nannies = work_directory / "nannies"
        self.lock_path = work_directory / "journal.lock"
        for d in (self.jobs, self.nannies):
            d.mkdir(mode=0o700, exist_ok=True)
        self._appenders: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- writing --------------------------------------------------------------------------
    def records_file(self, token: str) -> Path:
        """Where the nanny of ``token`` appends its records."""
        return self.nannies / f"{token}{_RECORDS}"

    def record_nanny(self, token: str, pid: int, ticks: Optional[int]) -> None:
        """Remember which process runs the jobs of ``token``."""
        write_record(f"{self.nannies}/{token}", f"{pid} {ticks}\n")

    def add(self, native_id: str) -> None:
        """Record a new job (before it is handed to its nanny)."""
        token, _, seq = native_id.partition("-")
        fd = self._appenders.get(token)
        if fd is None:
            with self._lock:
                fd = self._appenders.get(token)
                if fd is None:
                    fd = self._appenders[token] = os.open(
                        f"{self.nannies}/{token}{_SUBMITTED}",
                        os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"{seq}\n".encode())

    def close(self) -> None:
        """Close the files this journal appends to."""
        with self._lock:
            for fd in self._appenders.values():
                os.close(fd)
            self._appenders.clear()

    def make_job_dir(self, native_id: str) -> str:
        """Create the job's own directory (for launcher scripts); returns it."""
        d = f"{self.jobs}/{native_id}"
        os.mkdir(d, 0o700)
        return d

    def request_cancel(self, native_id: str) -> None:
        """Leave the mark that makes the nanny record the job as cancelled."""
        write_record(f"{self.jobs}/{native_id}{CANCEL_MARK}", "\n")

    # -- reading --------------------------------------------------------------------------
    def native_ids(self) -> list[str]:
        """Native ids of every job in the journal, oldest nanny first."""
        ids: list[str] = []
        for token in self._tokens():
            ids.extend(f"{token}-{seq}" for seq in self._submitted(token))
        return ids

    def exit_status(self, native_id: str) -> Optional[JobStatus]:
        """The final status from the job's exit record, if it has one."""
        return self._records(native_id.partition("-")[0]).get(native_id, _NONE)[1]

    def _records(self, token: str) -> dict[str, tuple[Optional[tuple[int, Optional[int]]],
                                                    Optional[JobStatus], bool]]:
        """native id -> (pid and start ticks, final status, held) from the nanny's
        records."""
        found: dict[str, tuple[Optional[tuple[int, Optional[int]]], Optional[JobStatus],
                               bool]] = {}
        try:
            with open(self.records_file(token), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return found
        for line in data.decode(errors="replace").split("\n")[:-1]:  # last: being written
            try:
                kind, native_id, *fields = line.split()
                pid, status, held = found.get(native_id, _NONE)
                if kind == "P":
                    pid = (int(fields[0]), _int(fields[1]))
                elif kind == "X":
                    status = final_status(int(fields[0]), float(fields[1]), fields[2] == "1")
                elif kind in ("H", "R"):
                    held = kind == "H"
                elif kind == "C":
                    status = cancelled_while_held(float(fields[0]), fields[1] == "1")
            except (ValueError, IndexError):
                log.warning("%s: ignoring a damaged record %r", self.records_file(token), line)
                continue
            found[native_id] = (pid, status, held)
        return found

    def nanny_alive(self, token: str) -> bool:
        """True if the nanny of ``token`` is still alive."""
        fields = read_record(f"{self.nannies}/{token}")
        return fields is not None and process_alive(int(fields[0]), _int(fields[1]))

    def inspect(self, native_id: str) -> Observation:
        """What the records (and the process table) say about job ``native_id`` now."""
        m = _NATIVE_ID.match(native_id)
        if m is None:
            return _unknown(native_id)
        running, status, held = self._records(m.group(1)).get(native_id, _NONE)
        if status is not None:
            return Observation(status)
        if running is not None:
            if process_alive(*running):
                return Observation(pid=running[0], ticks=running[1])
        elif m.group(2) not in self._submitted(m.group(1)):
            return _unknown(native_id)
        if self.nanny_alive(m.group(1)):
            return Observation(pending=running is None, settling=running is not None,
                               held=held and running is None)
        # the nanny may have written the record just before it exited: look once more
        status = self.exit_status(native_id)
        if status is not None:
            return Observation(status)
        if running is None:
            why = ("was not recorded as started before the process that was to start it "
                   "died; its state is unknown")
        else:
            why = ("ended, but its exit status is unknown: the process that watched it "
                   "died before the job ended")
        return Observation(JobStatus(JobState.FAILED, message=f"local job {native_id} {why}"))

    def _tokens(self) -> list[str]:
        """Tokens of the nannies with a journal, oldest first."""
        found = []
        for entry in os.scandir(self.nannies):
            if entry.name.endswith(_SUBMITTED):
                token = entry.name[:-len(_SUBMITTED)]
                try:
                    started = os.stat(f"{self.nannies}/{token}").st_mtime
                except FileNotFoundError:
                    started = 0.0
                found.append((started, token))
        return [token for _, token in sorted(found)]

    def _submitted(self, token: str) -> list[str]:
        try:
            with open(f"{self.nannies}/{token}{_SUBMITTED}", "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        # a line still being appended has no newline yet: it is not there
        return data.decode().split("\n")[:-1]

    # -- purging --------------------------------------------------------------------------
    def purge(self, older_than: float) -> None:
        """Remove the records of nannies that have exited and whose jobs all ended more
        than ``older_than`` seconds ago (a job still running keeps its nanny's records)."""
        from filelock import FileLock, Timeout
        limit = time.time() - older_than
        try:
            # another process purging already does the work: don't queue behind it
            with FileLock(str(self.lock_path), timeout=0, mode=FILE_MODE):
                for path in list(self.nannies.iterdir()):
                    token = path.name.split(".", 1)[0]
                    if path.name == token and not self.nanny_alive(token):
                        self._purge_nanny(token, limit)
        except Timeout:
            pass

    def _purge_nanny(self, token: str, limit: float) -> None:
        ids = [f"{token}-{seq}" for seq in self._submitted(token)]
        records = self._records(token)
        for native_id in ids:
            running, status, _held = records.get(native_id, _NONE)
            if status is None:  # lost with its nanny: keep it while it may run
                if running is not None and process_alive(*running):
                    return
            elif status.time >= limit:
                return
        log.debug("purging the records of local job nanny %s (%d jobs)", token, len(ids))
        for native_id in ids:
            Path(f"{self.jobs}/{native_id}{CANCEL_MARK}").unlink(missing_ok=True)
            shutil.rmtree(f"{self.jobs}/{native_id}", ignore_errors=True)
        # the nanny's own files last: while they exist, the ids above are still known
        for suffix in (_RECORDS, _SUBMITTED, ".log", ""):
            (self.nannies / f"{token}{suffix}").unlink(missing_ok=True)


def write_record(path: str, text: str) -> None:
    """Write ``text`` (ending in a newline) to ``path`` with a single write."""
    create(Path(path), text.encode())


def read_record(path: str) -> Optional[list[str]]:
    """The fields of a complete record, or None if it is missing or still being written."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not data.endswith(b"\n"):
        return None
    return data.decode().split()


def _unknown(native_id: str) -> Observation:
    return Observation(JobStatus(JobState.FAILED, message=f"no such local job: {native_id!r}"))


def _int(text: str) -> Optional[int]:
    return None if text == "None" else int(text)
