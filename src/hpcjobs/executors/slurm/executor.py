"""``SlurmJobExecutor``: PSI/J jobs as Slurm batch jobs (``get_instance('slurm')``).

The batch backend (:class:`~hpcjobs.executors.batch.Scheduler`) for Slurm: the template
(slurm.mustache beside this module), the command lines (sbatch, squeue, sacct, scancel,
scontrol) and the table mapping Slurm's job states to PSI/J's. docs/slurm.md describes
the behaviour; Slurm's own references are https://slurm.schedmd.com/squeue.html
("JOB STATE CODES", "JOB REASON CODES") and https://slurm.schedmd.com/sacct.html.
"""

from __future__ import annotations

import math
import pwd
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

from ...errors import CommandError, InvalidJobException
from ...final_status import Cause, decode_wait_status
from ...spec import JobSpec
from ...state import JobState
from ..batch import (ArrayDir, BatchSchedulerExecutor, JobDir, NativeStatus, Scheduler,
                     directive_value, local_time, safe_job_name, walltime)
from ..batch.script import custom_attributes, one_account
from ..batch.user_script import read_user_script, silent_only, words

__all__ = ["Slurm", "SlurmJobExecutor", "SLURM_STATES"]

_Q, _A = JobState.QUEUED, JobState.ACTIVE
_C, _F, _X = JobState.COMPLETED, JobState.FAILED, JobState.CANCELED

#: Slurm job state (squeue %T / sacct State) -> (PSI/J state, why the job ended: the
#: cause, and Slurm's words about it). From squeue(1) "JOB STATE CODES". States not
#: listed are logged and ignored.
SLURM_STATES: dict[str, tuple[JobState, Optional[Cause], Optional[str]]] = {
    "PENDING": (_Q, None, None),
    "CONFIGURING": (_Q, None, None),    # nodes allocated, still booting: not running yet
    "REQUEUED": (_Q, None, None),
    "REQUEUE_HOLD": (_Q, None, None),
    "REQUEUE_FED": (_Q, None, None),
    "RESV_DEL_HOLD": (_Q, None, None),
    "RUNNING": (_A, None, None),
    "COMPLETING": (_A, None, None),     # ended; the final state follows when nodes are free
    "SUSPENDED": (_A, None, None),
    "STOPPED": (_A, None, None),
    "RESIZING": (_A, None, None),
    "SIGNALING": (_A, None, None),
    "STAGE_OUT": (_A, None, None),
    "COMPLETED": (_C, None, None),
    "FAILED": (_F, None, "failed"),
    "CANCELLED": (_X, Cause.CANCELED, None),
    "TIMEOUT": (_F, Cause.WALLTIME, "Slurm ended the job at its time limit"),
    "OUT_OF_MEMORY": (_F, Cause.OUT_OF_MEMORY, "the job exceeded its memory limit"),
    "NODE_FAIL": (_F, Cause.NODE_FAILURE, "a node allocated to the job failed"),
    "PREEMPTED": (_F, Cause.PREEMPTED, "Slurm preempted it in favour of another job"),
    "BOOT_FAIL": (_F, None, "node boot failure: the job's nodes could not be booted"),
    "DEADLINE": (_F, None, "deadline reached before the job could complete (--deadline)"),
    "SPECIAL_EXIT": (_F, None, "special exit: the job was requeued in a held state"),
    "REVOKED": (_X, None, "revoked: this federated job ran on another cluster"),
}

# squeue -O fields, '|' after each (Reason and NodeList never contain one; the node list
# goes last anyway). exit_code is the raw wait status; StartTime is the scheduler's
# estimate for a pending job (what `squeue --start` shows) and the start of others.
_SQUEUE_FIELDS = ("JobArrayID", "State", "Reason", "exit_code", "StartTime", "NodeList")
_SQUEUE_FORMAT = ",".join(f"{f}:|" for f in _SQUEUE_FIELDS)
_SACCT_FIELDS = ("JobID", "State", "ExitCode", "Reason", "End", "NodeList")
_TASK_ID = re.compile(r"([0-9]+)_([0-9]+)\Z")
# squeue/sacct show an array's pending tasks as one record: 123_[5-99], 123_[1,4-7%2]
_PENDING_TASKS = re.compile(r"([0-9]+)_\[([0-9,-]+)(?:%[0-9]+)?\]\Z")
# long options of sbatch that custom attributes may set (their values are checked too)
_OPTION = re.compile(r"[a-z][a-z0-9-]*\Z")
# options that would break how hpcjobs runs and follows the job
_RESERVED = {option: f"hpcjobs sets --{option} itself" for option in (
    "output", "error", "input", "parsable", "wrap", "array", "wait", "chdir", "export-file",
    "test-only", "help", "usage", "version")}
_REASON_NONE = {"None", "", "(null)"}
#: the pending reasons of a held job (squeue(1) "JOB REASON CODES")
_HELD = {"JobHeldUser", "JobHeldAdmin"}
#: the sbatch options each template key sets (user_script.silent_only), and its short options
_OPTIONS_OF = {"job_name": ("job-name",), "ntasks": ("ntasks",), "nodes": ("nodes",),
               "ntasks_per_node": ("ntasks-per-node",), "cpus_per_task": ("cpus-per-task",),
               "gpus_per_task": ("gpus-per-task",),
               "memory": ("mem", "mem-per-cpu", "mem-per-gpu"), "exclusive": ("exclusive",),
               "time": ("time",), "partition": ("partition",), "account": ("account",),
               "reservation": ("reservation",), "export_none": ("export",)}
_RESOURCES = frozenset({"ntasks", "nodes", "ntasks_per_node", "cpus_per_task", "gpus_per_task",
                        "memory", "exclusive"})
_SHORT = {"J": "job-name", "n": "ntasks", "N": "nodes", "c": "cpus-per-task", "t": "time",
          "p": "partition", "A": "account", "o": "output", "e": "error", "D": "chdir",
          "H": "hold", "a": "array", "G": "gpus", "q": "qos", "C": "constraint",
          "d": "dependency", "w": "nodelist", "x": "exclude", "i": "input"}
_MAY_NOT_HAVE_RUN = {"CANCELLED", "DEADLINE", "BOOT_FAIL", "REVOKED"}
# Slurm's defaults for what _slurm_config reads
_CONFIG_DEFAULTS = {"MinJobAge": 300.0, "KillWait": 30.0, "MaxArraySize": 1001.0}


class Slurm(Scheduler):
    """Slurm's commands, parsers and state table (see the module docstring)."""

    name = "slurm"
    template = Path(__file__).with_name("slurm.mustache")
    # job ids: 123, array tasks 123_4, heterogeneous components 123+1
    native_id_pattern = re.compile(r"[0-9]+(_[0-9]+)?(\+[0-9]+)?")
    # the controller is busy or unreachable (slurm_strerror texts)
    transient_errors = ("Socket timed out", "Unable to contact slurm controller",
                        "Slurm temporarily unable to accept job",
                        "Resource temporarily unavailable",
                        "Zero Bytes were transmitted or received")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the job directories of users' scripts that name their output: sbatch gets no
        #: --output of ours (its command line would win over the script's line)
        self._own_output: set[str] = set()

    # -- the script ---------------------------------------------------------------------
    unusable_in_paths = (re.compile(r"\\"),
                         "sbatch drops backslashes from --output paths (its filename patterns)")

    def validate(self, spec: JobSpec) -> None:
        self._custom(spec)  # every check that needs no scheduler, before submitting
        one_account(spec, "Slurm")
        for field in ("queue_name", "reservation_id"):
            value = getattr(spec.attributes, field)
            if value is not None:
                directive_value(f"JobAttributes.{field}", value)

    def directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        res = spec.resources_v1
        attrs = spec.attributes
        ours: dict[str, Any] = {
            "job_name": safe_job_name(spec, 128),
            "ntasks": res.computed_process_count,
            "nodes": res.requested_node_count,
            "ntasks_per_node": res.processes_per_node,
            "cpus_per_task": res.cpu_cores_per_process,
            "gpus_per_task": res.gpu_cores_per_process,
            # ResourceSpecV1.memory is bytes per node; sbatch --mem takes KiB with "K"
            "memory": f"{math.ceil(res.memory / 1024)}K" if res.memory else None,
            "exclusive": res.exclusive_node_use,
            "time": walltime(attrs.duration),  # Slurm rounds up to minutes
            "partition": attrs.queue_name,
            "account": one_account(spec, "Slurm"),
            "reservation": attrs.reservation_id,
            "export_none": not spec.inherit_environment,
            "custom": self._custom(spec),
        }
        script = read_user_script(spec, "#SBATCH")
        if script is None:
            return silent_only(ours, None, spec, set(), _OPTIONS_OF, _RESOURCES, "time")
        theirs = _sbatch_options(script.directives)
        if "array" in theirs:  # its tasks would share one job's files: not one job
            raise InvalidJobException(
                "JobSpec.executable (a batch script): its #SBATCH --array makes many jobs; "
                "submit one job per task (submit_many sends them as an array)")
        if "output" in theirs:  # then the script's, not our --output on sbatch's command line
            self._own_output.add(job_dir.path.name)
        ours["custom"] = [c for c in ours["custom"] if c["option"] not in theirs]
        return {**silent_only(ours, script, spec, theirs, _OPTIONS_OF, _RESOURCES, "time"),
                "user_script": script}

    @staticmethod
    def _custom(spec: JobSpec) -> list[dict[str, Optional[str]]]:
        """``slurm.<option>`` custom attributes as #SBATCH lines: True is a flag,
        False/None leave the option out, anything else is its value."""
        out: list[dict[str, Optional[str]]] = []
        for option, value, field in custom_attributes(
                spec, "slurm", _OPTION, "an sbatch long option name (lower-case letters, "
                "digits and '-')", _RESERVED):
            if value is None or value is False:
                continue
            out.append({"option": option,
                        "value": None if value is True else directive_value(field, str(value))})
        return out

    def submit_command(self, job_dir: JobDir) -> list[str]:
        if job_dir.path.name in self._own_output:  # a user's script that names its output
            self._own_output.discard(job_dir.path.name)
            return ["sbatch", "--parsable", str(job_dir.script)]
        # --output names our file; '%' would be one of sbatch's filename patterns
        output = str(job_dir.batch_output).replace("%", "%%")
        return ["sbatch", "--parsable", f"--output={output}", str(job_dir.script)]

    # -- job arrays (batch/arrays.py) ---------------------------------------------------
    # https://slurm.schedmd.com/job_array.html: task i of array A is "A_i"; %a in
    # --output is the task's index; the index range is limited by MaxArraySize
    array_variables = ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID")
    per_job_directives = ("job_name",)

    def array_submit_command(self, array: ArrayDir, count: int) -> list[str]:
        # slurmstepd creates <i>.out under the job's umask, inside the 0700 array
        # directory; the dispatcher makes it 0600 before the job writes to it (creating
        # them all here would cost one file creation per task on the submit path)
        # %a: the task's index; a '%' of the path itself is written %%
        output = str(array.dir.path).replace("%", "%%") + "/%a.out"
        return ["sbatch", "--parsable", f"--array=0-{count - 1}", f"--output={output}",
                str(array.dir.script)]

    def array_task_id(self, array_id: str, index: int) -> str:
        return f"{array_id}_{index}"

    def array_parts(self, native_id: str) -> Optional[tuple[str, int]]:
        m = _TASK_ID.match(native_id)
        return (m.group(1), int(m.group(2))) if m else None

    def max_array_size(self) -> int:
        # indices run from 0 to MaxArraySize - 1
        return int(self._slurm_config()["MaxArraySize"])

    def parse_submit(self, stdout: str) -> str:
        # --parsable prints "<id>" or "<id>;<cluster>"
        return super().parse_submit(stdout.strip().split(";")[0])

    def submit_lines(self) -> Iterable[tuple[str, str]]:
        out = self.run(["squeue", "--noheader", "--states=all", self.user_selection(),
                        "--Format=JobArrayID:|,Command:"]).stdout
        for line in out.splitlines():
            native_id, _, command = line.partition("|")
            # an array's records read 123_[0-9] or 123_4: it was submitted as 123
            yield native_id.strip().split("_")[0], command.strip()

    def cancel_command(self, native_id: str) -> list[str]:
        return ["scancel", native_id]

    # -- hold and release (scontrol(1) hold, release; sbatch(1) --hold) -----------------
    hold_submit_option = "--hold"
    ended_errors = ("Job has already finished",)

    def hold_command(self, native_id: str) -> list[str]:
        return ["scontrol", "hold", native_id]

    def release_command(self, native_id: str) -> list[str]:
        return ["scontrol", "release", native_id]

    # -- status -------------------------------------------------------------------------
    # squeue given more than one job id loads every job of the cluster and matches each
    # against each id (squeue.c asks the controller for one job, or one user's jobs, by
    # itself), so for more than 50 ids listing the user's jobs costs less (the figures:
    # docs/decisions.md)
    few_ids = 50

    def records(self, native_ids: Sequence[str]) -> dict[str, str]:
        """squeue's lines, unparsed (``native`` reads a line only for a job asked
        about: a listing has thousands), by job id; no ids: the user's jobs."""
        argv = ["squeue", "--noheader", "--states=all",
                f"--jobs={','.join(native_ids)}" if native_ids else self.user_selection(),
                f"--Format={_SQUEUE_FORMAT}"]
        result = self.run(argv, check=False)
        if result.returncode == 0:
            return _squeue_records(result.stdout)
        # squeue exits 1 saying "Invalid job id specified" when it knows none of the ids
        # (unknown ids among known ones are silently left out); it names users by their
        # passwd entry: a uid without one (some containers) cannot be listed, its jobs
        # are then all asked by id
        if "Invalid job id" in result.stderr or (not native_ids
                                                 and "Invalid user" in result.stderr):
            return {}
        raise CommandError(result.argv, result.returncode, result.stdout, result.stderr)

    def record_of(self, native_id: str, records: Mapping[str, str]) -> Optional[str]:
        record = records.get(native_id)
        if record is None and "_" in native_id:
            # the tasks of an array still pending share one record, "123_[4-9,12%2]",
            # which _squeue_records keeps under "123_["
            array_id, _, index = native_id.partition("_")
            pending = records.get(f"{array_id}_[")
            if (pending is not None and index.isdigit()
                    and _has_task(_record_id(pending), int(index))):
                return pending
        return record

    def native(self, native_id: str, record: str) -> NativeStatus:
        _, state, reason, raw_exit, start, nodes = (
            f.strip() for f in record.split("|", len(_SQUEUE_FIELDS))[:len(_SQUEUE_FIELDS)])
        exit_code = decode_wait_status(int(raw_exit)) if raw_exit.isdigit() else None
        ns = _native(native_id, state, reason, exit_code)
        if ns.state is JobState.QUEUED:
            ns.waiting(None if reason in _REASON_NONE else reason, _timestamp(start))
            if reason in _HELD:
                ns.metadata["held"] = True
        elif nodes and nodes not in _REASON_NONE:
            ns.metadata["nodes"] = nodes
        return ns

    def accounting(self, native_ids: Sequence[str]) -> Optional[dict[str, NativeStatus]]:
        argv = ["sacct", "--allocations", "--noheader", "--parsable2",
                f"--jobs={','.join(native_ids)}", f"--format={','.join(_SACCT_FIELDS)}"]
        result = self.run(argv, check=False)
        if result.returncode != 0:
            if "accounting storage is disabled" in result.stderr.lower():
                return None
            raise CommandError(result.argv, result.returncode, result.stdout, result.stderr)
        found = {}
        for native_id, state, exit_code, reason, end, nodes in _rows(result.stdout,
                                                                     len(_SACCT_FIELDS)):
            ns = _native(native_id, state, reason, _sacct_exit(exit_code))
            ns.time = _timestamp(end)
            if nodes and nodes not in _REASON_NONE and nodes != "None assigned":
                ns.metadata["nodes"] = nodes
            for task_id in _task_ids(native_id):
                found[task_id] = ns
        return found

    def describe_final(self, statuses: Sequence[NativeStatus]) -> None:
        # squeue says CANCELLED but not by whom; accounting does ("CANCELLED by 1000")
        cancelled = [ns for ns in statuses if ns.native_state == "CANCELLED"]
        records = self.accounting_records([ns.native_id for ns in cancelled]) if cancelled else None
        if records is None:
            return
        for ns in cancelled:
            record = records.get(ns.native_id)
            if record is not None and record.message and record.message.startswith("by "):
                ns.message = record.message

    def list_ids(self) -> list[str]:
        out = self.run(["squeue", "--noheader", self.user_selection(), "--Format=JobArrayID"])
        return out.stdout.split()

    def user_selection(self) -> str:
        """The squeue option that selects this user's jobs: by uid, which is always
        right, where a name from ``$USER`` may not be."""
        return f"--user={self.host.user()[0]}"

    def retention(self) -> float:
        """Slurm's MinJobAge: how long squeue shows finished jobs."""
        return self._slurm_config()["MinJobAge"]

    def grace(self) -> float:
        # Slurm's KillWait: between the SIGTERM and the SIGKILL of a cancelled or timed
        # out job (https://slurm.schedmd.com/slurm.conf.html#OPT_KillWait), plus margin
        return self._slurm_config()["KillWait"] + 5.0

    def _slurm_config(self) -> dict[str, float]:
        """MinJobAge, KillWait and MaxArraySize from ``scontrol show config``, read once
        (Slurm's defaults, 300 s, 30 s and 1001, if it cannot be read)."""
        return self.read_once("Slurm's configuration", self._read_config, _CONFIG_DEFAULTS)

    def _read_config(self) -> dict[str, float]:
        out = self.run(["scontrol", "show", "config"]).stdout
        config = dict(_CONFIG_DEFAULTS)
        for key in config:
            m = re.search(rf"^{key}\s*=\s*(\d+)", out, re.MULTILINE)
            if m:
                config[key] = float(m.group(1))
        return config


class SlurmJobExecutor(BatchSchedulerExecutor):
    """Runs jobs through Slurm (sbatch/squeue/sacct/scancel), see the module docstring."""

    scheduler_class = Slurm
    scheduler: Slurm


def _rows(listing: str, width: int) -> Iterator[list[str]]:
    """The ``|``-separated rows of a squeue/sacct listing that have all ``width`` fields
    (a partial line, e.g. from a truncated output, is skipped)."""
    for line in listing.splitlines():
        fields = line.split("|")
        if len(fields) >= width:
            yield fields[:width]


def _squeue_records(listing: str) -> dict[str, str]:
    """squeue's lines by job id, a pending array's record under ``<array id>_[`` (see
    ``_record_of``); a partial line (from a truncated output) is left out."""
    records = {}
    for line in listing.splitlines():
        if line.count("|") >= len(_SQUEUE_FIELDS):
            record_id = _record_id(line)
            array_id, pending, _ = record_id.partition("_[")
            records[f"{array_id}_[" if pending else record_id] = line
    return records


def _record_id(line: str) -> str:
    """The job id a squeue line is about (its first field)."""
    return line.partition("|")[0].strip()


def _task_ranges(record_id: str) -> Optional[tuple[str, list[tuple[int, int]]]]:
    """The array id and the index ranges of a pending array record such as
    ``123_[0-3,7%2]`` (%2: at most 2 running at once); None for another id."""
    m = _PENDING_TASKS.match(record_id)
    if m is None:
        return None
    ranges = []
    for part in m.group(2).split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and (last.isdigit() or not last):
            ranges.append((int(first), int(last or first)))
    return m.group(1), ranges


def _task_ids(record_id: str) -> list[str]:
    """The ids a squeue/sacct record stands for: itself, or each task of a pending
    array record."""
    pending = _task_ranges(record_id)
    if pending is None:
        return [record_id]
    array_id, ranges = pending
    return [f"{array_id}_{i}" for first, last in ranges for i in range(first, last + 1)]


def _has_task(record_id: str, index: int) -> bool:
    """True if ``record_id`` is a pending array record that holds task ``index``."""
    pending = _task_ranges(record_id)
    return pending is not None and any(first <= index <= last for first, last in pending[1])


def _native(native_id: str, state: str, reason: str, exit_code: Optional[int]) -> NativeStatus:
    """A Slurm record in PSI/J terms, with the message for every kind of ending."""
    words = state.split()  # sacct says "CANCELLED by 1000"
    native_state = words[0].rstrip("+") if words else ""
    psij_state, cause, why = SLURM_STATES.get(native_state, (None, None, None))
    ns = NativeStatus(native_id, native_state, psij_state, cause=cause)
    if psij_state is None or not psij_state.final:
        return ns
    if psij_state is JobState.COMPLETED:
        ns.exit_code = 0
        return ns
    # these can end a job that never ran: Slurm's "0:0" then is no exit status at all
    if native_state not in _MAY_NOT_HAVE_RUN:
        ns.exit_code = exit_code
    if native_state == "CANCELLED" and len(words) >= 3 and words[1] == "by":
        why = f"by {_user(words[2])}"
    detail = f"Slurm state {native_state}"
    if reason not in _REASON_NONE:
        detail += f", reason {reason}"
    # the executor adds the exit status it settles on (Slurm's, or the script's record)
    ns.message = f"{why} ({detail})" if why else detail
    return ns


def _sbatch_options(directives: Sequence[str]) -> set[str]:
    """The long names of the sbatch options ``#SBATCH`` lines set."""
    names = set()
    for line in directives:
        for word in words(line, "#SBATCH"):
            if word.startswith("--"):
                names.add(word[2:].split("=", 1)[0])
            elif word.startswith("-") and len(word) > 1:
                names.add(_SHORT.get(word[1], word[1]))
    return names


def _user(uid: str) -> str:
    try:
        return f"{pwd.getpwuid(int(uid)).pw_name} (uid {uid})"
    except (KeyError, ValueError):
        return f"uid {uid}"


def _sacct_exit(text: str) -> Optional[int]:
    # sacct's ExitCode is "<exit status>:<signal>"
    try:
        status, sig = (int(x) for x in text.split(":"))
    except ValueError:
        return None
    return -sig if sig else status


def _timestamp(text: str) -> Optional[float]:
    """Slurm's local "YYYY-MM-DDTHH:MM:SS" as a POSIX time (None for N/A, Unknown, ...)."""
    return local_time(text, "%Y-%m-%dT%H:%M:%S")


