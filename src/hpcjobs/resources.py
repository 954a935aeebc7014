"""Resource requirements: the spec's ``ResourceSpec`` and ``ResourceSpecV1``.

``ResourceSpecV1`` is homogeneous: a number of processes (or nodes x processes per
node), each with CPU cores, GPU cores and memory. As in psij-python, the constructor
refuses an inconsistent spec (``process_count = node_count x processes_per_node``,
exactly) with ``InvalidJobException``, and the ``computed_*`` properties fill in what
was not given with psij-python's rules; ``validate()`` (called at submit) checks again,
since fields can be changed after construction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

from ._typecheck import Field
from .errors import InvalidJobException

__all__ = ["ResourceSpec", "ResourceSpecV1"]

_COUNTS = ("node_count", "process_count", "processes_per_node",
           "cpu_cores_per_process", "gpu_cores_per_process", "memory")


class ResourceSpec(ABC):
    """Base class of resource specifications; ``version`` says which kind."""

    __slots__ = ()

    @property
    @abstractmethod
    def version(self) -> int:
        """The version of the resource specification class (1 for V1)."""

    def get_version(self) -> int:
        """Spec spelling of :attr:`version`."""
        return self.version

    @staticmethod
    def get_instance(version: int) -> "ResourceSpec":
        """A new, default resource spec of the given version (only 1 exists)."""
        if version == 1:
            return ResourceSpecV1()
        raise ValueError(f"no resource specification of version {version!r}")

    @abstractmethod
    def validate(self) -> None:
        """Raise ``InvalidJobException`` naming the fields if the spec is inconsistent."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The fields that were set, for serialisation."""


class ResourceSpecV1(ResourceSpec):
    """The spec's homogeneous resource description.

    Unset fields are None. ``memory`` is in bytes per node. Any two of
    ``node_count``, ``process_count`` and ``processes_per_node`` may be given (all
    three if they agree); the process count must be an exact multiple of the other.
    The ``computed_*`` properties are psij-python's (1 for what nothing implies);
    backends ask :attr:`requested_node_count`, which stays None when only processes
    were asked for, so the scheduler places them.
    """

    __slots__ = tuple("_" + f for f in _COUNTS) + ("_exclusive_node_use",)

    node_count: Field[Optional[int]] = Field(int, optional=True)
    process_count: Field[Optional[int]] = Field(int, optional=True)
    processes_per_node: Field[Optional[int]] = Field(int, optional=True)
    cpu_cores_per_process: Field[Optional[int]] = Field(int, optional=True)
    gpu_cores_per_process: Field[Optional[int]] = Field(int, optional=True)
    memory: Field[Optional[int]] = Field(int, optional=True)
    exclusive_node_use: Field[bool] = Field(bool)

    def __init__(
        self,
        node_count: Optional[int] = None,
        process_count: Optional[int] = None,
        processes_per_node: Optional[int] = None,
        cpu_cores_per_process: Optional[int] = None,
        gpu_cores_per_process: Optional[int] = None,
        exclusive_node_use: bool = False,
        memory: Optional[int] = None,
    ) -> None:
        # (psij-python's parameter order, so positional calls mean the same)
        self.node_count = node_count
        self.exclusive_node_use = exclusive_node_use
        self.process_count = process_count
        self.processes_per_node = processes_per_node
        self.cpu_cores_per_process = cpu_cores_per_process
        self.gpu_cores_per_process = gpu_cores_per_process
        self.memory = memory
        self.validate()

    @property
    def version(self) -> int:
        return 1

    @property
    def computed_process_count(self) -> int:
        """Total processes: process_count, else node_count x processes_per_node (each
        defaulting to 1)."""
        if self.process_count is not None:
            return self.process_count
        return (self.node_count or 1) * (self.processes_per_node or 1)

    @property
    def computed_processes_per_node(self) -> int:
        """Processes per node: as given, else process_count / node_count (node_count
        defaulting to 1, so a lone process_count means all on one node), else 1."""
        if self.processes_per_node is not None:
            return self.processes_per_node
        if self.process_count is not None:
            return self.process_count // (self.node_count or 1)
        return 1

    @property
    def computed_node_count(self) -> int:
        """Nodes: node_count, else process_count / processes_per_node, else 1."""
        nodes = self.requested_node_count
        return 1 if nodes is None else nodes

    @property
    def requested_node_count(self) -> Optional[int]:
        """The nodes a backend should ask for: node_count, or the count implied by
        process_count and processes_per_node; None when the spec says nothing about
        nodes, so the scheduler places the processes (psij-python's batch templates
        likewise emit a node count only when one was given). An hpcjobs addition."""
        if self.node_count is not None:
            return self.node_count
        if self.process_count is not None and self.processes_per_node is not None:
            return self.process_count // self.processes_per_node
        return None

    @property
    def memory_kb(self) -> Optional[int]:
        """``memory`` in KiB (rounded down), or None if not set (as psij-python)."""
        return self.memory // 1024 if self.memory else None

    def validate(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            minimum = 0 if name == "gpu_cores_per_process" else 1
            if value is not None and value < minimum:
                raise InvalidJobException(
                    f"ResourceSpecV1.{name} must be >= {minimum}, got {value}")
        n, p, ppn = self.node_count, self.process_count, self.processes_per_node
        if n is not None and p is not None and ppn is not None:
            if n * ppn != p:
                raise InvalidJobException(
                    f"ResourceSpecV1: process_count ({p}) != node_count ({n}) x "
                    f"processes_per_node ({ppn}); set at most two of them")
        elif p is not None and (n is not None or ppn is not None):
            other, value = ("node_count", n) if n is not None else ("processes_per_node", ppn)
            assert value is not None
            if p % value:
                raise InvalidJobException(
                    f"ResourceSpecV1: process_count ({p}) must be a multiple of "
                    f"{other} ({value})")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f: getattr(self, f) for f in _COUNTS
                             if getattr(self, f) is not None}
        if self.exclusive_node_use:
            d["exclusive_node_use"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResourceSpecV1":
        """Inverse of :meth:`to_dict`, faithful to the document: fields are set one by
        one, so counts changed after construction (which only ``validate()`` at submit
        refuses) load as they were saved."""
        res = cls()
        for name, value in d.items():
            if name not in _COUNTS and name != "exclusive_node_use":
                raise TypeError(f"ResourceSpecV1 has no field {name!r}")
            setattr(res, name, value)
        return res

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceSpecV1) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "ResourceSpecV1(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"
