"""Resource requirements: the spec's ``ResourceSpec`` and ``ResourceSpecV1``.

``ResourceSpecV1`` is homogeneous: a number of processes (or nodes x processes per
node), each with CPU cores, GPU cores and memory. Consistency is checked by
``validate()`` (called at submit), so fields can be set in any order.
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

    @abstractmethod
    def validate(self) -> None:
        """Raise ``InvalidJobException`` naming the fields if the spec is inconsistent."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The fields that were set, for serialisation."""


class ResourceSpecV1(ResourceSpec):
    """The spec's homogeneous resource description.

    Unset fields are None. ``memory`` is in bytes per node. Setting both
    ``node_count`` and ``process_count`` is allowed when they agree (the spec forbids
    it; we accept the consistent case and derive processes per node). The
    ``computed_*`` properties give what a backend should request.
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
        exclusive_node_use: bool = False,
        process_count: Optional[int] = None,
        processes_per_node: Optional[int] = None,
        cpu_cores_per_process: Optional[int] = None,
        gpu_cores_per_process: Optional[int] = None,
        memory: Optional[int] = None,
    ) -> None:
        self.node_count = node_count
        self.exclusive_node_use = exclusive_node_use
        self.process_count = process_count
        self.processes_per_node = processes_per_node
        self.cpu_cores_per_process = cpu_cores_per_process
        self.gpu_cores_per_process = gpu_cores_per_process
        self.memory = memory

    @property
    def version(self) -> int:
        return 1

    @property
    def computed_process_count(self) -> int:
        """Total processes: process_count, else node_count x processes_per_node, else 1."""
        if self.process_count is not None:
            return self.process_count
        return (self.node_count or 1) * (self.processes_per_node or 1)

    @property
    def computed_processes_per_node(self) -> int:
        """Processes per node: as given, else implied by the counts (rounded up), else 1."""
        if self.processes_per_node is not None:
            return self.processes_per_node
        if self.process_count is not None and self.node_count is not None:
            return -(-self.process_count // self.node_count)
        return 1

    @property
    def computed_node_count(self) -> Optional[int]:
        """Nodes to request, or None to let the backend place the processes."""
        if self.node_count is not None:
            return self.node_count
        if self.processes_per_node is not None and self.process_count is not None:
            return -(-self.process_count // self.processes_per_node)
        return None

    def validate(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            minimum = 0 if name == "gpu_cores_per_process" else 1
            if value is not None and value < minimum:
                raise InvalidJobException(
                    f"ResourceSpecV1.{name} must be >= {minimum}, got {value}")
        n, p, ppn = self.node_count, self.process_count, self.processes_per_node
        if n is not None and p is not None and ppn is not None and n * ppn != p:
            raise InvalidJobException(
                f"ResourceSpecV1: node_count ({n}) x processes_per_node ({ppn}) != "
                f"process_count ({p}); set at most two of them")
        if n is not None and p is not None and p < n:
            raise InvalidJobException(
                f"ResourceSpecV1: process_count ({p}) is less than node_count ({n}), "
                "so some nodes would run no process")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f: getattr(self, f) for f in _COUNTS
                             if getattr(self, f) is not None}
        if self.exclusive_node_use:
            d["exclusive_node_use"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResourceSpecV1":
        """Inverse of :meth:`to_dict`."""
        return cls(**d)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceSpecV1) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "ResourceSpecV1(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"
