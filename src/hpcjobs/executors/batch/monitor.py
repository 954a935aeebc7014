"""``StatusMonitor``: how a batch executor follows its jobs once submitted.

How status works (docs/batch.md and docs/slurm.md have the full story):

* The job script records its own life in its job directory (jobdir.py) and leaves a
  note in its executor's notes directory (changes.py). One monitor thread per executor
  lists that directory every ``file_poll_interval`` seconds and looks at the files of
  the noted jobs only (no scheduler load): a job's start and end are seen within about
  that time, and a tick costs what changed, not what is in flight. (Attached jobs,
  whose scripts note their changes for another executor, have their files looked at
  on every tick.) The notes and those files are one read of the host (over ssh, one
  round trip a tick).
* The scheduler's status command reconciles what the files cannot tell (held,
  cancelled while pending, killed before the script could write, node failure, why a
  SIGTERM came). Each job has its own next query time, with a doubling interval; the
  jobs due close together are asked in ONE query (a command per ``query_chunk_size``
  ids, or for many jobs one listing of every job: ``Scheduler.query``), never one per submit, and
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

``StatusMonitor`` is an object the executor owns: its own state, lock and thread
(named ``hpcjobs-<name>-<n>-monitor``, started by the first job it follows, ended when
the executor closes or is collected). It asks the scheduler only through the backend's
contract (scheduler.py) and reads files only through the executor's host (host.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Sequence

from ...errors import CommandError
from ...final_status import Cause, describe_exit, ended, needs_cause
from ...job import Job
from ...state import JobState, JobStatus
from ...threads import PeriodicTask, weakly
from .arrays import ArrayDir
from .changes import ChangeNotes
from .config import BatchConfig
from .host import FileData
from .jobdir import EXIT, STARTED, ExitRecord, JobDir
from .native import NativeStatus
from .query_calendar import QueryCalendar
from .scheduler import Scheduler

__all__ = ["StatusMonitor", "Tracked"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(eq=False)
class Tracked:
    """What the monitor knows about one live native job (shared by the Job objects that
    follow it: the submitted one and attached copies)."""

    native_id: str
    jobs: list[Job]
    job_dir: Optional[JobDir]
    interval: float  # the current query interval (doubles, see BatchConfig)
    due: float = float("inf")  # when to ask the scheduler next (monotonic)
    started: bool = False
    exit_mtime: Optional[float] = None
    # an exit record that needs the scheduler's why (a signal), and when it was seen
    record: Optional[ExitRecord] = None
    record_seen: float = 0.0
    # the scheduler's final word while the script may still be writing its record
    ended: Optional[tuple[float, NativeStatus]] = None
    missing_since: Optional[float] = None
    asked_accounting: bool = False
    warned: set[str] = dataclasses.field(default_factory=set)
    cancelled: bool = False  # this client asked the scheduler to cancel it

    @property
    def blind(self) -> bool:
        """True without job files (attached, submitted by other means): the scheduler
        is its only witness."""
        return self.job_dir is None


class StatusMonitor:
    """Follows one executor's jobs once submitted or attached (see the module docstring).

    ``report(job, status, ran)`` hands a status to a job (the executor's state machine).
    """

    def __init__(self, name: str, instance: int, scheduler: Scheduler, config: BatchConfig,
                 work_directory: Path, report: Callable[[Job, JobStatus, bool], None]) -> None:
        self.name = name
        self.scheduler = scheduler
        self.host = scheduler.host
        self.config = config
        self.work_directory = work_directory
        self._report_to = weakly(report)  # (the monitor holds no executor alive)
        self._lock = threading.Lock()  # guards what follows
        self._tracked: dict[str, Tracked] = {}  # by native id
        self._noting: dict[str, Tracked] = {}  # jobs whose scripts note changes, by job dir
        self._submitting: set[str] = set()  # job dirs staged, not yet followed or released
        self._polled: dict[str, Tracked] = {}  # jobs with files but no notes (attached)
        self._unlinked: list[tuple[JobDir, str]] = []  # ids/<native id> not written yet
        # (its directory: on first use; it reads the noted jobs' files with the notes)
        self._changes = ChangeNotes(work_directory, self.host, (STARTED, EXIT))
        tracked = self._tracked  # (not self: the calendar holds no monitor alive)
        self._calendar: QueryCalendar[Tracked] = QueryCalendar(
            config, lambda t: tracked.get(t.native_id) is t)
        self._thread = PeriodicTask(f"hpcjobs-{name}-{instance}-monitor", self.tick)
        #: what ends the monitor's thread and removes its notes, holding neither the
        #: monitor nor its jobs (for the finalizer of a forgotten executor)
        self.stop = functools.partial(_stop, self._thread, self._changes)

    # -- what the executor tells it -----------------------------------------------------
    @property
    def native_ids(self) -> List[str]:
        """The ids of the jobs it follows."""
        with self._lock:
            return list(self._tracked)

    def notes_directory(self) -> Path:
        """The directory job scripts note their changes in (changes.py)."""
        with self._lock:
            return self._changes.directory()

    def submitting(self, job_dir: JobDir, staged: bool) -> None:
        """A job of ``job_dir`` is staged (its notes may come before its id), or no
        longer (``staged`` False: released, not submitted)."""
        with self._lock:
            if staged:
                self._submitting.add(job_dir.path.name)
            else:
                self._submitting.discard(job_dir.path.name)

    def follow(self, job: Job, native_id: str, job_dir: JobDir, linked: bool) -> None:
        """Follow ``job``, just submitted as ``native_id`` (its id linked to its
        directory already, or by the monitor, off the submit path)."""
        tracked = Tracked(native_id, [job], job_dir, self.config.min_query_interval)
        name = job_dir.path.name
        with self._lock:
            self._tracked[native_id] = tracked
            self._submitting.discard(name)
            self._noting[name] = tracked
            if not linked:
                self._unlinked.append((job_dir, native_id))
            wake = self._calendar.schedule(tracked, self.config.min_query_interval,
                                           pressing=False)
            self._calendar.submitted()
        if wake:  # (not while the monitor ticks every file_poll_interval anyway)
            self._thread.poke()

    def attach(self, job: Job, native_id: str) -> Optional[JobStatus]:
        """Follow ``job`` as ``native_id``; if it is followed already, ``job`` shares it
        and gets its current status (returned; None: it is new to the monitor)."""
        with self._lock:
            tracked = self._tracked.get(native_id)
            if tracked is not None:
                tracked.jobs.append(job)
                return tracked.jobs[0].status
        job_dir = self.find_job_dir(native_id)
        log.info("job %s attached to %s job %s (%s)", job.id, self.name, native_id,
                 f"job files in {job_dir.path}" if job_dir else "no job files")
        tracked = Tracked(native_id, [job], job_dir, self.config.min_query_interval)
        with self._lock:
            self._tracked[native_id] = tracked
            if job_dir is not None:  # (its script notes its changes for another executor)
                self._polled[native_id] = tracked
            wake = self._calendar.schedule(tracked, 0.0, pressing=True)
        if wake:
            self._thread.poke()
        return None

    def cancelled(self, native_id: str, late: bool) -> None:
        """This client asked to cancel ``native_id`` (``late``: it had ended): ask soon."""
        with self._lock:
            tracked = self._tracked.get(native_id)
            if tracked is not None and not late:
                # (not for a job that ended by itself: its end is its own, not a cancel)
                tracked.cancelled = True
            wake = tracked is not None and self._calendar.schedule(tracked, 0.5, pressing=True)
        if wake:
            self._thread.poke()

    def poke(self, native_id: str) -> None:
        """Ask about ``native_id`` soon (a hold or release changed its reason)."""
        with self._lock:
            tracked = self._tracked.get(native_id)
            wake = tracked is not None and self._calendar.schedule(tracked, 0.5, pressing=True)
        if wake:
            self._thread.poke()

    def link(self, job_dir: JobDir, native_id: str) -> None:
        """Link ``native_id`` to ``job_dir`` (for attach from other processes)."""
        try:
            job_dir.link(native_id)
        except OSError as e:
            log.warning("%s job %s: cannot link its id to %s: %s", self.name, native_id,
                        job_dir.path, e)

    def find_job_dir(self, native_id: str) -> Optional[JobDir]:
        """The job directory of ``native_id`` (an array task's through its array's)."""
        job_dir = JobDir.find(self.work_directory, native_id, self.host)
        parts = self.scheduler.array_parts(native_id) if job_dir is None else None
        if parts is not None:
            job_dir = ArrayDir.task_dir(self.work_directory, *parts, host=self.host)
        return job_dir

    def close(self) -> None:
        """Stop the thread; link the jobs submitted since its last look; drop the notes."""
        self._thread.stop(False)
        with self._lock:
            unlinked, self._unlinked = self._unlinked, []
        for job_dir, native_id in unlinked:
            self.link(job_dir, native_id)
        self.stop()

    # -- the thread ---------------------------------------------------------------------
    def tick(self) -> Optional[float]:
        """The thread's body: returns the seconds until the next call. Its cost is that
        of the jobs that changed (noted), are attached, or are due a query."""
        with self._lock:
            if not self._tracked:
                self._calendar.idle()
                return None
            unlinked, self._unlinked = self._unlinked, []
            polled = list(self._polled.values())
            due = self._calendar.take_due()
        for job_dir, native_id in unlinked:
            self.link(job_dir, native_id)
        # the due query's command goes ahead with the read of the notes (over ssh: one
        # round trip for both); it asks about the same ids whatever the files then end
        asked = [t.native_id for t in due]
        ahead = (self.scheduler.first_command(lambda: self.scheduler.query(asked))
                 if due and self.host.batches_commands else None)
        if ahead is not None:
            self.host.run_ahead([ahead])
        urgent: Optional[set[str]] = None
        try:
            noted, read = self._read_notes(self._changes, polled)
            self.check_files([t for t in (*noted, *polled) if t.native_id in self._tracked],
                             read)
            with self._lock:  # (and the jobs the files just made pressing: a signal's why)
                more = [t for t in self._calendar.take_due() if t not in due]
            due += more
            asked += [t.native_id for t in more]
            if due:
                urgent = self._reconcile(due, asked if ahead is not None else None)
        finally:
            if ahead is not None:
                self.host.run_ahead(())
            if due:  # (whatever happened: these jobs must be asked about again: the
                # urgent ones soon, all after a back-off if the query failed)
                with self._lock:
                    self._calendar.requeue(due, None if urgent is None else
                                           {t for t in due if t.native_id in urgent})
        with self._lock:
            if not self._tracked:
                self._calendar.idle()
                return None
            return self._calendar.next_wait(polling=bool(self._noting or self._polled))

    def _read_notes(self, changes: ChangeNotes, polled: Sequence[Tracked]
                    ) -> tuple[List[Tracked], dict[str, Optional[FileData]]]:
        """The jobs whose scripts noted a change, and the files read with the notes (by
        path): theirs and those of the ``polled`` jobs."""
        noted = []
        paths = [p for t in polled if t.job_dir is not None for p in t.job_dir.paths()]
        names, read = changes.take_and_read(paths)
        for name in names:
            with self._lock:
                t = self._noting.get(name)
                early = t is None and name in self._submitting
            if t is not None:
                noted.append(t)
            elif early:  # its submit command has not returned yet: look again next tick
                changes.again(name)
        return noted, read

    def check_files(self, jobs: Sequence[Tracked],
                    read: Mapping[str, Optional[FileData]] = {}) -> set[str]:
        """Look at these jobs' files (those not ``read`` already: one read of the host
        for all); the ids of those whose files ended them."""
        paths: list[str] = []
        for t in jobs:
            assert t.job_dir is not None
            paths += t.job_dir.paths()
        if read:  # (the files read with the notes, the rest now)
            unread = [p for p in paths if p not in read]
            more = dict(zip(unread, self.host.read_files(unread))) if unread else {}
            found = [read[p] if p in read else more[p] for p in paths]
        else:
            found = self.host.read_files(paths) if paths else []
        ended = set()
        for i, t in enumerate(jobs):
            if self._seen(t, *JobDir.seen(found[2 * i], found[2 * i + 1])):
                ended.add(t.native_id)
        return ended

    def _check(self, t: Tracked) -> bool:
        """Look at one job's files; True if that ended the job."""
        return bool(self.check_files([t]))

    def _seen(self, t: Tracked, started: Optional[float], record: Optional[ExitRecord]) -> bool:
        """What the job's files say; True if that ended the job."""
        # a job this client cancelled that exited nonzero without catching the SIGTERM
        # may have been cancelled all the same: its step killed first (srun's exits 1)
        # before the script's shell was signalled; the scheduler says which
        final = (record is not None and record.caught is None
                 and not needs_cause(record.exit_code)
                 and not (t.cancelled and record.exit_code != 0))
        # (a job that has ended goes to its final state in one report: a reader woken
        # by an ACTIVE first, e.g. `hpcjobs status`, would show a finished job running)
        if not t.started and not final and started is not None:
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

    def _reconcile(self, due: Sequence[Tracked], asked: Optional[Sequence[str]] = None
                   ) -> Optional[set[str]]:
        """One round of status queries for the jobs that are due one (about the ids
        ``asked`` if given: theirs, and perhaps of some that ended since, as the query
        sent ahead asked). Returns the ids
        of those to ask about again soon, None if the status command failed."""
        for t in due:
            if t.job_dir is None:  # its submitter may have linked the job's files since
                t.job_dir = self.find_job_dir(t.native_id)
                if t.job_dir is not None:
                    with self._lock:
                        self._polled[t.native_id] = t
                    self._check(t)
        due = [t for t in due if t.native_id in self._tracked]
        if not due:
            return set()
        try:
            found = self.scheduler.query([t.native_id for t in due] if asked is None
                                         else asked)
        except CommandError as e:
            log.warning("%s status query failed (no job state changed; asking again in "
                        "5 s or more): %s", self.name, e)
            return None
        urgent: set[str] = set()
        finals: list[tuple[Tracked, NativeStatus]] = []
        missing: list[Tracked] = []
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
            self.scheduler.describe_final([ns for _, ns in finals])
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
                self.scheduler.run(self.scheduler.cancel_command(native_id))
            except CommandError as e:
                log.warning("%s: cannot cancel job %s, which it says can never run: %s",
                            self.name, native_id, e)

    def _apply_live(self, t: Tracked, ns: NativeStatus) -> None:
        if ns.state is None:
            if ns.native_state not in t.warned:
                t.warned.add(ns.native_state)
                log.warning("%s job %s: unknown native state %r; ignored",
                            self.name, t.native_id, ns.native_state)
            return
        if t.record is not None and ns.state is JobState.QUEUED:
            t.record = None  # requeued after the SIGTERM: the next run writes new files
        if t.record is not None and t.record.caught is None and \
                time.monotonic() - t.record_seen > self.scheduler.grace():
            # its script has ended, yet the scheduler goes on calling it live: the record
            # is all there is to tell
            self._report(t, t.record.final_status(), ran=True)
            return
        if ns.state is JobState.ACTIVE:
            t.started = True
        self._report(t, ns.status())

    def _apply_final(self, t: Tracked, ns: NativeStatus) -> bool:
        """The scheduler says the job ended; the job's own files, if any, say more.
        False if the job's script may still be writing its exit record (ask again)."""
        if t.job_dir is not None and t.record is None:
            if self._check(t):
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
                if now - t.ended[0] < self.scheduler.grace():
                    t.ended = (t.ended[0], ns)
                    return False
        self._report(t, self._final_status(t, ns), ran=t.started)
        return True

    def _final_status(self, t: Tracked, ns: NativeStatus) -> JobStatus:
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

    def _vanished(self, missing: Sequence[Tracked]) -> set[str]:
        """Jobs the status command no longer knows; returns the ids of those that need
        a query soon."""
        urgent: set[str] = set()
        ended = self.check_files([t for t in missing if t.job_dir is not None])
        unexplained = [t for t in missing if t.native_id not in ended]
        ask = [t for t in unexplained if not t.asked_accounting]
        if ask and self.scheduler.has_accounting is not False:
            records = self.scheduler.accounting_records([t.native_id for t in ask])
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
                retention = self.scheduler.retention()
            record = t.record
            if record is not None and t.cancelled and \
                    (t.asked_accounting or self.scheduler.has_accounting is False):
                # this client cancelled it, and the script recorded its end: nothing else
                # will say more (a scheduler without history, as the remote shell)
                gone = NativeStatus(t.native_id, "gone", None)
                self._report(t, self._final_status(t, gone), ran=True)
                continue
            if record is not None and record.caught is None and \
                    (t.asked_accounting or self.scheduler.has_accounting is False):
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

    def _report(self, t: Tracked, status: JobStatus, ran: bool = False) -> None:
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
            self._report_to(job, status, ran)


def _stop(thread: PeriodicTask, changes: ChangeNotes) -> None:
    thread.stop(False)
    changes.remove()


# the shell's exit statuses for a program that could not be started
_NOT_STARTED = {126: "found but not executable", 127: "not found"}
# what the job script found wrong with a JobSpec field it could not use (batch_body)
_UNUSABLE = {"directory": ": cd failed", "stdin_path": ": not readable",
             "stdout_path": ": its directory does not exist",
             "stderr_path": ": its directory does not exist"}


def _explain(t: Tracked, record: ExitRecord) -> JobStatus:
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
