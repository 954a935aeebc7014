"""``LocalJobExecutor``: PSI/J jobs as processes on this machine.

Submitting turns the spec into a spawn request (the launcher's argument list, the exact
environment, absolute paths) and hands it to this executor's nanny (nanny.py), which
spawns, reaps and records the job; its reports come back through link.py. Jobs run by
another process's nanny (attach) are followed by watcher.py. The job records live in
the journal (journal.py), so any process can list and attach to them. docs/local.md has
the design and the decisions behind it.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any, List, Mapping, Optional, Union

from ...environment import expand, job_environment
from ...errors import InvalidJobStateError, SubmitException
from ...executor import JobExecutor, JobExecutorConfig
from ...job import Job
from ...launchers.base import job_argv
from ...spec import JobSpec
from ...state import JobState, JobStatus
from .journal import HELD_REASON, Journal, cancelled_while_held, final_status
from .link import NannyLink
from .watcher import Watcher

__all__ = ["LocalJobExecutor", "LocalJobExecutorConfig"]

log = logging.getLogger(__name__)

#: the status metadata of a held job
_HELD = {"held": True, "reason_pending": HELD_REASON}
#: set for launcher scripts only: where they may keep per-job files (the node file)
JOB_DIR_VARIABLE = "HPCJOBS_JOB_DIR"


@dataclasses.dataclass
class LocalJobExecutorConfig(JobExecutorConfig):
    """Settings of the local executor.

    ``cancel_grace_period``: seconds between SIGTERM and SIGKILL when a job is cancelled.
    ``keep_finished``: seconds the records of an ended job are kept (for attach/list).
    """

    cancel_grace_period: float = 5.0
    keep_finished: float = 7 * 24 * 3600.0


class _Threads:
    """This executor's nanny link and watcher, stopped by ``close()`` or by the
    finaliser of a forgotten executor (so it must not refer to the executor)."""

    def __init__(self) -> None:
        self.link: Optional[NannyLink] = None
        self.watcher: Optional[Watcher] = None
        self.old_links: list[NannyLink] = []
        self.journal: Optional[Journal] = None

    def stop(self) -> None:
        for link in [*self.old_links, *([self.link] if self.link else [])]:
            link.close()
        if self.watcher is not None:
            self.watcher.stop()
        if self.journal is not None:
            self.journal.close()


class LocalJobExecutor(JobExecutor):
    """Runs jobs as local processes (see the module docstring)."""

    @classmethod
    def serving(cls, url: Optional[str]) -> type[JobExecutor]:
        """An ``ssh://`` URL is served by the shell backend (executors/shell): the jobs
        run on that host, started by its shell."""
        from ...remote.url import is_ssh_url
        if url is not None and isinstance(url, str) and is_ssh_url(url):
            from ..shell import ShellExecutor
            return ShellExecutor
        return cls

    # (``list`` below shadows the builtin in this class body: annotations use List)
    name = "local"
    config_class = LocalJobExecutorConfig
    supports_staging = True
    config: LocalJobExecutorConfig

    def __init__(self, url: Optional[str] = None,
                 config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> None:
        super().__init__(url, config)
        self._lock = threading.Lock()
        self._journal: Optional[Journal] = None
        #: native id -> the Job objects following it (submitted, and attached copies)
        self._jobs: dict[str, list[Job]] = {}
        #: native id -> (spec, job directory) of a running job with files to stage out
        #: or clean up when it ends
        self._staged: dict[str, tuple[JobSpec, str]] = {}
        self._seq = itertools.count(1)
        self._threads = _Threads()
        self._environ: tuple[Optional[dict[bytes, bytes]], dict[str, str]] = (None, {})
        self._threads_finalizer = weakref.finalize(self, self._threads.stop)

    # -- the API ------------------------------------------------------------------------
    def submit(self, job: Job, hold: bool = False) -> None:
        with self._submission(job) as spec:
            link = self._link()
            native_id = f"{link.token}-{next(self._seq)}"
            request = self._spawn_request(spec, native_id)
            self._get_journal().add(native_id)
            with self._lock:
                self._jobs[native_id] = [job]
                if spec.stage_out or spec.cleanup:
                    self._staged[native_id] = (spec, request[2])
            if spec.stage_in:
                job.bind(self, native_id)
                self._stage_in_then_spawn(job, native_id, spec, link, request)
                return
            try:
                link.spawn(native_id, *request, held=hold)
            except OSError as e:
                # the journal keeps the id: attach reports it FAILED, never started
                with self._lock:
                    del self._jobs[native_id]
                raise SubmitException(f"the local job nanny (pid {link.pid}) is gone", e,
                                      transient=True) from e
            job.bind(self, native_id)
        log.debug("job %s submitted as local job %s%s", job.id, native_id,
                  " (held)" if hold else "")
        self._set_job_status(job, JobStatus(JobState.QUEUED, metadata=dict(_HELD) if hold else None))

    def _hold_job(self, job: Job) -> None:
        # a local job starts as soon as its nanny has it: only one submitted held waits
        if not (job.status.metadata or {}).get("held"):
            raise InvalidJobStateError(
                f"job {job.id} (local job {job.native_id}) is starting: a local job starts "
                "as soon as it is submitted; submit it with hold=True to hold it")

    def _release_job(self, job: Job) -> None:
        native_id = job.native_id
        assert native_id is not None
        link = self._threads.link
        if link is None or not link.alive or not native_id.startswith(link.token + "-"):
            raise InvalidJobStateError(
                f"job {job.id} (local job {native_id}) can only be released by the executor "
                "that submitted it (its nanny takes requests from that executor only)")
        try:
            link.release(native_id)
        except OSError as e:
            raise SubmitException(f"the local job nanny (pid {link.pid}) is gone", e,
                                  transient=True) from e

    def cancel(self, job: Job) -> None:
        native_id = job.native_id
        if job.status.state.final or native_id is None:
            return
        link = self._threads.link
        with self._lock:
            ours = native_id in self._jobs
        if not ours:
            return
        if link is not None and link.alive and native_id.startswith(link.token + "-"):
            try:
                link.cancel(native_id)
                return
            except OSError:
                pass  # the nanny just died: the watcher takes over its jobs
        self._get_watcher().cancel(native_id)

    def list(self) -> list[str]:
        return self._get_journal().native_ids()

    def attach(self, job: Job, native_id: str) -> None:
        self._claim_for_attach(job, native_id)
        with self._lock:
            followers = self._jobs.get(native_id)
            if followers is not None:  # one of ours, still running: share its reports
                followers.append(job)
                current = followers[0].status
        if followers is not None:
            if current.state is not JobState.NEW:
                self._set_job_status(job, JobStatus(current.state, current.time,
                                                    metadata=current.metadata))
            return
        obs = self._get_journal().inspect(native_id)
        if obs.status is not None:
            self._set_job_status(job, obs.status)
            return
        with self._lock:
            self._jobs.setdefault(native_id, []).append(job)
        self._set_job_status(job, JobStatus(JobState.ACTIVE if obs.pid else JobState.QUEUED,
                                            metadata=dict(_HELD) if obs.held else None))
        self._get_watcher().watch(native_id)

    # -- staging ------------------------------------------------------------------------
    def _stage_in_then_spawn(self, job: Job, native_id: str, spec: JobSpec, link: NannyLink,
                             request: tuple[List[str], dict[str, str], str, Optional[str],
                                            Optional[str], Optional[str]]) -> None:
        """Stage the job's files in (in submit: they are on this machine), then start
        it; a failure fails the job before it runs, naming the file."""
        from ...stage_files import StagingError, stage_in
        self._set_job_status(job, JobStatus(JobState.QUEUED))
        self._set_job_status(job, JobStatus(JobState.STAGE_IN))
        try:
            stage_in(spec.stage_in or (), request[2])
            link.spawn(native_id, *request)
        except (StagingError, OSError) as e:
            with self._lock:
                self._jobs.pop(native_id, None)
                self._staged.pop(native_id, None)
            why = str(e) if isinstance(e, StagingError) else f"the local job nanny is gone: {e}"
            self._set_job_status(job, JobStatus(JobState.FAILED, message=why))

    def _stage_out(self, jobs: List[Job], status: JobStatus, spec: JobSpec, job_dir: str) -> None:
        """A staged job ended: STAGE_OUT, CLEANUP, then its final status (FAILED, naming
        the file, if a stage-out failed). Runs on its own thread: copies take time."""
        from ...stage_files import finish
        finish(jobs, status, spec, job_dir, self._set_job_status)

    # -- machinery ----------------------------------------------------------------------
    def _close(self) -> None:
        self._threads_finalizer()

    def _get_journal(self) -> Journal:
        if self._journal is None:
            # absolute: the nanny and other processes may run in other directories
            self._journal = self._threads.journal = Journal(self.work_directory.absolute())
        return self._journal

    def _link(self) -> NannyLink:
        link = self._threads.link
        if link is not None and link.alive:
            return link
        with self._lock:
            link = self._threads.link
            if link is None or not link.alive:
                journal = self._get_journal()
                journal.purge(self.config.keep_finished)
                if link is not None:
                    self._threads.old_links.append(link)
                link = NannyLink(f"hpcjobs-local-{self._instance}", journal.jobs,
                                 journal.nannies, journal.records_file,
                                 self.config.cancel_grace_period, self._on_nanny_event)
                journal.record_nanny(link.token, link.pid, link.ticks)
                self._threads.link = link
            return link

    def _get_watcher(self) -> Watcher:
        with self._lock:
            if self._threads.watcher is None:
                self._threads.watcher = Watcher(f"hpcjobs-local-{self._instance}",
                                                self._get_journal(),
                                                self.config.cancel_grace_period, self._report)
            return self._threads.watcher

    def _spawn_request(self, spec: JobSpec, native_id: str) -> tuple[
            List[str], dict[str, str], str, Optional[str], Optional[str], Optional[str]]:
        env = self._environment(spec)
        argv = job_argv(spec)
        argv[1:] = [expand(a, env) for a in argv[1:]]
        command = self._launcher(spec).get_launch_command(spec, argv)
        if command != argv:  # a launcher script: give it a place for its files
            env = {**env, JOB_DIR_VARIABLE: self._get_journal().make_job_dir(native_id)}
        cwd = os.path.expanduser(spec.directory) if spec.directory else os.getcwd()
        return (command, env, cwd, _path(spec.stdin_path, cwd), _path(spec.stdout_path, cwd),
                _path(spec.stderr_path, cwd))

    def _environment(self, spec: JobSpec) -> dict[str, str]:
        """The job's environment; the common case (inherited, no overrides) reuses one
        dict while ``os.environ`` is unchanged: decoding it costs more than a spawn's
        share of the nanny's work (and an unchanged dict is not even resent)."""
        if not spec.inherit_environment or spec.environment:
            return job_environment(spec.inherit_environment, spec.environment)
        # os.environ keeps the bytes it hands to putenv in _data (CPython); comparing
        # that is a C-level dict comparison. Elsewhere, decode every time.
        data: Optional[dict[bytes, bytes]] = getattr(os.environ, "_data", None)
        cached_data, cached = self._environ
        if data is None or data != cached_data:
            cached = job_environment(True, None)
            self._environ = (None if data is None else dict(data), cached)
        return cached

    def _on_nanny_event(self, event: Optional[List[Any]]) -> None:
        """Reader thread: one event from our nanny (None: the nanny died)."""
        if event is None:
            self._nanny_died()
            return
        kind, native_id = event[0], event[1]
        if kind == "S":
            self._report(native_id, JobStatus(JobState.ACTIVE, event[3]))
        elif kind == "X":
            self._report(native_id, final_status(event[2], event[3], event[4]), ran=True)
        elif kind == "E":
            self._report(native_id, JobStatus(JobState.FAILED, message=event[2]))
        elif kind == "C":
            self._report(native_id, cancelled_while_held(event[2], asked=True))

    def _report(self, native_id: str, status: JobStatus, ran: bool = False) -> None:
        staged = None
        with self._lock:
            jobs = self._jobs.get(native_id)
            if jobs is None:
                return
            if status.state.final:
                del self._jobs[native_id]
                staged = self._staged.pop(native_id, None)
            jobs = list(jobs)
        if staged is not None and (ran or jobs[0].status.state is JobState.ACTIVE):
            threading.Thread(target=self._stage_out, args=(jobs, status, *staged),
                             name=f"hpcjobs-local-{self._instance}-stage-out-{native_id}",
                             daemon=True).start()
            return
        for job in jobs:
            self._set_job_status(job, status, ran=ran)

    def _nanny_died(self) -> None:
        link = self._threads.link
        if link is None:
            return
        with self._lock:
            orphans = [n for n in self._jobs if n.startswith(link.token + "-")]
        # the jobs may well still run (they are in sessions of their own): follow them
        # from their records, as if attached
        watcher = self._get_watcher()
        for native_id in orphans:
            watcher.watch(native_id)


def _path(path: Optional[Path], cwd: str) -> Optional[str]:
    # relative stream paths are relative to the job's directory, like the job sees them
    if path is None:
        return None
    return os.path.join(cwd, os.path.expanduser(path))
