"""psij-python's JSON job documents: a ``JobSpec`` as psij-python 0.9.11's ``JSONSerializer``
writes and reads it, so a spec saved by either library loads in the other.

The document is the spec's constructor arguments that differ from their defaults, as
one flat JSON object (no envelope)::

    {"executable": "/bin/echo", "arguments": ["hi"], "directory": "/tmp",
     "resources": {"node_count": 2, "__version": 1},
     "attributes": {"duration": "90 s", "account": "a1", "project_name": "a1"}}

Paths are strings, ``resources`` carries its version as ``"__version"``, ``attributes``
is always there (psij-python writes ``{}`` for the defaults) and ``duration`` is a
string: ``"<seconds> s"``, or any of psij-python's walltime forms (``hh:mm:ss``,
``hh:mm``, minutes, ``<n> h|m|s``).

Where the two libraries differ, the document keeps the meaning, not psij-python's slips:

- psij-python writes ``"90.0 s"`` and reads that back as 0 seconds (its walltime parser
  takes the digits after the point). We read it as 90 s and write whole seconds
  (``"90 s"``), which psij-python reads right; a fraction of a second or a negative
  duration cannot be written (psij-python would read another value).
- psij-python's ``project_name`` is a deprecated alias of ``account`` and it writes
  both keys with the same value; hpcjobs has two fields. ``{"account": a,
  "project_name": a}`` and ``{"account": a}`` read as the account, ``{"project_name":
  p}`` alone as the project, two different values as both. Writing, a spec may carry
  only one of them (psij-python would take the project as the account).
- psij-python writes custom attribute values that are str, int or bool, and reads
  nothing else; we read any plain JSON value and write only those three.

What cannot be written or read is a ``SerializationError`` naming the field.
"""

from __future__ import annotations

import copy
import math
import re
from datetime import timedelta
from typing import Any, Dict

from .attributes import DEFAULT_DURATION, JobAttributes
from .errors import InvalidJobException
from .resources import ResourceSpecV1
from .spec import JobSpec

__all__ = ["PSIJ_FORMAT", "PsijDocumentError", "spec_to_psij", "spec_from_psij",
           "SPEC_FIELDS"]

#: the name :func:`hpcjobs.serialize.document_format` gives these documents
PSIJ_FORMAT = "psij-python"

#: psij-python 0.9.11's constructor parameters, in its order (the order it writes keys)
SPEC_FIELDS = ("executable", "arguments", "directory", "name", "inherit_environment",
               "environment", "stdin_path", "stdout_path", "stderr_path", "resources",
               "attributes", "pre_launch", "post_launch", "launcher")
_RESOURCE_FIELDS = ("node_count", "process_count", "processes_per_node",
                    "cpu_cores_per_process", "gpu_cores_per_process", "exclusive_node_use",
                    "memory")
_ATTRIBUTE_FIELDS = ("duration", "queue_name", "account", "reservation_id",
                     "custom_attributes", "project_name")
_PATHS = frozenset({"directory", "stdin_path", "stdout_path", "stderr_path", "pre_launch",
                    "post_launch"})
_STRINGS = frozenset({"executable", "name", "launcher"}) | _PATHS
# "<number> <unit>": psij-python writes "%s s" % total_seconds() ("90.0 s", "1e+20 s")
_AMOUNT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([hms])\s*\Z")
_UNIT = {"h": 3600, "m": 60, "s": 1}


class PsijDocumentError(ValueError):
    """A spec that psij-python's format cannot carry, or a document it does not describe
    (the message names the field). ``hpcjobs.serialize`` raises it as its
    ``SerializationError``."""


# -- writing ----------------------------------------------------------------------------
def spec_to_psij(spec: JobSpec) -> Dict[str, Any]:
    """``spec`` as psij-python's ``JSONSerializer`` would write it (a JSON-ready dict)."""
    for name in ("stage_in", "stage_out", "cleanup"):
        if getattr(spec, name):  # (psij-python's main branch has them: not written yet)
            raise PsijDocumentError(
                f"{name}: psij-python 0.9.11's format has no staging; write the hpcjobs "
                "format")
    d: Dict[str, Any] = {}
    for name in SPEC_FIELDS:
        if name == "resources":
            if spec.resources is not None:
                d[name] = _resources_to_psij(spec.resources_v1)
        elif name == "attributes":
            d[name] = _attributes_to_psij(spec.attributes)
        elif name == "inherit_environment":
            if not spec.inherit_environment:
                d[name] = False
        else:
            value = getattr(spec, name)
            if value is not None:
                d[name] = str(value) if name in _PATHS else copy.deepcopy(value)
    return d


def _resources_to_psij(res: ResourceSpecV1) -> Dict[str, Any]:
    # (psij-python leaves out what equals the default: None, and False for exclusivity)
    d: Dict[str, Any] = {name: getattr(res, name) for name in _RESOURCE_FIELDS
                         if getattr(res, name) is not None and getattr(res, name) is not False}
    d["__version"] = res.version
    return d


def _attributes_to_psij(attrs: JobAttributes) -> Dict[str, Any]:
    d: Dict[str, Any] = {}
    if attrs.duration != DEFAULT_DURATION:
        d["duration"] = _duration_text(attrs.duration)
    if attrs.queue_name is not None:
        d["queue_name"] = attrs.queue_name
    if attrs.account is not None and attrs.project_name is not None:
        raise PsijDocumentError(
            "attributes.project_name: psij-python's format has one field for account and "
            "project_name (its project_name is an alias of account); set only one, or "
            "write the hpcjobs format")
    if attrs.account is not None:
        d["account"] = attrs.account
    if attrs.reservation_id is not None:
        d["reservation_id"] = attrs.reservation_id
    if attrs.custom_attributes is not None:
        for key, value in attrs.custom_attributes.items():
            if type(value) not in (str, int, bool):
                raise PsijDocumentError(
                    f"attributes.custom_attributes[{key!r}]: psij-python's format carries "
                    f"str, int and bool values, not a {type(value).__name__}; write the "
                    "hpcjobs format")
        d["custom_attributes"] = dict(attrs.custom_attributes)
    # psij-python writes its alias beside the account; a project alone stays one
    if attrs.account is not None or attrs.project_name is not None:
        d["project_name"] = attrs.account if attrs.account is not None else attrs.project_name
    return d


def _duration_text(duration: timedelta) -> str:
    if duration < timedelta(0) or duration.microseconds:
        raise PsijDocumentError(
            f"attributes.duration: {duration!r}: psij-python reads whole, non-negative "
            "seconds only; round it or write the hpcjobs format")
    return f"{duration.days * 86400 + duration.seconds} s"


# -- reading ----------------------------------------------------------------------------
def spec_from_psij(d: Dict[str, Any]) -> JobSpec:
    """The ``JobSpec`` a psij-python document describes."""
    _known("", d, SPEC_FIELDS)
    kwargs: Dict[str, Any] = {}
    for name in SPEC_FIELDS:
        value = d.get(name)
        if value is None:  # (psij-python writes no nulls; a hand-written one is unset)
            continue
        if name in _STRINGS:
            kwargs[name] = _typed(name, value, str)
        elif name == "inherit_environment":
            kwargs[name] = _typed(name, value, bool)
        elif name == "arguments":
            kwargs[name] = [_typed(f"arguments[{i}]", a, (str, int))
                            for i, a in enumerate(_typed(name, value, list))]
        elif name == "environment":
            kwargs[name] = {k: _typed(f"environment[{k!r}]", v, (str, int))
                            for k, v in _typed(name, value, dict).items()}
        elif name == "resources":
            kwargs[name] = _resources_from_psij(_typed(name, value, dict))
        else:
            kwargs[name] = _attributes_from_psij(_typed(name, value, dict))
    try:
        return JobSpec(**kwargs)
    except (TypeError, ValueError, InvalidJobException) as e:
        raise PsijDocumentError(f"JobSpec: {e}") from None


def _resources_from_psij(d: Dict[str, Any]) -> ResourceSpecV1:
    _known("resources.", d, _RESOURCE_FIELDS + ("__version",))
    version = d.get("__version", 1)
    if version != 1 or type(version) is not int:
        raise PsijDocumentError(
            f"resources.__version: resource spec version {version!r} is not supported")
    res = ResourceSpecV1()
    try:
        # set one by one, as psij-python does: counts load as they were saved
        for name in _RESOURCE_FIELDS:
            if d.get(name) is not None:
                setattr(res, name, d[name])
    except TypeError as e:
        raise PsijDocumentError(f"resources: {e}") from None
    return res


def _attributes_from_psij(d: Dict[str, Any]) -> JobAttributes:
    _known("attributes.", d, _ATTRIBUTE_FIELDS)
    attrs = JobAttributes()
    if d.get("duration") is not None:
        attrs.duration = duration_from_text(
            _typed("attributes.duration", d["duration"], str), "attributes.duration")
    for name in ("queue_name", "reservation_id"):
        if d.get(name) is not None:
            setattr(attrs, name, _typed(f"attributes.{name}", d[name], str))
    account = d.get("account")
    project = d.get("project_name")
    if account is not None:
        attrs.account = _typed("attributes.account", account, str)
    if project is not None and project != account:
        attrs.project_name = _typed("attributes.project_name", project, str)
    custom = d.get("custom_attributes")
    if custom is not None:
        attrs.custom_attributes = copy.deepcopy(
            _typed("attributes.custom_attributes", custom, dict))
    return attrs


def duration_from_text(text: str, where: str) -> timedelta:
    """A duration in psij-python's forms: ``"<seconds> s"`` as it writes them (``"90.0
    s"`` is 90 seconds), ``<n> h|m|s``, ``hh:mm:ss``, ``hh:mm`` or minutes."""
    m = _AMOUNT.match(text)
    try:
        if m is not None:
            amount = float(m.group(1)) * _UNIT[m.group(2)]
            if math.isfinite(amount):
                return timedelta(seconds=amount)
        else:
            return JobAttributes.parse_walltime(text)
    except (ValueError, OverflowError):
        pass
    raise PsijDocumentError(f"{where}: {text!r} is not a duration psij-python writes "
                            "('<seconds> s', hh:mm:ss, hh:mm, minutes, or <n> h|m|s)")


def _known(where: str, d: Dict[str, Any], names: tuple[str, ...]) -> None:
    unknown = [k for k in d if k not in names]
    if unknown:
        raise PsijDocumentError(
            f"unknown field(s) {', '.join(where + str(u) for u in unknown)} in a psij-python "
            f"document (known: {', '.join(names)})")


def _typed(where: str, value: Any, kind: Any) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # (a bool is an int to isinstance, never to psij-python's documents)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise PsijDocumentError(f"{where}: expected {names}, got {type(value).__name__}")
    return value
