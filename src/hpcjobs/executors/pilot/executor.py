"""``PilotJobExecutor``: PSI/J jobs inside a pilot, a Flux instance that is one batch job.

The pilot is started (or attached to) when the executor is made (allocation.py). Jobs
submitted before it runs wait here, QUEUED with the pending reason "waiting for the
pilot", and go to Flux as soon as its URI is known. Inside, each job is a job of the
Flux executor (``get_instance('flux', url=...)``, its public API only): a job of ours
follows its Flux twin's statuses, so status comes from Flux's event stream; the batch
scheduler is asked only about the pilot.

When the pilot ends other than by ``close()`` (walltime, cancelled from outside, its
broker died), Flux's last word on the jobs still inside is no verdict on them (Flux
cancels them as it shuts down, or they are killed with it, or the link is lost): every
job not yet final ends FAILED saying the pilot ended and why. A twin's end that is not
COMPLETED and not the user's cancel is therefore checked against the pilot first.
"""

from __future__ import annotations

import logging
import threading
import weakref
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import BulkSubmitException, InvalidJobException, SubmitException
from ...executor import JobExecutor
from ...job import Job
from ...remote.ssh import SshConnection
from ...resources import ResourceSpecV1
from ...spec import JobSpec
from ...state import JobState, JobStatus
from ...threads import OwnedThread
from .allocation import Allocation
from .config import PilotConfig

__all__ = ["PilotJobExecutor"]

log = logging.getLogger(__name__)

WAITING = "waiting for the pilot"
#: seconds a twin killed by a signal nobody asked for waits before it is believed: the
#: batch scheduler signals the instance and its jobs together when it ends a pilot
_SIGNAL_GRACE = 2.0
#: seconds by which a job's run may fall short of its duration and still be its own
#: time limit (Flux's and our clocks, the start event's rounding)
_CLOCK_SLACK = 2.0
#: bound on waiting for the pilot's batch job to end after we asked it to
_STOP_TIMEOUT = 60.0
#: seconds before the pilot's state is asked again when the host could not be asked,
#: and how many times in a row before the jobs' ends as Flux gave them stand
_ASK_AGAIN = 2.0
_ASK_LIMIT = 5


class PilotJobExecutor(JobExecutor):
    """Runs jobs in a Flux instance started as one batch job (PilotConfig); ``url`` is
    the batch executor's (e.g. ``ssh://login``; None: this host)."""

    name = "pilot"
    version_string = "0.1.0"
    #: ``ssh://[user@]host[:port]``: the batch executor's, where the pilot's batch job
    #: is submitted and its files live (docs/pilot.md)
    serves_ssh = True

    def __init__(self, url: str | None = None,
                 config: PilotConfig | Mapping[str, Any] | None = None) -> None:
        pilot_config = PilotConfig.coerce(config)
        assert isinstance(pilot_config, PilotConfig)
        super().__init__(url, pilot_config)
        self._pilot_config = pilot_config
        self._lock = threading.Lock()
        self._pending: list[Job] = []  # submitted before the pilot ran, in order
        self._twins: dict[str, Job] = {}  # our job's id -> its Flux job
        self._mine: dict[str, Job] = {}  # a twin's id -> our job
        self._cancelled: set[str] = set()  # our jobs the user cancelled
        # our job's id -> (its twin, it): twins that ended as a dying pilot ends them
        self._doubtful: dict[str, tuple[Job, Job]] = {}
        self._flux: JobExecutor | None = None
        self._running = threading.Event()
        self._end_reason: str | None = None
        self._wakeup = threading.Event()
        self._checker_done = False
        self._checker = OwnedThread(f"hpcjobs-pilot-{self._instance}-check", self._check,
                                    self._wakeup.set)
        self._allocation = Allocation(pilot_config, url, self._on_running, self._on_end)
        try:
            if pilot_config.attach is not None:
                self._allocation.attach(self.work_directory, pilot_config.attach)
            else:
                self._allocation.start(self.work_directory)
        except BaseException:
            self._allocation.close()
            raise
        # an executor never closed (dropped, or its program ended without close())
        # leaves no allocation holding nodes to its walltime: its pilot is cancelled at
        # exit, unless the user detaches pilots (on_close='detach', to attach later)
        self._abandoned = (weakref.finalize(self, _cancel_abandoned, self._allocation)
                           if pilot_config.on_close != "detach" else None)

    @property
    def work_directory(self) -> Path:
        """Where the pilots' directories are: here, or on the ``ssh://`` URL's host."""
        if not self._allocation.remote:
            return super().work_directory
        if self._work_directory is None:
            self._work_directory = self._allocation.remote_work_directory()
        return self._work_directory

    # -- the API ------------------------------------------------------------------------
    @property
    def pilot_native_id(self) -> str | None:
        """The pilot's batch job id (to attach to it from another process)."""
        return self._allocation.native_id

    @property
    def pilot_status(self) -> JobStatus:
        """The pilot's batch job's status."""
        return self._allocation.job.status

    @property
    def ssh_connection(self) -> SshConnection | None:
        """With an ``ssh://`` URL, the one connection to that host: the batch job's
        commands, the pilot's files and its Flux (submits, events) all go through it
        (its ``round_trips`` and ``logins`` are counted); else None."""
        connection = getattr(self._allocation.host, "connection", None)
        return connection if isinstance(connection, SshConnection) else None

    def submit(self, job: Job, hold: bool = False) -> None:
        if hold:
            raise NotImplementedError("the pilot executor cannot hold jobs (yet: its Flux "
                                      "instance can, by urgency)")
        with self._submission(job):
            flux = self._flux_or_wait([job])
            if flux is not None:
                self._send(flux, job)

    def submit_many(self, jobs: Iterable[Job]) -> None:
        """Jobs submitted together: before the pilot runs they wait for it, as with
        :meth:`submit`; once it runs they go to its Flux together (the Flux executor's
        ``submit_many``: over ssh, round trips of 1, 2, 4, ... jobs, not one each).
        Jobs Flux did not take (refused, or the connection broke: perhaps taken) are
        NEW again, each with why, in :class:`BulkSubmitException`."""
        claimed = [job for job, _spec in self._claim_many(jobs)]  # (checked: _validate)
        try:
            flux = self._flux_or_wait(claimed)
        except BaseException:
            for job in claimed:
                job.bind(None, None)
            raise
        if flux is None:
            return
        failures: list[tuple[Job, SubmitException]] = []
        for job, why in self._send_many(flux, claimed):
            if job.status.state.final:  # (the pilot ended meanwhile: its reason is said)
                continue
            job.bind(None, None)
            if not isinstance(why, SubmitException):  # (its Flux executor closed: why)
                ended = self._end_reason
                why = SubmitException(f"the pilot's Flux did not take the job: {why}" + (
                    f"; the pilot has ended: {ended}" if ended else ""), why)
            failures.append((job, why))
        if failures:
            raise BulkSubmitException(failures, len(claimed))

    def cancel(self, job: Job) -> None:
        if job.status.state.final:
            return
        with self._lock:
            self._cancelled.add(job.id)
            twin = self._twins.get(job.id)
            if twin is None and job in self._pending:
                self._pending.remove(job)
                self._set_job_status(job, JobStatus(JobState.CANCELED,
                                                    message="cancelled before the pilot ran"))
                return
        if twin is not None:
            twin.cancel()

    def list(self) -> list[str]:
        flux = self._flux
        return [] if flux is None else flux.list()

    def attach(self, job: Job, native_id: str) -> None:
        """Follow the Flux job ``native_id`` of this pilot (waits, within the pilot's
        ``start_timeout``, for the pilot's instance to be reachable)."""
        self._claim_for_attach(job, native_id)
        if not self._running.wait(self._pilot_config.start_timeout) or self._flux is None:
            self._set_job_status(job, JobStatus(JobState.FAILED, message=(
                f"cannot attach to job {native_id}: "
                f"{self._end_reason or 'the pilot is not running'}")))
            return
        twin = Job()
        with self._lock:
            self._twins[job.id] = twin
            self._mine[twin.id] = job
        twin.set_job_status_callback(self._on_twin)
        self._flux.attach(twin, native_id)

    # -- machinery ----------------------------------------------------------------------
    def _flux_or_wait(self, jobs: Sequence[Job]) -> JobExecutor | None:
        """The pilot's Flux executor, to send the claimed ``jobs`` to; None if the pilot
        does not run yet: they wait for it, QUEUED. SubmitException if it has ended."""
        with self._lock:
            if self._end_reason is not None:
                raise SubmitException(f"the pilot has ended: {self._end_reason}")
            if self._flux is not None:
                return self._flux
            for job in jobs:
                job.bind(self, None)
                self._pending.append(job)
                self._set_job_status(job, JobStatus(JobState.QUEUED, metadata={
                    "reason_pending": WAITING, "pilot": self._allocation.native_id}))
            return None

    def _validate(self, spec: JobSpec) -> None:
        """Refuse, before anything is submitted, a job the pilot can never run."""
        config = self._pilot_config
        resources = spec.resources
        if isinstance(resources, ResourceSpecV1):
            nodes = resources.requested_node_count
            if nodes is not None and nodes > config.flux_nodes:
                setting = "flux_test_size" if config.flux_test_size else "node_count"
                raise InvalidJobException(
                    f"ResourceSpecV1.node_count: the job asks for {nodes} nodes and the "
                    f"pilot has {config.flux_nodes} (PilotConfig.{setting}); a pilot "
                    "does not grow: start a larger one")
        duration = spec.attributes.duration if spec.attributes is not None else None
        if config.walltime is not None and duration is not None and duration > config.walltime:
            raise InvalidJobException(
                f"JobAttributes.duration: {duration} is longer than the pilot's walltime "
                f"({config.walltime}): the job could never finish inside it")

    def _send(self, flux: JobExecutor, job: Job) -> None:
        """Submit ``job`` to the pilot's Flux as its twin (the job is bound to us)."""
        twin = self._twin(job)
        try:
            flux.submit(twin)
        except BaseException:
            self._forget(job, twin)
            raise
        job.bind(self, twin.native_id)

    def _send_many(self, flux: JobExecutor, jobs: Sequence[Job]
                   ) -> Sequence[tuple[Job, Exception]]:
        """Submit ``jobs`` to the pilot's Flux as their twins, together (over ssh:
        round trips of 1, 2, 4, ... jobs); each job that did not go, with why."""
        twins = [self._twin(job) for job in jobs]
        failed: dict[str, Exception] = {}
        try:
            flux.submit_many(twins)
        except BulkSubmitException as e:
            failed = {twin.id: why for twin, why in e.failures}
        except Exception as e:  # noqa: BLE001 - every job says why
            # (a twin with a native id went in before it: it is followed, not lost)
            failed = {twin.id: e for twin in twins if twin.native_id is None}
        failures = []
        for job, twin in zip(jobs, twins):
            if twin.id in failed:
                self._forget(job, twin)
                failures.append((job, failed[twin.id]))
                continue
            job.bind(self, twin.native_id)
            with self._lock:
                cancelled = job.id in self._cancelled  # (while it was on its way)
            if cancelled:
                twin.cancel()
        return failures

    def _twin(self, job: Job) -> Job:
        """A new Flux job for ``job``, followed."""
        assert job.spec is not None
        twin = Job(job.spec)
        with self._lock:
            self._twins[job.id] = twin
            self._mine[twin.id] = job
        twin.set_job_status_callback(self._on_twin)
        return twin

    def _forget(self, job: Job, twin: Job) -> None:
        with self._lock:
            self._twins.pop(job.id, None)
            self._mine.pop(twin.id, None)

    def _on_running(self, uri: str, config: Mapping[str, Any]) -> None:
        """The allocation's poller thread: the pilot's Flux can be reached (at ``uri``,
        with that Flux executor ``config``: over ssh, the same connection's)."""
        try:
            flux = JobExecutor.get_instance("flux", url=uri, config=config)
        except (ConnectionError, ImportError, SubmitException, ValueError) as e:
            self._allocation.cancel()
            self._on_end(f"the pilot's Flux at {uri} cannot be reached from here: {e}")
            return
        with self._lock:
            if self._end_reason is not None:
                flux.close()
                return
            self._flux = flux
            pending, self._pending = self._pending, []
        self._running.set()
        for job, why in self._send_many(flux, pending):  # each job says why, the rest go on
            self._set_job_status(job, JobStatus(JobState.FAILED, message=(
                f"the pilot's Flux did not take the job: {why}")))

    def _on_twin(self, twin: Job, status: JobStatus) -> None:
        """The Flux executor's dispatcher: a twin's status, for our job."""
        with self._lock:
            job = self._mine.get(twin.id)
            if job is None:
                return
            believed = (not status.state.final or status.state is JobState.COMPLETED
                        or job.id in self._cancelled)
            if not believed:
                self._doubtful[job.id] = (twin, job)
        if believed:
            if job.native_id is None and twin.native_id is not None:
                job.bind(self, twin.native_id)
            self._set_job_status(job, status, ran=status.state is JobState.ACTIVE
                                 or job.status.state is JobState.ACTIVE)
            return
        if self._cut_short(job, status):
            return
        self._checker.start()
        self._wakeup.set()

    def _cut_short(self, job: Job, status: JobStatus) -> bool:
        """A job Flux timed out before its own duration ran out: Flux ends a job at the
        earlier of its duration and the instance's end, which a pilot inside a batch
        job takes from the scheduler (its walltime). Such a job ends FAILED saying the
        pilot's walltime cut it short; True if so."""
        exception = (status.metadata or {}).get("exception") or {}
        started = job.status.time if job.status.state is JobState.ACTIVE else None
        duration = job.spec.attributes.duration if job.spec and job.spec.attributes else None
        if exception.get("type") != "timeout" or started is None or duration is None \
                or status.time is None \
                or status.time - started >= duration.total_seconds() - _CLOCK_SLACK:
            return False
        with self._lock:
            self._doubtful.pop(job.id, None)
        walltime = self._pilot_config.walltime
        self._set_job_status(job, JobStatus(
            JobState.FAILED, status.time, exit_code=status.exit_code, metadata=status.metadata,
            message=(f"walltime exceeded: the pilot ({self._allocation.what}) reached its "
                     f"walltime{f' ({walltime})' if walltime else ''} after the job ran "
                     f"{status.time - started:.0f} s of its {duration}; the job had not "
                     f"ended (Flux: {exception.get('note', 'timeout')})")), ran=True)
        return True

    def _check(self) -> None:
        """Checker thread: twins that ended as a dying pilot would make them end. Their
        end is believed once the pilot is seen running after it (a signal's after a
        grace: the scheduler signals instance and jobs at once); while the pilot
        ends, ``_on_end`` gives them its reason."""
        unasked = 0  # times in a row the pilot's state could not be asked
        while not self._checker_stopped():
            self._wakeup.wait()
            self._wakeup.clear()
            with self._lock:
                doubtful = list(self._doubtful.values())
            if not doubtful:
                continue
            signalled = any(twin.status.exit_code is not None and twin.status.exit_code < 0
                            for twin, _job in doubtful)
            if signalled:
                time.sleep(_SIGNAL_GRACE)
            alive = self._allocation.alive()
            unasked = unasked + 1 if alive is None else 0
            if alive is None and unasked < _ASK_LIMIT:
                # the host cannot be asked now (ssh): ask again shortly
                time.sleep(_ASK_AGAIN)
                self._wakeup.set()
            elif alive or alive is None:
                # running, or it stays unknown: the twin's end stands (Flux's message
                # says what is unknown when it lost contact too)
                with self._lock:
                    ready = [self._doubtful.pop(job.id) for _twin, job in doubtful
                             if job.id in self._doubtful]
                for twin, job in ready:
                    self._set_job_status(job, twin.status, ran=True)
            else:  # the pilot is ending: _on_end fails them with its reason
                self._allocation.gone("does not answer any more")

    def _checker_stopped(self) -> bool:
        return self._end_reason is not None or self._checker_done

    def _on_end(self, reason: str) -> None:
        """The pilot ended (its batch job is final): every job not final ends FAILED."""
        with self._lock:
            if self._end_reason is not None:
                return
            self._end_reason = reason
            pending, self._pending = self._pending, []
            inside = [job for job in self._mine.values() if not job.status.state.final]
            self._doubtful.clear()
            flux, self._flux = self._flux, None
        self._wakeup.set()
        self._running.set()  # attach() waiting for it: it fails now, saying why
        log.info("executor %s: %s", self._instance, reason)
        for job in pending:
            self._set_job_status(job, JobStatus(JobState.FAILED, message=(
                f"{reason}, before the job could start")))
        for job in inside:
            if job.id in self._cancelled:
                self._set_job_status(job, JobStatus(JobState.CANCELED, message=(
                    f"cancelled; {reason}")))
            else:
                self._set_job_status(job, JobStatus(JobState.FAILED, message=(
                    f"{reason}; the job had not ended")))
        if flux is not None:
            flux.close()

    def _close(self) -> None:
        if self._abandoned is not None:
            self._abandoned.detach()
        mode = self._pilot_config.on_close
        if mode != "detach" and self._end_reason is None:
            with self._lock:
                jobs = list(self._pending) + [job for job in self._mine.values()]
            if mode == "cancel":
                for job in jobs:
                    self.cancel(job)
            for job in jobs:  # bounded: the pilot ends at its walltime at the latest
                job.wait()
        flux = self._flux
        if flux is not None:  # before the instance goes: its end is no news to them
            flux.close()
        if mode != "detach" and self._end_reason is None:
            self._allocation.stop(f"its executor was closed (on_close={mode!r})",
                                  _STOP_TIMEOUT)
        self._checker_done = True
        self._checker.stop()
        self._allocation.close()


def _cancel_abandoned(allocation: Allocation) -> None:
    """The pilot of an executor that was never closed: cancelled (at exit)."""
    try:
        allocation.cancel()
    except Exception as e:  # (at exit: say it, never raise)
        log.warning("pilot %s: not cancelled at exit: %s", allocation.native_id, e)

