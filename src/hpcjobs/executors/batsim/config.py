"""Settings of the Batsim executor (``JobExecutor.get_instance('batsim', config=...)``).

Every field has a working default: with no config at all the executor simulates the
documented default platform (16 hosts, 1 core each, 1 Gflop/s) with the embedded
simulator ``hpcjobs.sim`` in its own process (no socket), FCFS scheduling and
simulated time running at wall-clock speed. Bad values raise ``TypeError`` /
``ValueError`` naming the field when the executor is created, never at first submit.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ...batsim_protocol import units
from ...batsim_protocol.codecs import NAMES
from ...batsim_protocol.errors import InputError
from ...executor import JobExecutorConfig

if TYPE_CHECKING:
    from .schedulers.base import Scheduler

__all__ = ["BatsimExecutorConfig", "DEFAULT_HOSTS", "PROTOCOLS", "IN_PROCESS", "simulator_of"]

#: the ``simulator`` setting for hpcjobs.sim in the executor's process
IN_PROCESS = "in-process"

#: the protocols with dynamic jobs (the legacy one has none: see hpcjobs-schedule)
PROTOCOLS = tuple(name for name in NAMES if name != "legacy")

#: hosts of the platform written when neither ``platform`` nor ``hosts`` is given
DEFAULT_HOSTS = 16


@dataclasses.dataclass
class BatsimExecutorConfig(JobExecutorConfig):
    """How the simulated cluster is built and driven.

    ``platform``: a SimGrid platform file; when None, one is written from ``hosts``
    identical hosts with ``cores`` cores of ``speed`` flop/s each (a SimGrid speed
    string such as ``"1Gf"`` or a number).
    ``simulator``: ``"in-process"`` (hpcjobs.sim in this process: no socket, no
    encoding), ``"hpcjobs.sim"`` (it as a process over ZeroMQ), ``"auto"`` (a ``batsim``
    program on PATH, else the ``hpcjobs.sim`` process), ``"batsim"`` or the path of a
    batsim program; None (the default): ``"in-process"``, or ``"auto"`` when
    ``endpoint`` is set or ``protocol`` is not ``"json"`` (both are about a wire).
    ``time_scale``: simulated seconds per wall-clock second (real-time mode).
    ``virtual_time``: run the simulation as fast as it can while the client is only
    waiting (``Job.wait``) instead of following the wall clock; deterministic.
    ``virtual_idle_grace``: in virtual time, also advance after the client made no
    call for this many wall-clock seconds (for clients that wait on callbacks rather
    than ``Job.wait``); None: only ``Job.wait`` advances the simulation.
    ``scheduler``: a name from the ``hpcjobs.batsim_schedulers`` entry points
    (``fcfs``, ``easy``, third-party ones) or a ``Scheduler`` instance.
    ``export_prefix``: prefix of Batsim's output files (``<prefix>_jobs.csv``, ...);
    default ``<work directory>/<run>/out``.
    ``protocol``: the Batsim protocol generation to speak (:mod:`hpcjobs.batsim_protocol.codecs`):
    ``"json"`` (Batsim 3-4), ``"batprotocol"`` (Batsim 5) or ``"batprotocol_json"``
    (Batsim 5's messages in FlatBuffers' JSON form); with Batsim 5 ``simulator="auto"``
    means ``hpcjobs.sim``: give a Batsim 5 program's path to use one.
    ``endpoint``: the ZeroMQ endpoint of a simulator process; default an ``ipc://``
    socket in a private (0700) directory.
    ``close_timeout``: wall-clock seconds ``close()`` lets the simulation run to its
    end (fast) before the simulator is stopped.
    """

    platform: Optional[Path] = None
    hosts: int = DEFAULT_HOSTS
    cores: int = 1
    speed: Union[str, float] = "1Gf"
    simulator: Optional[str] = None
    time_scale: float = 1.0
    virtual_time: bool = False
    virtual_idle_grace: Optional[float] = 1.0
    scheduler: Union[str, "Scheduler"] = "fcfs"
    export_prefix: Optional[Path] = None
    endpoint: Optional[str] = None
    protocol: str = "json"
    close_timeout: float = 60.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.platform is not None:
            if not isinstance(self.platform, (str, Path)):
                raise TypeError(f"batsim config 'platform' must be a path, got {type(self.platform).__name__}")
            self.platform = Path(self.platform).expanduser()
            if not self.platform.is_file():
                raise ValueError(f"batsim config 'platform': no such file {str(self.platform)!r}")
        for name in ("hosts", "cores"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"batsim config {name!r} must be an int >= 1, got {value!r}")
        if isinstance(self.speed, bool) or not isinstance(self.speed, (str, int, float)):
            raise TypeError(f"batsim config 'speed' must be a SimGrid speed string or a number, "
                            f"got {self.speed!r}")
        if isinstance(self.speed, str):
            _check_speed(self.speed)
        else:  # (an infinite one would be written 'inff', which only SimGrid reads)
            _positive("speed", self.speed)
        if self.simulator is not None and (not isinstance(self.simulator, str) or not self.simulator):
            raise TypeError(f"batsim config 'simulator' must be a non-empty str, got {self.simulator!r}")
        if (self.simulator not in (None, IN_PROCESS, "auto", "hpcjobs.sim")
                and shutil.which(self.simulator) is None):
            raise ValueError(f"batsim config 'simulator': {self.simulator!r} is not a program on PATH "
                             f"(use {IN_PROCESS!r}, 'hpcjobs.sim' or 'auto')")
        _positive("time_scale", self.time_scale)
        _positive("close_timeout", self.close_timeout)
        if self.virtual_idle_grace is not None:
            _positive("virtual_idle_grace", self.virtual_idle_grace)
        if not isinstance(self.virtual_time, bool):
            raise TypeError(f"batsim config 'virtual_time' must be a bool, got {self.virtual_time!r}")
        if self.export_prefix is not None:
            if not isinstance(self.export_prefix, (str, Path)):
                raise TypeError("batsim config 'export_prefix' must be a path")
            self.export_prefix = Path(self.export_prefix).expanduser()
        if self.endpoint is not None and (not isinstance(self.endpoint, str)
                                          or not self.endpoint.startswith(("ipc://", "tcp://"))):
            raise ValueError(f"batsim config 'endpoint' must be an ipc:// or tcp:// address, "
                             f"got {self.endpoint!r}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"batsim config 'protocol' must be one of {', '.join(PROTOCOLS)}, "
                             f"got {self.protocol!r} (the legacy protocol has no dynamic jobs: "
                             "run static workloads with hpcjobs-schedule)")
        if self.simulator == IN_PROCESS and (self.endpoint is not None or self.protocol != "json"):
            raise ValueError(f"batsim config 'simulator' {IN_PROCESS!r} exchanges the JSON protocol's events "
                             "with no socket: 'endpoint' and 'protocol' need a simulator process "
                             "(simulator 'hpcjobs.sim', 'auto' or a batsim program)")
        if not isinstance(self.scheduler, str):
            from .schedulers.base import Scheduler
            if not isinstance(self.scheduler, Scheduler):
                raise TypeError("batsim config 'scheduler' must be a scheduler name or a Scheduler "
                                f"instance, got {type(self.scheduler).__name__}")


def _check_speed(text: str) -> None:
    """A SimGrid speed string (one speed per pstate, comma-separated; the hosts run at
    the first) as the simulators read it: both stop at once on a platform they cannot
    read, failing every job submitted."""
    try:
        value = units.speed(text, "batsim config 'speed'")
    except InputError as e:
        raise ValueError(str(e)) from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"batsim config 'speed' must be > 0, got {text!r}")


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"batsim config {name!r} must be a number, got {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"batsim config {name!r} must be a finite number > 0, got {value!r}")


def simulator_of(config: BatsimExecutorConfig) -> str:
    """The ``simulator`` setting, its default (None) resolved."""
    if config.simulator is not None:
        return config.simulator
    return IN_PROCESS if config.endpoint is None and config.protocol == "json" else "auto"
