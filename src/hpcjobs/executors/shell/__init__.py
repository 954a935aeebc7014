"""``local`` over ``ssh://``: jobs started on another host by its shell, no scheduler.

``JobExecutor.get_instance('local', url='ssh://host')`` gives this executor: the batch
machinery (executors/batch) with a backend whose "scheduler" is the remote shell. A
job's script runs in the background in a session of its own (``setsid``), its native
id is that process's id, cancel signals the session, and the job files (start, exit
code) that every batch script writes are the record of its end; ``ps`` tells whether
it still runs. Nothing but POSIX ``sh``, ``setsid`` and ``ps`` is needed there
(docs/remote.md). A job that vanishes without an exit record (the host rebooted, the
process was killed with SIGKILL from outside its script) ends FAILED saying so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from ...spec import JobSpec
from ...state import JobState
from ..batch import BatchSchedulerExecutor, JobDir, NativeStatus, Scheduler

__all__ = ["ShellExecutor", "Shell"]

# started in a session of its own, so that cancel reaches every process the job made;
# its output (until the script redirects it) goes to batch.out, as a scheduler's would;
# a script that is not there (its files lost with a connection) is no job
_START = ('[ -f "$1" ] || { echo "no job script $1" >&2; exit 1; }; '
          'setsid /bin/sh "$1" </dev/null >"$2" 2>&1 & echo $!')


class Shell(Scheduler):
    """The remote shell as a scheduler (see the module docstring)."""

    name = "local"
    template = Path(__file__).with_name("shell.mustache")
    native_id_pattern = re.compile(r"[1-9][0-9]*")
    ended_errors = ("no such process",)
    # the job inherits the environment of the shell that starts it: the login's there
    exports_environment = True
    # nothing keeps a job's end but its files: an attach reads them through the id link
    links_at_submit = True
    has_history = False
    retention_time = 0.0
    record_grace = 5.0

    def validate(self, spec: JobSpec) -> None:
        nodes = spec.resources_v1.computed_node_count if spec.resources is not None else 1
        if nodes > 1:
            from ...errors import InvalidJobException
            raise InvalidJobException(f"ResourceSpec.node_count: {nodes} nodes asked of the "
                                      "local executor, which runs a job on one host")

    def directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        return {}

    def submit_command(self, job_dir: JobDir) -> list[str]:
        return ["sh", "-c", _START, "sh", str(job_dir.script), str(job_dir.path / "batch.out")]

    def cancel_command(self, native_id: str) -> list[str]:
        return ["kill", "-TERM", f"-{native_id}"]  # (dash's kill takes no "--")

    #: the executor's ``ids`` directory (the links from native ids to job directories)
    ids_directory = ""

    def list_ids(self) -> list[str]:
        """The jobs of this work directory whose process still runs."""
        ids = self.host.list_dir(self.ids_directory) or []
        known = [i for i in ids if self.native_id_pattern.fullmatch(i)]
        return sorted(self.records(known), key=int) if known else []

    def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        if not native_ids:
            return {}
        out = self.run(["ps", "-o", "pid=,stat=", "-p", ",".join(native_ids)], check=False).stdout
        found = {}
        for line in out.splitlines():
            pid, _, stat = line.strip().partition(" ")
            if pid in native_ids and not stat.strip().startswith("Z"):
                found[pid] = stat.strip()
        return found

    def submit_lines(self) -> Iterable[tuple[str, str]]:
        """The user's processes and their command lines there: a job whose start
        command's answer was lost (a dropped connection) is found by its script."""
        out = self.run(["ps", "-u", str(self.host.user()[0]), "-o", "pid=,args="], check=False)
        for line in out.stdout.splitlines():
            pid, _, args = line.strip().partition(" ")
            yield pid, args

    def native(self, native_id: str, record: Any) -> NativeStatus:
        # a process that runs is a job that runs (its start file says so too)
        return NativeStatus(native_id, f"process {record}", JobState.ACTIVE)

    def record_of(self, native_id: str, records: Mapping[str, Any]) -> Any:
        return records.get(native_id)


class ShellExecutor(BatchSchedulerExecutor):
    """The ``local`` executor of a remote host (``get_instance('local', url='ssh://...')``)."""

    scheduler_class = Shell
    scheduler: Shell

    def _check_url(self, url: str) -> None:
        from ...remote.url import is_ssh_url
        if not is_ssh_url(url):
            raise ValueError(f"executor 'local' cannot serve url {url!r}: it takes "
                             "ssh://[user@]host[:port], or no URL for this machine")
        super()._check_url(url)

    def __init__(self, url: Optional[str] = None, config: Any = None) -> None:
        if url is None:
            raise ValueError("the shell backend of the local executor needs an ssh:// URL")
        super().__init__(url, config)
        self.scheduler.ids_directory = str(self.work_directory / "ids")
