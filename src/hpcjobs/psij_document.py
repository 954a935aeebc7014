"""psij-python's JSON job documents: a ``JobSpec`` as psij-python's ``JSONSerializer`` writes
and reads it (0.9.11's, and its main branch's with the staging fields), so a spec saved
by either library loads in the other.

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

psij-python's main branch (not on PyPI; the format as its ``serialize.py``, ``job_spec.py``
and ``staging.py`` have it at commit 447666939412570ca28f911204b37052958d429c) adds four
keys after ``launcher``, written when set, like the others::

    "stage_in": [{"source": "/data/in.txt", "target": "in.txt", "mode": 2}],
    "stage_out": [{"source": "out.txt", "target": "file:///r/out.txt", "flags": 5}],
    "cleanup": ["out.txt"], "cleanup_flags": 2

``source`` and ``target`` are strings (a URI as ``str(uri)`` gives it, a path as
``str(path)``); ``mode`` is a ``StagingMode``'s number, left out for COPY (1);
``flags`` and ``cleanup_flags`` are ``StageOutFlags`` numbers, left out when they are
psij-python's defaults: ON_SUCCESS (2) for a stage-out, ALWAYS (14) for the cleanup.
A document without staging keys is also 0.9.11's; psij-python 0.9.11 refuses one with them.

- psij-python's stage-out defaults to ON_SUCCESS, hpcjobs's to ALWAYS: the flags are
  written whenever they are not ON_SUCCESS, so each side reads what the other meant.
  Flags with no end condition read as psij-python means them, with ON_SUCCESS added.
- ``cleanup_flags`` with no end condition mean "never clean up" to psij-python (it
  does not normalise them) and ALWAYS to hpcjobs: refused, naming the field.
- psij-python's remote-executor modes (CLIENT_TO_HN 4, CLIENT_TO_CN 5, HN_TO_CN 6)
  have no hpcjobs equivalent: refused, naming the entry.

A ``JobAttributes`` or a ``ResourceSpecV1`` on its own is written as it is inside a
spec (psij-python writes them so, and reads neither back); a status is
:mod:`hpcjobs.psij_status_document`'s.

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
from .staging import (URI, StageIn, StageOut, StageOutFlags, StagingMode, flags_from_number,
                      uri_text)

__all__ = ["PSIJ_FORMAT", "PsijDocumentError", "spec_to_psij", "spec_from_psij",
           "resources_to_psij", "resources_from_psij", "attributes_to_psij",
           "attributes_from_psij", "SPEC_FIELDS", "ATTRIBUTE_FIELDS", "check_known",
           "check_type"]

#: the name :func:`hpcjobs.serialize.document_format` gives these documents
PSIJ_FORMAT = "psij-python"

#: psij-python's ``JobSpec`` constructor parameters, in its order (the order it writes
#: keys): 0.9.11's, then the staging ones its main branch adds
SPEC_FIELDS = ("executable", "arguments", "directory", "name", "inherit_environment",
               "environment", "stdin_path", "stdout_path", "stderr_path", "resources",
               "attributes", "pre_launch", "post_launch", "launcher",
               "stage_in", "stage_out", "cleanup", "cleanup_flags")
_STAGING_FIELDS = frozenset({"stage_in", "stage_out", "cleanup", "cleanup_flags"})
_RESOURCE_FIELDS = ("node_count", "process_count", "processes_per_node",
                    "cpu_cores_per_process", "gpu_cores_per_process", "exclusive_node_use",
                    "memory")
#: psij-python's ``JobAttributes`` constructor parameters, in its order
ATTRIBUTE_FIELDS = ("duration", "queue_name", "account", "reservation_id",
                     "custom_attributes", "project_name")
_PATHS = frozenset({"directory", "stdin_path", "stdout_path", "stderr_path", "pre_launch",
                    "post_launch"})
_STRINGS = frozenset({"executable", "name", "launcher"}) | _PATHS
# "<number> <unit>": psij-python writes "%s s" % total_seconds() ("90.0 s", "1e+20 s")
_AMOUNT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([hms])\s*\Z")
_UNIT = {"h": 3600, "m": 60, "s": 1}
# psij-python's StageIn/StageOut parameters, in its order; its defaults for them
_STAGE_IN_FIELDS = ("source", "target", "mode")
_STAGE_OUT_FIELDS = ("source", "target", "flags", "mode")
_PSIJ_STAGE_OUT_FLAGS = StageOutFlags.ON_SUCCESS
_PSIJ_CLEANUP_FLAGS = StageOutFlags.ALWAYS
#: StagingMode numbers psij-python's main branch has for its remote executor
_REMOTE_MODES = {4: "CLIENT_TO_HN", 5: "CLIENT_TO_CN", 6: "HN_TO_CN"}


class PsijDocumentError(ValueError):
    """A spec that psij-python's format cannot carry, or a document it does not describe
    (the message names the field). ``hpcjobs.serialize`` raises it as its
    ``SerializationError``."""


# -- writing ----------------------------------------------------------------------------
def spec_to_psij(spec: JobSpec) -> Dict[str, Any]:
    """``spec`` as psij-python's ``JSONSerializer`` would write it (a JSON-ready dict)."""
    d: Dict[str, Any] = {}
    for name in SPEC_FIELDS:
        if name in _STAGING_FIELDS:
            _staging_to_psij(spec, name, d)
        elif name == "resources":
            if spec.resources is not None:
                d[name] = resources_to_psij(spec.resources_v1)
        elif name == "attributes":
            d[name] = attributes_to_psij(spec.attributes, "attributes.")
        elif name == "inherit_environment":
            if not spec.inherit_environment:
                d[name] = False
        else:
            value = getattr(spec, name)
            if value is not None:
                d[name] = str(value) if name in _PATHS else copy.deepcopy(value)
    return d


def resources_to_psij(res: ResourceSpecV1) -> Dict[str, Any]:
    """``res`` as psij-python writes a resource spec, in a job spec or on its own."""
    # (psij-python leaves out what equals the default: None, and False for exclusivity)
    d: Dict[str, Any] = {name: getattr(res, name) for name in _RESOURCE_FIELDS
                         if getattr(res, name) is not None and getattr(res, name) is not False}
    d["__version"] = res.version
    return d


def attributes_to_psij(attrs: JobAttributes, where: str = "") -> Dict[str, Any]:
    """``attrs`` as psij-python writes job attributes; ``where`` prefixes the field
    names in errors (``"attributes."`` inside a spec)."""
    d: Dict[str, Any] = {}
    if attrs.duration != DEFAULT_DURATION:
        d["duration"] = _duration_text(attrs.duration, where + "duration")
    if attrs.queue_name is not None:
        d["queue_name"] = attrs.queue_name
    if attrs.account is not None and attrs.project_name is not None:
        raise PsijDocumentError(
            f"{where}project_name: psij-python's format has one field for account and "
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
                    f"{where}custom_attributes[{key!r}]: psij-python's format carries "
                    f"str, int and bool values, not a {type(value).__name__}; write the "
                    "hpcjobs format")
        d["custom_attributes"] = dict(attrs.custom_attributes)
    # psij-python writes its alias beside the account; a project alone stays one
    if attrs.account is not None or attrs.project_name is not None:
        d["project_name"] = attrs.account if attrs.account is not None else attrs.project_name
    return d


def _staging_to_psij(spec: JobSpec, name: str, d: Dict[str, Any]) -> None:
    # Entries in a stable order (psij-python writes its sets' iteration order): a spec
    # is written as the same text every time.
    if name == "stage_in" and spec.stage_in:
        d[name] = [_entry(f"stage_in[{i}]", {"source": s.source, "target": s.target},
                          None, s.mode)
                   for i, s in enumerate(sorted(spec.stage_in, key=_stage_key))]
    elif name == "stage_out" and spec.stage_out:
        d[name] = [_entry(f"stage_out[{i}]", {"source": s.source, "target": s.target},
                          s.flags, s.mode)
                   for i, s in enumerate(sorted(spec.stage_out, key=_stage_key))]
    elif name == "cleanup" and spec.cleanup:
        d[name] = sorted(str(p) for p in spec.cleanup)
    elif name == "cleanup_flags" and spec.cleanup_flags != _PSIJ_CLEANUP_FLAGS:
        d[name] = spec.cleanup_flags.value


def _stage_key(stage: Any) -> tuple[str, str, int, int]:
    # (two entries may differ only in their mode or flags)
    flags = getattr(stage, "flags", StageOutFlags.NONE)
    return str(stage.source), str(stage.target), stage.mode.value, flags.value


def _entry(where: str, ends: Dict[str, Any], flags: Any, mode: StagingMode) -> Dict[str, Any]:
    entry: Dict[str, Any] = {}
    for key, value in ends.items():
        try:
            entry[key] = uri_text(value) if isinstance(value, URI) else str(value)
        except ValueError as e:
            raise PsijDocumentError(f"{where}.{key}: {e}") from None
    if flags is not None and flags != _PSIJ_STAGE_OUT_FLAGS:
        entry["flags"] = flags.value
    if mode is not StagingMode.COPY:
        entry["mode"] = mode.value
    return entry


def _duration_text(duration: timedelta, where: str) -> str:
    if duration < timedelta(0) or duration.microseconds:
        raise PsijDocumentError(
            f"{where}: {duration!r}: psij-python reads whole, non-negative "
            "seconds only; round it or write the hpcjobs format")
    return f"{duration.days * 86400 + duration.seconds} s"


# -- reading ----------------------------------------------------------------------------
def spec_from_psij(d: Dict[str, Any]) -> JobSpec:
    """The ``JobSpec`` a psij-python document describes."""
    check_known("", d, SPEC_FIELDS)
    kwargs: Dict[str, Any] = {}
    for name in SPEC_FIELDS:
        value = d.get(name)
        if value is None:  # (psij-python writes no nulls; a hand-written one is unset)
            continue
        if name in _STRINGS:
            kwargs[name] = check_type(name, value, str)
        elif name == "inherit_environment":
            kwargs[name] = check_type(name, value, bool)
        elif name == "arguments":
            kwargs[name] = [check_type(f"arguments[{i}]", a, (str, int))
                            for i, a in enumerate(check_type(name, value, list))]
        elif name == "environment":
            kwargs[name] = {k: check_type(f"environment[{k!r}]", v, (str, int))
                            for k, v in check_type(name, value, dict).items()}
        elif name == "resources":
            kwargs[name] = resources_from_psij(check_type(name, value, dict), "resources.")
        elif name == "attributes":
            kwargs[name] = attributes_from_psij(check_type(name, value, dict), "attributes.")
        elif name == "stage_in":
            kwargs[name] = [_stage_in_from_psij(f"stage_in[{i}]", e)
                            for i, e in enumerate(check_type(name, value, list))]
        elif name == "stage_out":
            kwargs[name] = [_stage_out_from_psij(f"stage_out[{i}]", e)
                            for i, e in enumerate(check_type(name, value, list))]
        elif name == "cleanup":
            kwargs[name] = [check_type(f"cleanup[{i}]", p, str)
                            for i, p in enumerate(check_type(name, value, list))]
        else:
            kwargs[name] = _cleanup_flags_from_psij(value)
    try:
        return JobSpec(**kwargs)
    except (TypeError, ValueError, InvalidJobException) as e:
        raise PsijDocumentError(f"JobSpec: {e}") from None


def resources_from_psij(d: Dict[str, Any], where: str = "") -> ResourceSpecV1:
    """The resource spec psij-python wrote as ``d`` (``where`` as for
    :func:`attributes_to_psij`)."""
    check_known(where, d, _RESOURCE_FIELDS + ("__version",))
    version = d.get("__version", 1)
    if version != 1 or type(version) is not int:
        raise PsijDocumentError(
            f"{where}__version: resource spec version {version!r} is not supported")
    res = ResourceSpecV1()
    try:
        # set one by one, as psij-python does: counts load as they were saved
        for name in _RESOURCE_FIELDS:
            if d.get(name) is not None:
                setattr(res, name, d[name])
    except TypeError as e:
        raise PsijDocumentError(f"{where.rstrip('.') + ': ' if where else ''}{e}") from None
    return res


def attributes_from_psij(d: Dict[str, Any], where: str = "") -> JobAttributes:
    """The job attributes psij-python wrote as ``d`` (``where`` as for
    :func:`attributes_to_psij`)."""
    check_known(where, d, ATTRIBUTE_FIELDS)
    attrs = JobAttributes()
    if d.get("duration") is not None:
        attrs.duration = duration_from_text(
            check_type(f"{where}duration", d["duration"], str), f"{where}duration")
    for name in ("queue_name", "reservation_id"):
        if d.get(name) is not None:
            setattr(attrs, name, check_type(f"{where}{name}", d[name], str))
    account = d.get("account")
    project = d.get("project_name")
    if account is not None:
        attrs.account = check_type(f"{where}account", account, str)
    if project is not None and project != account:
        attrs.project_name = check_type(f"{where}project_name", project, str)
    custom = d.get("custom_attributes")
    if custom is not None:
        attrs.custom_attributes = copy.deepcopy(
            check_type(f"{where}custom_attributes", custom, dict))
    return attrs


def _stage_in_from_psij(where: str, value: Any) -> StageIn:
    entry = _staging_entry(where, value, _STAGE_IN_FIELDS)
    # (psij-python reads a source as a URI as written: no path made absolute here)
    source = _uri(f"{where}.source", entry["source"])
    try:
        return StageIn(source, entry["target"], _mode(where, entry))
    except (TypeError, ValueError) as e:
        raise PsijDocumentError(f"{where}: {e}") from None


def _stage_out_from_psij(where: str, value: Any) -> StageOut:
    entry = _staging_entry(where, value, _STAGE_OUT_FIELDS)
    flags = _PSIJ_STAGE_OUT_FLAGS
    if entry.get("flags") is not None:  # (no end condition: ON_SUCCESS, here and there)
        flags = _flags(f"{where}.flags", entry["flags"])
    target = _uri(f"{where}.target", entry["target"])
    try:
        return StageOut(entry["source"], target, flags, _mode(where, entry))
    except (TypeError, ValueError) as e:
        raise PsijDocumentError(f"{where}: {e}") from None


def _cleanup_flags_from_psij(value: Any) -> StageOutFlags:
    flags = _flags("cleanup_flags", value)
    if not flags & StageOutFlags.ALWAYS:
        raise PsijDocumentError(
            f"cleanup_flags: {value} has none of ON_SUCCESS, ON_ERROR and ON_CANCEL: "
            "psij-python then never cleans up, hpcjobs would always clean up; leave "
            "\"cleanup\" out instead")
    return flags


def _staging_entry(where: str, value: Any, fields: tuple[str, ...]) -> Dict[str, Any]:
    entry: Dict[str, Any] = check_type(where, value, dict)
    check_known(where + ".", entry, fields)
    for end in ("source", "target"):
        if entry.get(end) is None:
            raise PsijDocumentError(f"{where}.{end} is missing")
        check_type(f"{where}.{end}", entry[end], str)
    return entry


def _uri(where: str, text: str) -> URI:
    try:
        return URI(text)
    except ValueError as e:  # urllib's: "Invalid IPv6 URL"
        raise PsijDocumentError(f"{where}: {text!r}: {e}") from None


def _mode(where: str, entry: Dict[str, Any]) -> StagingMode:
    value = entry.get("mode")
    if value is None:
        return StagingMode.COPY
    number = check_type(f"{where}.mode", value, int)
    if number in _REMOTE_MODES:
        raise PsijDocumentError(
            f"{where}.mode: {number} is psij-python's {_REMOTE_MODES[number]}, a mode of its "
            "remote executor that hpcjobs does not have (COPY 1, LINK 2, MOVE 3)")
    try:
        return StagingMode(number)
    except ValueError:
        raise PsijDocumentError(
            f"{where}.mode: {number} is not a staging mode (COPY 1, LINK 2, MOVE 3)") from None


def _flags(where: str, value: Any) -> StageOutFlags:
    try:
        return flags_from_number(check_type(where, value, int))
    except ValueError as e:
        raise PsijDocumentError(f"{where}: {e}") from None


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


def check_known(where: str, d: Dict[str, Any], names: tuple[str, ...]) -> None:
    """Refuse a key of ``d`` that is not in ``names``, naming it (``where`` its prefix)."""
    unknown = [k for k in d if k not in names]
    if unknown:
        raise PsijDocumentError(
            f"unknown field(s) {', '.join(where + str(u) for u in unknown)} in a psij-python "
            f"document (known: {', '.join(names)})")


def check_type(where: str, value: Any, kind: Any) -> Any:
    """``value`` if it is of ``kind`` (a type or a tuple of them, a bool never an int),
    else an error naming the field ``where``."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # (a bool is an int to isinstance, never to psij-python's documents)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise PsijDocumentError(f"{where}: expected {names}, got {type(value).__name__}")
    return value
