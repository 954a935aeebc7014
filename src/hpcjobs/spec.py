"""``JobSpec``: what to run, where, with which environment, streams and resources.

Setters check types at once (``TypeError`` naming the field); ``validate()`` checks
what only makes sense as a whole (called by every executor at submit, before anything
reaches a backend) and raises ``InvalidJobException`` naming the field.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Set, TypeVar, Union

from ._typecheck import Field
from .attributes import JobAttributes
from .environment import VALID_NAME
from .errors import InvalidJobException
from .resources import ResourceSpec, ResourceSpecV1
from .staging import StageIn, StageOut, StageOutFlags, StagingMode

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["JobSpec"]

PathLike = Union[str, "os.PathLike[str]"]
_PATH_TYPES = (str, os.PathLike)
_COLLECTIONS = (set, frozenset, list, tuple)


def _to_path(value: PathLike) -> Path:
    # pathlib (and the urllib.parse and ipaddress it imports) when a path is first set,
    # not at import hpcjobs
    from pathlib import Path
    return Path(value)


def _to_str(value: Union[str, Path]) -> str:
    return os.fspath(value)


def _env_values(env: Dict[str, Union[str, int]]) -> Dict[str, str]:
    # The spec stores the caller's map as is; we only convert when ints are present.
    if all(type(v) is str for v in env.values()):
        return env  # type: ignore[return-value]
    return {k: str(v) for k, v in env.items()}


def _stage_ins(value: Iterable[Any]) -> Set[StageIn]:
    return _items(value, StageIn, "stage_in")


def _stage_outs(value: Iterable[Any]) -> Set[StageOut]:
    return _items(value, StageOut, "stage_out")


T = TypeVar("T")


def _items(value: Iterable[Any], cls: type[T], field: str) -> Set[T]:
    items = set(value)
    for item in items:
        if not isinstance(item, cls):
            raise TypeError(f"JobSpec.{field} holds {cls.__name__}s, got {type(item).__name__}: "
                            f"{item!r:.80}")
    return items


def _cleanup(value: Iterable[Any]) -> Set[Path]:
    for item in value:
        if not isinstance(item, _PATH_TYPES):
            raise TypeError(f"JobSpec.cleanup holds paths, got {type(item).__name__}: {item!r:.80}")
    return {_to_path(item) for item in value}


def _args(args: List[Union[str, int, Path]]) -> List[str]:
    if all(type(a) is str for a in args):
        return args  # type: ignore[return-value]
    return [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]


class JobSpec:
    """The spec's ``JobSpec`` with its Python keyword constructor.

    Paths may be given as ``str`` or ``os.PathLike`` and are stored as ``Path``.
    Environment values and arguments may be ints (stored as their decimal string).
    ``${NAME}`` in environment values and arguments is substituted per the spec
    (see :mod:`hpcjobs.environment`); nothing else is ever interpreted.
    """

    __slots__ = ("_executable", "_arguments", "_directory", "_name",
                 "_inherit_environment", "_environment", "_stdin_path", "_stdout_path",
                 "_stderr_path", "_resources", "_attributes", "_pre_launch",
                 "_post_launch", "_launcher", "_stage_in", "_stage_out", "_cleanup",
                 "_cleanup_flags")

    executable: Field[Optional[str]] = Field(_PATH_TYPES, optional=True, convert=_to_str)
    arguments: Field[Optional[List[str]]] = Field(List[Union[str, int, os.PathLike]],  # type: ignore[type-arg]
                                                  optional=True, convert=_args)
    directory: Field[Optional[Path]] = Field(_PATH_TYPES, optional=True, convert=_to_path)
    name: Field[Optional[str]] = Field(str, optional=True)
    inherit_environment: Field[bool] = Field(bool)
    environment: Field[Optional[Dict[str, str]]] = Field(
        Dict[str, Union[str, int]], optional=True, convert=_env_values)
    stdin_path: Field[Optional[Path]] = Field(_PATH_TYPES, optional=True, convert=_to_path)
    stdout_path: Field[Optional[Path]] = Field(_PATH_TYPES, optional=True, convert=_to_path)
    stderr_path: Field[Optional[Path]] = Field(_PATH_TYPES, optional=True, convert=_to_path)
    resources: Field[Optional[ResourceSpec]] = Field(ResourceSpec, optional=True)
    pre_launch: Field[Optional[Path]] = Field(_PATH_TYPES, optional=True, convert=_to_path)
    post_launch: Field[Optional[Path]] = Field(_PATH_TYPES, optional=True, convert=_to_path)
    launcher: Field[Optional[str]] = Field(str, optional=True)
    #: files staged in before the job runs, out after it ends (hpcjobs.staging)
    stage_in: Field[Optional[Set[StageIn]]] = Field(_COLLECTIONS, optional=True, convert=_stage_ins)
    stage_out: Field[Optional[Set[StageOut]]] = Field(_COLLECTIONS, optional=True,
                                                      convert=_stage_outs)
    #: paths deleted after stage-out (relative: in the job's directory) ...
    cleanup: Field[Optional[Set[Path]]] = Field(_COLLECTIONS, optional=True, convert=_cleanup)
    #: ... when the job ended in a way these flags cover
    cleanup_flags: Field[StageOutFlags] = Field(StageOutFlags, convert=StageOutFlags.normalized)

    def __init__(
        self,
        executable: Optional[PathLike] = None,
        arguments: Optional[List[Any]] = None,
        directory: Optional[PathLike] = None,
        name: Optional[str] = None,
        inherit_environment: bool = True,
        environment: Optional[Dict[str, Any]] = None,
        stdin_path: Optional[PathLike] = None,
        stdout_path: Optional[PathLike] = None,
        stderr_path: Optional[PathLike] = None,
        resources: Optional[ResourceSpec] = None,
        attributes: Optional[JobAttributes] = None,
        pre_launch: Optional[PathLike] = None,
        post_launch: Optional[PathLike] = None,
        launcher: Optional[str] = None,
        stage_in: Optional[Iterable[StageIn]] = None,
        stage_out: Optional[Iterable[StageOut]] = None,
        cleanup: Optional[Iterable[PathLike]] = None,
        cleanup_flags: StageOutFlags = StageOutFlags.ALWAYS,
    ) -> None:
        self.executable = executable
        self.arguments = arguments
        self.directory = directory
        self.name = name
        self.inherit_environment = inherit_environment
        self.environment = environment
        self.stdin_path = stdin_path
        self.stdout_path = stdout_path
        self.stderr_path = stderr_path
        self.resources = resources
        self._attributes: Optional[JobAttributes] = None
        self.attributes = attributes
        self.pre_launch = pre_launch
        self.post_launch = post_launch
        self.launcher = launcher
        self.stage_in = stage_in
        self.stage_out = stage_out
        self.cleanup = cleanup
        self.cleanup_flags = cleanup_flags

    # The spec makes attributes non-null; created on first use to keep JobSpec small.
    @property
    def attributes(self) -> JobAttributes:
        """The job's attributes (a default ``JobAttributes`` if none were set)."""
        attributes = self._attributes
        if attributes is None:
            attributes = self._attributes = JobAttributes()
        return attributes

    @attributes.setter
    def attributes(self, value: Optional[JobAttributes]) -> None:
        if value is not None and not isinstance(value, JobAttributes):
            raise TypeError(f"JobSpec.attributes must be JobAttributes, got {type(value).__name__}")
        self._attributes = value

    @property
    def resources_v1(self) -> ResourceSpecV1:
        """The resources as a ``ResourceSpecV1`` (defaults if none were set)."""
        r = self.resources
        if r is None:
            return ResourceSpecV1()
        if not isinstance(r, ResourceSpecV1):
            raise InvalidJobException(f"resource spec version {r.version} is not supported")
        return r

    def validate(self) -> None:
        """Raise ``InvalidJobException`` naming the field if the job cannot run as given,
        or ``TypeError`` if a list or dict field was changed in place to hold a value
        of the wrong type (as psij-python does at submit)."""
        self._recheck_containers()
        if not self.executable:
            raise InvalidJobException("JobSpec.executable is not set")
        for field in ("executable", "name", "launcher"):
            _no_nul(field, getattr(self, field))
        for i, arg in enumerate(self.arguments or ()):
            _no_nul(f"arguments[{i}]", arg)
        d = self.directory
        if d is not None and not (d.is_absolute() or str(d).startswith("~/") or str(d) == "~"):
            raise InvalidJobException(
                f"JobSpec.directory must be absolute or start with '~/', got {str(d)!r}")
        for field in ("directory", "stdin_path", "stdout_path", "stderr_path",
                      "pre_launch", "post_launch"):
            value = getattr(self, field)
            if value is not None:
                _no_nul(field, str(value))
        for key, value in (self.environment or {}).items():
            if not VALID_NAME.match(key):
                raise InvalidJobException(
                    f"JobSpec.environment: {key!r} is not a valid variable name "
                    "(letters, digits and '_', not starting with a digit)")
            _no_nul(f"environment[{key!r}]", value)
        if self.resources is not None:
            self.resources.validate()
        for stage in self.stage_in or ():
            _no_nul("stage_in", f"{stage.source} {stage.target}")
        for out in self.stage_out or ():
            _no_nul("stage_out", f"{out.source} {out.target}")
        for path in self.cleanup or ():
            _no_nul("cleanup", str(path))

    @property
    def stages_files(self) -> bool:
        """True if the job has anything to stage in or out or to clean up."""
        return bool(self.stage_in or self.stage_out or self.cleanup)

    def _recheck_containers(self) -> None:
        # Setters check what they are given, but a caller can change a list or dict
        # afterwards (spec.environment["X"] = [2]): pass them through their setters
        # again, which check and convert (ints to str) exactly as at construction.
        # A list of str and a dict of str to str, the usual case, are what their setters
        # would store unchanged: checked here without the setters' generic machinery.
        args = self.arguments
        if args is not None and not (type(args) is list and all(type(a) is str for a in args)):
            self.arguments = args
        env = self.environment
        if env is not None and not (type(env) is dict and all(
                type(k) is str and type(v) is str for k, v in env.items())):
            self.environment = env
        attributes = self._attributes
        if attributes is not None and attributes.custom_attributes is not None:
            attributes.custom_attributes = attributes.custom_attributes

    def to_dict(self) -> Dict[str, Any]:
        """The fields that were set, JSON-ready (see :mod:`hpcjobs.serialize`)."""
        d: Dict[str, Any] = {}
        for field in ("executable", "arguments", "name", "environment", "launcher"):
            if getattr(self, field) is not None:
                d[field] = getattr(self, field)
        for field in ("directory", "stdin_path", "stdout_path", "stderr_path",
                      "pre_launch", "post_launch"):
            if getattr(self, field) is not None:
                d[field] = str(getattr(self, field))
        if not self.inherit_environment:
            d["inherit_environment"] = False
        if self.resources is not None:
            d["resources"] = {"version": self.resources.version, **self.resources.to_dict()}
        if self._attributes is not None and self._attributes.to_dict():
            d["attributes"] = self._attributes.to_dict()
        if self.stage_in:
            d["stage_in"] = sorted(({"source": str(s.source), "target": str(s.target),
                                     "mode": s.mode.name} for s in self.stage_in),
                                   key=lambda e: (e["target"], e["source"], e["mode"]))
        if self.stage_out:
            d["stage_out"] = sorted(({"source": str(s.source), "target": str(s.target),
                                      "mode": s.mode.name, "flags": s.flags.value}
                                     for s in self.stage_out),
                                    key=lambda e: (e["source"], e["target"], e["mode"],
                                                   e["flags"]))
        if self.cleanup:
            d["cleanup"] = sorted(str(p) for p in self.cleanup)
        if self.cleanup_flags != StageOutFlags.ALWAYS:
            d["cleanup_flags"] = self.cleanup_flags.value
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "JobSpec":
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        if "resources" in d:
            res = dict(d["resources"])
            version = res.pop("version", 1)
            if version != 1:
                raise ValueError(f"unsupported resource spec version {version}")
            d["resources"] = ResourceSpecV1.from_dict(res)
        if "attributes" in d:
            d["attributes"] = JobAttributes.from_dict(d["attributes"])
        from .staging import URI
        if "stage_in" in d:
            d["stage_in"] = [StageIn(URI(e["source"]), e["target"], StagingMode[e["mode"]])
                             for e in d["stage_in"]]
        if "stage_out" in d:
            d["stage_out"] = [StageOut(e["source"], URI(e["target"]), StageOutFlags(e["flags"]),
                                       StagingMode[e["mode"]]) for e in d["stage_out"]]
        if "cleanup_flags" in d:
            d["cleanup_flags"] = StageOutFlags(d["cleanup_flags"])
        return cls(**d)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobSpec) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "JobSpec(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"


def _no_nul(field: str, value: Optional[str]) -> None:
    # NUL cannot pass through exec(), environ or a file name: refuse it up front
    if value is not None and "\0" in value:
        raise InvalidJobException(f"JobSpec.{field} contains a NUL character")
