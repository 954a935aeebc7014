"""``Allocation``: the pilot's batch job, running ``flux start`` (pilot.sh), through the
batch executor's public API only (submit, attach, cancel, status callbacks).

The job gets a directory of the pilot's own on the batch executor's host (this machine,
or the login node of an ``ssh://`` URL), on the filesystem its nodes share: the job
writes its Flux URI and node there once the instance runs (``uri``); the client finds
it by reading that file through the host, and a fresh process finds the directory of a
pilot from the batch job's native id (a file ``<backend>-<native id>`` beside it, holding
the directory's name). The pilot ends when the client writes the key
``hpcjobs.pilot.stop`` into the instance's KVS (``flux kvs put`` run on the host): the
initial program (blocked on that key inside Flux) returns, and the instance shuts down.
Every file read and command goes through the batch executor's :class:`Host`, so the
same code serves a pilot here and one behind ssh.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...errors import CommandError
from ...executor import JobExecutor
from ...job import Job
from ...resources import ResourceSpecV1
from ...spec import JobSpec
from ...attributes import JobAttributes
from ...remote.tunnel import plain_words
from ...remote.url import parse_ssh_url
from ...state import JobState, JobStatus
from ...threads import PeriodicTask
from ..batch.host import LOCAL, Host, work_directory_on
from .config import PilotConfig

__all__ = ["Allocation", "STOP_KEY"]

log = logging.getLogger(__name__)

#: the KVS key whose creation ends the pilot (pilot.sh waits for it)
STOP_KEY = "hpcjobs.pilot.stop"
#: how often the client looks for the URI file once the batch job runs (a stat of a file
#: on the shared file system, for the few seconds the instance takes to come up); over
#: ssh each look is a round trip, an ssh session started
_URI_POLL = 0.05
_URI_POLL_REMOTE = 0.25
#: how often before the batch scheduler says the job runs: a queued pilot may wait for
#: hours, and its ACTIVE status pokes the look at once; this is only the fallback
_URI_POLL_QUEUED = 5.0
#: then how often it looks for the pilot's record of its end (pilot.sh): the fallback for
#: a batch scheduler slow to say the pilot ended, for as long as the pilot lives (over
#: ssh a round trip each: less often, the batch executor's own ticks say it too)
_WATCH_END = 1.0
_WATCH_END_REMOTE = 5.0
#: seconds the batch scheduler's word on a pilot that ended may take before the
#: pilot's own record is taken instead
_BATCH_GRACE = 10.0
#: bound on a flux command run on the host (asking the instance to stop, its state)
_FLUX_TIMEOUT = 60.0
#: the bytes of the pilot's stderr read for the tail of its log
_LOG_TAIL = 8192


class Allocation:
    """One pilot's batch job. ``on_running(url, config)`` is called once the instance
    can be reached, with the URL and config of a Flux executor on it; ``on_end(reason)``
    once the batch job has ended (or never published its URI within
    ``start_timeout``), with why."""

    def __init__(self, config: PilotConfig, url: str | None,
                 on_running: Callable[[str, Mapping[str, Any]], None],
                 on_end: Callable[[str], None]) -> None:
        self._config = config
        self._url = url
        self._on_running = on_running
        self._on_end = on_end
        # the ssh options (and nothing else) of the pilot's config reach the batch
        # executor, unless its own config says otherwise
        backend_config = config.backend_config
        if url is not None and (backend_config is None or isinstance(backend_config, Mapping)):
            backend_config = {"ssh_options": list(config.ssh_options), **(backend_config or {})}
        self._batch = JobExecutor.get_instance(config.backend, url=url, config=backend_config)
        host = getattr(self._batch, "host", LOCAL)
        #: where the batch executor runs its commands and keeps its files: this machine
        #: or the ``ssh://`` URL's host; the pilot's files and flux commands go there too
        self.host: Host = host if isinstance(host, Host) else LOCAL
        if url is not None and self.host is LOCAL:
            self._batch.close()
            raise ValueError(f"PilotConfig.backend: the {config.backend} executor does not "
                             f"say where it runs {url!r}'s commands; a pilot over ssh needs "
                             "a batch executor ('slurm', 'pbs')")
        self._work: Path | None = None
        self._flux = ""  # the flux command on the host (``start``, ``attach``)
        self.job = Job()
        self.directory: Path | None = None
        #: the URL of the pilot's Flux for a Flux executor of this process
        self.uri: str | None = None
        #: the instance's URI for a flux command run on the host
        self._host_uri: str | None = None
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

    @property
    def remote(self) -> bool:
        return self.host is not LOCAL

    def remote_work_directory(self) -> Path:
        """Over ssh, where the pilots' directories are: PilotConfig's ``work_directory``
        on the host (default ``~/.hpcjobs/work/pilot`` there)."""
        configured = self._config.work_directory
        return work_directory_on(self.host, os.fspath(configured) if configured is not None
                                 else None, "pilot")

    def start(self, work: Path) -> None:
        """Submit the batch job (raises as the batch executor's submit does, and
        FileNotFoundError, before anything is submitted, without a flux command)."""
        self._work = work
        self._flux = self._flux_command()
        self.directory = work / f"pilot-{uuid.uuid4().hex[:12]}"
        host = self.host
        host.make_dirs(os.fspath(work))
        host.make_dir(os.fspath(self.directory))
        body = importlib.resources.files(__package__).joinpath("pilot.sh").read_bytes()
        host.write_file(os.fspath(self.directory / "pilot.sh"), body)
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
        # (replaces the file of a batch id the scheduler reused)
        host.write_file(os.fspath(self._link(str(self.job.native_id))),
                        self.directory.name.encode(), exclusive=False)
        host.flush()
        self._poller.start()

    def attach(self, work: Path, native_id: str) -> None:
        """Follow the running pilot whose batch job is ``native_id``; ValueError if no
        pilot of this work directory has that id."""
        self._work = work
        link = self._link(native_id)
        found = self.host.read_files([os.fspath(link)])[0]
        if found is None:
            raise ValueError(f"no pilot with {self._config.backend} job id {native_id!r} "
                             f"in {work} (its work directory, on {self.host.where})")
        # (a directory: the symbolic link earlier versions made)
        name = found.data.decode(errors="replace").strip()
        self.directory = link if found.is_dir else work / name
        self._flux = self._flux_command()
        self.job = Job()
        self.job.set_job_status_callback(self._on_status)
        self._batch.attach(self.job, native_id)
        self._poller.start()

    def _link(self, native_id: str) -> Path:
        assert self._work is not None
        return self._work / f"{self._config.backend.lower()}-{native_id}"

    def stop(self, reason: str, timeout: float) -> None:
        """Ask the instance to shut down and wait (at most ``timeout`` s) for the batch
        job to end; cancel it if it did not (or the instance cannot be reached)."""
        with self._lock:
            self._stopping = reason
            uri = self._host_uri
        if uri is not None and not self.ended:
            try:
                self.host.run(["env", f"FLUX_URI={uri}", self._flux, "kvs", "put",
                               f"{STOP_KEY}={reason}"], timeout=_FLUX_TIMEOUT)
            except CommandError as e:
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

    def alive(self) -> bool | None:
        """Whether the instance answers and is running (not shutting down), as
        ``flux uptime`` on the host says; None if that cannot be known now (the
        command did not run: the connection to the host is down)."""
        uri = self._host_uri
        if uri is None or self.ended:
            return False
        try:
            r = self.host.run(["env", f"FLUX_URI={uri}", self._flux, "uptime"],
                              timeout=_FLUX_TIMEOUT, check=False)
        except CommandError as e:  # (not run, or no answer: the link, not the instance)
            log.info("pilot %s: its state cannot be asked: %s", self.native_id, e)
            return None
        # "HH:MM:SS <state> <how long>, owner ..." (flux-uptime(1))
        words = r.stdout.split()
        return r.returncode == 0 and len(words) > 1 and words[1] == "run"

    # -- machinery ------------------------------------------------------------------
    def _flux_command(self) -> str:
        """The ``flux`` the batch job runs, as a path on the host: PilotConfig.flux,
        else the one on the PATH there; FileNotFoundError if there is none."""
        configured = self._config.flux
        if not self.remote:
            return flux_command(configured)
        r = self.host.run(["sh", "-c", 'command -v "$1"', "sh", os.fspath(configured or "flux")],
                          timeout=_FLUX_TIMEOUT, check=False)
        found = r.stdout.strip()
        if r.returncode != 0 or not found.startswith("/"):
            raise FileNotFoundError(
                f"the pilot runs Flux as its batch job's body but {self.host.where} has no "
                f"'flux' command ({configured or 'none on the PATH there'}); give its path "
                "there as PilotConfig.flux")
        # (the Flux executor inside gives it to the login shell: ValueError if it cannot)
        plain_words([found], "PilotConfig.flux")
        return found

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

    def _read(self, *names: str) -> list[bytes | None]:
        """The pilot's files ``names`` (None: missing or unreadable), in one request."""
        if self.directory is None:
            return [None] * len(names)
        try:
            found = self.host.read_files([os.fspath(self.directory / n) for n in names])
        except OSError as e:  # (over ssh: the connection; read again at the next look)
            log.info("pilot %s: its files cannot be read now: %s", self.native_id, e)
            return [None] * len(names)
        return [None if f is None or f.is_dir else f.data for f in found]

    def _log_tail(self) -> str:
        """The last lines the pilot's Flux wrote to stderr (broker errors), if any."""
        if self.directory is None:
            return ""
        path = os.fspath(self.directory / "pilot.err")
        try:
            found = self.host.read_files([path])[0]
            if found is not None and found.size > _LOG_TAIL:
                found = self.host.read_files([path], [found.size - _LOG_TAIL])[0]
        except OSError:
            return ""
        if found is None:
            return ""
        lines = found.data.decode(errors="replace").splitlines()
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
        end, signals = self._read("end", "signals")
        if end is None:
            return _WATCH_END_REMOTE if self.remote else _WATCH_END
        # the batch scheduler says best why (cancelled, walltime); give its status a
        # moment to arrive, then go by the pilot's own record
        if self._ended.wait(_BATCH_GRACE):
            return None
        self._end(self._why_from_files(end.decode(errors="replace").strip(),
                                       (signals or b"").decode(errors="replace").split()))
        return None

    def _look_for_uri(self) -> float | None:
        assert self.directory is not None
        (text,) = self._read("uri")
        started = self._started_at
        if text is None:
            if started is not None and time.monotonic() - started > self._config.start_timeout:
                self.cancel()
                self._end(f"the pilot ({self._config.backend} job {self.native_id}) ran "
                          f"{self._config.start_timeout:g} s without its Flux instance "
                          f"coming up; cancelled{self._log_tail()}")
                return None
            if started is None:
                return _URI_POLL_QUEUED
            return _URI_POLL_REMOTE if self.remote else _URI_POLL
        lines = text.decode(errors="replace").split("\n")
        if len(lines) < 2 or not lines[0]:
            return _URI_POLL
        local_uri, node = lines[0], lines[1]
        try:
            self._host_uri, url, config = self._reach(local_uri, node)
        except ValueError as e:
            self.cancel()
            self._end(f"the pilot ({self.what}) cannot be used: {e}; cancelled")
            return None
        self.uri = url
        log.debug("pilot %s: Flux at %s (%s on %s)", self.native_id, url, local_uri, node)
        self._on_running(url, config)
        return _WATCH_END_REMOTE if self.remote else _WATCH_END

    def _reach(self, local_uri: str, node: str) -> tuple[str, str, Mapping[str, Any]]:
        """From the URI the broker gave on ``node``: the URI a flux command on the host
        uses, and the URL and config of a Flux executor of this process on it."""
        address = node_address(self._config.node_name, node)
        if not self.remote:
            uri = reachable_uri(local_uri, address,
                                (socket.gethostname(), os.uname().nodename))
            return uri, uri, {}
        assert self._url is not None
        if not local_uri.startswith("local://"):
            raise ValueError(f"its Flux gave the URI {local_uri!r}, not a local:// socket")
        login = self.host.run(["uname", "-n"], timeout=_FLUX_TIMEOUT).stdout.strip()
        uri = reachable_uri(local_uri, address, (login,))
        config = {"ssh_options": list(self._config.ssh_options), "flux_command": self._flux}
        if not uri.startswith("local://"):
            # on a node behind the login node: the Flux executor goes on from there
            config["node"] = address
        url = str(dataclasses.replace(parse_ssh_url(self._url),
                                      path=local_uri[len("local://"):]))
        return uri, url, config

    def _why_from_files(self, status: str, signals: list[str]) -> str:
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


def node_address(template: str | None, node: str) -> str:
    """The name a host reaches the pilot's ``node`` by: PilotConfig.node_name with
    ``{node}`` standing for the node's own name, or that name; ValueError if ssh could
    misread it (the node's name is the pilot's word, not ours)."""
    address = node if template is None else template.replace("{node}", node)
    try:
        parse_ssh_url(f"ssh://{address}")
    except ValueError as e:
        raise ValueError(f"the pilot's node is named {address!r}, which cannot be given to "
                         f"ssh ({e})") from None
    return address


def reachable_uri(local_uri: str, node: str, here: tuple[str, ...]) -> str:
    """The URI by which a process on a host named one of ``here`` reaches an instance
    whose broker said ``local_uri`` on ``node``: the same on that node, else through
    ssh (Flux's ssh connector, as ``flux proxy`` uses)."""
    if node in here or not local_uri.startswith("local://"):
        return local_uri
    return f"ssh://{node}{local_uri[len('local://'):]}"


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
