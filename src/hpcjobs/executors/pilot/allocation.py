"""``Allocation``: the pilot's batch job, running ``flux start`` (pilot.sh), through the
batch executor's public API only (submit, attach, cancel, status callbacks).

The job gets a directory of the pilot's own on the shared filesystem: the job writes
its Flux URI and host there once the instance runs (``uri``); the client finds it by
looking at that file, and a fresh process finds the directory of a pilot from the batch
job's native id (a link ``<backend>-<native id>`` beside it). The pilot ends when the
client writes the key ``hpcjobs.pilot.stop`` into the instance's KVS: the initial
program (blocked on that key inside Flux) returns, and the instance shuts down.
"""

from __future__ import annotations

import importlib.resources
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from ...executor import JobExecutor
from ...job import Job
from ...resources import ResourceSpecV1
from ...spec import JobSpec
from ...attributes import JobAttributes
from ...private import make_dirs
from ...state import JobState, JobStatus
from ...threads import PeriodicTask
from .config import PilotConfig

__all__ = ["Allocation", "STOP_KEY"]

log = logging.getLogger(__name__)

#: the KVS key whose creation ends the pilot (pilot.sh waits for it)
STOP_KEY = "hpcjobs.pilot.stop"
#: how often the client looks for the URI file once the batch job runs (a stat of a file
#: on the shared file system, for the few seconds the instance takes to come up)
_URI_POLL = 0.05
#: how often before the batch scheduler says the job runs: a queued pilot may wait for
#: hours, and its ACTIVE status pokes the look at once; this is only the fallback
_URI_POLL_QUEUED = 5.0
#: then how often it looks for the pilot's record of its end (pilot.sh): the fallback for
#: a batch scheduler slow to say the pilot ended, for as long as the pilot lives
_WATCH_END = 1.0
#: seconds the batch scheduler's word on a pilot that ended may take before the
#: pilot's own record is taken instead
_BATCH_GRACE = 10.0


class Allocation:
    """One pilot's batch job. ``on_running(uri)`` is called once the instance can be
    reached; ``on_end(reason)`` once the batch job has ended (or never published its
    URI within ``start_timeout``), with why."""

    def __init__(self, config: PilotConfig, url: str | None, work_directory: Path, flux: str,
                 on_running: Callable[[str], None], on_end: Callable[[str], None]) -> None:
        self._config = config
        self._work = work_directory
        self._flux = flux
        self._on_running = on_running
        self._on_end = on_end
        self._batch = JobExecutor.get_instance(config.backend, url=url,
                                               config=config.backend_config)
        self.job = Job()
        self.directory: Path | None = None
        self.uri: str | None = None
        self._started_at: float | None = None  # when the batch job was seen ACTIVE
        self._ended = threading.Event()
        self._stopping: str | None = None  # why we asked the pilot to stop, if we did
        self._lock = threading.Lock()
        self._poller = PeriodicTask(f"hpcjobs-pilot-{config.backend}-uri", self._look)

    @property
    def native_id(self) -> str | None:
        return self.job.native_id

    @property
    def what(self) -> str:
        """The pilot in words: ``slurm job 812``."""
        return f"{self._config.backend} job {self.native_id}"

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def start(self) -> None:
        """Submit the batch job (raises as the batch executor's submit does)."""
        make_dirs(self._work)
        self.directory = self._work / f"pilot-{uuid.uuid4().hex[:12]}"
        make_dirs(self.directory)
        body = importlib.resources.files(__package__).joinpath("pilot.sh").read_text()
        (self.directory / "pilot.sh").write_text(body)
        config = self._config
        resources = ResourceSpecV1(node_count=config.node_count, exclusive_node_use=True,
                                   memory=config.memory_per_node) \
            if config.cores_per_node is None else ResourceSpecV1(
                node_count=config.node_count, processes_per_node=1,
                cpu_cores_per_process=config.cores_per_node, memory=config.memory_per_node)
        attributes = JobAttributes(queue_name=config.queue, project_name=config.account)
        if config.walltime is not None:
            attributes.duration = config.walltime
        self.job = Job(JobSpec(
            "/bin/sh", [str(self.directory / "pilot.sh"), str(self.directory), self._flux,
                        str(config.flux_test_size or "")],
            name="hpcjobs-pilot", directory=self.directory, resources=resources,
            attributes=attributes, stdout_path=self.directory / "pilot.out",
            stderr_path=self.directory / "pilot.err"))
        self.job.set_job_status_callback(self._on_status)
        self._batch.submit(self.job)
        link = self._work / f"{config.backend.lower()}-{self.job.native_id}"
        link.unlink(missing_ok=True)  # a batch id the scheduler reused
        link.symlink_to(self.directory.name)
        self._poller.start()

    def attach(self, native_id: str) -> None:
        """Follow the running pilot whose batch job is ``native_id``; ValueError if no
        pilot of this work directory has that id."""
        link = self._work / f"{self._config.backend.lower()}-{native_id}"
        if not link.is_symlink():
            raise ValueError(f"no pilot with {self._config.backend} job id {native_id!r} "
                             f"in {self._work} (its work directory)")
        self.directory = link.resolve()
        self.job = Job()
        self.job.set_job_status_callback(self._on_status)
        self._batch.attach(self.job, native_id)
        self._poller.start()

    def stop(self, reason: str, timeout: float) -> None:
        """Ask the instance to shut down and wait (at most ``timeout`` s) for the batch
        job to end; cancel it if it did not (or the instance cannot be reached)."""
        with self._lock:
            self._stopping = reason
            uri = self.uri
        if uri is not None and not self.ended:
            try:
                flux = importlib.import_module("flux")
                kvs = importlib.import_module("flux.kvs")
                handle = flux.Flux(uri)
                kvs.put(handle, STOP_KEY, reason)
                kvs.commit(handle)
            except OSError as e:
                log.info("pilot %s: asking Flux to stop failed (%s); cancelling its batch "
                         "job", self.native_id, e)
        if uri is None or not self._ended.wait(timeout):
            self.cancel()
            self._ended.wait(timeout)

    def cancel(self) -> None:
        if self.job.native_id is not None and not self.job.status.state.final:
            self._batch.cancel(self.job)

    def close(self) -> None:
        self._poller.stop()
        self._batch.close()

    def gone(self, detail: str) -> None:
        """The instance no longer answers (``detail``: how that showed, after "its Flux
        instance"). The batch
        scheduler says best why: give its word ``_BATCH_GRACE`` s to arrive, then end
        the pilot saying what is known (a pilot killed with SIGKILL at its walltime or
        cancel leaves no record of its own)."""
        if self._ended.wait(_BATCH_GRACE):
            return
        walltime, started = self._config.walltime, self._started_at
        ran_out = walltime is not None and started is not None \
            and time.monotonic() - started >= walltime.total_seconds()
        self._end(f"the pilot ({self.what}) ended: its Flux instance {detail}"
                  + (f"; its walltime ({walltime}) has run out" if ran_out else "")
                  + f"; its batch job reads {self.job.status.state.name} so far"
                  + self._log_tail())

    def alive(self) -> bool:
        """Whether the instance answers and is running (not shutting down): one RPC on
        a handle of its own (handles are not shared between threads)."""
        if self.uri is None or self.ended:
            return False
        try:
            flux = importlib.import_module("flux")
            state = flux.Flux(self.uri).rpc("state-machine.get").get()
        except OSError:
            return False
        return isinstance(state, dict) and state.get("state") == "run"

    # -- machinery ------------------------------------------------------------------
    def _on_status(self, job: Job, status: JobStatus) -> None:
        """The batch executor's dispatcher thread: the pilot's batch job changed."""
        if status.state is JobState.ACTIVE:
            self._started_at = time.monotonic()
            self._poller.poke()
        if status.state.final:
            self._end(self._why(status))

    def _why(self, status: JobStatus) -> str:
        with self._lock:
            stopping = self._stopping
        what = f"{self._config.backend} job {self.native_id}"
        if stopping is not None and status.state is JobState.COMPLETED:
            return f"the pilot ({what}) was closed: {stopping}"
        if status.state is JobState.CANCELED:
            return (f"the pilot's batch job ({what}) was cancelled"
                    + ("" if stopping else " from outside hpcjobs")
                    + (f": {status.message}" if status.message else ""))
        detail = status.message or f"exit code {status.exit_code}"
        if status.state is JobState.COMPLETED:  # the instance ended by itself
            detail = "its Flux instance ended without being asked to"
        return f"the pilot ({what}) ended: {detail}{self._log_tail()}"

    def _log_tail(self) -> str:
        """The last lines the pilot's Flux wrote to stderr (broker errors), if any."""
        if self.directory is None:
            return ""
        try:
            lines = (self.directory / "pilot.err").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        tail = [line for line in lines if line.strip()][-3:]
        return f" (its log: {' | '.join(tail)})" if tail else ""

    def _end(self, reason: str) -> None:
        if self._ended.is_set():
            return
        self._ended.set()
        self._poller.stop(wait=False)
        self._on_end(reason)

    def _look(self) -> float | None:
        """Poller thread: the URI file until it is there, then the pilot's own record
        of its end (pilot.sh), until the pilot ended."""
        if self._ended.is_set() or self.directory is None:
            return None
        if self.uri is None:
            return self._look_for_uri()
        try:
            status = (self.directory / "end").read_text().strip()
        except FileNotFoundError:
            return _WATCH_END
        # the batch scheduler says best why (cancelled, walltime); give its status a
        # moment to arrive, then go by the pilot's own record
        if self._ended.wait(_BATCH_GRACE):
            return None
        self._end(self._why_from_files(status))
        return None

    def _look_for_uri(self) -> float | None:
        assert self.directory is not None
        try:
            text = (self.directory / "uri").read_text()
        except FileNotFoundError:
            started = self._started_at
            if started is not None and time.monotonic() - started > self._config.start_timeout:
                self.cancel()
                self._end(f"the pilot ({self._config.backend} job {self.native_id}) ran "
                          f"{self._config.start_timeout:g} s without its Flux instance "
                          f"coming up; cancelled{self._log_tail()}")
                return None
            return _URI_POLL if started is not None else _URI_POLL_QUEUED
        lines = text.split("\n")
        if len(lines) < 2 or not lines[0]:
            return _URI_POLL
        self.uri = reachable_uri(lines[0], lines[1])
        log.debug("pilot %s: Flux at %s", self.native_id, self.uri)
        self._on_running(self.uri)
        return _WATCH_END

    def _why_from_files(self, status: str) -> str:
        assert self.directory is not None
        try:
            signals = (self.directory / "signals").read_text().split()
        except FileNotFoundError:
            signals = []
        what = f"the pilot ({self._config.backend} job {self.native_id})"
        with self._lock:
            stopping = self._stopping
        if signals:
            return (f"{what} was ended by its batch scheduler (SIG{signals[0]}: cancelled "
                    "from outside hpcjobs, or its walltime ran out)")
        if status == "0" and stopping is not None:
            return f"{what} was closed: {stopping}"
        return (f"{what} ended: its Flux instance exited with status {status} (its broker "
                f"died or failed){self._log_tail()}")


def reachable_uri(local_uri: str, host: str) -> str:
    """The URI by which this process reaches an instance whose broker said
    ``local_uri`` on ``host``: the same on that host, else through ssh (Flux's ssh
    connector, as ``flux proxy`` uses)."""
    if host in (socket.gethostname(), os.uname().nodename) or not local_uri.startswith("local://"):
        return local_uri
    return f"ssh://{host}{local_uri[len('local://'):]}"


def flux_command(configured: Path | None) -> str:
    """The ``flux`` the batch job runs: the configured one, else the one on PATH."""
    import shutil

    found = str(configured) if configured is not None else shutil.which("flux")
    if found is None or not os.access(found, os.X_OK):
        raise FileNotFoundError(
            "the pilot runs Flux as its batch job's body but finds no 'flux' command "
            f"({configured or 'none on PATH'}); install flux-core where the nodes see it, "
            "or give PilotConfig.flux")
    return os.path.abspath(found)
