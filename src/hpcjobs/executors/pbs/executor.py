"""``PBSJobExecutor``: PSI/J jobs as PBS batch jobs (``get_instance('pbs')``).

The batch backend (:class:`~hpcjobs.executors.batch.Scheduler`) for OpenPBS / PBS
Professional: the command lines (qsub, ``qstat -f -F json -x``, qdel, qselect). The
template is pbs.mustache beside this module (filled by directives.py), the state table
is status.py's, where the commands are is commands.py's; the Torque flavour (torque.py:
when it runs, and its few other command lines and status parser) is a subclass of both.
docs/pbs.md describes the behaviour; PBS's own reference is the "PBS Professional
Reference Guide" (qsub, qstat).
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping, Optional, Sequence, Union

from ...errors import InvalidJobException
from ...executor import JobExecutorConfig
from ...spec import JobSpec
from ..batch import (ArrayDir, BatchConfig, BatchSchedulerExecutor, Host, JobDir, NativeStatus,
                     Scheduler, directive_value, safe_job_name, walltime)
from ..batch.user_script import read_user_script, silent_only, words
from .commands import pbs_exec_bin
from .directives import custom, pbs_resources
from .status import loads, native

__all__ = ["OpenPBS", "PBSConfig", "PBSJobExecutor", "pbs_exec_bin"]

# a subjob of an array: 123[4].server, of the array 123[].server
_SUBJOB = re.compile(r"([0-9]+)\[([0-9]+)\](\.[A-Za-z0-9_.-]+)?\Z")
# the longest -N qsub takes (see directives)
_MAX_JOB_NAME = 230
# qstat's per-id errors for ids it has no record of (any other stderr is a failure);
# an id naming another server (attach("1.othersrv")) is "illegally formed", per id
# too (exit 1, the other ids answered): not a failed query, or that one id would keep
# every job asked about with it from ever changing state
_UNKNOWN = re.compile(r"^qstat: (Unknown Job Id|illegally formed job identifier|"
                      r".* Job has finished)")


@dataclasses.dataclass
class PBSConfig(BatchConfig):
    """The batch settings plus ``bin_directory``: where qsub, qstat, qdel and qselect are,
    and ``flavour``: ``"openpbs"`` (PBS Professional too) or ``"torque"``.

    Unset, ``bin_directory`` is ``$PBS_EXEC/bin`` as ``PBS_CONF_FILE`` (default
    /etc/pbs.conf) names it, else the commands are looked up in PATH; ``flavour`` is
    what ``get_instance`` was asked for (``torque``), else detected (docs/pbs.md: a site
    with both PBS and Torque commands installed).
    """

    bin_directory: Optional[Path] = None
    flavour: Optional[str] = None


#: the qsub options each template key sets (user_script.silent_only): letters, and
#: "l:<resource>" for -l; any resource of the user's replaces all of ours
_USER_RESOURCES = ("l:select", "l:place", "l:nodes", "l:mem", "l:ncpus", "l:ngpus",
                   "l:mpiprocs", "l:nodect", "n")
_OPTIONS_OF = {"job_name": ("N",), "walltime": ("l:walltime",), "queue": ("q",),
               "account": ("A",), "project": ("P",), "output": ("o",), "join": ("j",),
               "direct_output": ("k",),
               **{key: _USER_RESOURCES for key in ("select", "place", "nodes", "memory",
                                                    "exclusive")}}
_RESOURCES = frozenset({"select", "place", "nodes", "memory", "exclusive"})


def qsub_options(directives: Sequence[str]) -> set[str]:
    """The options ``#PBS`` lines set: letters; ``l:<name>`` for each -l resource and
    ``W:<name>`` for each -W attribute."""
    names: set[str] = set()
    found = [w for line in directives for w in words(line, "#PBS")]
    for i, word in enumerate(found):
        if not word.startswith("-") or len(word) < 2:
            continue
        letter = word[1]
        names.add(letter)
        if letter in "lW":
            value = word[2:] or (found[i + 1] if i + 1 < len(found) else "")
            names.update(f"{letter}:{item.split('=', 1)[0].strip()}"
                         for item in value.split(","))
    return names


class OpenPBS(Scheduler):
    """OpenPBS's commands, parsers and state table (see the module docstring)."""

    name = "pbs"
    #: what this class runs (the Torque flavour is torque.Torque)
    flavour: ClassVar[str] = "openpbs"
    template = Path(__file__).with_name("pbs.mustache")
    config: PBSConfig
    # qsub -V exports nothing in OpenPBS 23.06 (fixed upstream after it, 494e0f018) and
    # -v cannot carry every value byte for byte (tests/fixtures/openpbs-23.06, 13): the
    # base captures the environment in the job directory instead
    exports_environment = False
    # what PBS sets in the job (PBS_NODEFILE, PBS_JOBID, ..., its per-job TMPDIR)
    scheduler_variables: ClassVar[tuple[str, ...]] = ("PBS_", "TMPDIR", "ENVIRONMENT")
    # 123.server, a subjob 123[4].server, an array 123[].server; the server part optional
    native_id_pattern = re.compile(r"[0-9]+(\[[0-9]*\])?(\.[A-Za-z0-9_.-]+)?")
    # a server unreachable or busy; the last two are sbatch's, through Slurm's
    # Torque-style qsub
    transient_errors = ("connection refused", "cannot connect to", "server busy",
                        "communication failure", "end of file", "timed out", "try again",
                        "unable to contact slurm controller")
    # qdel of a job that ended (exit 35) or was purged from the history (153)
    # (tests/fixtures/openpbs-23.06/INDEX.md, "qstat / qdel / qsub errors")
    ended_errors = ("Job has finished", "Unknown Job Id")
    # qstat sends one request per id named: for more than 20, one
    # request for every live job, then the history only of ours not among them
    few_ids = 20
    # with job history, a job qstat -x no longer knows was purged long after it ended;
    # without, PBS forgets it at once: either way only the job's own files can still
    # tell, and they get a file-system grace period, no more
    retention_time = 30.0
    # PBS's kill_delay (default 10 s) between the SIGTERM and SIGKILL of a deleted job
    record_grace = 15.0
    submit_line_field = "Submit_arguments"
    # qsub -o takes [host:]path, refuses non-ASCII paths ("illegal -o value"), and a
    # #PBS line ends at a line break ("unmatched")
    unusable_in_paths = (re.compile(r"[:\r\n]|[^\x00-\x7f]"),
                         "qsub cannot take it in an output path")

    def __init__(self, config: BatchConfig, host: Host) -> None:
        super().__init__(config, host)
        given = self.config.bin_directory
        self._bin = Path(given) if given else (pbs_exec_bin(host) if self.flavour == "openpbs"
                                               else None)
        self.user = host.user()[1]

    def command(self, name: str, *args: str) -> list[str]:
        """``name``'s command line, from ``bin_directory`` when there is one."""
        return [str(self._bin / name) if self._bin else name, *args]

    # -- the script ---------------------------------------------------------------------
    def resources(self, spec: JobSpec) -> dict[str, Any]:
        """The flavour's resource and queue directives (directives.py)."""
        return {**pbs_resources(spec), "direct_output": True}  # (Torque: no -k d)

    def account_lines(self, spec: JobSpec) -> dict[str, Any]:
        """``-A`` the account, ``-P`` the project (OpenPBS has both)."""
        attrs = spec.attributes
        return {field: (directive_value(f"JobAttributes.{name}", value) if value else None)
                for field, name, value in (("account", "account", attrs.account),
                                           ("project", "project_name", attrs.project_name))}

    def directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        attrs = spec.attributes
        ours: dict[str, Any] = {
            # qsub refuses a longer one ("Job name is too long"): 230 is the longest the
            # real OpenPBS 23.06 takes, from the command line or a #PBS line (not the 236
            # of PBS_MAXJOBNAME)
            "job_name": safe_job_name(spec, _MAX_JOB_NAME),
            # (the other flavour's lines stay out of pbs.mustache)
            **dict.fromkeys(("select", "place", "nodes", "memory", "exclusive")),
            **self.resources(spec),
            "walltime": walltime(attrs.duration),
            **self.account_lines(spec),
            "output": str(job_dir.batch_output),
            "join": True,
            "custom": custom(spec),
        }
        script = read_user_script(spec, "#PBS")
        if script is None:
            return silent_only(ours, None, spec, set(), _OPTIONS_OF, _RESOURCES, "walltime")
        if self.flavour != "openpbs":
            raise InvalidJobException(
                "JobSpec.executable (a batch script): Slurm's Torque-style qsub puts its own "
                "-o/-e on the command line, over the script's lines: not supported")
        theirs = qsub_options(script.directives)
        if "J" in theirs:  # its subjobs would share one job's files: not one job
            raise InvalidJobException(
                "JobSpec.executable (a batch script): its #PBS -J makes many jobs; submit "
                "one job per subjob (submit_many sends them as an array)")
        ours["custom"] = [c for c in ours["custom"]
                          if "W:" + c["attribute"].split("=", 1)[0] not in theirs]
        return {**silent_only(ours, script, spec, theirs, _OPTIONS_OF, _RESOURCES, "walltime"),
                "user_script": script}

    def submit_command(self, job_dir: JobDir) -> list[str]:
        return self.command("qsub", str(job_dir.script))

    # -- job arrays (batch/arrays.py) ---------------------------------------------------
    # "Job Arrays" in the OpenPBS User's Guide: qsub -J 0-N; subjob i of 123[].server
    # is 123[i].server; ^array_index^ in -o is the subjob's index; qstat -t lists subjobs
    array_variables: ClassVar[Optional[tuple[str, str]]] = ("PBS_ARRAY_ID", "PBS_ARRAY_INDEX")
    # (-o on qsub's command line overrides the first job's #PBS -o)
    per_job_directives = ("job_name", "output")

    def array_submit_command(self, array: ArrayDir, count: int) -> list[str]:
        return self.command("qsub", "-J", f"0-{count - 1}",
                             "-o", f"{array.dir.path}/^array_index^.out", str(array.dir.script))

    def array_task_id(self, array_id: str, index: int) -> str:
        return array_id.replace("[]", f"[{index}]", 1)

    def array_parts(self, native_id: str) -> Optional[tuple[str, int]]:
        m = _SUBJOB.match(native_id)
        return (f"{m.group(1)}[]{m.group(3) or ''}", int(m.group(2))) if m else None

    def max_array_size(self) -> int:
        """The server's max_array_size (PBS's default, 10000, if it cannot be read)."""
        return self.read_once("PBS's max_array_size", self._server_array_limit, 10000)

    def _server_array_limit(self) -> int:
        out = self.run(self.command("qstat", "-B", "-f", "-F", "json")).stdout
        limit = 10000
        for server in loads(out).get("Server", {}).values():
            limit = int(server.get("max_array_size", 10000))
        return limit

    def cancel_command(self, native_id: str) -> list[str]:
        return self.command("qdel", native_id)

    # -- hold and release (qhold(1B), qrls(1B), qsub -h: a user hold) ---------------------
    hold_submit_option = "-h"

    def hold_command(self, native_id: str) -> list[str]:
        return self.command("qhold", native_id)

    def release_command(self, native_id: str) -> list[str]:
        return self.command("qrls", native_id)

    # -- status -------------------------------------------------------------------------
    def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        """``qstat -f -F json -t -x <ids>`` (no ids: every live job, without -x), an
        array's subjobs included (-t)."""
        argv = self.command("qstat", "-f", "-F", "json", "-t", *(["-x"] if native_ids else []),
                             *native_ids)
        # unknown ids are errors on stderr while the known ones are printed: any other
        # complaint (server down, ...) makes the whole answer untrustworthy
        return self.run_status(argv, _UNKNOWN, lambda out: loads(out).get("Jobs", {}))

    def recent_ids(self, since: float) -> Optional[list[str]]:
        # from the history too (-x) by creation time (-tc): qstat -x would print it all
        created = "-tc.ge." + time.strftime("%Y%m%d%H%M.%S", time.localtime(since))
        return self.run(self.command("qselect", "-x", "-u", self.user, created)).stdout.split()

    def native(self, native_id: str, record: dict[str, Any]) -> NativeStatus:
        """One of ``records``' records in PSI/J terms (the flavour's state table)."""
        return native(native_id, record)

    def record_of(self, native_id: str, records: Mapping[str, Any]) -> Any:
        # an id attached without its server part: PBS answers with the full one
        return records.get(native_id) or next(
            (r for k, r in records.items() if "." not in native_id
             and k.split(".", 1)[0] == native_id), None)

    def list_ids(self) -> list[str]:
        # -T: jobs and subjobs (123[4].server, the ids of jobs sent in an array), not
        # arrays (123[].server), which is what qselect lists by default
        return self.run(self.command("qselect", "-u", self.user, "-T")).stdout.split()


class PBSJobExecutor(BatchSchedulerExecutor):
    """Runs jobs through PBS (qsub/qstat/qdel), see the module docstring."""

    scheduler_class: ClassVar[type[Scheduler]] = OpenPBS
    scheduler: OpenPBS
    config_class = PBSConfig
    config: PBSConfig

    def __new__(cls, url: Optional[str] = None,
                config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> "PBSJobExecutor":
        from .torque import flavour_class  # (get_instance('pbs') on a Torque site)
        return super().__new__(flavour_class(cls, PBSConfig.coerce(config)))

    def __init__(self, url: Optional[str] = None,
                 config: Union[JobExecutorConfig, Mapping[str, Any], None] = None) -> None:
        super().__init__(url, config)
        flavour = self.scheduler.flavour
        if self.config.flavour not in (None, flavour):
            raise ValueError(f"get_instance({self.name!r}) runs the {flavour} flavour, "
                             f"not {self.config.flavour!r}: ask for 'pbs' with that flavour")
