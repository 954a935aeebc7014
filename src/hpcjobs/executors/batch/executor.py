"""``BatchSchedulerExecutor``: submit, follow and cancel jobs of a batch scheduler.

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
  SIGTERM came). Each job has its own next query time: ``min_query_interval`` after its
  submit and after its start, at once after an attach, soon after a cancel, then with a
  doubling interval up to ``max_query_interval``. The jobs due within half the minimum
  interval (or a quarter of their own interval) of each other are asked in ONE command
  (in chunks of ``query_chunk_size``), never one per submit; a submit never wakes the
  monitor (it looks at its new jobs on its next tick anyway). While this executor is
  submitting, the queries the calendar asks for wait for the burst to end (up to
  ``max_query_hold`` past due): the scheduler serves the submits first. Those a cancel,
  an attach or a signal asks for never wait.
* A job whose exit record says it was killed by a signal (or its script caught
  SIGTERM) is not final until the scheduler's status says why (out of memory, walltime,
  preemption, node failure, cancel: final_status.py joins the two); its query is
  asked for at once.
* A job missing from the queue is never assumed completed: its exit-code file; else
  one accounting query; else, once it has been missing for the scheduler's retention
  time, FAILED with a message saying its exit status is unknown.
* A failing status command backs off and changes no job's state. Unknown native states
  are logged and ignored.

A backend declares the class attributes and implements the hooks of hooks.py (its base
class ``BatchHooks``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, List, Mapping, Optional, Sequence, Union

from ... import external
from ...errors import BulkSubmitException, CommandError, SubmitException
from ...executor import JobExecutorConfig
from ...job import Job
from ...launchers.base import job_argv
from ...threads import PeriodicTask
from ...spec import JobSpec
from ...state import JobState, JobStatus
from ...final_status import Cause, describe_exit, ended, needs_cause
from . import arrays
from .arrays import ArrayDir, BurstCollector, Staged, chunks
from .changes import ChangeNotes
from .hooks import BatchHooks
from .jobdir import ExitRecord, JobDir
from .native import NativeStatus
from .query_calendar import QueryCalendar
from .script import Expandable, render

__all__ = ["BatchSchedulerExecutor"]

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


class BatchSchedulerExecutor(BatchHooks):
    """Base of the batch backends (see the module docstring)."""

    def __init__(self, url: Optional[str] = None,
                 config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> None:
        super().__init__(url, config)
        self._lock = threading.Lock()
        self._tracked: dict[str, _Tracked] = {}  # by native id
        self._noting: dict[str, _Tracked] = {}  # jobs whose scripts note changes, by job dir
        self._submitting: set[str] = set()  # job dirs staged, not yet accepted or released
        self._polled: dict[str, _Tracked] = {}  # jobs with files but no notes (attached)
        self._unlinked: list[_Tracked] = []  # ids/<native id> not written yet
        tracked = self._tracked  # (not self: the calendar holds no executor alive)
        self._calendar: QueryCalendar[_Tracked] = QueryCalendar(
            self.config, lambda t: tracked.get(t.native_id) is t)
        self._changes: Optional[ChangeNotes] = None  # made on the first submit
        # a lone job's directory made ahead of it, while the previous submit command ran
        # (jobdir.py); a list, so that the finalizer of a forgotten executor removes it
        self._spare: list[JobDir] = []
        weakref.finalize(self, _remove_spares, self._spare)
        self._accounting: Optional[bool] = None  # None: not probed yet
        self._settings = {}  # (hooks.py: _read_once)
        self._monitor = PeriodicTask(f"hpcjobs-{self.name}-{self._instance}-monitor", self._tick)
        self._monitor_finalizer = weakref.finalize(self, self._monitor.stop, False)
        # (a backend without arrays gains nothing from grouping: its submits stay apart)
        self._bursts = (BurstCollector(self.config.burst_window, self._send)
                        if self.config.burst_window > 0 and self.array_variables else None)

    # ===================================================================== the API
    def submit(self, job: Job) -> None:
        staged = self._stage(job)
        self._submit_staged([staged])
        if staged.error is not None:
            raise staged.error

    def submit_many(self, jobs: Iterable[Job]) -> None:
        """Submit ``jobs`` in one round: those that share a shape go out as scheduler
        arrays (docs/arrays.md). Every job is checked first: an invalid one raises
        InvalidJobException with nothing submitted. On return every job is QUEUED, or
        :class:`BulkSubmitException` lists the ones the scheduler refused (those are NEW
        again and may be resubmitted)."""
        staged: list[Staged] = []
        try:
            for job in jobs:
                staged.append(self._stage(job))
        except BaseException:
            for item in staged:
                self._release(item)
            raise
        self._submit_staged(staged)
        failures = [(item.job, item.error) for item in staged if item.error is not None]
        if failures:
            raise BulkSubmitException(failures, len(staged))

    def _stage(self, job: Job) -> Staged:
        """Check and claim ``job`` and render its script (nothing is written yet)."""
        with self._submission(job) as spec:
            job_dir = JobDir(self.work_directory / job.id)
            name = job_dir.path.name
            directives = self._directives(spec, job_dir)
            note = self._change_notes().note_for(name)
            script = self._render(spec, job_dir, directives, note)
        with self._lock:  # its notes may come before the submit command returns
            self._submitting.add(name)
        shape = None
        if self.array_variables is not None:
            shape = arrays.shape(directives, self.per_job_directives)
        return Staged(job, job_dir, script, directives, shape)

    def _submit_staged(self, items: Sequence[Staged]) -> None:
        if self._bursts is None:
            self._send(list(items))
            return
        try:
            self._bursts.submit(items)
        finally:
            for item in items:
                if item.withdrawn:
                    self._release(item)

    def _send(self, batch: list[Staged]) -> None:
        """Submit a round: one array per shape (split at the size limit), the rest alone."""
        groups: dict[Hashable, list[Staged]] = {}
        for item in batch:
            groups.setdefault(item.shape if item.shape is not None else id(item), []).append(item)
        limit = 0
        try:
            for members in groups.values():
                if len(members) > 1 and not limit:
                    limit = self._array_limit()
                for part in chunks(members, limit or 1):
                    if len(part) == 1:
                        self._send_alone(part[0])
                    else:
                        self._send_array(part)
        finally:  # (an interruption) never leave an item unanswered
            for item in batch:
                if not item.done:
                    self._reject(item, SubmitException(f"job {item.job.id} was not submitted"))

    def _send_alone(self, item: Staged) -> None:
        try:
            item.job_dir = self._new_job_dir(item.job.id)
        except OSError as e:
            self._reject(item, _submit_error(self.name, e))
            return
        try:
            item.job_dir.write_script(item.script)
            if self._captures_environment(item.job.spec):
                item.job_dir.write_environment(os.environ, self.scheduler_variables)
            else:
                item.job_dir.drop_environment()
            native_id = self._run_submit(item.job_dir, self._submit_command(item.job_dir),
                                         meanwhile=self._make_spare)
        except BaseException as e:
            item.job_dir.remove()
            if not isinstance(e, Exception):
                raise  # (an interruption: the round's finally answers the job)
            self._reject(item, _submit_error(self.name, e))
            return
        log.info("job %s submitted to %s as %s", item.job.id, self.name, native_id)
        if self.links_at_submit:
            self._link_dir(item.job_dir, native_id)
        self._accept(item, native_id, linked=self.links_at_submit)

    def _new_job_dir(self, name: str) -> JobDir:
        """The job directory ``name``: the spare renamed (one mkdir and one file creation
        fewer on the submit path), else made now."""
        with self._lock:
            spare = self._spare.pop() if self._spare else None
        if spare is not None:
            try:
                return spare.adopt(name)
            except OSError as e:  # (someone removed it: make the directory as usual)
                log.debug("%s: spare job directory %s unusable: %s", self.name, spare.path, e)
        return JobDir.create(self.work_directory, name)

    def _make_spare(self) -> None:
        """Make the next lone job's directory (called while a submit command runs)."""
        with self._lock:
            if self._spare or self._closed:
                return
        try:
            spare = JobDir.spare(self.work_directory)
        except OSError as e:  # (the next submit makes its own, and says why if it cannot)
            log.debug("%s: cannot make a spare job directory: %s", self.name, e)
            return
        if not self.exports_environment:  # (most jobs inherit it: a file fewer to write)
            try:
                spare.write_environment(os.environ, self.scheduler_variables)
            except OSError as e:
                log.debug("%s: cannot write a spare environment: %s", self.name, e)
                spare.environment_file.unlink(missing_ok=True)
        with self._lock:
            if not self._spare and not self._closed:
                self._spare.append(spare)
                return
        spare.remove()  # another thread made one meanwhile, or the executor closed

    def _send_array(self, items: Sequence[Staged]) -> None:
        """One array for ``items`` (arrays.ArrayDir: a handful of files for all)."""
        assert self.array_variables is not None
        try:
            array = ArrayDir.create(self.work_directory, items)
        except OSError as e:
            for item in items:
                self._reject(item, _submit_error(self.name, e))
            return
        try:
            if any(self._captures_environment(item.job.spec) for item in items):
                # one capture for the round; each task links it into its job directory
                array.dir.write_environment(os.environ, self.scheduler_variables)
            array.dir.write_script(render(self.template, {
                **items[0].directives, "dispatch": array.dispatch_context(self.array_variables)}))
            array_id = self._run_submit(array.dir,
                                        self._array_submit_command(array, len(items)))
        except BaseException as e:
            array.dir.remove()
            if not isinstance(e, Exception):
                raise  # (an interruption: the round's finally answers the jobs)
            for item in items:
                self._reject(item, _submit_error(self.name, e))
            return
        # the tasks' directories are found through this one link (and the dispatcher
        # makes it too, should this process die right now)
        self._link_dir(array.dir, array_id)
        log.info("%d jobs submitted to %s as array %s", len(items), self.name, array_id)
        for i, item in enumerate(items):
            self._accept(item, self._array_task_id(array_id, i), linked=True)

    def _array_limit(self) -> int:
        scheduler = self._max_array_size()
        configured = self.config.max_array_size
        return min(scheduler, configured) if configured > 0 else scheduler

    def _accept(self, item: Staged, native_id: str, linked: bool) -> None:
        """``item`` was submitted as ``native_id``: the job is QUEUED and followed."""
        job = item.job
        job._bind(self, native_id)
        tracked = _Tracked(native_id, job, item.job_dir, self.config.min_query_interval)
        name = item.job_dir.path.name
        with self._lock:
            self._tracked[native_id] = tracked
            self._submitting.discard(name)
            self._noting[name] = tracked
            if not linked:  # the monitor links the id to the directory, off this path
                self._unlinked.append(tracked)
            wake = self._calendar.schedule(tracked, self.config.min_query_interval,
                                           pressing=False)
            self._calendar.submitted()
        item.native_id = native_id
        self._set_job_status(job, JobStatus(JobState.QUEUED))
        item.done = True
        if wake:  # (not while the monitor ticks every file_poll_interval anyway)
            self._monitor.poke()

    def _reject(self, item: Staged, error: SubmitException) -> None:
        self._release(item)
        item.error = error
        item.done = True

    def _release(self, item: Staged) -> None:
        """Undo the claim of a job that was not submitted: it is NEW and unbound."""
        with self._lock:
            self._submitting.discard(item.job_dir.path.name)
        item.job._bind(None, None)

    def _change_notes(self) -> ChangeNotes:
        with self._lock:
            if self._changes is None:
                self._changes = ChangeNotes(self.work_directory)
                weakref.finalize(self, self._changes.remove)
            return self._changes

    def cancel(self, job: Job) -> None:
        native_id = job.native_id
        if native_id is None or job.status.state.final:
            return
        try:
            external.run(self._cancel_command(native_id), timeout=self.config.command_timeout)
        except CommandError as e:
            raise SubmitException(f"cannot cancel job {job.id} ({self.name} job {native_id})",
                                  e, transient=e.returncode is None) from e
        log.info("job %s (%s job %s): cancel requested", job.id, self.name, native_id)
        with self._lock:
            tracked = self._tracked.get(native_id)
            if tracked is not None:
                tracked.cancelled = True
            wake = tracked is not None and self._calendar.schedule(tracked, 0.5, pressing=True)
        if wake:
            self._monitor.poke()

    def list(self) -> List[str]:
        try:
            return self._list_ids()
        except CommandError as e:
            raise SubmitException(f"cannot list the {self.name} jobs", e,
                                  transient=e.returncode is None) from e

    def attach(self, job: Job, native_id: str) -> None:
        self._check_native_id(native_id)
        self._claim_for_attach(job, native_id)
        with self._lock:
            tracked = self._tracked.get(native_id)
            if tracked is not None:  # followed already: share what we know
                tracked.jobs.append(job)
                current = tracked.jobs[0].status
        if tracked is not None:
            if current.state is not JobState.NEW:
                self._set_job_status(job, JobStatus(current.state, current.time,
                                                    metadata=current.metadata))
            return
        job_dir = self._find_job_dir(native_id)
        log.info("job %s attached to %s job %s (%s)", job.id, self.name, native_id,
                 f"job files in {job_dir.path}" if job_dir else "no job files")
        tracked = _Tracked(native_id, job, job_dir, self.config.min_query_interval)
        with self._lock:
            self._tracked[native_id] = tracked
            if job_dir is not None:  # (its script notes its changes for another executor)
                self._polled[native_id] = tracked
            wake = self._calendar.schedule(tracked, 0.0, pressing=True)
        if wake:
            self._monitor.poke()

    # ===================================================================== the job script
    def render_script(self, spec: JobSpec, job_dir: Path) -> str:
        """The batch script ``submit`` would write for ``spec`` into ``job_dir`` (for
        inspection and golden-file tests); InvalidJobException like ``submit``."""
        spec.validate()
        self._validate(spec)
        job_dir_ = JobDir(job_dir)
        return self._render(spec, job_dir_, self._directives(spec, job_dir_), None)

    def _render(self, spec: JobSpec, job_dir: JobDir, directives: dict[str, Any],
                note: Optional[Path]) -> str:
        return render(self.template, {**directives, **self._body(spec, job_dir, note)})

    def _find_job_dir(self, native_id: str) -> Optional[JobDir]:
        """The job directory of ``native_id`` (an array task's through its array's)."""
        job_dir = JobDir.find(self.work_directory, native_id)
        parts = self._array_parts(native_id) if job_dir is None else None
        if parts is not None:
            job_dir = ArrayDir.task_dir(self.work_directory, *parts)
        return job_dir

    def _captures_environment(self, spec: Optional[JobSpec]) -> bool:
        return spec is not None and spec.inherit_environment and not self.exports_environment

    def _body(self, spec: JobSpec, job_dir: JobDir, note: Optional[Path]) -> dict[str, Any]:
        """The template context of the shared script body (batch/batch_body.mustache);
        ``note``: the file the script creates after each change (changes.py)."""
        argv = job_argv(spec)
        argv[1:] = [Expandable(a) for a in argv[1:]]  # ${NAME} in arguments: the spec's rule
        launch = self._launcher(spec).get_launch_command(spec, argv)
        directory = os.path.expanduser(spec.directory) if spec.directory else None
        return {
            "job_dir": str(job_dir.path),
            "environment_file": (str(job_dir.environment_file)
                                 if self._captures_environment(spec) else None),
            "note": str(note) if note is not None else None,
            "directory": directory,
            "environment": [{"name": k, "value": Expandable(v)}
                            for k, v in (spec.environment or {}).items()],
            "launch": launch,
            "stdin": _stream(spec.stdin_path),
            "stdout": _stream(spec.stdout_path),
            "stderr": _stream(spec.stderr_path),
            "dispatch": None,  # (an array's dispatcher script, see _send_array)
        }

    def _submitted_anyway(self, job_dir: JobDir, error: CommandError) -> Optional[str]:
        try:
            return self._parse_submit(error.stdout)  # it printed the id before hanging
        except ValueError:
            return self._find_submitted(job_dir)

    def _find_submitted(self, job_dir: JobDir) -> Optional[str]:
        """The native id of a live job of ``job_dir.script`` (the last word of its
        submit command line, ``_submit_lines``), else None; an array's task is found
        as its array, the id the submit command would have printed."""
        script = str(job_dir.script)
        try:
            for native_id, command in self._submit_lines():
                if command.rstrip().endswith(script):
                    parts = self._array_parts(native_id)
                    return parts[0] if parts else native_id
        except CommandError as e:
            log.warning("%s: cannot look for a job submitted despite the error: %s",
                        self.name, e)
        return None

    def _is_transient(self, error: CommandError) -> bool:
        """True if a failed submit command may work when retried: its output names one
        of the backend's ``transient_errors``."""
        said = f"{error.stderr} {error.stdout}".lower()
        return any(text.lower() in said for text in self.transient_errors)

    def _run_submit(self, job_dir: JobDir, argv: List[str],
                    meanwhile: Optional[Callable[[], None]] = None) -> str:
        try:
            result = external.run(argv, timeout=self.config.command_timeout,
                                  meanwhile=meanwhile)
        except CommandError as e:
            # a submit command that timed out may have submitted the job all the same:
            # never leave it running unknown to us
            native_id = self._submitted_anyway(job_dir, e) if e.returncode is None else None
            if native_id is not None:
                log.warning("%s: the submit command failed (%s) but %s job %s runs %s",
                            self.name, e, self.name, native_id, job_dir.script)
                return native_id
            transient = e.returncode is None or self._is_transient(e)
            raise SubmitException(f"{self.name} did not take the job: "
                                  f"{(e.stderr or e.stdout or e.reason).strip()}",
                                  e, transient=transient) from e
        try:
            return self._parse_submit(result.stdout)
        except ValueError as e:
            raise SubmitException(f"no job id in the output of {result.argv!r}: "
                                  f"{result.stdout!r}", e) from e

    # ===================================================================== the monitor
    def _close(self) -> None:
        self._monitor_finalizer()
        with self._lock:
            unlinked, self._unlinked = self._unlinked, []
            changes = self._changes
        for t in unlinked:  # (jobs submitted since the monitor's last look)
            self._link(t)
        if changes is not None:
            changes.remove()
        with self._lock:
            _remove_spares(self._spare)

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
                changes.note_for(name).touch()

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
            self._report(t, _explain(t, record.final_status()), ran=True)
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
        found: dict[str, NativeStatus] = {}
        try:
            for i in range(0, len(ids), self.config.query_chunk_size):
                found.update(self._query_status(ids[i:i + self.config.query_chunk_size]))
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
            for t, ns in finals:
                if not self._apply_final(t, ns):
                    urgent.add(t.native_id)
        if missing:
            urgent |= self._vanished(missing)
        return urgent

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


def _explain(t: _Tracked, status: JobStatus) -> JobStatus:
    """Name the executable when the status is the shell's "cannot run it" (126, 127)."""
    spec = t.jobs[0].spec
    why = _NOT_STARTED.get(status.exit_code or 0)
    if why is not None and spec is not None and spec.executable:
        status.message = (f"{status.message} (the shell's status for a command {why}: is "
                          f"{spec.executable!r} there on the compute node?)")
    return status


def _submit_error(scheduler: str, error: Exception) -> SubmitException:
    """What the callers of a failed submission raise (the scheduler's message)."""
    if isinstance(error, SubmitException):
        return error
    return SubmitException(f"{scheduler}: the submission failed: {error!r}", error)


def _remove_spares(spares: list[JobDir]) -> None:
    """Remove the spare job directories (an executor closed or collected)."""
    while spares:
        try:
            spares.pop().remove()
        except OSError:
            pass


def _stream(path: Optional[Path]) -> Optional[str]:
    return os.path.expanduser(path) if path is not None else None

