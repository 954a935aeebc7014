"""``PBSJobExecutor``: PSI/J jobs as PBS batch jobs (``get_instance('pbs')``).

The backend of :class:`~hpcjobs.executors.batch.BatchSchedulerExecutor` for OpenPBS / PBS
Professional: the template (pbs.mustache beside this module), the command lines (qsub,
``qstat -f -F json -x``, qdel, qselect) and the table mapping PBS's job states to
PSI/J's. docs/pbs.md describes the behaviour; PBS's own reference is the "PBS
Professional Reference Guide" (qsub, qstat, "Job States", "Job Exit Status").
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import logging
import math
import os
import re
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from ... import external
from ...errors import CommandError, InvalidJobException
from ...spec import JobSpec
from ...final_status import Cause, shell_exit_code
from ...state import JobState
from ..batch import BatchConfig, BatchSchedulerExecutor, JobDir, NativeStatus
from ..batch.arrays import ArrayDir
from ..batch.script import directive_value, safe_job_name, walltime

__all__ = ["PBSConfig", "PBSJobExecutor", "PBS_STATES", "pbs_exec_bin"]

log = logging.getLogger(__name__)

_Q, _A = JobState.QUEUED, JobState.ACTIVE

#: job_state letters of jobs that have not ended (qstat(1B) "Job States"). Letters not
#: listed (M: moved to another server) are logged and ignored.
PBS_STATES: dict[str, JobState] = {
    "Q": _Q,   # queued (also "Can Never Run", see _native)
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
_FEW = 20  # ids up to which qstat is asked about each (docs/pbs.md, Status)
_NATIVE_ID = re.compile(r"[0-9]+(\[[0-9]*\])?(\.[A-Za-z0-9_.-]+)?\Z")
# a subjob of an array: 123[4].server, of the array 123[].server
_SUBJOB = re.compile(r"([0-9]+)\[([0-9]+)\](\.[A-Za-z0-9_.-]+)?\Z")
_ATTRIBUTE = re.compile(r"[a-z][a-z0-9_]*\Z")
# -W attributes that would break how hpcjobs submits and follows the job
_RESERVED = {"block", "sandbox", "stagein", "stageout"}
# advance (R), standing (S) and maintenance (M) reservation queues: R12 or R12.server
_RESERVATION = re.compile(r"[RSM][0-9]+(\.[A-Za-z0-9_.-]+)?\Z")
_TRANSIENT = ("Connection refused", "cannot connect to server", "Server busy",
              "Communication failure", "End of File", "timed out", "Try again")
# qstat's per-id errors for ids it has no record of (any other stderr is a failure)
_UNKNOWN = re.compile(r"^qstat: (Unknown Job Id|.* Job has finished)")


@dataclasses.dataclass
class PBSConfig(BatchConfig):
    """The batch settings plus ``bin_directory``: where qsub, qstat, qdel and qselect are.

    Unset, it is ``$PBS_EXEC/bin`` as ``PBS_CONF_FILE`` (default /etc/pbs.conf) names it,
    else the commands are looked up in PATH (docs/pbs.md: a site with both PBS and Torque
    commands installed).
    """

    bin_directory: Optional[Path] = None


class PBSJobExecutor(BatchSchedulerExecutor):
    """Runs jobs through PBS (qsub/qstat/qdel), see the module docstring."""

    name = "pbs"
    template = Path(__file__).with_name("pbs.mustache")
    config_class = PBSConfig
    config: PBSConfig
    # qsub -V exports nothing in OpenPBS 23.06 (fixed upstream after it, 494e0f018) and
    # -v cannot carry every value byte for byte (tests/fixtures/openpbs-23.06, 13): the
    # base captures the environment in the job directory instead
    exports_environment = False
    # what PBS sets in the job (PBS_NODEFILE, PBS_JOBID, ..., its per-job TMPDIR)
    scheduler_variables = ("PBS_", "TMPDIR", "ENVIRONMENT")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bin = self.config.bin_directory or pbs_exec_bin()
        self._user = getpass.getuser()
        self._array_limit_read: Optional[int] = None

    def _command(self, name: str, *args: str) -> list[str]:
        return [str(self._bin / name) if self._bin else name, *args]

    # -- the script ---------------------------------------------------------------------
    def _validate(self, spec: JobSpec) -> None:
        if ":" in str(self.work_directory):
            # qsub -o takes [host:]path: the first ':' would end a host name
            raise InvalidJobException(f"the executor's work_directory {str(self.work_directory)!r} "
                                      "contains a ':', which PBS cannot use in an output path")
        # (the spec's other checks are _directives', run before anything is written)

    def _directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        attrs = spec.attributes
        queue = attrs.queue_name
        if attrs.reservation_id is not None:
            # a PBS reservation is a queue of its own (R123, S123), so it takes -q
            if not _RESERVATION.match(attrs.reservation_id):
                raise InvalidJobException(
                    f"JobAttributes.reservation_id: {attrs.reservation_id!r} is not a PBS "
                    "reservation id (R<n>, S<n> or M<n>, optionally .<server>)")
            if queue is not None:
                raise InvalidJobException(
                    "JobAttributes.queue_name and reservation_id: a PBS job in a reservation "
                    "runs in the reservation's queue, so it cannot also name a queue")
            queue = attrs.reservation_id
        select, place = _select(spec)
        return {
            "job_name": safe_job_name(spec, 236),  # PBS_MAXJOBNAME
            "select": select,
            "place": place,
            "walltime": walltime(attrs.duration),
            "queue": directive_value("JobAttributes.queue_name", queue) if queue else None,
            "account": (directive_value("JobAttributes.project_name", attrs.project_name)
                        if attrs.project_name else None),
            "output": str(job_dir.batch_output),
            "custom": _custom(spec),
        }

    def _submit_command(self, job_dir: JobDir) -> list[str]:
        return self._command("qsub", str(job_dir.script))

    def _parse_submit(self, stdout: str) -> str:
        native_id = stdout.strip()
        if not _NATIVE_ID.match(native_id):
            raise ValueError(f"not a PBS job id: {native_id!r}")
        return native_id

    def _find_submitted(self, job_dir: JobDir) -> Optional[str]:
        try:
            for native_id, job in self._qstat((), history=False).items():
                if str(job_dir.script) in str(job.get("Submit_arguments", "")):
                    parts = self._array_parts(native_id)  # (an array: its own id)
                    return parts[0] if parts else native_id
        except CommandError as e:
            log.warning("cannot look for a job submitted despite the error: %s", e)
        return None

    def _is_transient(self, error: CommandError) -> bool:
        return any(text in error.stderr for text in _TRANSIENT)

    # -- job arrays (batch/arrays.py) ---------------------------------------------------
    # "Job Arrays" in the OpenPBS User's Guide: qsub -J 0-N; subjob i of 123[].server
    # is 123[i].server; ^array_index^ in -o is the subjob's index; qstat -t lists subjobs
    array_variables = ("PBS_ARRAY_ID", "PBS_ARRAY_INDEX")
    # (-o on qsub's command line overrides the first job's #PBS -o)
    per_job_directives = ("job_name", "output")

    def _array_submit_command(self, array: ArrayDir, count: int) -> list[str]:
        return self._command("qsub", "-J", f"0-{count - 1}",
                             "-o", f"{array.dir.path}/^array_index^.out", str(array.dir.script))

    def _array_task_id(self, array_id: str, index: int) -> str:
        return array_id.replace("[]", f"[{index}]", 1)

    def _array_parts(self, native_id: str) -> Optional[tuple[str, int]]:
        m = _SUBJOB.match(native_id)
        return (f"{m.group(1)}[]{m.group(3) or ''}", int(m.group(2))) if m else None

    def _max_array_size(self) -> int:
        """The server's max_array_size (PBS's default, 10000, if it cannot be read)."""
        if self._array_limit_read is None:
            self._array_limit_read = 10000
            try:
                out = external.run(self._command("qstat", "-B", "-f", "-F", "json"),
                                   timeout=self.config.command_timeout).stdout
                for server in json.loads(out, strict=False).get("Server", {}).values():
                    self._array_limit_read = int(server.get("max_array_size", 10000))
            except (CommandError, ValueError) as e:
                log.warning("cannot read PBS's max_array_size (assuming 10000): %s", e)
        return self._array_limit_read

    def _cancel_command(self, native_id: str) -> list[str]:
        return self._command("qdel", native_id)

    def _check_native_id(self, native_id: str) -> None:
        if not isinstance(native_id, str) or not _NATIVE_ID.match(native_id):
            raise InvalidJobException(f"native_id: {native_id!r} is not a PBS job id")

    # -- status -------------------------------------------------------------------------
    def _qstat(self, native_ids: Sequence[str], history: bool = True) -> dict[str, Any]:
        """``qstat -f -F json -t [-x] <ids>``: the records of the ids PBS knows (no ids and
        no history: every live job), an array's subjobs included (-t)."""
        if not native_ids and history:
            return {}
        argv = self._command("qstat", "-f", "-F", "json", "-t", *(["-x"] if history else []),
                             *native_ids)
        result = external.run(argv, timeout=self.config.command_timeout, check=False)
        # unknown ids are errors on stderr while the known ones are printed: any other
        # complaint (server down, ...) makes the whole answer untrustworthy
        errors = [line for line in result.stderr.splitlines()
                  if line.strip() and not _UNKNOWN.match(line)]
        try:
            # strict=False: raw control characters in variable values (INDEX.md, 13)
            jobs: dict[str, Any] = json.loads(result.stdout, strict=False).get("Jobs", {})
        except ValueError:
            errors = errors or ["unparsable output"]
            jobs = {}
        if errors or (result.returncode != 0 and not result.stderr.strip()):
            raise CommandError(result.argv, result.returncode, result.stdout, result.stderr)
        return jobs

    def _query_status(self, native_ids: Sequence[str]) -> dict[str, NativeStatus]:
        if len(native_ids) <= _FEW:
            jobs = self._qstat(native_ids)
        else:
            # qstat sends one request per id named (~50 ms each here): for many, one
            # request for every live job, then the history only for ours not among them
            jobs = self._qstat((), history=False)
            short = {k.split(".", 1)[0] for k in jobs}
            gone = [i for i in native_ids if i not in jobs and i not in short]
            # subjobs of one array: one request for the array (-t lists them all)
            arrays = (self._array_parts(i) for i in gone)
            asked = dict.fromkeys(a[0] if a else i for i, a in zip(gone, arrays))
            jobs.update(self._qstat(list(asked)))
        found = {}
        for native_id in native_ids:
            # an id attached without its server part: PBS answers with the full one
            job = jobs.get(native_id) or next(
                (j for k, j in jobs.items() if "." not in native_id
                 and k.split(".", 1)[0] == native_id), None)
            if job is not None:
                found[native_id] = _native(native_id, job)
        return found

    def _describe_final(self, statuses: Sequence[NativeStatus]) -> None:
        # a job PBS says can never run is deleted, so that it does not wait forever
        never = [ns.native_id for ns in statuses if ns.native_state == "Q"]
        if never:
            try:
                external.run(self._command("qdel", *never), timeout=self.config.command_timeout)
            except CommandError as e:
                log.warning("cannot delete the jobs PBS says can never run: %s", e)

    def _list_ids(self) -> list[str]:
        result = external.run(self._command("qselect", "-u", self._user),
                              timeout=self.config.command_timeout)
        return [line.strip() for line in result.stdout.splitlines() if line.strip()]

    def _retention_time(self) -> float:
        # with job history, a job qstat -x no longer knows was purged long after it
        # ended; without, PBS forgets it at once: either way only the job's own files can
        # still tell, and they get a file-system grace period, no more
        return 30.0

    def _record_grace(self) -> float:
        # PBS's kill_delay (default 10 s) between the SIGTERM and SIGKILL of a deleted job
        return 15.0


def pbs_exec_bin() -> Optional[Path]:
    """``$PBS_EXEC/bin`` from the PBS configuration file, if it holds qstat."""
    conf = Path(os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf"))
    try:
        text = conf.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"^\s*PBS_EXEC\s*=\s*(\S+)", text, re.MULTILINE)
    if m is None or not (Path(m.group(1)) / "bin" / "qstat").exists():
        return None
    return Path(m.group(1)) / "bin"


def _select(spec: JobSpec) -> tuple[str, Optional[str]]:
    """``-l select`` and ``-l place``: one chunk per node when the node count is known
    (scattered), else one per process (where PBS likes)."""
    res = spec.resources_v1
    nodes = res.requested_node_count
    per_chunk = res.computed_processes_per_node if nodes else 1
    chunk = [str(nodes or res.computed_process_count),
             f"ncpus={per_chunk * (res.cpu_cores_per_process or 1)}",
             f"mpiprocs={per_chunk}"]
    if res.gpu_cores_per_process:
        chunk.append(f"ngpus={per_chunk * res.gpu_cores_per_process}")
    if res.memory:
        if not nodes:
            raise InvalidJobException(
                "ResourceSpecV1.memory is per node, but PBS places processes freely unless "
                "node_count (or processes_per_node) is set: set one to give memory")
        chunk.append(f"mem={math.ceil(res.memory / 1024)}kb")
    place = ["scatter"] if nodes else []
    if res.exclusive_node_use:
        place.append("excl")
    return ":".join(chunk), ":".join(place) or None


def _custom(spec: JobSpec) -> list[dict[str, str]]:
    """``pbs.<attribute>`` custom attributes as ``#PBS -W attribute=value`` lines:
    None leaves one out, booleans are ``true``/``false``."""
    out = []
    for name, value in spec.attributes.custom_for("pbs").items():
        field = f"JobAttributes.custom_attributes['pbs.{name}']"
        if not _ATTRIBUTE.match(name):
            raise InvalidJobException(f"{field}: {name!r} is not a PBS job attribute name "
                                      "(lower-case letters, digits and '_')")
        if name in _RESERVED:
            raise InvalidJobException(f"{field}: -W {name} would change how hpcjobs runs "
                                      "and follows the job")
        if value is None:
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out.append({"attribute": f"{name}={directive_value(field, text)}"})
    return out


def _native(native_id: str, job: dict[str, Any]) -> NativeStatus:
    """A ``qstat -f -F json`` record in PSI/J terms."""
    letter = str(job.get("job_state", ""))
    comment = str(job.get("comment", ""))
    ns = NativeStatus(native_id, letter, PBS_STATES.get(letter),
                      metadata={"native_state": letter})
    if "exec_host" in job:
        ns.metadata["nodes"] = str(job["exec_host"])
    if letter in ("F", "X"):
        return _finished(ns, job, comment)
    if ns.state is JobState.QUEUED:
        if comment.startswith(_NEVER):
            # decided in docs/pbs.md: a user waits for an end, not for a job PBS will
            # never run (as sbatch refuses one at submit time); _describe_final deletes it
            ns.state = JobState.FAILED
            ns.message = f"PBS says it can never run, so hpcjobs deleted it ({comment})"
            return ns
        if comment:
            ns.metadata["reason_pending"] = comment
        estimate = _timestamp(job.get("estimated", {}).get("start_time"))
        if estimate is not None:
            ns.metadata["t_estimate"] = estimate
    return ns


def _finished(ns: NativeStatus, job: dict[str, Any], comment: str) -> NativeStatus:
    """A finished job: its substate says how, Exit_status (when there is one) with what
    code or, negative, why PBS ended it."""
    raw = job.get("Exit_status")
    status = raw if isinstance(raw, int) else None
    substate = job.get("substate")
    ns.state = _FINISHED.get(substate if isinstance(substate, int) else 0, JobState.FAILED)
    ns.time = _timestamp(job.get("obittime") or job.get("mtime"))
    detail = f"PBS substate {substate}: {comment}" if comment else f"PBS substate {substate}"
    if ns.state is JobState.COMPLETED and status is None:
        ns.state = JobState.FAILED  # 92 without an exit status: it never ran (dependency)
        ns.message = f"ended without running ({detail})"
    elif ns.state is JobState.CANCELED:
        # qdel: PBS's Exit_status is its own kill (271, or 0 for root's jobs), not the job's
        ns.cause = Cause.CANCELED
        who = re.search(r"terminated by (\S+)", comment)
        ns.message = f"by {who.group(1)} ({detail})" if who else f"qdel ({detail})"
    elif status is not None and status < 0:
        ns.cause, why = _PBS_KILLS.get(status, (None, f"PBS ended the job (JOB_EXEC code "
                                                      f"{status}, see the MoM's log)"))
        ns.message = f"{why} ({detail})"
    else:
        ns.exit_code = _exit_code(status) if status is not None else None
        ns.message = None if ns.state is JobState.COMPLETED else detail
    return ns


def _exit_code(status: int) -> int:
    """PBS's Exit_status as a PSI/J exit code: 256+N when PBS's top process died of
    signal N, 128+N when a shell reported its child's (INDEX.md, Exit_status)."""
    return -(status - 256) if status > 256 else shell_exit_code(status)


def _timestamp(text: Any) -> Optional[float]:
    """PBS's local ``Mon Nov 23 13:17:42 2026`` as a POSIX time (None if not one)."""
    try:
        return time.mktime(time.strptime(str(text), "%a %b %d %H:%M:%S %Y"))
    except ValueError:
        return None
