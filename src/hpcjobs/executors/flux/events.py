"""Turn one Flux job's events into PSI/J statuses (no I/O; fed by the executor).

The events are those of the job's main eventlog (Flux RFC 21) as the job-manager
journal delivers them, plus the journal-only ``annotations`` event that carries the
job's whole RFC 27 annotation dictionary (null when cleared). Observed with flux-core
0.88 (tests/flux fixtures): ``submit`` .. ``priority`` while pending, ``alloc`` and
``start`` when it runs, ``finish`` with a POSIX wait status, ``exception`` (severity 0
is fatal: ``cancel``, ``timeout``, ``exec``, ``alloc``, ``dependency``, ...), ``clean``
last. Names not listed in ``flux.job.MAIN_EVENTS`` (``validate``,
``dependency-add``, ``memo``, ...) do occur, so unknown names are tolerated.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from ...final_status import Cause, decode_wait_status, describe_exit, ended
from ...state import JobState, JobStatus

__all__ = ["JobEvents", "Update", "task_signal"]

log = logging.getLogger(__name__)

#: Flux job state after each event (flux-core job-manager/event.c)
_NATIVE_STATE = {"submit": "NEW", "validate": "DEPEND", "depend": "PRIORITY",
                 "priority": "SCHED", "urgency": "PRIORITY", "alloc": "RUN",
                 "finish": "CLEANUP", "clean": "INACTIVE"}
#: the scheduler annotations (RFC 27 ``sched.*``) that become status metadata
_SCHED_KEYS = ("t_estimate", "reason_pending", "jobs_ahead", "resource_summary", "queue")
#: what a held job waits for: urgency 0 (flux-job(1) "urgency": hold), Flux's own words
HELD_REASON = "held (urgency 0)"
# how the notes of the exceptions that fail a job in its shell's init, before any task
# starts, begin: cwd.lua's, and the shell's input plugin's for a stdin it cannot open
# (flux-core 0.88 src/shell/input.c). The shell's end then (its exit, or Flux's SIGTERM
# after the exception, whichever comes first) is no exit status of the job's.
_NEVER_STARTED = ("cannot use the job's ", "error opening input file ")
# How Flux says a broker running some of the job's shells was lost (flux-core 0.88
# job-exec: ``exec`` severity 0 when the shell was critical, else ``node-failure``
# severity 2 and the job goes on without it). Either way the tasks there never reported
# their end, so the ``finish`` status (the surviving shells' only) is not the job's.
_NODE_FAILURE_TYPE = "node-failure"
_NODE_FAILURE_NOTE = "node failure"


class Update(NamedTuple):
    """What one event changes: a new status (with ``ran``: the job executed), or only
    the current status's ``metadata``; both None when nothing changed."""

    status: JobStatus | None = None
    ran: bool = False
    metadata: dict[str, Any] | None = None


def task_signal(exec_eventlog: str, exit_code: int) -> int | None:
    """N if the job's exec eventlog (RFC 18 text) shows a task killed by signal N that
    the shell reported as exit code ``exit_code`` (= 128+N), else None."""
    for line in exec_eventlog.splitlines():
        event = json.loads(line)
        context = event.get("context", {})
        if event.get("name") == "shell.task-exit" and context.get("signaled") \
                and context.get("exitcode") == exit_code:
            return int(context["signaled"])
    return None


class JobEvents:
    """Folds the events of one Flux job, in eventlog order but possibly repeated (a
    journal restart or an attach replays history), into statuses. Callers hold one
    lock around ``apply`` so the events of a job are folded one at a time."""

    def __init__(self, jobid: str,
                 expand_hosts: Callable[[str], Iterable[str]] = lambda hosts: [hosts]) -> None:
        """``expand_hosts`` turns an RFC 29 hostlist (``node[0-1]``) into host names."""
        self.jobid = jobid
        self._expand_hosts = expand_hosts
        self.metadata: dict[str, Any] = {}
        self._seen: set[tuple[float, str]] = set()
        self._fatal: Mapping[str, Any] | None = None
        self._node_failure: str | None = None  # Flux's note on the first node lost
        self._wait_status: int | None = None
        self._ran = False
        self.done = False

    def apply(self, name: str, timestamp: float, context: Mapping[str, Any],
              R: Mapping[str, Any] | None = None) -> Update:
        """The effect of one event. Repeats (same name and timestamp) change nothing.
        ``R`` is the allocation (RFC 20) the journal gives with ``alloc``."""
        if (timestamp, name) in self._seen or self.done:
            return Update()
        self._seen.add((timestamp, name))
        before = dict(self.metadata)
        if name in _NATIVE_STATE:
            self.metadata["native_state"] = _NATIVE_STATE[name]
        if "annotations" in context and name in ("annotations", "alloc"):
            self._annotate(context["annotations"])
        if name in ("submit", "urgency") and "urgency" in context:
            self._urgency(context["urgency"])
        if name == "submit":
            return Update(JobStatus(JobState.QUEUED, timestamp, metadata=self.metadata))
        if name == "alloc":
            self._ran = True
            nodelist = ((R or {}).get("execution") or {}).get("nodelist")
            if nodelist:
                self.metadata["nodes"] = [host for hosts in nodelist
                                          for host in self._expand_hosts(hosts)]
            return Update(JobStatus(JobState.ACTIVE, timestamp, metadata=self.metadata),
                          ran=True)
        if name == "exception":
            self._exception(context)
        elif name == "finish":
            self._wait_status = int(context["status"])
            return self._final(timestamp)
        elif name == "clean":
            return self._final(timestamp)
        elif name not in _NATIVE_STATE and name != "annotations" and name != "start":
            log.debug("Flux job %s: event %r ignored", self.jobid, name)
        if self.metadata != before:
            return Update(metadata=dict(self.metadata))
        return Update()

    def _annotate(self, annotations: Mapping[str, Any] | None) -> None:
        # The journal's ``annotations`` event and the ``alloc`` context both carry the
        # job manager's dictionary *after* it applied the scheduler's update with the
        # RFC 27 rules (null deletes a key, dicts merge): a snapshot, so it replaces
        # what we had (flux-core job-manager/annotate.c posts a copy of the whole dict).
        sched = dict((annotations or {}).get("sched") or {})
        for key in _SCHED_KEYS:
            if key in sched:
                self.metadata[key] = sched[key]
            else:
                self.metadata.pop(key, None)
        if annotations:
            self.metadata["annotations"] = dict(annotations)
        else:
            self.metadata.pop("annotations", None)
        self._urgency(0 if self.metadata.get("held") else None)

    def _urgency(self, urgency: int | None) -> None:
        """A held job (urgency 0) says so, with a reason where the scheduler gives none;
        ``None``: the urgency did not change."""
        if urgency == 0:
            self.metadata["held"] = True
            self.metadata.setdefault("reason_pending", HELD_REASON)
        elif urgency is not None and self.metadata.pop("held", None):
            if self.metadata.get("reason_pending") == HELD_REASON:
                del self.metadata["reason_pending"]

    def _exception(self, context: Mapping[str, Any]) -> None:
        etype, note = context.get("type", ""), context.get("note", "")
        if (etype == _NODE_FAILURE_TYPE or str(note).startswith(_NODE_FAILURE_NOTE)) \
                and self._node_failure is None:
            self._node_failure = str(note)
        if context.get("severity", 0) != 0:
            # informational: the job goes on (misc.txt: it still completes)
            log.info("Flux job %s: non-fatal exception %s: %s", self.jobid, etype, note)
            self.metadata["exception"] = {"type": etype, "note": note,
                                          "severity": context.get("severity")}
            return
        if self._fatal is None:
            self._fatal = context
            self.metadata["native_state"] = "CLEANUP"
            self.metadata["exception"] = {"type": etype, "note": note, "severity": 0}

    def killed_by(self, signum: int, status: JobStatus) -> Update:
        """``status`` (a final one) restated for a task killed by signal ``signum``."""
        return Update(self._ended(-signum, status.time), ran=self._ran)

    def _final(self, timestamp: float) -> Update:
        """The final status, once the job's processes are gone (``finish``) or, for a
        job that never ran, when the job manager is done with it (``clean``)."""
        self.done = True
        exit_code = None if self._wait_status is None else decode_wait_status(self._wait_status)
        if self._wait_status is not None:
            self.metadata["wait_status"] = self._wait_status
        fatal = self._fatal or {}
        if fatal.get("type") == "exec" and str(fatal.get("note", "")).startswith(_NEVER_STARTED):
            exit_code = None
        if self._node_failure is not None:
            exit_code = None  # the lost tasks' ends are unknown: no exit code is the job's
        return Update(self._ended(exit_code, timestamp), ran=self._ran)

    def _ended(self, exit_code: int | None, timestamp: float) -> JobStatus:
        """The final status: the fatal exception's why (if any) with ``exit_code``."""
        cause, reason, notes = None, None, []
        fatal = self._fatal
        if self._node_failure is not None and (fatal is None or fatal.get("type") == "exec"):
            # a non-fatal node-failure lets the job go on and end with the surviving
            # shells' status: never a success, whatever that status says
            reason = (f"a node of the job was lost (Flux: {self._node_failure}): the tasks "
                      "there never reported their end")
            if self._wait_status is not None and fatal is None:
                notes.append(f"the other tasks {describe_exit(decode_wait_status(self._wait_status))}")
        elif fatal is not None:
            etype, note = fatal.get("type", ""), fatal.get("note", "")
            if etype == "cancel":
                cause, reason = Cause.CANCELED, note or None
            elif etype == "timeout":
                cause, reason = Cause.WALLTIME, f"the job's time limit expired (Flux: {note})"
            elif etype == "alloc":
                reason = f"Flux cannot allocate the resources: {note}"
            elif etype == "exec":
                reason = f"could not be started: {note}"
            elif etype == "dependency":
                reason = f"dependency failed: {note}"
            else:
                reason = f"Flux exception {etype}: {note}"
        elif exit_code is None:
            reason = "ended without an exit status"
        elif exit_code > 128:
            # the Flux shell reports a task killed by signal N as exit code 128+N
            notes.append(f"a task {describe_exit(128 - exit_code)}?")
        status = ended(exit_code, timestamp, cause=cause, reason=reason, notes=notes,
                       metadata=self.metadata)
        if status.metadata and "signal" in status.metadata:
            self.metadata["signal"] = status.metadata["signal"]
        return status
