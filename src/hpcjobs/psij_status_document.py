"""psij-python's JSON documents for a ``JobStatus``, as its main branch's
``JSONSerializer`` writes and reads them, so a status saved by either library loads in
the other.

psij-python 0.9.11 has no such document: its serializer refuses to write a
``JobStatus`` (``Cannot convert type "<enum 'JobState'>"``) and reads every document as
a ``JobSpec`` (``Unexpected key "state"``). Its main branch (the format as its
``serialize.py``, ``job_status.py`` and ``job_state.py`` have it at commit
447666939412570ca28f911204b37052958d429c) writes the ``JobStatus`` constructor's
arguments that differ from their defaults, in its order, and reads any document with a
``"state"`` key as a status::

    {"state": 6, "time": 1700000000.5, "message": "done", "exit_code": 0,
     "metadata": {"held": false}}

``state`` is the ``JobState``'s number in main's numbering (NEW 0, QUEUED 1, STAGE_IN 2,
ACTIVE 3, STAGE_OUT 4, CLEANUP 5, COMPLETED 6, FAILED 7, CANCELED 8), which is
hpcjobs's; ``time`` is always written (a status always has one), as a float;
``message``, ``exit_code`` and ``metadata`` when set. psij-python writes metadata
values that are str, int, float or bool and reads no others.

Where the two differ:

- a document without ``time`` gets the time of reading from psij-python (its
  constructor's default); psij-python never writes one, and a record whose time is
  invented when loaded says something false, so it is refused here, naming the field;
- psij-python's reader asserts that ``time`` is a float; an int time reads here;
- metadata values that are lists, objects or null read here (as for custom attributes);
  writing, only str, int, float and bool values are written, others refused by name.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Dict

from .psij_document import PsijDocumentError, check_known, check_type
from .state import JobState, JobStatus

__all__ = ["STATUS_FIELDS", "status_to_psij", "status_from_psij"]

#: psij-python's ``JobStatus`` constructor parameters, in its order (the order it writes
#: keys); a document with ``"state"`` is a status to psij-python's main branch
STATUS_FIELDS = ("state", "time", "message", "exit_code", "metadata")


def status_to_psij(status: JobStatus) -> Dict[str, Any]:
    """``status`` as psij-python's main branch writes it (a JSON-ready dict)."""
    time = float(status.time)
    if not math.isfinite(time):
        raise PsijDocumentError(f"time: {status.time!r} is not a JSON number")
    d: Dict[str, Any] = {"state": status.state.value, "time": time}
    if status.message is not None:
        d["message"] = status.message
    if status.exit_code is not None:
        d["exit_code"] = status.exit_code
    if status.metadata is not None:
        for key, value in status.metadata.items():
            where = f"metadata[{key!r}]"
            if type(key) is not str:
                raise PsijDocumentError(f"{where}: psij-python's keys are strings")
            if type(value) not in (str, int, float, bool):
                raise PsijDocumentError(
                    f"{where}: psij-python's format carries str, int, float and bool "
                    f"values, not a {type(value).__name__}; write the job in the hpcjobs "
                    "format")
            if type(value) is float and not math.isfinite(value):
                raise PsijDocumentError(f"{where}: {value!r} is not a JSON number")
        d["metadata"] = dict(status.metadata)
    return d


def status_from_psij(d: Dict[str, Any]) -> JobStatus:
    """The ``JobStatus`` a psij-python document describes (metadata values are checked
    as plain JSON by the caller)."""
    check_known("", d, STATUS_FIELDS)
    for name in ("state", "time"):
        if d.get(name) is None:  # (psij-python writes no nulls; a hand-written one is unset)
            raise PsijDocumentError(f"{name} is missing (psij-python writes it for every "
                                    "status)")
    number = check_type("state", d["state"], int)
    try:
        state = JobState(number)
    except ValueError:
        raise PsijDocumentError(
            f"state: {number} is not a job state number of psij-python's main branch "
            f"({', '.join(f'{s.name} {s.value}' for s in JobState)})") from None
    time = check_type("time", d["time"], (int, float))
    if not math.isfinite(time):  # (JSON's 1e400 reads as inf)
        raise PsijDocumentError(f"time: {time!r} is not a time")
    message, exit_code, metadata = (d.get(n) for n in ("message", "exit_code", "metadata"))
    return JobStatus(
        state, time=time,
        message=None if message is None else check_type("message", message, str),
        exit_code=None if exit_code is None else check_type("exit_code", exit_code, int),
        metadata=None if metadata is None else copy.deepcopy(
            check_type("metadata", metadata, dict)))
