"""``BatsimJobExecutor``: PSI/J jobs on a simulated cluster, with the executor as
Batsim's decision process (docs/batsim.md).

``submit`` turns a job into a dynamically registered Batsim job (profile from
:mod:`.profiles`, nodes from ``ResourceSpecV1``, walltime from
``JobAttributes.duration``); the session (:mod:`.session`) runs the simulation and the
job manager (:mod:`.jobmanager`) reports states back. All status times are simulated
seconds since the simulation began.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Mapping, Optional, Union, cast

from ...batsim_protocol.codecs import get_codec
from ...errors import InvalidJobException, InvalidJobStateError
from ...executor import JobExecutor, JobExecutorConfig
from ...job import Job
from ...spec import JobSpec
from ...state import JobState, JobStatus
from ...threads import weakly
from . import schedulers
from .config import IN_PROCESS, BatsimExecutorConfig, simulator_of
from .jobmanager import WORKLOAD, JobManager, JobRequest, Record
from .pacing import Pacer, RealTime, VirtualTime
from .platform import cores_per_host, write_platform
from .process import SimulatorProcess, batsim_flags, simulator_command
from .profiles import check_nodes, profile_for
from .schedulers.base import Scheduler
from .session import Session
from .simulator import Simulator

__all__ = ["BatsimJobExecutor"]

log = logging.getLogger(__name__)


class BatsimJobExecutor(JobExecutor):
    """Runs PSI/J jobs in a Batsim simulation (``hpcjobs.sim`` in this process by
    default; ``hpcjobs.sim`` or real ``batsim`` as a process)."""

    name = "batsim"
    config_class = BatsimExecutorConfig
    # a job is simulated, its program never started: its command only names a profile
    execs_programs = False

    def __init__(self, url: Optional[str] = None,
                 config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> None:
        super().__init__(url, config)
        cfg = self.settings
        # an unknown scheduler name fails here, not at the first submit
        self._scheduler: Scheduler = (schedulers.load(cfg.scheduler) if isinstance(cfg.scheduler, str)
                                      else cfg.scheduler)
        self._session: Optional[Session] = None
        self._session_lock = threading.Lock()
        self._session_finalizer: Optional[weakref.finalize[Any, Any]] = None
        # read now: a platform file the simulator cannot read fails here, naming the
        # setting, not at the first submit
        self._cores = cfg.cores if cfg.platform is None else cores_per_host(cfg.platform)
        self._run_dir: Optional[Path] = None

    @property
    def settings(self) -> BatsimExecutorConfig:
        """The configuration, typed."""
        return cast(BatsimExecutorConfig, self.config)

    @property
    def run_directory(self) -> Optional[Path]:
        """The directory of the current simulation (platform, simulator stderr,
        outputs), once the first job was submitted."""
        return self._run_dir

    @property
    def export_prefix(self) -> Optional[Path]:
        """Prefix of Batsim's output files (``<prefix>_jobs.csv``, ``<prefix>_schedule.csv``),
        complete once the executor is closed."""
        if self.settings.export_prefix is not None:
            return self.settings.export_prefix
        return None if self._run_dir is None else self._run_dir / "out"

    # -- the API ------------------------------------------------------------------------
    def submit(self, job: Job, hold: bool = False) -> None:
        """Register ``job`` in the simulation; on return it is QUEUED at its simulated
        submission time (the registration goes out in the decision process's next
        reply and is acknowledged by Batsim before the scheduler sees the job).
        Batsim's protocol has no hold: ``hold=True`` is NotImplementedError."""
        if hold:
            raise NotImplementedError("the batsim executor cannot hold jobs (Batsim's "
                                      "protocol has no hold)")
        spec = self._claim_for_submit(job)  # (not _submission: a generator per job)
        try:
            request = self._request(spec)
            self._session_for_submit().submit(request, job, lambda native_id: job.bind(self, native_id))
        except BaseException:
            job.bind(None, None)
            raise

    def cancel(self, job: Job) -> None:
        """KILL_JOB for a running job; a queued one is withdrawn from the scheduler
        (and rejected in Batsim). It ends CANCELED unless it ended first."""
        record = self._record_of(job)
        if record is not None and self._session is not None:
            with self._session.client_call():
                self._session.cancel(record)

    def list(self) -> list[str]:
        """Native ids of every job of the running simulation."""
        session = self._session
        return [] if session is None else session.native_ids()

    def attach(self, job: Job, native_id: str) -> None:
        """Follow job ``native_id`` of this executor's simulation (FAILED if there is none)."""
        self._claim_for_attach(job, native_id)
        session = self._session
        now = 0.0  # (status times are simulated seconds: before a simulation, its start)
        if session is not None:
            with session.client_call():
                if session.attach(native_id, job):
                    return
            now = session.now
        self._set_job_status(job, JobStatus(
            JobState.FAILED, now, message=f"no job {native_id!r} in this executor's simulation "
                                          "(Batsim jobs live as long as the executor that submitted them)"))

    def _close(self) -> None:
        session = self._session
        if session is not None:
            session.close(self.settings.close_timeout)
            if self._session_finalizer is not None:
                self._session_finalizer.detach()

    # -- helpers ------------------------------------------------------------------------
    def _record_of(self, job: Job) -> Optional[Record]:
        if job.executor is not self or job.native_id is None:
            raise InvalidJobStateError(f"job {job.id} was not submitted to this executor")
        session = self._session
        return None if session is None else session.record(job.native_id)

    def _request(self, spec: JobSpec) -> JobRequest:
        profile = profile_for(spec)
        nodes: Optional[int] = 1
        if spec.resources is not None:  # (resources_v1 would build a default object)
            res = spec.resources_v1
            nodes = res.requested_node_count
            if nodes is None:
                cores = res.computed_process_count * (res.cpu_cores_per_process or 1)
                nodes = math.ceil(cores / self._cores)
        walltime = spec.attributes.duration.total_seconds()
        if not walltime > 0:
            raise InvalidJobException(f"JobAttributes.duration must be > 0, got {spec.attributes.duration}")
        assert nodes is not None
        check_nodes(profile, nodes)
        return JobRequest(nodes, walltime, profile, (spec.executable or "", *(spec.arguments or [])),
                          spec.name, self._cores)

    def _session_for_submit(self) -> Session:
        with self._session_lock:
            self._check_open()
            if self._session is None:
                self._session = self._start_session()
                self._session_finalizer = weakref.finalize(self, self._session.abort)
            return self._session

    def _start_session(self) -> Session:
        cfg = self.settings
        run = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{self._instance}"
        run_dir = self.work_directory / f"run-{run}"
        run_dir.mkdir(mode=0o700, parents=True)
        self._run_dir = run_dir
        platform = cfg.platform or write_platform(run_dir / "platform.xml", cfg.hosts, cfg.cores, cfg.speed)
        prefix = self.export_prefix
        assert prefix is not None
        pacer: Pacer = VirtualTime(cfg.virtual_idle_grace) if cfg.virtual_time else RealTime(cfg.time_scale)
        # weakly: the session's thread must not keep a forgotten executor alive (the
        # same state again, a queued job's new pending reason or start estimate,
        # refreshes the status's metadata)
        # the workload, so the native ids, named after the run: an id of another
        # executor's simulation, given to attach(), matches no job of this one
        jm = JobManager(self._scheduler, weakly(self._set_job_status), workload=f"{WORKLOAD}-{run}")
        simulator: Simulator
        codec = get_codec(cfg.protocol)
        chosen = simulator_of(cfg)
        if chosen == IN_PROCESS:
            # imported here: the simulator's modules (30-50 ms) are not needed to drive
            # a simulator process
            from .inprocess import InProcessSimulator
            simulator = InProcessSimulator(batsim_flags(platform, prefix))
        else:
            simulator = SimulatorProcess(
                lambda endpoint: simulator_command(chosen, platform, prefix, endpoint, cfg.protocol),
                run_dir, cfg.endpoint, codec)
        return Session(f"hpcjobs-batsim-{self._instance}-decisions", simulator, run_dir, jm, pacer,
                       self._cores, codec.hello)

    def wait_condition(self, job: Job, lock: threading.Lock) -> threading.Condition:
        """Virtual time advances only while the client blocks in ``Job.wait()``: the
        condition a waiting client blocks on tells the session (:mod:`.pacing`)."""
        session = self._session
        if self.settings.virtual_time and session is not None:
            return session.track(job, lock)
        return threading.Condition(lock)

