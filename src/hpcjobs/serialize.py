"""JSON documents for ``JobSpec`` and ``Job``: save a job, submit it later or elsewhere.

A document is one JSON object with a versioned envelope::

    {"format": "hpcjobs.job", "version": 1, "kind": "JobSpec", "spec": {...}}
    {"format": "hpcjobs.job", "version": 1, "kind": "Job", "spec": {...} | null,
     "id": "...", "native_id": "..." | null, "executor": "local" | null,
     "status": {"state": "COMPLETED", "time": 1.7e9, "exit_code": 0, ...}}

``spec`` holds the fields that were set, as the model's ``to_dict`` gives them (paths as
strings, resources with their ``version``, attributes without their defaults), with one
refinement: ``duration`` is a number of seconds written so that it reads back exactly
(an int when whole; a float only when that float maps back to the same microseconds).

The round trip is exact: ``loads(dumps(x))`` equals ``x`` field by field, strings byte
for byte (the output is ASCII, with ``\\uXXXX`` escapes, so even lone surrogates from
undecodable file names survive). What cannot round-trip is refused with a
``SerializationError`` naming the field, never silently changed: custom attribute and
metadata values must be plain JSON (dict with str keys, list, str, int, finite float,
bool, None; a tuple would come back as a list). Reading checks the envelope, the kind,
the version and every field name, so a document from a newer hpcjobs fails clearly.

Reading takes either format: this one, or psij-python's (a ``JobSpec`` as psij-python's
``JSONSerializer`` writes it: 0.9.11's, or its main branch's, which adds the staging
keys; see :mod:`hpcjobs.psij_document`). psij-python's serializer also writes a
``JobStatus`` (its main branch: :mod:`hpcjobs.psij_status_document`), and a
``JobAttributes`` or a ``ResourceSpecV1`` on its own (both versions, though neither
reads those back); they are read and written here too. :func:`document_format` says
which format a document is in, :func:`document_kind` which object it holds: an object
with a ``"format"`` key is this format; psij-python's is told by its keys, as its main
branch tells them: ``"state"`` makes a ``JobStatus``, ``"__version"`` a
``ResourceSpecV1``, keys that are all ``JobAttributes`` parameters (at least one) a
``JobAttributes``, keys that are all ``JobSpec`` parameters (or none) a ``JobSpec``;
anything else is refused naming the field. Writing takes ``format=PSIJ_FORMAT`` for
psij-python's (not a ``Job``: psij-python refuses to write one that has a spec); a spec
that stages files is written with main's staging keys, which psij-python 0.9.11
refuses to read.

Staging in this format: ``stage_in`` and ``stage_out`` are lists of ``{"source",
"target", "mode"}`` objects (``mode`` a ``StagingMode`` name, ``"COPY"``), each
stage-out with its ``"flags"`` number; ``cleanup`` a list of paths; ``cleanup_flags``
a number, left out for ALWAYS.

psij-python's ``JSONSerializer`` (``dumps``/``loads``, ``dump``/``load`` on a stream,
``to_dict``/``from_dict``, and main's ``dumpd``/``loadd``) is offered over these
functions. Like psij-python's, it writes a ``JobSpec`` in psij-python's format
(``JSONSerializer(format=FORMAT)`` writes this one); a ``Job`` in this one, the only
one that holds it; a ``JobStatus``, ``JobAttributes`` or ``ResourceSpecV1`` in
psij-python's, the only one that holds them on their own.

A loaded ``Job`` is a record: it has its id, spec, native id and last status, but no
executor. To follow the real job again, attach a fresh one::

    ex.attach(Job(record.spec), record.native_id)
"""

from __future__ import annotations

import copy
import json
import math
from datetime import timedelta
from typing import IO, Any, Dict, Optional, Union

from .attributes import JobAttributes
from .job import Job
from .psij_document import (ATTRIBUTE_FIELDS, PSIJ_FORMAT, SPEC_FIELDS, PsijDocumentError,
                            attributes_from_psij, attributes_to_psij, resources_from_psij,
                            resources_to_psij, spec_from_psij, spec_to_psij)
from .psij_status_document import status_from_psij, status_to_psij
from .resources import ResourceSpecV1
from .spec import JobSpec
from .staging import URI, StagingMode, flags_from_number, uri_text
from .state import JobState, JobStatus

__all__ = ["FORMAT", "PSIJ_FORMAT", "VERSION", "SerializationError", "dumps", "loads",
           "to_dict", "from_dict", "document_format", "document_kind", "status_to_dict",
           "status_from_dict", "Serializer", "JSONSerializer", "Document", "PSIJSerializable"]

FORMAT = "hpcjobs.job"
VERSION = 1

# the model's fields are its slots ("_executable" -> "executable")
_SPEC_FIELDS = frozenset(s[1:] for s in JobSpec.__slots__)
_RESOURCE_FIELDS = frozenset(s[1:] for s in ResourceSpecV1.__slots__) | {"version"}
_ATTRIBUTE_FIELDS = frozenset(s[1:] for s in JobAttributes.__slots__)
_STATUS_FIELDS = frozenset({"state", "time", "exit_code", "message", "metadata"})
_PSIJ_SPEC_FIELDS = SPEC_FIELDS
_STAGE_IN_FIELDS = frozenset({"source", "target", "mode"})
_STAGE_OUT_FIELDS = _STAGE_IN_FIELDS | {"flags"}
_JOB_FIELDS = frozenset({"format", "version", "kind", "spec", "id", "native_id", "executor",
                         "status"})

#: what a job document holds (psij-python's format holds all but a ``Job``, this module's
#: a ``JobSpec`` or a ``Job``)
Document = Union[JobSpec, Job, JobStatus, JobAttributes, ResourceSpecV1]
#: psij-python main's name for what its serializer reads and writes (type hints that
#: name it keep working through the ``psij`` alias)
PSIJSerializable = Union[JobSpec, JobStatus]
#: the objects only psij-python's format holds on their own
_PSIJ_ONLY = (JobStatus, JobAttributes, ResourceSpecV1)


class SerializationError(ValueError):
    """A value cannot be written as a job document, or a document cannot be read.

    The message names the offending field (``spec.attributes.custom_attributes['k'][0]``).
    """


# -- writing ----------------------------------------------------------------------------
def dumps(obj: Document, *, indent: Optional[int] = None, format: str = FORMAT) -> str:
    """The JSON document for ``obj`` (ASCII text), in ``format``: ``FORMAT`` (this
    module's: a ``JobSpec`` or a ``Job``) or ``PSIJ_FORMAT`` (psij-python's: anything
    but a ``Job``)."""
    return json.dumps(to_dict(obj, format=format), indent=indent, allow_nan=False)


def to_dict(obj: Document, *, format: str = FORMAT) -> Dict[str, Any]:
    """The document for ``obj`` as a JSON-ready dict (see the module docstring)."""
    if format == PSIJ_FORMAT:
        if isinstance(obj, Job):
            raise SerializationError(
                "psij-python's format holds a JobSpec, JobStatus, JobAttributes or "
                "ResourceSpecV1, not a Job (psij-python refuses to write a Job that has a "
                f"spec); write a Job in the {FORMAT!r} format")
        return _to_psij(obj)
    if format != FORMAT:
        raise ValueError(f"unknown job document format {format!r} "
                         f"(expected {FORMAT!r} or {PSIJ_FORMAT!r})")
    if isinstance(obj, _PSIJ_ONLY):
        raise SerializationError(
            f"the {FORMAT!r} format holds a JobSpec or a Job, not a {type(obj).__name__} "
            f"on its own; write it in psij-python's format (format={PSIJ_FORMAT!r})")
    if isinstance(obj, JobSpec):
        return {"format": FORMAT, "version": VERSION, "kind": "JobSpec",
                "spec": _spec_to_dict(obj)}
    if isinstance(obj, Job):
        executor = obj.executor
        return {"format": FORMAT, "version": VERSION, "kind": "Job",
                "spec": None if obj.spec is None else _spec_to_dict(obj.spec),
                "id": obj.id, "native_id": obj.native_id,
                "executor": None if executor is None else executor.name,
                "status": status_to_dict(obj.status)}
    raise TypeError(f"can only serialise a JobSpec or a Job, got {type(obj).__name__}")


def _to_psij(obj: Document) -> Dict[str, Any]:
    try:
        if isinstance(obj, JobSpec):
            return spec_to_psij(obj)
        if isinstance(obj, JobStatus):
            return status_to_psij(obj)
        if isinstance(obj, JobAttributes):
            return attributes_to_psij(obj)
        if isinstance(obj, ResourceSpecV1):
            return resources_to_psij(obj)
    except PsijDocumentError as e:
        raise SerializationError(str(e)) from None
    raise TypeError(f"can only serialise a JobSpec, JobStatus, JobAttributes or "
                    f"ResourceSpecV1 in psij-python's format, got {type(obj).__name__}")


def status_to_dict(status: JobStatus) -> Dict[str, Any]:
    """A ``JobStatus`` as a JSON-ready dict (unset fields left out)."""
    d: Dict[str, Any] = {"state": status.state.name, "time": status.time}
    if status.exit_code is not None:
        d["exit_code"] = status.exit_code
    if status.message is not None:
        d["message"] = status.message
    if status.metadata is not None:
        _check_json("status.metadata", status.metadata)
        d["metadata"] = status.metadata
    return d


def _spec_to_dict(spec: JobSpec) -> Dict[str, Any]:
    for uri, name in ([(s.source, "stage_in") for s in spec.stage_in or ()]
                      + [(s.target, "stage_out") for s in spec.stage_out or ()]):
        try:
            uri_text(uri)
        except ValueError as e:
            raise SerializationError(f"spec.{name}: {e}") from None
    d = copy.deepcopy(spec.to_dict())  # the caller may change it; the spec must not follow
    attributes = d.get("attributes")
    if attributes is not None:
        if "duration" in attributes:
            attributes["duration"] = _seconds(spec.attributes.duration)
        if "custom_attributes" in attributes:
            _check_json("spec.attributes.custom_attributes", attributes["custom_attributes"])
    return d


def _seconds(duration: timedelta) -> Union[int, float]:
    # timedelta counts whole microseconds; a float of seconds carries them exactly only
    # up to ~71 years (53-bit mantissa), so past that we refuse rather than round.
    micros = (duration.days * 86400 + duration.seconds) * 1_000_000 + duration.microseconds
    if micros % 1_000_000 == 0:
        return micros // 1_000_000
    seconds = micros / 1_000_000
    if timedelta(seconds=seconds) != duration:
        raise SerializationError(
            f"spec.attributes.duration: {duration!r} has more digits than a JSON number "
            "of seconds can carry exactly; round it to whole seconds")
    return seconds


def _check_json(where: str, value: Any) -> None:
    """Refuse anything that would not come back from JSON as the same value."""
    if value is None or type(value) in (str, int, bool):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise SerializationError(f"{where}: {value!r} is not a JSON number")
        return
    if type(value) is list:
        for i, item in enumerate(value):
            _check_json(f"{where}[{i}]", item)
        return
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise SerializationError(
                    f"{where}: key {key!r} is a {type(key).__name__}; JSON keys are strings")
            _check_json(f"{where}[{key!r}]", item)
        return
    raise SerializationError(
        f"{where}: a {type(value).__name__} is not a JSON value (use dict with str keys, "
        "list, str, int, float, bool or None)")


# -- reading ----------------------------------------------------------------------------
def loads(text: Union[str, bytes]) -> Document:
    """The object a document describes; ``SerializationError`` if invalid."""
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SerializationError(f"not a JSON document: {e}") from None
    return from_dict(d)


def document_format(d: Any) -> str:
    """Which format a document (a dict, or its JSON text) is in: ``FORMAT`` or
    ``PSIJ_FORMAT``; ``SerializationError`` naming the field if neither. Only the
    envelope and the field names are looked at: :func:`from_dict` checks the rest."""
    return _format_and_kind(d)[0]


def document_kind(d: Any) -> str:
    """What a document (a dict, or its JSON text) holds, by the class's name:
    ``"JobSpec"``, ``"Job"``, ``"JobStatus"``, ``"JobAttributes"`` or
    ``"ResourceSpecV1"``; checked as :func:`document_format` checks it."""
    return _format_and_kind(d)[1]


def _format_and_kind(d: Any) -> tuple[str, str]:
    if isinstance(d, (str, bytes)):
        try:
            d = json.loads(d)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise SerializationError(f"not a JSON document: {e}") from None
    if not isinstance(d, dict):
        raise SerializationError(
            f"not a job document: a JSON {type(d).__name__}, not an object")
    if "format" in d:
        if d["format"] != FORMAT:
            raise SerializationError(
                f"format: {d['format']!r} is not a job document format this hpcjobs reads "
                f"({FORMAT!r}, or psij-python's, which has no \"format\" field)")
        version = d.get("version")
        if version != VERSION:
            raise SerializationError(
                f"job document version {version!r} is not supported (this hpcjobs reads "
                f"version {VERSION}; a newer hpcjobs may have written it)")
        kind = d.get("kind")
        if kind not in ("JobSpec", "Job"):
            raise SerializationError(
                f"unknown job document kind {kind!r} (expected 'JobSpec' or 'Job')")
        return FORMAT, kind
    # psij-python's main branch takes "state" for a status, and a document with a
    # "__version" for a versioned object (only ResourceSpec has one); 0.9.11 and main
    # read everything else as a JobSpec. Attributes on their own (which psij-python
    # writes but does not read) are told by their keys, which no JobSpec has.
    if "state" in d:
        return PSIJ_FORMAT, "JobStatus"
    if "__version" in d:
        return PSIJ_FORMAT, "ResourceSpecV1"
    if d and all(k in ATTRIBUTE_FIELDS for k in d):
        return PSIJ_FORMAT, "JobAttributes"
    unknown = [k for k in d if k not in _PSIJ_SPEC_FIELDS]
    if unknown:
        raise SerializationError(
            f"not a job document: field {unknown[0]!r} is not one of psij-python's "
            f"(a JobSpec's: {', '.join(_PSIJ_SPEC_FIELDS)}; a JobStatus has \"state\", "
            "a ResourceSpecV1 \"__version\", a JobAttributes only its own: "
            f"{', '.join(ATTRIBUTE_FIELDS)}), and an hpcjobs document starts with "
            f"\"format\": {FORMAT!r}")
    return PSIJ_FORMAT, "JobSpec"


def from_dict(d: Any) -> Document:
    """Inverse of :func:`to_dict`, for a document in either format."""
    form, kind = _format_and_kind(d)
    if form == PSIJ_FORMAT:
        return _from_psij(d, kind)
    if kind == "JobSpec":
        _known("", d, frozenset({"format", "version", "kind", "spec"}))
        spec = _spec_from_dict(_field(d, "spec", dict))
        assert spec is not None
        return spec
    _known("", d, _JOB_FIELDS)
    spec = _spec_from_dict(_field(d, "spec", dict, optional=True))
    # a record of a job seen elsewhere: restore what it was, not a live binding
    job_id = _field(d, "id", str)
    native_id = _field(d, "native_id", str, optional=True)
    _field(d, "executor", str, optional=True)
    return Job.restore(spec, job_id, native_id,
                       status_from_dict(_field(d, "status", dict), "status"))


def _from_psij(d: Dict[str, Any], kind: str) -> Document:
    obj: Document
    try:
        if kind == "JobStatus":
            obj = status_from_psij(d)
            _check_json("metadata", obj.metadata)
        elif kind == "ResourceSpecV1":
            obj = resources_from_psij(d)
        elif kind == "JobAttributes":
            obj = attributes_from_psij(d)
            _check_json("custom_attributes", obj.custom_attributes)
        else:
            obj = spec_from_psij(d)
            _check_json("attributes.custom_attributes", obj.attributes.custom_attributes)
    except PsijDocumentError as e:
        raise SerializationError(str(e)) from None
    return obj


def status_from_dict(d: Dict[str, Any], where: str = "status") -> JobStatus:
    """Inverse of :func:`status_to_dict`."""
    _known(where + ".", d, _STATUS_FIELDS)
    name = _field(d, "state", str, where)
    try:
        state = JobState[name]
    except KeyError:
        raise SerializationError(
            f"{where}.state: {name!r} is not a job state "
            f"({', '.join(s.name for s in JobState)})") from None
    time = _field(d, "time", (int, float), where)
    if not math.isfinite(time):  # JSON's 1e400 reads as inf
        raise SerializationError(f"{where}.time: {time!r} is not a time")
    exit_code = _field(d, "exit_code", int, where, optional=True)
    message = _field(d, "message", str, where, optional=True)
    metadata = _field(d, "metadata", dict, where, optional=True)
    _check_json(where + ".metadata", metadata)
    return JobStatus(state, time=time, exit_code=exit_code, message=message, metadata=metadata)


def _spec_from_dict(d: Optional[Dict[str, Any]]) -> Optional[JobSpec]:
    if d is None:
        return None
    _known("spec.", d, _SPEC_FIELDS)
    d = copy.deepcopy(d)  # the spec must not share lists/dicts with the caller's document
    resources = _field(d, "resources", dict, "spec", optional=True)
    if resources is not None:
        _known("spec.resources.", resources, _RESOURCE_FIELDS)
        version = resources.get("version", 1)
        if version != 1:
            raise SerializationError(
                f"spec.resources.version: resource spec version {version!r} is not supported")
    attributes = _field(d, "attributes", dict, "spec", optional=True)
    if attributes is not None:
        _known("spec.attributes.", attributes, _ATTRIBUTE_FIELDS)
        _field(attributes, "duration", (int, float), "spec.attributes", optional=True)
        _check_json("spec.attributes.custom_attributes", attributes.get("custom_attributes"))
    _check_staging(d)
    try:
        return JobSpec.from_dict(d)
    except OverflowError:
        raise SerializationError("spec.attributes.duration: out of range") from None
    except (TypeError, ValueError) as e:
        # the model's checks name the field (JobSpec.arguments, ResourceSpecV1.memory...)
        raise SerializationError(f"spec: {e}") from None


def _check_staging(d: Dict[str, Any]) -> None:
    """Every staging entry is whole and typed, so that the model builds it (a missing
    key would otherwise surface as a bare KeyError)."""
    for name, fields in (("stage_in", _STAGE_IN_FIELDS), ("stage_out", _STAGE_OUT_FIELDS)):
        for i, entry in enumerate(_field(d, name, list, "spec", optional=True) or ()):
            where = f"spec.{name}[{i}]"
            if not isinstance(entry, dict):
                raise SerializationError(f"{where} has the wrong type: {type(entry).__name__}")
            _known(where + ".", entry, fields)
            for end in ("source", "target"):
                text = _field(entry, end, str, where)
                if end == ("source" if name == "stage_in" else "target"):
                    try:
                        URI(text)
                    except ValueError as e:  # urllib's: "Invalid IPv6 URL"
                        raise SerializationError(f"{where}.{end}: {text!r}: {e}") from None
            mode = _field(entry, "mode", str, where)
            if mode not in StagingMode.__members__:
                raise SerializationError(
                    f"{where}.mode: {mode!r} is not a staging mode "
                    f"({', '.join(StagingMode.__members__)})")
            if name == "stage_out":
                _flags(f"{where}.flags", _field(entry, "flags", int, where))
    for i, path in enumerate(_field(d, "cleanup", list, "spec", optional=True) or ()):
        if not isinstance(path, str):
            raise SerializationError(f"spec.cleanup[{i}] has the wrong type: "
                                     f"{type(path).__name__}")
    flags = _field(d, "cleanup_flags", int, "spec", optional=True)
    if flags is not None:
        _flags("spec.cleanup_flags", flags)


def _flags(where: str, number: int) -> None:
    try:
        flags_from_number(number)
    except ValueError as e:
        raise SerializationError(f"{where}: {e}") from None


def _known(where: str, d: Dict[str, Any], names: frozenset[str]) -> None:
    unknown = sorted(set(d) - names)
    if unknown:
        raise SerializationError(
            f"unknown field(s) {', '.join(where + str(u) for u in unknown)} "
            f"(known: {', '.join(sorted(names))})")


def _field(d: Dict[str, Any], name: str, kind: Union[type, tuple[type, ...]],
           where: str = "", optional: bool = False) -> Any:
    value = d.get(name)
    label = f"{where}.{name}" if where else name
    if value is None:
        if optional:
            return None
        raise SerializationError(f"{label} is missing")
    if not isinstance(value, kind) or (
            isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))):
        raise SerializationError(f"{label} has the wrong type: {type(value).__name__}")
    return value


# -- psij-python's serializer classes ---------------------------------------------------
class Serializer:
    """psij-python's serializer interface, over this module's functions, with the same
    checks (``SerializationError``, a ``ValueError``). A ``JobSpec`` is written in
    ``format`` (psij-python's by default), a ``Job`` in this module's, a
    ``JobStatus``, ``JobAttributes`` or ``ResourceSpecV1`` in psij-python's; both
    formats are read."""

    def __init__(self, format: str = PSIJ_FORMAT) -> None:
        if format not in (FORMAT, PSIJ_FORMAT):
            raise ValueError(f"unknown job document format {format!r} "
                             f"(expected {FORMAT!r} or {PSIJ_FORMAT!r})")
        self.format = format

    def to_dict(self, obj: Document) -> Dict[str, Any]:
        """The document for ``obj`` as a JSON-ready dict."""
        if isinstance(obj, JobSpec):
            return to_dict(obj, format=self.format)
        return to_dict(obj, format=FORMAT if isinstance(obj, Job) else PSIJ_FORMAT)

    def from_dict(self, d: Dict[str, Any]) -> Document:
        """The object a document dict describes."""
        return from_dict(d)

    def dumpd(self, obj: Document) -> Dict[str, Any]:
        """psij-python main's name for :meth:`to_dict`."""
        return self.to_dict(obj)

    def loadd(self, d: Dict[str, Any]) -> Document:
        """psij-python main's name for :meth:`from_dict`."""
        return self.from_dict(d)

    def dumps(self, obj: Document) -> str:
        """The document for ``obj`` as a string."""
        return json.dumps(self.to_dict(obj), allow_nan=False)

    def loads(self, text: Union[str, bytes]) -> Document:
        """The object a document string describes."""
        return loads(text)

    def dump(self, obj: Document, stream: IO[Any]) -> None:
        """Write the document for ``obj`` to a text or binary stream."""
        text = self.dumps(obj)
        try:
            stream.write(text)
        except TypeError:  # a binary stream (the document is ASCII)
            stream.write(text.encode("ascii"))

    def load(self, stream: IO[Any]) -> Document:
        """The object the document read from ``stream`` describes."""
        return self.loads(stream.read())


class JSONSerializer(Serializer):
    """psij-python's ``psij.serialize.JSONSerializer``: job documents as JSON."""
