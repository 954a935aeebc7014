"""``BatchMonitor``: how a batch executor follows its jobs once submitted.

How status works (docs/batch.md and docs/slurm.md have the full story):

* The job script records its own life in its job directory (jobdir.py) and leaves a
  note in its executor's notes directory (changes.py). One monitor thread per executor
  lists that directory every ``file_poll_interval`` seconds and looks at the files of
  the noted jobs only (no scheduler load): a job's start and end are seen within about
  that time, and a tick costs what changed, not what is in flight. (Attached jobs,
  whose scripts note their changes for another executor, have their files looked at
  on every tick.)
* The scheduler's status command reconciles what the files cannot tell (held,
  cancelled while pending, killed before the script could write, node failure, why a
  SIGTERM came). Each job has its own next query time, with a doubling interval; the
  jobs due close together are asked in ONE query (a command per ``query_chunk_size``
  ids, or for many jobs one listing of every job: hooks.py), never one per submit, and
  routine queries wait while this executor submits (query_calendar.py has the rules);
  a submit wakes the monitor only when it follows no job yet (else it looks at its new
  jobs on its next tick).
* A job whose exit record says it was killed by a signal (or its script caught
  SIGTERM) is not final until the scheduler's status says why (out of memory, walltime,
  preemption, node failure, cancel: final_status.py joins the two); its query is
  asked for at once.
* A job missing from the queue is never assumed completed: its exit-code file; else
  one accounting query; else, once it has been missing for the scheduler's retention
  time, FAILED with a message saying its exit status is unknown.
* A failing status command backs off and changes no job's state. Unknown native states
  are logged and ignored.

``BatchMonitor`` is a base class of :class:`~.executor.BatchSchedulerExecutor`, not an
object of its own: backends and tests override its methods (a backend's
``_describe_final`` calls ``_accounting_records``; tests count ``_tick`` and
``_check_files``), and it calls the backend's hooks (hooks.py). The executor's
``__init__`` makes the state it shares with the submit path, declared in the class body
below: ``_lock``, ``_tracked``, ``_noting``, ``_submitting``, ``_polled``, ``_unlinked``,
``_calendar``, ``_changes`` and ``_accounting``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import List, Optional, Sequence

from ... import external
from ...errors import CommandError
from ...final_status import Cause, describe_exit, ended, needs_cause
from ...job import Job
from ...state import JobState, JobStatus
from .arrays import ArrayDir
from .changes import ChangeNotes
from .hooks import BatchHooks
from .jobdir import ExitRecord, JobDir
from .native import NativeStatus
from .query_calendar import QueryCalendar

__all__ = ["BatchMonitor"]

log = logging.getLogger(__name__)


class _Tracked:
    """What the monitor knows about one live native job (shared by the Job objects that
    follow it: the submitted one and attached copies)."""

    __slots__ = ("native_id", "jobs", "job_dir", "started", "exit_mtime", "record",
                 "ended", "missing_since", "asked_accounting", "warned", "record_seen",
                 "due", "interval", "cancelled")

    def __init__(self, native_id: str, job: Job, job_dir: Optional[JobDir],
                 interval: float) -> None:
        self.native_id = native_id
        self.jobs = [job]
        self.job_dir = job_dir
        self.due = float("inf")  # when to ask the scheduler next (monotonic)
        self.interval = interval  # the current query interval (doubles, see BatchConfig)
        self.started = False
        self.exit_mtime: Optional[float] = None
        # an exit record that needs the scheduler's why (a signal), and when it was seen
        self.record: Optional[ExitRecord] = None
        self.record_seen = 0.0
        # the scheduler's final word while the script may still be writing its record
        self.ended: Optional[tuple[float, NativeStatus]] = None
        self.missing_since: Optional[float] = None
        self.asked_accounting = False
        self.warned: set[str] = set()
        self.cancelled = False  # this client asked the scheduler to cancel it

    @property
    def blind(self) -> bool:
        """True without job files (attached, submitted by other means): the scheduler
        is its only witness."""
        return self.job_dir is None


class BatchMonitor(BatchHooks):
    """The monitor thread's work (see the module docstring)."""

    _lock: threading.Lock  # guards what follows (and the executor's spare job directory)
    _tracked: dict[str, _Tracked]  # by native id
    _noting: dict[str, _Tracked]  # jobs whose scripts note changes, by job dir
    _submitting: set[str]  # job dirs staged, not yet accepted or released
    _polled: dict[str, _Tracked]  # jobs with files but no notes (attached)
    _unlinked: list[_Tracked]  # ids/<native id> not written yet
    _calendar: QueryCalendar[_Tracked]  # when to ask the scheduler about each job
    _changes: Optional[ChangeNotes]  # made on the first submit
    _accounting: Optional[bool]  # None: not probed yet

    def _tick(self) -> Optional[float]:
        """The monitor thread's body: returns the seconds until the next call. Its cost
        is that of the jobs that changed (noted), are attached, or are due a query."""
        with self._lock:
            if not self._tracked:
                self._calendar.idle()
                return None
            unlinked, self._unlinked = self._unlinked, []
            polled = list(self._polled.values())
            changes = self._changes
        for t in unlinked:
            self._link(t)
        if changes is not None:
            self._read_notes(changes)
        for t in polled:
            if t.native_id in self._tracked:
                self._check_files(t)
        due = self._take_due()
        if due:
            urgent: Optional[set[str]] = None
            try:
                urgent = self._reconcile(due)
            finally:  # (whatever happened: these jobs must be asked about again)
                self._requeue(due, urgent)
        with self._lock:
            if not self._tracked:
                self._calendar.idle()
                return None
            return self._calendar.next_wait(polling=bool(self._noting or self._polled))

    def _read_notes(self, changes: ChangeNotes) -> None:
        """Look at the files of the jobs whose scripts noted a change."""
        for name in changes.take():
            with self._lock:
                noted = self._noting.get(name)
                early = noted is None and name in self._submitting
            if noted is not None:
                self._check_files(noted)
            elif early:  # its submit command has not returned yet: look again next tick
                changes.again(name)

    def _link(self, t: _Tracked) -> None:
        """Record which directory the job ``t`` has (for attach from other processes)."""
        assert t.job_dir is not None
        self._link_dir(t.job_dir, t.native_id)

    def _link_dir(self, job_dir: JobDir, native_id: str) -> None:
        try:
            job_dir.link(native_id)
        except OSError as e:
            log.warning("%s job %s: cannot link its id to %s: %s", self.name, native_id,
                        job_dir.path, e)

    def _find_job_dir(self, native_id: str) -> Optional[JobDir]:
        """The job directory of ``native_id`` (an array task's through its array's)."""
        job_dir = JobDir.find(self.work_directory, native_id)
        parts = self._array_parts(native_id) if job_dir is None else None
        if parts is not None:
            job_dir = ArrayDir.task_dir(self.work_directory, *parts)
        return job_dir

    def _check_files(self, t: _Tracked) -> bool:
        """Look at the job's files; True if that ended the job."""
        assert t.job_dir is not None
        record = t.job_dir.exit_record()
        final = (record is not None and record.caught is None
                 and not needs_cause(record.exit_code))
        # (a job that has ended goes to its final state in one report: a reader woken
        # by an ACTIVE first, e.g. `hpcjobs status`, would show a finished job running)
        if not t.started and not final:
            started = t.job_dir.started()
            if started is not None:
                t.started = True
                self._report(t, JobStatus(JobState.ACTIVE, started))
                with self._lock:  # it changed: ask soon how it ends, should no record come
                    self._calendar.schedule(t, self.config.min_query_interval, pressing=False)
        if record is None or record.mtime == t.exit_mtime:
            return False
        t.exit_mtime = record.mtime
        t.started = True
        if final:
            self._report(t, _explain(t, record), ran=True)
            return True
        # the script was sent SIGTERM (walltime, cancel, preemption) or the job was killed
        # by a signal (the kernel's OOM killer, a node failing): the scheduler knows why
        log.debug("%s job %s: %s; asking the scheduler why", self.name, t.native_id,
                  f"script caught SIG{record.caught}" if record.caught else
                  describe_exit(record.exit_code))
        t.record, t.record_seen = record, time.monotonic()
        if t.ended is not None:  # the scheduler already said how it ended
            self._report(t, self._final_status(t, t.ended[1]), ran=True)
            return True
        with self._lock:  # (the monitor thread: no wake-up needed)
            self._calendar.schedule(t, 0.0, pressing=True)
        return False

    def _reconcile(self, due: Sequence[_Tracked]) -> Optional[set[str]]:
        """One round of status queries for the jobs that are due one. Returns the ids
        of those to ask about again soon, None if the status command failed."""
        for t in due:
            if t.job_dir is None:  # its submitter may have linked the job's files since
                t.job_dir = self._find_job_dir(t.native_id)
                if t.job_dir is not None:
                    with self._lock:
                        self._polled[t.native_id] = t
                    self._check_files(t)
        due = [t for t in due if t.native_id in self._tracked]
        ids = [t.native_id for t in due]
        try:
            found = self._query_status(ids)
        except CommandError as e:
            log.warning("%s status query failed (no job state changed; asking again in "
                        "5 s or more): %s", self.name, e)
            return None
        urgent: set[str] = set()
        finals: list[tuple[_Tracked, NativeStatus]] = []
        missing: list[_Tracked] = []
        for t in due:
            ns = found.get(t.native_id)
            if ns is None:
                missing.append(t)
            elif ns.state is not None and ns.state.final:
                finals.append((t, ns))
            else:
                t.missing_since = None
                self._apply_live(t, ns)
                if t.record is not None:
                    urgent.add(t.native_id)
        if finals:
            self._describe_final([ns for _, ns in finals])
            self._withdraw([t.native_id for t, ns in finals
                            if ns.withdraw and t.job_dir is not None])
            for t, ns in finals:
                if not self._apply_final(t, ns):
                    urgent.add(t.native_id)
        if missing:
            urgent |= self._vanished(missing)
        return urgent

    def _withdraw(self, never: Sequence[str]) -> None:
        """Cancel the jobs the scheduler keeps but will never run (``withdraw``), only
        those of ours (with a job directory here): a job submitted otherwise and merely
        attached is the business of whoever submitted it (root's client could cancel any
        user's job); it is reported FAILED all the same."""
        for native_id in never:
            try:
                external.run(self._cancel_command(native_id),
                             timeout=self.config.command_timeout)
            except CommandError as e:
                log.warning("%s: cannot cancel job %s, which it says can never run: %s",
                            self.name, native_id, e)

    def _take_due(self) -> List[_Tracked]:
        """The jobs to ask about now (QueryCalendar.take_due)."""
        with self._lock:
            return self._calendar.take_due()

    def _requeue(self, due: Sequence[_Tracked], urgent: Optional[set[str]]) -> None:
        """Schedule the next query of the jobs just asked about (QueryCalendar.requeue):
        the ``urgent`` ids soon; None: the query failed."""
        with self._lock:
            self._calendar.requeue(due, None if urgent is None else
                                   {t for t in due if t.native_id in urgent})

    def _apply_live(self, t: _Tracked, ns: NativeStatus) -> None:
        if ns.state is None:
            if ns.native_state not in t.warned:
                t.warned.add(ns.native_state)
                log.warning("%s job %s: unknown native state %r; ignored",
                            self.name, t.native_id, ns.native_state)
            return
        if t.record is not None and ns.state is JobState.QUEUED:
            t.record = None  # requeued after the SIGTERM: the next run writes new files
        if t.record is not None and t.record.caught is None and \
                time.monotonic() - t.record_seen > self._record_grace():
            # its script has ended, yet the scheduler goes on calling it live: the record
            # is all there is to tell
            self._report(t, t.record.final_status(), ran=True)
            return
        if ns.state is JobState.ACTIVE:
            t.started = True
        self._report(t, ns.status())

    def _apply_final(self, t: _Tracked, ns: NativeStatus) -> bool:
        """The scheduler says the job ended; the job's own files, if any, say more.
        False if the job's script may still be writing its exit record (ask again)."""
        if t.job_dir is not None and t.record is None:
            if self._check_files(t):
                return True
            # (the started file, not the scheduler: on a file system the node does not
            # share, no record will ever come)
            if t.record is None and (ns.state is not JobState.COMPLETED or t.cancelled) \
                    and t.job_dir.started() is not None:
                # a scheduler may mark a cancelled job ended at once (Slurm: CANCELLED)
                # while its script still handles the SIGTERM: give the record time
                now = time.monotonic()
                if t.ended is None:
                    t.ended = (now, ns)
                if now - t.ended[0] < self._record_grace():
                    t.ended = (t.ended[0], ns)
                    return False
        self._report(t, self._final_status(t, ns), ran=t.started)
        return True

    def _final_status(self, t: _Tracked, ns: NativeStatus) -> JobStatus:
        """The scheduler's why, with the exit status: the script's record when it has
        one (the scheduler's figure is the shell's), else the scheduler's."""
        killed = "the job script was killed before it could record an exit code"
        record = t.record
        if t.cancelled and ns.cause is None and ns.state is not JobState.CANCELED and (
                record is None or record.caught is not None):
            # a script that finished records its exit code: one that did not, or was sent
            # SIGTERM, after this client's cancel, when the scheduler names no other cause,
            # was cancelled, whatever the scheduler calls it (PBS says "finished",
            # Exit_status 0, when root deletes root's own job; Torque's C is every end)
            started = t.job_dir is not None and t.job_dir.started() is not None
            notes = ([f"the job script caught SIG{record.caught}"] if record else
                     [killed] if started else [])
            return ended(record.exit_code if record else None, ns.time, cause=Cause.CANCELED,
                         metadata=ns.metadata, notes=notes,
                         reason=f"requested by this client ({self.name} state "
                                f"{ns.native_state} names no other cause)")
        if ns.state is JobState.COMPLETED:
            return ns.status()
        code = ns.exit_code
        notes = []
        if t.record is not None:
            if t.record.caught is None and ns.cause is None:
                return t.record.final_status()  # a signal the scheduler has no why for
            code = t.record.exit_code
            if t.record.caught is not None:
                notes.append(f"the job script caught SIG{t.record.caught}")
        elif t.job_dir is not None and t.job_dir.started() is not None:
            t.started = True
            notes.append(killed)
        return ns.final(code, notes)

    def _accounting_records(self, native_ids: Sequence[str]) -> Optional[dict[str, NativeStatus]]:
        """What the accounting query says about ``native_ids``; None when it failed or
        the scheduler has no accounting (remembered: it is never asked again)."""
        if self._accounting is False:
            return None
        try:
            records = self._query_accounting(native_ids)
        except CommandError as e:
            log.warning("%s accounting query failed (retrying later): %s", self.name, e)
            return None
        if records is None:
            log.info("%s has no job accounting: vanished jobs end FAILED after the "
                     "retention time", self.name)
        self._accounting = records is not None
        return records

    def _vanished(self, missing: Sequence[_Tracked]) -> set[str]:
        """Jobs the status command no longer knows; returns the ids of those that need
        a query soon."""
        urgent: set[str] = set()
        unexplained = [t for t in missing if t.job_dir is None or not self._check_files(t)]
        ask = [t for t in unexplained if not t.asked_accounting]
        if ask and self._accounting is not False:
            records = self._accounting_records([t.native_id for t in ask])
            if records is not None:
                for t in ask:
                    ns = records.get(t.native_id)
                    # a job accounting still sees running may just lag: ask again
                    t.asked_accounting = ns is None or ns.state is None or ns.state.final
                    if ns is not None and ns.state is not None and ns.state.final:
                        if not self._apply_final(t, ns):
                            urgent.add(t.native_id)
        now = time.monotonic()
        retention = None
        for t in unexplained:
            if t.native_id not in self._tracked:
                continue
            if t.ended is not None:  # how it ended is known; its record may still come
                if not self._apply_final(t, t.ended[1]):
                    urgent.add(t.native_id)
                continue
            if t.missing_since is None:
                t.missing_since = now
            if retention is None:
                retention = self._retention_time()
            record = t.record
            if record is not None and record.caught is None and \
                    (t.asked_accounting or self._accounting is False):
                # killed by a signal, and neither the queue nor accounting says why
                status = record.final_status()
                status.message = f"{status.message}; {self.name} no longer knows why"
                self._report(t, status, ran=True)
                continue
            if now - t.missing_since < retention:
                if record is not None:
                    urgent.add(t.native_id)
                continue
            if record is not None:
                message = (f"the job was sent SIGTERM ({describe_exit(record.exit_code)}) and "
                           f"{self.name} no longer knows why (walltime, cancel or preemption)")
                self._report(t, JobStatus(JobState.FAILED, record.mtime, message=message,
                                          exit_code=record.exit_code), ran=True)
                continue
            where = f"no exit-code file in {t.job_dir.path}" if t.job_dir else "no job files"
            message = (f"vanished from {self.name} without an exit code: the exit status is "
                       f"unknown ({where}, no accounting record, gone from the queue for "
                       f"{retention:.0f} s)")
            self._report(t, JobStatus(JobState.FAILED, message=message), ran=t.started)
        return urgent

    def _report(self, t: _Tracked, status: JobStatus, ran: bool = False) -> None:
        """Hand ``status`` to every Job following ``t``; a final one ends the tracking.
        A status in the job's current state refreshes its metadata (pending reason,
        start estimate, nodes)."""
        if status.state.final:
            with self._lock:
                self._tracked.pop(t.native_id, None)
                self._polled.pop(t.native_id, None)
                self._calendar.forget(t)
                if t.job_dir is not None:
                    self._noting.pop(t.job_dir.path.name, None)
            log.info("%s job %s: %s (%s)", self.name, t.native_id, status.state,
                     status.message or describe_exit(status.exit_code))
        for job in t.jobs:  # a same-state status refreshes the metadata (core rule)
            self._set_job_status(job, status, ran=ran)


# the shell's exit statuses for a program that could not be started
_NOT_STARTED = {126: "found but not executable", 127: "not found"}
# what the job script found wrong with a JobSpec field it could not use (batch_body)
_UNUSABLE = {"directory": ": cd failed", "stdin_path": ": not readable",
             "stdout_path": ": its directory does not exist",
             "stderr_path": ": its directory does not exist"}


def _explain(t: _Tracked, record: ExitRecord) -> JobStatus:
    """The final status ``record`` tells, saying what the job could not use (its
    directory, a stream: it never ran, as on the local executor) or naming the
    executable when the status is the shell's "cannot run it" (126, 127)."""
    spec = t.jobs[0].spec
    if record.unusable is not None:
        value = getattr(spec, record.unusable, None) if spec is not None else None
        what = f"JobSpec.{record.unusable}" + ("" if value is None else f" {str(value)!r}")
        fault = _UNUSABLE.get(record.unusable, "")
        if record.unusable == "directory" and t.job_dir is not None:
            fault += f" (its error is in {t.job_dir.batch_output})"
        return ended(None, record.mtime, reason=f"cannot use {what} where the job ran{fault}")
    status = record.final_status()
    why = _NOT_STARTED.get(status.exit_code or 0)
    if why is not None and spec is not None and spec.executable:
        status.message = (f"{status.message} (the shell's status for a command {why}: is "
                          f"{spec.executable!r} there on the compute node?)")
    return status
