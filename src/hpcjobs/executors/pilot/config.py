"""``PilotConfig``: what the pilot's batch job asks for and how the executor ends it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Optional

from ...executor import JobExecutorConfig
from ...remote.url import parse_ssh_url

__all__ = ["PilotConfig", "ON_CLOSE"]

#: what ``close()`` does with the pilot's jobs: cancel them, wait for them, or leave
#: them and the pilot running (another process can attach)
ON_CLOSE = ("cancel", "wait", "detach")


@dataclasses.dataclass
class PilotConfig(JobExecutorConfig):
    """The pilot: one batch job of ``backend`` (an executor name, ``slurm`` or ``pbs``)
    running a Flux instance. ``node_count``, ``walltime``, ``queue`` and ``account``
    are the batch job's, as for any job; ``cores_per_node`` asks for that many cores on
    each node (None: whole nodes), ``memory_per_node`` that many bytes (None: the
    scheduler's default, often a share per core: Flux keeps every job it ran in memory
    until it purges it, so a pilot of many jobs on a few cores wants more).
    ``backend_config``: the batch executor's own
    settings. ``attach``: the native id of a running pilot's batch job to attach to
    instead of starting one. ``on_close``: see ``ON_CLOSE``. ``flux``: the ``flux``
    command the batch job runs (default: the one on PATH, which the nodes must see).
    ``start_timeout``: seconds a started batch job may take to publish its Flux URI
    before the pilot counts as failed. ``flux_test_size``: run the instance as ``flux
    start --test-size=N``, N brokers on the pilot's one node that Flux takes for N
    nodes, each with all of the node's cores: multi-node jobs on one machine, to try
    a workflow or test it, not to run faster (the brokers share the node).
    ``node_name``: the name by which the batch executor's host (this machine, or the
    ``ssh://`` URL's login node) reaches the pilot's node over ssh, in place of the
    name the node gives itself (``uname -n``); ``{node}`` in it stands for that name
    (e.g. ``{node}-ib``). A name other than the host's own means the instance is
    behind it, reached by a second ssh hop (docs/pilot.md)."""

    backend: str = "slurm"
    node_count: int = 1
    walltime: Optional[timedelta] = None
    queue: Optional[str] = None
    account: Optional[str] = None
    cores_per_node: Optional[int] = None
    memory_per_node: Optional[int] = None
    backend_config: Optional[Mapping[str, Any]] = None
    attach: Optional[str] = None
    on_close: Literal["cancel", "wait", "detach"] = "cancel"
    flux: Optional[Path] = None
    start_timeout: float = 300.0
    flux_test_size: Optional[int] = None
    node_name: Optional[str] = None

    @property
    def flux_nodes(self) -> int:
        """How many nodes the jobs inside see: the test brokers, or the batch job's."""
        return self.flux_test_size or self.node_count

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.backend, str) or self.backend.lower() in ("pilot", "flux"):
            raise ValueError(f"PilotConfig.backend: a batch executor's name "
                             f"('slurm', 'pbs'), not {self.backend!r}")
        if not isinstance(self.node_count, int) or self.node_count < 1:
            raise ValueError(f"PilotConfig.node_count: a positive int, not "
                             f"{self.node_count!r}")
        if self.node_count > 1:
            # one broker per node needs the scheduler's launcher and PMI around
            # 'flux start', which no test here can exercise: refused, not half-done
            raise ValueError("PilotConfig.node_count: pilots of more than one node are "
                             "not supported yet (docs/pilot.md; flux_test_size gives Flux "
                             "several brokers on the one node)")
        if self.flux_test_size is not None and (
                isinstance(self.flux_test_size, bool) or not isinstance(self.flux_test_size, int)
                or self.flux_test_size < 1):
            raise ValueError(f"PilotConfig.flux_test_size: a positive int or None, not "
                             f"{self.flux_test_size!r}")
        if self.node_name is not None:
            if not isinstance(self.node_name, str) or not self.node_name:
                raise ValueError(f"PilotConfig.node_name: a host name (with '{{node}}' for "
                                 f"the node's own) or None, not {self.node_name!r}")
            try:
                parse_ssh_url("ssh://" + self.node_name.replace("{node}", "node"))
            except ValueError as e:
                raise ValueError(f"PilotConfig.node_name: {self.node_name!r} is not "
                                 f"[user@]host[:port] ({e})") from None
        if self.cores_per_node is not None and (not isinstance(self.cores_per_node, int)
                                                or self.cores_per_node < 1):
            raise ValueError(f"PilotConfig.cores_per_node: a positive int or None, "
                             f"not {self.cores_per_node!r}")
        if self.memory_per_node is not None and (not isinstance(self.memory_per_node, int)
                                                 or self.memory_per_node < 1):
            raise ValueError(f"PilotConfig.memory_per_node: bytes (a positive int) or None, "
                             f"not {self.memory_per_node!r}")
        if self.walltime is not None and (not isinstance(self.walltime, timedelta)
                                          or self.walltime <= timedelta(0)):
            raise ValueError(f"PilotConfig.walltime: a positive timedelta, not "
                             f"{self.walltime!r}")
        if self.on_close not in ON_CLOSE:
            raise ValueError(f"PilotConfig.on_close: one of {ON_CLOSE}, not "
                             f"{self.on_close!r}")
        if self.attach is not None and (not isinstance(self.attach, str) or not self.attach):
            raise ValueError(f"PilotConfig.attach: a batch job's native id, not "
                             f"{self.attach!r}")
