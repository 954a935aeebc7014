"""Job attributes: how a job behaves (walltime, queue, account, project, reservation, extras).

``account`` is who pays (Slurm ``--account``, PBS ``-A``, Flux's bank); ``project_name``
is the project a site files the job under (PBS ``-P``, Flux's project). Schedulers
with one such field take whichever is set (docs/decisions.md).

``custom_attributes`` carries backend-specific settings under a ``<backend>.<key>``
prefix (``slurm.constraint``, ``flux.shell_options``, ``batsim.profile``); each backend
documents the keys it reads and ignores the others.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Dict, Optional

from ._typecheck import Field

__all__ = ["JobAttributes"]

DEFAULT_DURATION = timedelta(minutes=10)
_WALLTIME_UNIT = re.compile(r"\s*(\d+)\s*([hms])\s*\Z")
_UNIT = {"h": "hours", "m": "minutes", "s": "seconds"}


class JobAttributes:
    """The spec's ``JobAttributes`` with psij-python's ``account`` beside ``project_name``.

    The constructor takes psij-python 0.9.11's positional order (``account`` third).
    """

    __slots__ = ("_duration", "_queue_name", "_account", "_project_name", "_reservation_id",
                 "_custom_attributes")

    duration: Field[timedelta] = Field(timedelta)
    queue_name: Field[Optional[str]] = Field(str, optional=True)
    account: Field[Optional[str]] = Field(str, optional=True)
    project_name: Field[Optional[str]] = Field(str, optional=True)
    reservation_id: Field[Optional[str]] = Field(str, optional=True)
    custom_attributes: Field[Optional[Dict[str, Any]]] = Field(Dict[str, Any], optional=True)

    def __init__(
        self,
        duration: timedelta = DEFAULT_DURATION,
        queue_name: Optional[str] = None,
        account: Optional[str] = None,
        reservation_id: Optional[str] = None,
        custom_attributes: Optional[Dict[str, Any]] = None,
        project_name: Optional[str] = None,
    ) -> None:
        self.duration = duration
        self.queue_name = queue_name
        self.account = account
        self.project_name = project_name
        self.reservation_id = reservation_id
        self.custom_attributes = custom_attributes

    @staticmethod
    def parse_walltime(walltime: str) -> timedelta:
        """psij-python's walltime strings: ``hh:mm:ss``, ``hh:mm``, a bare number of
        minutes, or a number with ``h``, ``m`` or ``s``. ``ValueError`` otherwise."""
        text = walltime.strip()
        try:
            if ":" in text:
                parts = [int(p) for p in text.split(":")]
                if len(parts) in (2, 3):
                    return timedelta(hours=parts[0], minutes=parts[1],
                                     seconds=parts[2] if len(parts) == 3 else 0)
            elif text.isdigit():
                return timedelta(minutes=int(text))
            else:
                m = _WALLTIME_UNIT.match(text)
                if m is not None:
                    return timedelta(**{_UNIT[m.group(2)]: int(m.group(1))})
        except ValueError:
            pass
        raise ValueError(f"{walltime!r} is not a walltime: use hh:mm:ss, hh:mm, a number of "
                         "minutes, or a number followed by h, m or s")

    def set_custom_attribute(self, name: str, value: Any) -> None:
        """Set one custom attribute (``<backend>.<key>`` by convention)."""
        if not isinstance(name, str):
            raise TypeError(f"custom attribute names must be str, got {type(name).__name__}")
        if self.custom_attributes is None:
            self.custom_attributes = {}
        self.custom_attributes[name] = value

    def get_custom_attribute(self, name: str) -> Any:
        """One custom attribute, or None."""
        return None if self.custom_attributes is None else self.custom_attributes.get(name)

    def custom_for(self, prefix: str) -> Dict[str, Any]:
        """The custom attributes ``<prefix>.<key>``, keyed by ``<key>``."""
        p = prefix + "."
        return {k[len(p):]: v for k, v in (self.custom_attributes or {}).items()
                if k.startswith(p)}

    def to_dict(self) -> Dict[str, Any]:
        """The fields that differ from the defaults, for serialisation."""
        d: Dict[str, Any] = {}
        if self.duration != DEFAULT_DURATION:
            d["duration"] = self.duration.total_seconds()
        for name in ("queue_name", "account", "project_name", "reservation_id",
                     "custom_attributes"):
            if getattr(self, name) is not None:
                d[name] = getattr(self, name)
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "JobAttributes":
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        if "duration" in d:
            d["duration"] = timedelta(seconds=d["duration"])
        return cls(**d)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobAttributes) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "JobAttributes(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"
