"""``FluxJobExecutor``: PSI/J jobs on a Flux instance, through flux-core's bindings.

``submit`` builds a jobspec (jobspec.py) and calls ``flux.job.submit``, so it returns
with the native id (the f58 job id, as ``flux jobs`` prints it). Statuses come from
one watcher thread per executor (watcher.py: the journal, or per-job eventlog watches
where the journal is refused), folded per job by events.py; ``cancel``
is ``flux.job.cancel`` (reliable even right after ``start``, unlike ``kill``),
``attach`` replays the job's eventlog and then follows the watcher, ``list`` asks
job-list for the user's active jobs. The bindings are imported when the first
executor is made, never when hpcjobs is imported. With ``url='ssh://...'`` the
instance is on another host (remote.py): the same calls go through an ssh tunnel,
submits through that host's ``flux job submit``.
"""

from __future__ import annotations

import errno
import functools
import importlib
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from ...errors import (BulkSubmitException, InvalidJobException, InvalidJobStateError,
                       SubmitException)
from ...executor import JobExecutor, JobExecutorConfig
from ...job import Job
from ...remote.ssh import SshConnection
from ...remote.url import is_ssh_url, parse_ssh_url
from ...state import JobState, JobStatus
from .config import FluxConfig
from .events import JobEvents, Update, task_signal
from .jobspec import build_jobspec, release_urgency
from .remote import RemoteFlux
from .watcher import Watcher

__all__ = ["FluxJobExecutor"]

#: the Jobs that follow one Flux job (one, or more after attach); ``list`` is a method
#: name in the class below
_Followers = list[Job]

log = logging.getLogger(__name__)

#: what ``flux.job.submit`` raises for a job Flux refuses (not for trouble reaching it)
_REFUSED = (errno.EPERM, errno.EINVAL)

_T = TypeVar("_T")

#: the most jobs a round trip of ``submit_many`` over ssh carries
_BURST_CHUNK = 256

_MISSING_BINDINGS = (
    "the Flux executor needs flux-core's Python bindings (the 'flux' module), which "
    "cannot be imported here ({error}). Install flux-core (distribution package, Spack "
    "'flux-core' or conda-forge 'flux-core') or the PyPI package 'flux-python' matching "
    "your flux-core version, and run inside a Flux instance ('flux start', an allocation, "
    "or 'flux python'); see docs/flux.md")


def _import_bindings() -> tuple[Any, Any, Any]:
    try:
        return (importlib.import_module("flux"), importlib.import_module("flux.job"),
                importlib.import_module("flux.hostlist"))
    except ImportError as e:
        raise ImportError(_MISSING_BINDINGS.format(error=e)) from e


def _maybe_delivered(e: OSError) -> bool:
    """Whether ``e`` says the connection to the broker broke (a proxy, an ``ssh://``
    connection or the network path died) after a request may have reached it."""
    return isinstance(e, (ConnectionResetError, ConnectionAbortedError)) \
        or e.errno == errno.ENOTCONN


def _broken(e: OSError) -> bool:
    """Whether ``e`` says the connection to the broker is gone, not that Flux answered
    with an error; EPIPE: it was gone before the request went out (nothing sent)."""
    return isinstance(e, BrokenPipeError) or _maybe_delivered(e)


def _connect(flux: Any, url: str | None) -> Any:
    """A new handle on the instance at ``url`` (None: the enclosing one, $FLUX_URI)."""
    try:
        return flux.Flux(url) if url is not None else flux.Flux()
    except OSError as e:
        where = url or os.environ.get("FLUX_URI") or "the enclosing instance ($FLUX_URI unset)"
        raise ConnectionError(f"cannot connect to Flux at {where}: {e}; run inside a Flux "
                              "instance ('flux start') or give its URI as url=... or "
                              "FLUX_URI") from e


class FluxJobExecutor(JobExecutor):
    """Runs jobs on Flux. ``url`` is a Flux URI (``local://...``) or
    ``ssh://[user@]host[:port][/socket]`` for an instance on another host (docs/flux.md);
    by default the enclosing instance (``$FLUX_URI``)."""

    name = "flux"
    version_string = "0.1.0"
    config_class = FluxConfig

    def __init__(self, url: str | None = None,
                 config: JobExecutorConfig | Mapping[str, Any] | None = None) -> None:
        super().__init__(url, config)
        self._flux, self._flux_job, self._hostlist = _import_bindings()
        self._remote: RemoteFlux | None = None
        if url is not None and is_ssh_url(url):
            assert isinstance(self.config, FluxConfig)
            # a clear error now (host, login, host key, flux, instance), or a site
            self._remote = RemoteFlux(parse_ssh_url(url, path=True), self.config,
                                      f"hpcjobs-flux-{self._instance}")
            self._remote_finalizer = weakref.finalize(self, self._remote.close)
            self._connect: Callable[[], Any] = functools.partial(self._remote.connect,
                                                                 self._flux)
        else:
            self._connect = functools.partial(_connect, self._flux, url)
        try:
            self._handle = self._connect()  # fail now, clearly, when there is no Flux
        except BaseException:
            self._close_remote()
            raise
        # Two locks, never taken in the order _rpc_lock then _lock: _lock guards what the
        # watcher's events change (_jobs, _in_flight, _unclaimed) and keeps a job's
        # statuses in order; _rpc_lock guards the handle, not thread-safe, during
        # requests. The watcher takes _lock for every event, so no request holds it: a
        # submit holding it through its round trip kept the watcher waiting most of
        # the time in a burst, and each job's end reached its callback seconds late.
        self._lock = threading.Lock()
        self._rpc_lock = threading.Lock()
        # Flux id -> the Jobs following it (one, or more after attach) and its events
        self._jobs: dict[int, tuple[_Followers, JobEvents]] = {}
        # submits under way (not under _lock), and the events meanwhile of jobs not
        # followed (yet): Flux id -> (name, timestamp, context, R) each
        self._in_flight = 0
        self._unclaimed: dict[int, list[tuple[str, float, Mapping[str, Any], Any]]] = {}
        self._watcher = Watcher(f"hpcjobs-flux-{self._instance}-events", self._connect,
                                self._flux_job, self._on_event, self._on_lost,
                                self._on_missing)
        self._watcher_finalizer = weakref.finalize(self, self._watcher.stop)

    @property
    def ssh_connection(self) -> SshConnection | None:
        """With an ``ssh://`` URL, the executor's connection to that host (its
        ``round_trips`` and ``logins`` are counted); else None."""
        return self._remote.connection if self._remote is not None else None

    def _check_url(self, url: str) -> None:
        """``ssh://`` is hpcjobs' own (a path allowed: the instance's socket there);
        any other URL is Flux's own (``local://``): flux-core connects to it."""
        if is_ssh_url(url):
            try:
                parse_ssh_url(url, path=True)
            except ValueError as e:
                raise ValueError(f"executor {self.name!r}: {e}") from None

    # -- the API ------------------------------------------------------------------------
    def submit(self, job: Job, hold: bool = False) -> None:
        with self._submission(job) as spec:
            site = self._remote.site if self._remote is not None else None
            submission = build_jobspec(self._flux_job, spec, self._launcher(spec), site)
            if hold:  # flux-submit(1) --urgency=hold
                submission = submission._replace(urgency=0)
            self._watcher.start()
            if self._remote is None:
                self._submit_unlocked([job], lambda: [self._submit_here(submission)])
            else:
                remote = self._remote
                self._submit_unlocked([job], lambda: [self._flux_job.JobID(remote.submit(
                    submission.jobspec.dumps(), submission.urgency))])
        log.debug("job %s submitted to Flux as %s", job.id, job.native_id)

    def submit_many(self, jobs: Iterable[Job]) -> None:
        """Over ssh, every job in ONE round trip (a ``flux job submit`` each, on the
        remote host); here, one by one (each a request to the broker already)."""
        remote = self._remote
        if remote is None:
            super().submit_many(jobs)
            return
        jobs = self._checked_for_many(jobs)
        failures: list[tuple[Job, SubmitException]] = []
        claimed: list[tuple[Job, Any]] = []
        for job, spec in self._claim_many(jobs):  # (one submitted already: none goes)
            try:
                claimed.append((job, build_jobspec(self._flux_job, spec, self._launcher(spec),
                                                   remote.site)))
            except InvalidJobException as e:
                job.bind(None, None)
                failures.append((job, SubmitException(f"invalid job: {e}", e)))
        self._watcher.start()

        def submit(chunk: list[tuple[Job, Any]]) -> list[Any]:
            try:
                outcomes = remote.submit_many([(s.jobspec.dumps(), s.urgency) for _, s in chunk])
            except SubmitException as e:  # (no login: none of them went)
                return [e] * len(chunk)
            return [o if isinstance(o, Exception) else jobid(o) for o in outcomes]

        def jobid(printed: str) -> Any:
            try:
                return self._flux_job.JobID(printed)
            except ValueError as e:  # (one job's, not the burst's: the others go on)
                return SubmitException(
                    f"'flux job submit' at {remote.target} printed {printed[-200:]!r}, not a "
                    "job id: the job may have been submitted or not ('flux jobs' there "
                    "lists it)", e)

        # in round trips of 1, 2, 4, ... jobs (at most _BURST_CHUNK): each round trip's
        # jobs are followed once it is back, so the first start while the rest go in
        # (a 'flux job submit' there takes some 65 ms: 200 in one round trip held
        # every job's first status for 13 s)
        size, start = 1, 0
        while start < len(claimed):
            chunk = claimed[start:start + size]
            outcomes = self._submit_unlocked([job for job, _ in chunk],
                                             functools.partial(submit, chunk))
            for (job, _), outcome in zip(chunk, outcomes):
                if isinstance(outcome, Exception):
                    job.bind(None, None)
                    failures.append((job, outcome if isinstance(outcome, SubmitException)
                                     else SubmitException(f"invalid job: {outcome}", outcome)))
            start, size = start + size, min(2 * size, _BURST_CHUNK)
        if failures:
            raise BulkSubmitException(failures, len(jobs))

    def _submit_here(self, submission: Any) -> Any:
        """Submit through the bindings; the Flux JobID."""
        try:
            with self._rpc_lock:
                return self._request(lambda h: self._flux_job.submit(
                    h, submission.jobspec, urgency=submission.urgency), idempotent=False)
        except OSError as e:
            if _maybe_delivered(e):
                raise SubmitException(
                    f"the connection to Flux broke while submitting ({e}): the job "
                    "may have been submitted or not ('flux jobs' lists it)", e,
                    transient=True) from e
            if e.errno not in _REFUSED:
                raise SubmitException(f"Flux did not take the job: {e}", e,
                                      transient=True) from e
            # job-ingest refused the jobspec: EPERM from its validator, EINVAL
            # for what it checks itself (an unknown queue), with the reason
            raise InvalidJobException(f"Flux rejected the job: {e.strerror or e}",
                                      e) from None

    def _submit_unlocked(self, jobs: Sequence[Job], submit: Callable[[], Sequence[Any]]
                         ) -> Sequence[Any]:
        """``submit()`` (a round trip: here, or on the remote host; returns for each
        job its Flux JobID, or the exception it was refused with), then register those
        submitted; the outcomes. Not under ``_lock``, which the watcher takes for every
        event (it would hold up the statuses of all the other jobs); events of jobs
        unknown while submits are in flight are kept meanwhile (``_on_event``) and
        replayed here: Flux sends a job's first events before the submit returns, and
        a short job can end meanwhile."""
        with self._lock:
            self._in_flight += 1
        try:
            outcomes = submit()
            with self._lock:
                for job, outcome in zip(jobs, outcomes):
                    if not isinstance(outcome, BaseException):
                        self._register(job, outcome)
            return outcomes
        finally:
            with self._lock:
                self._in_flight -= 1
                if not self._in_flight:
                    self._unclaimed.clear()

    def _register(self, job: Job, jobid: Any) -> None:
        """Follow a job just submitted (caller holds ``_lock``: its statuses are reported
        in order), with any of its events that came first."""
        job.bind(self, jobid.f58)
        jobs, events = self._jobs[int(jobid)] = ([job], self._job_events(jobid.f58))
        self._watcher.follow(int(jobid))
        self._set_job_status(job, JobStatus(JobState.QUEUED, metadata={"native_state": "NEW"}))
        for early in self._unclaimed.pop(int(jobid), ()):
            if int(jobid) in self._jobs:  # (not if an early event ended it)
                self._apply(jobs, events, int(jobid), None, *early)

    def cancel(self, job: Job) -> None:
        native_id = job.native_id
        if native_id is None or job.status.state.final:
            return
        with self._rpc_lock:
            try:
                self._request(lambda h: self._flux_job.cancel(
                    h, self._flux_job.JobID(native_id)),
                    idempotent=True)  # cancelling twice: a second, harmless exception
            except FileNotFoundError as e:
                # "job is inactive": it ended first; its events say how
                log.debug("job %s (Flux %s): not cancelled: %s", job.id, native_id, e)
            except OSError as e:
                raise SubmitException(f"Flux did not cancel job {native_id}: {e}", e,
                                      transient=True) from e

    def _hold_job(self, job: Job) -> None:
        self._set_urgency(job, 0, "held")

    def _release_job(self, job: Job) -> None:
        self._set_urgency(job, release_urgency(job.spec), "released")

    def _set_urgency(self, job: Job, urgency: int, what: str) -> None:
        """flux-job(1) ``urgency``: 0 holds a pending job, more releases it (the
        job-manager's ``urgency`` request, what ``flux job urgency`` sends)."""
        native_id = job.native_id
        assert native_id is not None
        payload = {"id": int(self._flux_job.JobID(native_id)), "urgency": urgency}
        with self._rpc_lock:
            try:
                self._request(lambda h: h.rpc("job-manager.urgency", payload).get(),
                              idempotent=True)
            except OSError as e:
                if e.errno in (errno.EINVAL, errno.ENOENT):
                    # EINVAL: "urgency cannot be changed once resources are allocated";
                    # ENOENT: inactive or unknown
                    raise InvalidJobStateError(
                        f"job {job.id} (Flux job {native_id}) cannot be {what}: Flux says "
                        f"{e.strerror or e} (only a job that has not started can be)",
                        e) from None
                raise SubmitException(f"Flux did not take the urgency of job {native_id}: "
                                      f"{e}", e, transient=True) from e

    def list(self) -> list[str]:
        with self._rpc_lock:
            try:
                # over ssh, the remote user's (the bindings take a uid as a str)
                user = self._remote.userid if self._remote is not None else None
                jobs = self._request(lambda h: self._flux_job.JobList(
                    h, filters=["pending", "running"], user=user).jobs(), idempotent=True)
            except OSError as e:
                raise SubmitException(f"Flux job-list failed: {e}", e, transient=True) from e
        return [self._flux_job.JobID(info.id).f58 for info in jobs]

    def attach(self, job: Job, native_id: str) -> None:
        self._claim_for_attach(job, native_id)
        try:
            jobid = self._flux_job.JobID(native_id)
        except (OSError, ValueError):
            self._set_job_status(job, JobStatus(
                JobState.FAILED, message=f"{native_id!r} is not a Flux job id"))
            return
        job.bind(self, jobid.f58)
        events = self._job_events(jobid.f58)
        self._watcher.start()
        with self._lock:
            followed = self._jobs.get(int(jobid))
            if followed is not None:  # we follow it already: share its reports
                followed[0].append(job)
                current = followed[0][0].status
                if current.state is not JobState.NEW:
                    self._set_job_status(job, JobStatus(current.state, current.time,
                                                        metadata=current.metadata))
                return
            # registered first, so the watcher's events after the replay reach the job
            # (the ones the replay also has are repeats and change nothing)
            self._jobs[int(jobid)] = ([job], events)
            self._watcher.follow(int(jobid))
            try:
                with self._rpc_lock:
                    found = self._request(lambda h: self._eventlog(h, int(jobid)),
                                          idempotent=True)
            except OSError as e:
                self._end_unknown(int(jobid), f"reading the eventlog of Flux job "
                                              f"{native_id} failed ({e}): its state is unknown")
                return
            self._catch_up(int(jobid), found, None,
                           f"Flux does not know job {native_id} (never submitted, or purged)")

    # -- machinery ----------------------------------------------------------------------
    def _request(self, call: Callable[[Any], _T], idempotent: bool) -> _T:
        """``call(handle)`` on the executor's handle (caller holds ``_rpc_lock``). A handle
        whose connection broke is replaced by a new one, so the executor works again
        once the instance can be reached. The call is repeated when that is safe: it is
        ``idempotent``, or it was never sent (EPIPE); else its error is raised, as is
        ``ConnectionError`` if the instance cannot be reached now."""
        try:
            return call(self._handle)
        except OSError as e:
            if not _broken(e):
                raise
            log.info("executor %s: the connection to Flux broke (%s); reconnecting",
                     self._instance, e)
            if idempotent or not _maybe_delivered(e):
                self._handle = self._connect()
                return call(self._handle)
            try:
                self._handle = self._connect()
            except ConnectionError as failed:  # the next call tries again
                log.info("executor %s: %s", self._instance, failed)
            raise

    def _eventlog(self, handle: Any, jobid: int) -> str | None:
        """The job's main eventlog (RFC 18 text), None if Flux does not know the job."""
        found = self._flux_job.job_kvs_lookup(handle, jobid, keys=["eventlog"], decode=False)
        return None if found is None else str(found["eventlog"])

    def _catch_up(self, jobid: int, eventlog: str | None, handle: Any, unknown: str) -> None:
        """Fold the events of a followed job's eventlog into its status (repeats change
        nothing); without an eventlog, end it saying ``unknown`` (caller holds ``_lock``;
        ``handle``: see ``_apply``)."""
        if eventlog is None:
            self._end_unknown(jobid, unknown)
            return
        jobs, events = self._jobs[jobid]
        for line in eventlog.splitlines():
            event = json.loads(line)
            self._apply(jobs, events, jobid, handle, event["name"], event["timestamp"],
                        event.get("context", {}))

    def _end_unknown(self, jobid: int, message: str) -> None:
        """A followed job whose end cannot be known: FAILED saying so (caller holds
        ``_lock``)."""
        jobs, _events = self._jobs.pop(jobid)
        self._watcher.forget(jobid)
        for job in jobs:
            self._set_job_status(job, JobStatus(JobState.FAILED, message=message))

    def _job_events(self, f58: str) -> JobEvents:
        return JobEvents(f58, self._hostlist.decode)

    def _close(self) -> None:
        self._watcher_finalizer()
        self._close_remote()

    def _close_remote(self) -> None:
        if self._remote is not None:
            self._remote_finalizer()

    def _on_event(self, event: Any, handle: Any) -> None:
        """Watcher thread: one event, for any job of any client."""
        jobid = int(event.jobid)
        with self._lock:
            entry = self._jobs.get(jobid)
            if entry is not None:
                jobs, events = entry
                self._apply(jobs, events, jobid, handle, event.name, event.timestamp,
                            event.context or {}, getattr(event, "R", None))
            elif self._in_flight:  # perhaps a job whose submit has not returned yet
                self._unclaimed.setdefault(jobid, []).append(
                    (event.name, event.timestamp, event.context or {}, getattr(event, "R", None)))

    def _on_missing(self, jobids: Sequence[int], handle: Any) -> None:
        """Watcher thread: followed jobs whose events the watcher did not get where it
        expected them (watcher.py): their eventlog has what was missed; if Flux no
        longer has it either (the job was purged meanwhile), their end is unknown."""
        with self._lock:
            for jobid in jobids:
                if jobid not in self._jobs:
                    continue
                try:
                    eventlog = self._eventlog(handle, jobid)
                except OSError as e:  # the watcher reconnects, and asks again
                    log.warning("reading the eventlog of Flux job %s failed: %s", jobid, e)
                    continue
                f58 = self._flux_job.JobID(jobid).f58
                self._catch_up(jobid, eventlog, handle, (
                    f"Flux no longer knows job {f58}: it was purged before its end was "
                    "seen here; its final state and exit code are unknown"))

    def _on_lost(self, reason: str) -> None:
        """Watcher thread: the instance cannot be reached any more. Its jobs' ends are
        unknown (an instance that shuts down kills its jobs): each ends FAILED saying so,
        rather than waiting forever."""
        where = self.url or os.environ.get("FLUX_URI", "$FLUX_URI")
        message = (f"lost contact with the Flux instance at {where} ({reason}): the job's "
                   "final state and exit code are unknown (the instance was shut down or "
                   "cannot be reached)")
        with self._lock:
            for jobid in list(self._jobs):
                self._end_unknown(jobid, message)

    def _apply(self, jobs: _Followers, events: JobEvents, jobid: int, handle: Any, name: str,
               timestamp: float, context: Mapping[str, Any],
               R: Mapping[str, Any] | None = None) -> None:
        """Fold one event into the status of the jobs following it (caller holds
        ``_lock``). ``handle`` belongs to the calling thread (the watcher's); None: the
        executor's own, taken with ``_rpc_lock``."""
        update = events.apply(name, timestamp, context, R)
        if events.done:
            self._jobs.pop(jobid, None)
            self._watcher.forget(jobid)
            update = self._with_signal(update, events, jobid, handle)
        for job in jobs:
            if update.status is not None:
                self._set_job_status(job, update.status, ran=update.ran)
            elif update.metadata is not None:  # same state, new facts: refreshed, no callback
                current = job.status
                self._set_job_status(job, JobStatus(current.state, current.time, current.message,
                                                    current.exit_code, update.metadata))

    def _with_signal(self, update: Update, events: JobEvents, jobid: int,
                     handle: Any) -> Update:
        """The Flux shell reports a task killed by signal N as exit code 128+N; its
        exec eventlog says whether that was a signal (``shell.task-exit signaled``)."""
        status = update.status
        if status is None or status.exit_code is None or not 128 < status.exit_code < 192:
            return update
        def lookup(h: Any) -> Any:
            return self._flux_job.job_kvs_lookup(h, jobid, keys=["guest.exec.eventlog"],
                                                 decode=False)
        try:
            if handle is None:
                with self._rpc_lock:
                    found = self._request(lookup, idempotent=True)
            else:
                found = lookup(handle)
        except OSError as e:
            log.debug("Flux job %s: no exec eventlog (%s); exit code %s kept",
                      events.jobid, e, status.exit_code)
            return update
        signum = task_signal(found.get("guest.exec.eventlog", "") if found else "",
                             status.exit_code)
        return update if signum is None else events.killed_by(signum, status)

