"""``BatchSchedulerExecutor``: submit, follow and cancel jobs of a batch scheduler.

The executor is made of parts it owns: the backend (``scheduler``, a
:class:`~.scheduler.Scheduler`: command lines, parsers, state table, template), the
host its commands run on and its files live on (``host``, host.py), and the status
monitor (``monitor``, monitor.py, whose docstring tells how status works). Here: the
API, submit (one job, or many at once as scheduler arrays, arrays.py), cancel, list
and attach, and the job script (jobdir.py, script.py). A backend's executor class names
its scheduler class (``scheduler_class``) and nothing else (docs/writing-a-backend.md).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, ClassVar, Hashable, Iterable, List, Mapping, Optional, Sequence, Union

from ...errors import (BulkSubmitException, CommandError, InvalidJobException,
                      InvalidJobStateError, SubmitException)
from ...executor import JobExecutor, JobExecutorConfig
from ...external import CommandResult
from ...job import Job
from ...launchers.base import Launcher, ScriptLauncher, job_argv
from ...spec import JobSpec
from ...state import JobState, JobStatus
from .arrays import ArrayDir, BurstCollector, Staged, chunks
from .config import BatchConfig
from .host import LOCAL, Host, work_directory_on
from .jobdir import JobDir, exports
from .monitor import StatusMonitor
from .scheduler import Scheduler
from .script import Expandable, render
from .user_script import UserScript

__all__ = ["BatchSchedulerExecutor"]

log = logging.getLogger(__name__)


class BatchSchedulerExecutor(JobExecutor):
    """Base of the batch backends' executors (see the module docstring)."""

    #: the backend: what this executor's scheduler is (scheduler.py)
    scheduler_class: ClassVar[type[Scheduler]]
    config_class: ClassVar[type[JobExecutorConfig]] = BatchConfig
    config: BatchConfig
    #: stage-in in submit() (from this machine to the job's directory on the host),
    #: stage-out and cleanup when this process sees the job end (docs/remote.md)
    supports_staging = True
    #: an ``ssh://[user@]host[:port]`` URL: the scheduler's commands run and the job
    #: files live on that host (docs/remote.md); any other URL is refused
    serves_ssh = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "scheduler_class" in cls.__dict__ and "name" not in cls.__dict__:
            cls.name = cls.scheduler_class.name

    def __init__(self, url: Optional[str] = None,
                 config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> None:
        super().__init__(url, config)
        #: where commands run and files live: this machine, or the ``ssh://`` URL's host
        #: (its connection opened now, so a host that cannot be reached says so here)
        self.host: Host = LOCAL
        if url is not None:
            from ...remote.host import connect
            self.host = connect(url, self.config.ssh_options)
        #: the backend
        self.scheduler = self.scheduler_class(self.config, self.host)
        #: follows the jobs once submitted or attached
        self.monitor = StatusMonitor(self.name, self._instance, self.scheduler,
                                     self.config, self.work_directory, self._monitor_report)
        # job id -> (spec, its directory) of a job of ours with files to stage out
        self._stage_outs: dict[str, tuple[JobSpec, str]] = {}
        weakref.finalize(self, self.monitor.stop)
        self._lock = threading.Lock()  # guards the spare job directory
        # a lone job's directory made ahead of it, while the previous submit command ran
        # (jobdir.py); a list, so that the finalizer of a forgotten executor removes it
        self._spare: list[JobDir] = []
        weakref.finalize(self, _remove_spares, self._spare)
        # the environment file's text as the last submit captured it, which the spare
        # takes rather than reading the environment again (each submit checks it anew)
        self._captured: Optional[bytes] = None
        # (a backend without arrays gains nothing from grouping: its submits stay apart)
        self._bursts = (BurstCollector(self.config.burst_window, self._send)
                        if self.config.burst_window > 0 and self.scheduler.array_variables
                        else None)

    @property
    def work_directory(self) -> Path:
        """This executor's private directory (0700) on its host, created on first use;
        over ssh, ``~`` and a relative path are taken from the home directory there."""
        if self.host is LOCAL:
            return super().work_directory
        if self._work_directory is None:
            configured = self.config.work_directory
            self._work_directory = work_directory_on(
                self.host, os.fspath(configured) if configured is not None else None, self.name)
        return self._work_directory

    # ===================================================================== the API
    def submit(self, job: Job, hold: bool = False) -> None:
        if hold and self.scheduler.hold_submit_option is None:
            raise NotImplementedError(f"the {self.name} executor cannot hold jobs")
        staged = self._stage(job)
        if hold:
            self._submit_held(staged)
        else:
            self._submit_staged([staged])
        if staged.error is not None:
            raise staged.error

    def submit_many(self, jobs: Iterable[Job]) -> None:
        """Submit ``jobs`` in one round: those that share a shape go out as scheduler
        arrays (docs/arrays.md). Every job is checked first: an invalid one raises
        InvalidJobException with nothing submitted. On return every job is QUEUED, or
        :class:`BulkSubmitException` lists the ones the scheduler refused (those are NEW
        again and may be resubmitted). A :class:`SubmitException` if the files all jobs
        share cannot be written (nothing is submitted)."""
        jobs = list(jobs)
        limit = None
        failed: list[Exception] = []
        if len(jobs) > 1 and self.host.batches_commands and self.scheduler.array_variables:
            # over a connection, the array size limit (a scheduler setting, read once)
            # comes while the scripts are rendered, and with it the files all jobs
            # share, queued now (the notes directory, the launcher scripts): that round
            # trip is hidden, and the burst's own carries only its jobs
            self.monitor.notes_directory()
            self.host.launcher_scripts(os.fspath(self.work_directory))
            limit = threading.Thread(target=self._read_array_limit, args=(failed,), daemon=True,
                                     name=f"hpcjobs-{self.name}-array-limit")
            limit.start()
        staged: list[Staged] = []
        try:
            for job in jobs:
                staged.append(self._stage(job))
            if limit is not None:
                limit.join()
                if failed and isinstance(failed[0], OSError):  # (the shared files' fault)
                    raise _submit_error(self.name, failed[0])
        except BaseException:
            for item in staged:
                self._release(item)
            raise
        finally:
            if limit is not None:
                limit.join()
        self._submit_staged(staged)
        failures = [(item.job, item.error) for item in staged if item.error is not None]
        if failures:
            raise BulkSubmitException(failures, len(staged))

    def _stage(self, job: Job) -> Staged:
        """Check and claim ``job``, stage its files in and render its script (no job
        file is written yet)."""
        spec = self._claim_for_submit(job)  # (not _submission: a generator per job)
        try:
            job_dir = JobDir(self.work_directory / job.id, host=self.host)
            directives = self.scheduler.directives(spec, job_dir)
            script = self._render(spec, job_dir, directives, self.monitor.notes_directory())
            if spec.stages_files:
                self._stage_in(job, spec)
        except BaseException:
            job.bind(None, None)
            raise
        self.monitor.submitting(job_dir, True)  # its notes may come before its id
        scheduler = self.scheduler
        # (a user's script goes alone: it is its own, whole job)
        per_job = (scheduler.per_job_directives if scheduler.array_variables
                   and "user_script" not in directives else None)
        return Staged(job, job_dir, script, directives, per_job)

    def _stage_in(self, job: Job, spec: JobSpec) -> None:
        """The job's files to its directory on the host, before it is submitted (the
        nodes cannot reach this machine's files); SubmitException naming the file."""
        from ...stage_files import StagingError, stage_in
        assert spec.directory is not None  # (_validate: given)
        directory = self.host.expand_user(os.fspath(spec.directory))
        try:
            stage_in(spec.stage_in or (), directory, self.host)
            self.host.flush()
        except (StagingError, OSError) as e:
            raise SubmitException(f"job {job.id} was not submitted: {e}", e) from e
        if spec.stage_out or spec.cleanup:
            with self._lock:
                self._stage_outs[job.id] = (spec, directory)

    def _monitor_report(self, job: Job, status: JobStatus, ran: bool = False) -> None:
        """The monitor's statuses; a job of ours with files to stage out ends through
        STAGE_OUT and CLEANUP first, on a thread of its own (copies take time)."""
        if status.state.final:
            with self._lock:
                staged = self._stage_outs.pop(job.id, None)
            if staged is not None and (ran or job.status.state is JobState.ACTIVE):
                from ...stage_files import finish
                threading.Thread(target=finish, name=f"hpcjobs-{self.name}-stage-out-{job.id}",
                                 args=([job], status, *staged, self._set_job_status, self.host),
                                 daemon=True).start()
                return
        self._set_job_status(job, status, ran)

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
            groups.setdefault(item.group_key() if len(batch) > 1 else id(item), []).append(item)
        limit = 0
        lone: list[Staged] = []
        try:
            for members in groups.values():
                if len(members) > 1 and not limit:
                    limit = self._array_limit()
                for part in chunks(members, limit or 1):
                    if len(part) == 1:
                        lone.append(part[0])
                    else:
                        self._send_array(part)
            if len(lone) > 1 and self.host.batches_commands:
                self._send_together(lone)
            else:
                for item in lone:
                    self._send_alone(item)
        finally:  # (an interruption) never leave an item unanswered
            for item in batch:
                if not item.done:
                    self._reject(item, SubmitException(f"job {item.job.id} was not submitted"))

    def _send_alone(self, item: Staged, hold: bool = False) -> None:
        argv = self._prepare_alone(item)
        if argv is None:
            return
        if hold:  # (after the program: an option, before the script)
            argv = [argv[0], str(self.scheduler.hold_submit_option), *argv[1:]]
        try:
            native_id = self._run_submit(item.job_dir, argv, meanwhile=self._make_spare)
        except BaseException as e:
            self._fail_alone(item, e)
            return
        self._accept_alone(item, native_id)

    def _send_together(self, items: Sequence[Staged]) -> None:
        """Submit lone jobs over a host that batches commands: every job's files and
        then all the submit commands in one round trip, one command per job."""
        ready = [(item, argv) for item in items
                 if (argv := self._prepare_alone(item)) is not None]
        timeout = self.config.command_timeout + len(ready)  # (one deadline for all)
        try:
            outcomes = self.host.run_many([argv for _, argv in ready], timeout=timeout)
        except OSError as e:  # (a job directory could not be made: no command ran)
            for item, _ in ready:
                self._fail_alone(item, e)
            return
        for (item, _), outcome in zip(ready, outcomes):
            try:
                native_id = self._submit_outcome(item.job_dir, outcome)
            except BaseException as e:
                self._fail_alone(item, e)
                continue
            self._accept_alone(item, native_id)

    def _prepare_alone(self, item: Staged) -> Optional[List[str]]:
        """Make ``item``'s directory and files: its submit command, or None when it
        was rejected."""
        try:
            item.job_dir = self._new_job_dir(item.job.id)
        except OSError as e:
            self._reject(item, _submit_error(self.name, e))
            return None
        try:
            item.job_dir.write_script(item.script)
            if self._captures_environment(item.job.spec):
                item.job_dir.write_environment(self._capture_environment())
            else:
                item.job_dir.drop_environment()
            return self.scheduler.submit_command(item.job_dir)
        except BaseException as e:
            self._fail_alone(item, e)
            return None

    def _fail_alone(self, item: Staged, e: BaseException) -> None:
        item.job_dir.remove()
        if not isinstance(e, Exception):
            raise e  # (an interruption: the round's finally answers the job)
        self._reject(item, _submit_error(self.name, e))

    def _accept_alone(self, item: Staged, native_id: str) -> None:
        log.info("job %s submitted to %s as %s", item.job.id, self.name, native_id)
        linked = self.scheduler.links_at_submit
        if linked:
            self.monitor.link(item.job_dir, native_id)
        self._accept(item, native_id, linked)

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
        return JobDir.create(self.work_directory, name, self.host)

    def _make_spare(self) -> None:
        """Make the next lone job's directory (called while a submit command runs)."""
        with self._lock:
            if self._spare or self._closed:
                return
        try:
            spare = JobDir.spare(self.work_directory, self.host)
        except OSError as e:  # (the next submit makes its own, and says why if it cannot)
            log.debug("%s: cannot make a spare job directory: %s", self.name, e)
            return
        if not self.scheduler.exports_environment:  # (most jobs inherit it: a file fewer to write)
            try:
                spare.write_environment(self._captured or self._capture_environment())
            except OSError as e:
                log.debug("%s: cannot write a spare environment: %s", self.name, e)
                self.host.remove(os.fspath(spare.environment_file))
        with self._lock:
            if not self._spare and not self._closed:
                self._spare.append(spare)
                return
        spare.remove()  # another thread made one meanwhile, or the executor closed

    def _capture_environment(self) -> bytes:
        """The submitter's environment now, as the environment file's text (for a
        backend whose scheduler cannot carry it), remembered for the next spare, so
        ``os.environ`` is read whole once a submit; a spare made with an older
        environment is rewritten when its job is submitted."""
        self._captured = exports(self.host.environ(), self.scheduler.scheduler_variables)
        return self._captured

    def _send_array(self, items: Sequence[Staged]) -> None:
        """One array for ``items`` (arrays.ArrayDir: a handful of files for all)."""
        scheduler = self.scheduler
        assert scheduler.array_variables is not None
        try:
            array = ArrayDir.create(self.work_directory, items, self.host)
        except OSError as e:
            for item in items:
                self._reject(item, _submit_error(self.name, e))
            return
        try:
            if any(self._captures_environment(item.job.spec) for item in items):
                # one capture for the round; each task links it into its job directory
                array.dir.write_environment(self._capture_environment())
            array.dir.write_script(render(scheduler.template, {
                **items[0].directives,
                "dispatch": array.dispatch_context(scheduler.array_variables)}))
            array_id = self._run_submit(array.dir,
                                        scheduler.array_submit_command(array, len(items)))
        except BaseException as e:
            array.dir.remove()
            if not isinstance(e, Exception):
                raise  # (an interruption: the round's finally answers the jobs)
            for item in items:
                self._reject(item, _submit_error(self.name, e))
            return
        # the tasks' directories are found through this one link (and the dispatcher
        # makes it too, should this process die right now)
        self.monitor.link(array.dir, array_id)
        log.info("%d jobs submitted to %s as array %s", len(items), self.name, array_id)
        for i, item in enumerate(items):
            self._accept(item, scheduler.array_task_id(array_id, i), linked=True)

    def _read_array_limit(self, failed: list[Exception]) -> None:
        """:meth:`_array_limit` for its setting alone; its exception goes in ``failed``
        (a command's failure is met again when the limit is used)."""
        try:
            self._array_limit()
        except Exception as e:
            log.debug("%s: array size limit not read ahead: %s", self.name, e)
            failed.append(e)

    def _array_limit(self) -> int:
        most = self.scheduler.max_array_size()
        configured = self.config.max_array_size
        return min(most, configured) if configured > 0 else most

    def _accept(self, item: Staged, native_id: str, linked: bool) -> None:
        """``item`` was submitted as ``native_id``: the job is QUEUED and followed."""
        item.job.bind(self, native_id)
        self.monitor.follow(item.job, native_id, item.job_dir, linked)
        item.native_id = native_id
        self._set_job_status(item.job, JobStatus(JobState.QUEUED))
        item.done = True

    def _reject(self, item: Staged, error: SubmitException) -> None:
        self._release(item)
        item.error = error
        item.done = True

    def _release(self, item: Staged) -> None:
        """Undo the claim of a job that was not submitted: it is NEW and unbound."""
        with self._lock:
            self._stage_outs.pop(item.job.id, None)
        self.monitor.submitting(item.job_dir, False)
        item.job.bind(None, None)

    # ===================================================================== hold and release
    def _submit_held(self, item: Staged) -> None:
        """Submit a job held: alone, never in an array (the hold is the submit
        command's option), then its status says held at once."""
        try:
            self._send_alone(item, hold=True)
        finally:
            if not item.done:  # (an interruption) never leave the job claimed
                self._reject(item, SubmitException(f"job {item.job.id} was not submitted"))
        if item.error is None:
            self._note_held(item.job, True)

    def _hold_job(self, job: Job) -> None:
        native_id = job.native_id
        assert native_id is not None
        scheduler = self.scheduler
        self._control(job, scheduler.hold_command(native_id), "held")
        # Slurm and OpenPBS take a hold of a job that has just started (and keep it
        # for a requeue): ask, and undo it rather than say the job is held
        try:
            now = scheduler.query([native_id]).get(native_id)
        except CommandError as e:
            log.info("job %s (%s job %s): held; its state not checked: %s", job.id,
                     self.name, native_id, e)
            now = None
        if now is not None and now.state is not JobState.QUEUED:
            try:
                scheduler.run(scheduler.release_command(native_id))
            except CommandError as e:
                log.info("job %s (%s job %s): its hold was not undone: %s", job.id,
                         self.name, native_id, e)
            self.monitor.poke(native_id)
            raise InvalidJobStateError(
                f"job {job.id} ({self.name} job {native_id}) has started ({self.name} state "
                f"{now.native_state}): only a queued job can be held")

    def _release_job(self, job: Job) -> None:
        native_id = job.native_id
        assert native_id is not None
        self._control(job, self.scheduler.release_command(native_id), "released")

    def _control(self, job: Job, argv: list[str], what: str) -> None:
        """Run a hold or release command: InvalidJobStateError when the scheduler says
        the job has ended (``ended_errors``), SubmitException for other trouble; then the
        monitor asks about the job soon (its reason changes)."""
        native_id = str(job.native_id)
        scheduler = self.scheduler
        try:
            scheduler.run(argv)
        except CommandError as e:
            words = (e.stderr or e.stdout).strip()
            if e.returncode is not None and scheduler.says(e, scheduler.ended_errors):
                self.monitor.poke(native_id)
                raise InvalidJobStateError(
                    f"job {job.id} ({self.name} job {native_id}) cannot be {what}: {words} "
                    "(only a queued job can be)", e) from None
            raise SubmitException(f"job {job.id} ({self.name} job {native_id}) was not "
                                  f"{what}", e, transient=e.returncode is None) from e
        log.info("job %s (%s job %s): %s", job.id, self.name, native_id, what)
        self.monitor.poke(native_id)

    def cancel(self, job: Job) -> None:
        native_id = job.native_id
        if native_id is None or job.status.state.final:
            return
        late = False
        try:
            self.scheduler.run(self.scheduler.cancel_command(native_id))
        except CommandError as e:
            # the job ended before the monitor saw it (a blind job is asked about every
            # 15 s): its true end is what the job gets, as PSI/J's cancel() allows
            late = e.returncode is not None and self.scheduler.says(e, self.scheduler.ended_errors)
            if not late:
                raise SubmitException(f"cannot cancel job {job.id} ({self.name} job "
                                      f"{native_id})", e, transient=e.returncode is None) from e
            log.info("job %s (%s job %s): not cancelled, it has ended: %s", job.id, self.name,
                     native_id, (e.stderr or e.stdout).strip())
        else:
            log.info("job %s (%s job %s): cancel requested", job.id, self.name, native_id)
        self.monitor.cancelled(native_id, late)

    def list(self) -> List[str]:
        try:
            return self.scheduler.list_ids()
        except CommandError as e:
            raise SubmitException(f"cannot list the {self.name} jobs", e,
                                  transient=e.returncode is None) from e

    def attach(self, job: Job, native_id: str) -> None:
        self.scheduler.check_native_id(native_id)
        self._claim_for_attach(job, native_id)
        current = self.monitor.attach(job, native_id)
        if current is not None and current.state is not JobState.NEW:
            self._set_job_status(job, JobStatus(current.state, current.time,
                                                metadata=current.metadata))

    # ===================================================================== the job script
    def render_script(self, spec: JobSpec, job_dir: Path) -> str:
        """The batch script ``submit`` would write for ``spec`` into ``job_dir`` (for
        inspection and golden-file tests); InvalidJobException like ``submit``."""
        self._check_spec(spec)
        job_dir_ = JobDir(job_dir, host=self.host)
        return self._render(spec, job_dir_, self.scheduler.directives(spec, job_dir_), None)

    def _render(self, spec: JobSpec, job_dir: JobDir, directives: dict[str, Any],
                notes: Optional[Path]) -> str:
        body = self._body(spec, job_dir, notes, directives.get("user_script"))
        return render(self.scheduler.template, {**directives, **body})

    def _captures_environment(self, spec: Optional[JobSpec]) -> bool:
        return (spec is not None and spec.inherit_environment
                and not self.scheduler.exports_environment)

    def _body(self, spec: JobSpec, job_dir: JobDir, notes: Optional[Path],
              script: Optional[UserScript] = None) -> dict[str, Any]:
        """The template context of the shared script body (batch/batch_body.mustache);
        ``notes``: the directory the script notes each change in (changes.py);
        ``script``: a user's batch script, whose copy the job runs (user_script.py)."""
        argv = job_argv(spec)
        copy = None
        if script is not None:
            copy = {"text": script.text, "path": str(job_dir.path / "user-script")}
            argv[0] = copy["path"]
        argv[1:] = [Expandable(a) for a in argv[1:]]  # ${NAME} in arguments: the spec's rule
        launch = self._launcher(spec).get_launch_command(spec, argv)
        expand = self.host.expand_user
        directory = expand(os.fspath(spec.directory)) if spec.directory else None
        return {
            "job_dir": str(job_dir.path),
            "environment_file": (str(job_dir.environment_file)
                                 if self._captures_environment(spec) else None),
            "notes": str(notes) if notes is not None else None,
            "directory": directory,
            "environment": [{"name": k, "value": Expandable(v)}
                            for k, v in (spec.environment or {}).items()],
            "launch": launch,
            "stdin": _stream(spec.stdin_path, expand),
            "stdout": _stream(spec.stdout_path, expand),
            "stderr": _stream(spec.stderr_path, expand),
            "dispatch": None,  # (an array's dispatcher script, see _send_array)
            "script_copy": copy,
        }

    def _submitted_anyway(self, job_dir: JobDir, error: CommandError) -> Optional[str]:
        try:
            return self.scheduler.parse_submit(error.stdout)  # it printed the id, then hung
        except ValueError:
            return self._find_submitted(job_dir)

    def _find_submitted(self, job_dir: JobDir) -> Optional[str]:
        """The native id of a live job of ``job_dir.script`` (the last word of its
        submit command line, ``_submit_lines``), else None; an array's task is found
        as its array, the id the submit command would have printed."""
        script = str(job_dir.script)
        try:
            for native_id, command in self.scheduler.submit_lines():
                if command.rstrip().endswith(script):
                    parts = self.scheduler.array_parts(native_id)
                    return parts[0] if parts else native_id
        except CommandError as e:
            log.warning("%s: cannot look for a job submitted despite the error: %s",
                        self.name, e)
        return None

    def _run_submit(self, job_dir: JobDir, argv: List[str],
                    meanwhile: Optional[Callable[[], None]] = None) -> str:
        try:
            result: Union[CommandResult, CommandError] = self.host.run(
                argv, timeout=self.config.command_timeout, meanwhile=meanwhile)
        except CommandError as e:
            result = e
        return self._submit_outcome(job_dir, result)

    def _submit_outcome(self, job_dir: JobDir, outcome: Union[CommandResult, CommandError]) -> str:
        """The native id a submit command's outcome gives; SubmitException if none."""
        if isinstance(outcome, CommandError):
            e = outcome
            # a submit command that timed out may have submitted the job all the same:
            # never leave it running unknown to us
            native_id = self._submitted_anyway(job_dir, e) if e.returncode is None else None
            if native_id is not None:
                log.warning("%s: the submit command failed (%s) but %s job %s runs %s",
                            self.name, e, self.name, native_id, job_dir.script)
                return native_id
            transient = e.returncode is None or self.scheduler.says(
                e, self.scheduler.transient_errors)
            raise SubmitException(f"{self.name} did not take the job: "
                                  f"{(e.stderr or e.stdout or e.reason).strip()}",
                                  e, transient=transient) from e
        try:
            return self.scheduler.parse_submit(outcome.stdout)
        except ValueError as e:
            raise SubmitException(f"no job id in the output of {outcome.argv!r}: "
                                  f"{outcome.stdout!r}", e) from e

    # ===================================================================== closing
    def _validate(self, spec: JobSpec) -> None:
        if spec.stages_files and spec.directory is None:
            raise InvalidJobException(f"JobSpec.directory: a job that stages files names its "
                                      f"directory (the {self.name} job starts where its "
                                      "scheduler puts it; staging paths are relative to it)")
        if self.scheduler.unusable_in_paths is not None:
            pattern, why = self.scheduler.unusable_in_paths
            found = pattern.search(str(self.work_directory))
            if found:
                raise InvalidJobException(f"the executor's work_directory "
                                          f"{str(self.work_directory)!r} contains "
                                          f"{found.group()!r}: {why}")
        self.scheduler.validate(spec)

    def _launcher(self, spec: JobSpec) -> Launcher:
        launcher = super()._launcher(spec)
        if self.host is not LOCAL and isinstance(launcher, ScriptLauncher):
            launcher.scripts_directory = self.host.launcher_scripts(os.fspath(self.work_directory))
        return launcher

    def _close(self) -> None:
        self.monitor.close()
        with self._lock:
            _remove_spares(self._spare)
        self.host.close()


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


def _stream(path: Optional[Path], expand: Callable[[str], str]) -> Optional[str]:
    return expand(os.fspath(path)) if path is not None else None

