"""What OpenPBS's ``qstat -f -F json`` says about a job, in PSI/J terms: the state table,
the finished substates and PBS's own negative ``Exit_status`` values.

PBS's reference: the "PBS Professional Reference Guide" (qstat, "Job States", "Job Exit
Status"); tests/fixtures/openpbs-23.06/INDEX.md records what the real server printed.
The Torque flavour (torque.py) shares :func:`exit_code` and :func:`timestamp`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from ...final_status import Cause, shell_exit_code
from ...state import JobState
from ..batch import NativeStatus
from ..batch.native import local_time

__all__ = ["PBS_STATES", "exit_code", "loads", "native", "timestamp"]

_Q, _A = JobState.QUEUED, JobState.ACTIVE

#: job_state letters of jobs that have not ended (qstat(1B) "Job States"). Letters not
#: listed (M: moved to another server) are logged and ignored.
PBS_STATES: dict[str, JobState] = {
    "Q": _Q,   # queued (also "Can Never Run", see native)
    "H": _Q,   # held (user hold, dependency)
    "W": _Q,   # waiting for its qsub -a start time
    "T": _Q,   # in transit between servers
    "R": _A,   # running
    "E": _A,   # exiting: ended, the MoM is cleaning up
    "S": _A,   # suspended by the server
    "U": _A,   # suspended because the workstation is busy
    "B": _A,   # an array that has begun
}
#: substate of a finished (F) job -> its PSI/J state (absent or other: FAILED)
_FINISHED = {91: JobState.CANCELED, 92: JobState.COMPLETED, 93: JobState.FAILED}
#: Exit_status values PBS itself sets when it kills a job (JOB_EXEC_KILL_* in PBS's job.h)
_PBS_KILLS: dict[int, tuple[Optional[Cause], str]] = {
    -24: (None, "PBS killed it: cpu usage burst over ncpus (JOB_EXEC_KILL_NCPUS_BURST)"),
    -25: (None, "PBS killed it: cpu usage over ncpus (JOB_EXEC_KILL_NCPUS_SUM)"),
    -26: (Cause.OUT_OF_MEMORY, "PBS killed it at its vmem limit (JOB_EXEC_KILL_VMEM)"),
    -27: (Cause.OUT_OF_MEMORY, "PBS killed it at its mem limit (JOB_EXEC_KILL_MEM)"),
    -28: (None, "cpu time exceeded: PBS killed it at its cput limit (JOB_EXEC_KILL_CPUT)"),
    -29: (Cause.WALLTIME, "PBS ended the job at its walltime limit (JOB_EXEC_KILL_WALLTIME)"),
}
_NEVER = "Can Never Run"
#: PBS's comment on a subjob that ended without running: deleted while queued
_SUBJOB_DELETED = "Subjob finished"


# a JSON escape, or a backslash that starts none: OpenPBS 23.06 prints the qsub command
# line (Submit_arguments) with its backslashes as they are, so "qsub -v X=a\qb" or a
# script path with a backslash make an invalid escape ("\q"); read left to right, so
# that the second backslash of an escaped one ("\\q") is not taken for a raw one
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9A-Fa-f]{4})?')


def loads(text: str) -> dict[str, Any]:
    """``qstat -F json``'s output as a dict (ValueError if it is not JSON): raw control
    characters allowed (values are printed raw, INDEX.md "JSON quirks"), and raw
    backslashes read as themselves, or one job's command line anywhere in the answer
    (any user's: the many-jobs query lists them all) would make all of it unreadable."""
    try:
        data = json.loads(text, strict=False)
    except ValueError:
        data = json.loads(_ESCAPE.sub(lambda m: m.group(0) if m.group(1) else "\\\\", text),
                          strict=False)
    if not isinstance(data, dict):
        raise ValueError(f"not a qstat -F json object: {text[:100]!r}")
    return data


def native(native_id: str, job: dict[str, Any]) -> NativeStatus:
    """A ``qstat -f -F json`` record in PSI/J terms."""
    letter = str(job.get("job_state", ""))
    comment = str(job.get("comment", ""))
    ns = NativeStatus(native_id, letter, PBS_STATES.get(letter))
    if "exec_host" in job:
        ns.metadata["nodes"] = str(job["exec_host"])
    if letter in ("F", "X"):
        return _finished(ns, job, comment)
    if ns.state is JobState.QUEUED:
        if comment.startswith(_NEVER):
            # decided in docs/pbs.md: a user waits for an end, not for a job PBS will
            # never run (as sbatch refuses one at submit time); the executor deletes it
            ns.state, ns.withdraw = JobState.FAILED, True
            ns.message = f"PBS says it can never run, so hpcjobs deleted it ({comment})"
            return ns
        if letter == "H":  # qhold's comment says who held it; qsub -h leaves none
            ns.metadata["held"] = True
            comment = comment or f"held (Hold_Types {job.get('Hold_Types', '?')})"
        ns.waiting(comment, timestamp(job.get("estimated", {}).get("start_time")))
    return ns


def _finished(ns: NativeStatus, job: dict[str, Any], comment: str) -> NativeStatus:
    """A finished job: its substate says how, Exit_status (when there is one) with what
    code or, negative, why PBS ended it."""
    raw = job.get("Exit_status")
    status = raw if isinstance(raw, int) else None
    substate = job.get("substate")
    ns.state = _FINISHED.get(substate if isinstance(substate, int) else 0, JobState.FAILED)
    ns.time = timestamp(job.get("obittime") or job.get("mtime"))
    detail = f"PBS substate {substate}: {comment}" if comment else f"PBS substate {substate}"
    if comment == _SUBJOB_DELETED and "exec_host" not in job:
        # a subjob deleted while queued (qdel 123[4].server): X with its queued
        # substate 10 while the array lives, then F/93 with PBS's placeholder
        # Exit_status 1, never the job's own (a deleted array's unstarted subjobs say
        # the same with substate 91, INDEX.md)
        ns.state, ns.cause = JobState.CANCELED, Cause.CANCELED
        ns.message = f"deleted before it ran ({detail})"
    elif ns.state is JobState.COMPLETED and status is None:
        ns.state = JobState.FAILED  # 92 without an exit status: it never ran (dependency)
        ns.message = f"ended without running ({detail})"
    elif ns.state is JobState.CANCELED:
        # qdel: PBS's Exit_status is its own kill (271, or 0 for root's jobs), not the job's
        ns.cause = Cause.CANCELED
        who = re.search(r"terminated by (\S+)", comment)
        ns.message = f"by {who.group(1)} ({detail})" if who else f"qdel ({detail})"
    elif ns.state is JobState.FAILED and str(job.get("array")) == "True":
        # an array (attached as 123[].server): its Exit_status is PBS's summary, 0 when a
        # subjob failed (INDEX.md, "Array parent"), no job's exit code
        ns.message = f"a subjob failed ({detail})"
    elif status is not None and status < 0:
        ns.cause, why = _PBS_KILLS.get(status, (None, f"PBS ended the job (JOB_EXEC code "
                                                      f"{status}, see the MoM's log)"))
        ns.message = f"{why} ({detail})"
    else:
        ns.exit_code = exit_code(status) if status is not None else None
        ns.message = None if ns.state is JobState.COMPLETED else detail
    return ns


def exit_code(status: int) -> int:
    """PBS's (and Torque's) exit status as a PSI/J exit code: 256+N when the top process
    died of signal N, 128+N when a shell reported its child's (INDEX.md, Exit_status)."""
    return -(status - 256) if status > 256 else shell_exit_code(status)


def timestamp(text: Any) -> Optional[float]:
    """PBS's local ``Mon Nov 23 13:17:42 2026`` as a POSIX time (None if not one)."""
    return local_time(text, "%a %b %d %H:%M:%S %Y")
