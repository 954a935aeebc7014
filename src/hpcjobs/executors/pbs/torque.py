"""The Torque flavour of the PBS backend (``get_instance('torque')``, or ``'pbs'`` with
``flavour='torque'`` or on a host whose ``qstat`` is not OpenPBS's).

Where Torque differs from OpenPBS (docs/pbs.md, "Torque"): ``qstat -f`` prints text, not
JSON; there is no ``-x`` (finished jobs stay as ``C`` for the server's keep_completed
time, then are forgotten); ``C`` is every end, the exit status (when shown) is
``exit_status``; resources are ``-l nodes=N:ppn=P``; there is no qselect in Slurm's
Torque-style wrappers (Debian's slurm-wlm-torque), which also show no exit status at
all: the job's own exit-code file is then the only witness. Torque's reference: the
Torque Administrator Guide (qsub, qstat, "Job Exit Status").
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, ClassVar, Optional, Sequence

from ...errors import CommandError, InvalidJobException
from ...executor import JobExecutorConfig
from ...final_status import Cause
from ...spec import JobSpec
from ...state import JobState
from ..batch import LOCAL, JobDir, NativeStatus, Scheduler
from ..batch.script import one_account
from .directives import queue
from .commands import pbs_exec_bin
from .executor import OpenPBS, PBSConfig, PBSJobExecutor
from .status import exit_code, timestamp

__all__ = ["FLAVOURS", "TORQUE_STATES", "Torque", "TorqueJobExecutor", "flavour_class", "flavour_of",
           "parse_qstat_f", "torque_native", "torque_resources"]

FLAVOURS = ("openpbs", "torque")
# what `qstat --version` prints from Torque ("Version: 6.1.2") and from Slurm's Perl
# Torque-style wrapper (Getopt::Long's "Unknown option: version"); OpenPBS prints
# "pbs_version = 23.06.06"
_TORQUE_VERSION = re.compile(r"^(Version: |Unknown option: version$)", re.MULTILINE)
_Q, _A = JobState.QUEUED, JobState.ACTIVE

#: job_state letters (qstat(1) "job state"); C, every end, is decided by torque_native.
#: Others (the wrappers' U: a Slurm state they do not map) are logged and ignored.
TORQUE_STATES: dict[str, JobState] = {
    "Q": _Q, "H": _Q, "W": _Q, "T": _Q,  # queued, held, waiting (-a), in transit
    "R": _A, "E": _A, "S": _A,  # running, exiting, suspended
    "C": JobState.FAILED,  # completed (how: exit_status, when shown)
}
#: exit_status values Torque sets itself (JOB_EXEC_* in Torque's job.h, "Job Exit Status")
_TORQUE_KILLS: dict[int, tuple[Optional[Cause], str]] = {
    -10: (Cause.OUT_OF_MEMORY, "Torque killed it over a memory limit (JOB_EXEC_OVERLIMIT_MEM)"),
    -11: (Cause.WALLTIME, "Torque ended the job at its walltime limit (JOB_EXEC_OVERLIMIT_WT)"),
    -12: (None, "cpu time exceeded: Torque killed it (JOB_EXEC_OVERLIMIT_CPUT)"),
}
_HEADER = re.compile(r"Job Id:\s*(\S+)\s*\Z")
_ATTRIBUTE = re.compile(r"\s+([A-Za-z_][A-Za-z0-9_.]*) = (.*)\Z")
# the per-id error of a real Torque's qstat (the wrappers say nothing, exit 153)
_UNKNOWN = re.compile(r"Unknown Job Id")


class Torque(OpenPBS):
    """Torque's commands, parsers and state table (see the module docstring)."""

    name = "torque"
    flavour = "torque"
    # Slurm's Torque-style wrappers run the job under Slurm, whose SLURM_* variables a
    # captured environment must not override either
    scheduler_variables = ("PBS_", "TMPDIR", "ENVIRONMENT", "SLURM_")
    has_history = False
    links_at_submit = True  # (the wrappers show no exit status: the files are all)
    # Torque's kill_delay (default 2 s) between SIGTERM and SIGKILL; the wrappers' qdel
    # sends SIGKILL at once (no record will come)
    record_grace = 5.0
    submit_line_field = "submit_args"
    # Slurm's qsub wrapper runs sbatch through a shell with -o and the script path unquoted
    unusable_in_paths = (re.compile(r"[^A-Za-z0-9_@%+=,./-]"),
                         "Slurm's Torque-style qsub would pass it through a shell unquoted "
                         "(use letters, digits and _@%+=,./-)")
    # Torque's arrays (qsub -t, ids 123[4], PBS_ARRAYID) are not OpenPBS's and the
    # wrappers make Slurm arrays of them: every job is submitted alone
    array_variables = None

    def resources(self, spec: JobSpec) -> dict[str, Any]:
        return torque_resources(spec)

    def account_lines(self, spec: JobSpec) -> dict[str, Any]:
        # Torque's qsub -P is a proxy user, not a project: one account line only
        return {"account": one_account(spec, "Torque"), "project": None}

    def submit_command(self, job_dir: JobDir) -> list[str]:
        # -o/-j on the command line too: Slurm's qsub wrapper passes sbatch its own
        # -o/-e (job.sh.o<id>) unless given them, and those override the #PBS lines.
        # -v: Torque's qsub exports only the variables named (and PBS_O_*), and the
        # wrapper makes it sbatch --export=none,<them>; without -v sbatch would hand the
        # job qsub's whole environment (the base captures it when the spec inherits it)
        return self.command("qsub", "-o", str(job_dir.batch_output), "-j", "oe",
                             "-v", f"HPCJOBS_JOB_DIR={job_dir.path}", str(job_dir.script))

    def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        """``qstat -f <ids>`` (no ids: every job the server shows), parsed; Torque exits
        153 (PBSE_UNKJOBID) when an id is unknown, saying so on stderr (the wrappers
        say nothing)."""
        return self.run_status(self.command("qstat", "-f", *native_ids), _UNKNOWN,
                                parse_qstat_f, unknown_exit=(153,))

    def native(self, native_id: str, record: dict[str, Any]) -> NativeStatus:
        return torque_native(native_id, record)

    def recent_ids(self, since: float) -> Optional[list[str]]:
        # (the wrappers have no qselect; qstat -f lists the completed jobs too, until
        # keep_completed, Slurm's MinJobAge for the wrappers)
        return None

    def list_ids(self) -> list[str]:
        # (the wrappers have no qselect)
        return [native_id for native_id, job in self.records(()).items()
                if str(job.get("Job_Owner", "")).split("@")[0] == self.user
                and job.get("job_state") != "C"]


class TorqueJobExecutor(PBSJobExecutor):
    """Runs jobs through Torque's qsub/qstat/qdel, see the module docstring."""

    scheduler_class: ClassVar[type[Scheduler]] = Torque
    scheduler: Torque


def flavour_class(cls: type[PBSJobExecutor],
                  settings: JobExecutorConfig) -> type[PBSJobExecutor]:
    """The class that runs what ``cls`` was asked for: the Torque flavour for
    ``get_instance('pbs')`` on a Torque site (``flavour_of``), else ``cls``."""
    if cls is PBSJobExecutor and isinstance(settings, PBSConfig) and \
            flavour_of(settings) == "torque":
        return TorqueJobExecutor
    return cls


def flavour_of(config: PBSConfig) -> str:
    """The configured flavour, else OpenPBS when its configuration file names its
    commands (no command run), else Torque only when ``qstat --version`` says so
    (Torque's ``Version: ...``, or Slurm's wrapper refusing the option): anything else,
    a failing qstat included, keeps OpenPBS (docs/pbs.md, "Finding PBS's commands")."""
    if config.flavour is not None:
        if config.flavour not in FLAVOURS:
            raise ValueError(f"PBSConfig.flavour: {config.flavour!r} is not one of {FLAVOURS}")
        return config.flavour
    if config.bin_directory is None and pbs_exec_bin() is not None:
        return "openpbs"
    qstat = str(Path(config.bin_directory, "qstat")) if config.bin_directory else "qstat"
    try:
        result = LOCAL.run([qstat, "--version"], timeout=config.command_timeout, check=False)
    except CommandError:
        return "openpbs"  # no qstat to ask: the first command will say so
    return "torque" if _TORQUE_VERSION.search(result.stdout + result.stderr) else "openpbs"


def torque_resources(spec: JobSpec) -> dict[str, Any]:
    """``-l nodes=N:ppn=P[:gpus=G]`` (one node when no count is given, as psij-python's
    Torque template does), ``-l mem`` (Torque's is the job's total: per node times
    nodes), ``-n`` (node-exclusive), ``-q``."""
    if spec.attributes.reservation_id is not None:
        raise InvalidJobException(
            "JobAttributes.reservation_id: Torque has no reservations of its own (a "
            "Moab/Maui reservation can be named with custom_attributes['pbs.x'])")
    res = spec.resources_v1
    nodes, ppn = res.computed_node_count, res.computed_processes_per_node
    spec_nodes = f"{nodes}:ppn={ppn * (res.cpu_cores_per_process or 1)}"
    if res.gpu_cores_per_process:
        spec_nodes += f":gpus={ppn * res.gpu_cores_per_process}"
    memory = f"{math.ceil(res.memory * nodes / 1024)}kb" if res.memory else None
    return {"nodes": spec_nodes, "memory": memory, "exclusive": res.exclusive_node_use,
            "direct_output": False, **queue(spec.attributes.queue_name)}


def parse_qstat_f(text: str) -> dict[str, dict[str, str]]:
    """``qstat -f`` text: ``Job Id: <id>`` then ``<indent>name = value`` lines, a long
    value continued on lines of its own (Torque wraps them, starting with a tab)."""
    jobs: dict[str, dict[str, str]] = {}
    job: Optional[dict[str, str]] = None
    name: Optional[str] = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        attribute = _ATTRIBUTE.match(line)
        if header:
            job, name = jobs.setdefault(header.group(1), {}), None
        elif job is not None and attribute:
            name = attribute.group(1)
            job[name] = attribute.group(2)
        elif job is not None and name is not None and line.strip():
            job[name] += line.strip()
        else:
            name = None  # (a blank line ends a record)
    return jobs


def _run_time(job: dict[str, str]) -> Optional[float]:
    """Seconds from start to end: Torque's start_time and comp_time (seconds since the
    epoch), else the wrappers' mtime and ctime (their start and end, INDEX.md 03, 05)."""
    start, end = job.get("start_time", ""), job.get("comp_time", "")
    if start.isdigit() and end.isdigit():
        return float(end) - float(start)
    began, ended = timestamp(job.get("mtime")), timestamp(job.get("ctime"))
    return ended - began if began is not None and ended is not None else None


def torque_native(native_id: str, job: dict[str, str]) -> NativeStatus:
    """A ``qstat -f`` record in PSI/J terms. A ``C`` job without ``exit_status`` (the
    wrappers never show one) is FAILED saying so: its exit-code file, which the batch
    base reads first, decides when there is one."""
    letter = job.get("job_state", "")
    ns = NativeStatus(native_id, letter, TORQUE_STATES.get(letter))
    if "exec_host" in job:
        ns.metadata["nodes"] = job["exec_host"]
    if letter == "H":  # (Slurm's wrappers show a held job as Q: only hold() says held)
        ns.metadata["held"] = True
        ns.waiting(f"held (Hold_Types {job.get('Hold_Types', '?')})", None)
    if letter != "C":
        return ns
    # Torque's comp_time is in seconds since the epoch (the wrappers have none)
    done = job.get("comp_time", "")
    ns.time = float(done) if done.isdigit() else timestamp(done)
    raw = job.get("exit_status", "")
    status = int(raw) if re.fullmatch(r"-?[0-9]+", raw) else None
    if status is None:
        ns.message = "Torque shows it ended (C) with no exit status"
        limit = job.get("Resource_List.walltime", "")
        ran = _run_time(job)
        if ran is not None and re.fullmatch(r"[0-9]+:[0-9]{2}:[0-9]{2}", limit) and \
                ran >= sum(int(n) * f for n, f in zip(limit.split(":"), (3600, 60, 1))):
            # (the wrappers' only sign of Slurm's TIMEOUT: a run as long as the limit)
            ns.cause = Cause.WALLTIME
            ns.message = f"it ran for its whole walltime ({limit}); {ns.message}"
    elif status < 0:
        ns.cause, why = _TORQUE_KILLS.get(status, (None, f"Torque ended the job (JOB_EXEC "
                                                         f"code {status}, see the MoM's log)"))
        ns.message = f"{why} (exit_status {status})"
    else:
        ns.exit_code = exit_code(status)
        ns.state = JobState.COMPLETED if status == 0 else JobState.FAILED
    return ns
