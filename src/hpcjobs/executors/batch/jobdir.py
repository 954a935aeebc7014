"""A batch job's private directory: its script and the files the script writes about itself.

Layout (``<work directory>/<job id>/``, mode 0700)::

    job.sh       the rendered batch script
    environment  the submitter's environment as shell exports, mode 0600 (only for a
                 scheduler that cannot carry it, when the spec inherits it)
    batch.out    the scheduler's stdout/stderr of the script (and the job's, by default)
    started      written when the script begins (its mtime is the start time)
    exitcode     "<status> <caught signal or -> <unusable JobSpec field or ->" written
                 when the script ends, also when it is terminated with SIGTERM
                 (walltime, cancel), via a trap

A lone job's directory is usually made ahead of its job, while the previous submit
command runs, as ``<work directory>/.spare-<uuid>/`` (with its ``batch.out``, an empty
``job.sh``, and its ``environment`` where the backend captures it: rewritten if it
changed meanwhile), and
renamed to the job's id when a job takes it (:meth:`JobDir.spare`, :meth:`JobDir.adopt`):
the submit path then pays a rename and a write into an existing file instead of a mkdir
and two or three file creations (each of which can take a millisecond on a busy disk). The leading
dot keeps a spare out of the way. A client killed while it holds one leaves it behind:
empty files and, where the backend captures it, the environment, private like the rest.

``<work directory>/ids/<native id>`` is a hard link to the job's ``job.sh`` (made by the
executor's monitor thread soon after the submit), so an executor in another process can
attach to the job by native id and still read its files: the script names its directory
(``_hj_dir=``), and the link is that directory's only if it is the same file. A hard link
makes no inode, where a symlink does, and a new inode is what a busy file system charges
most for, for every job. Work directories of earlier versions hold symlinks to the directory, which are read too. (A job sent in a scheduler
array gets its directory from its task, when it starts: see arrays.py.)
The script writes ``exitcode`` as one line in one write; a reader takes it only once the
line ends (a file read while it is written is a record not there yet), so it never
takes half a record for a whole one.
"""

from __future__ import annotations

import functools
import os
import shlex
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ...environment import VALID_NAME
from ...final_status import ended, shell_exit_code
from ...state import JobStatus
from .host import LOCAL, FileData, Host
from .script import shell_quote

__all__ = ["JobDir", "ExitRecord", "exports", "SCRIPT", "BATCH_OUT", "STARTED", "EXIT",
           "ENVIRONMENT"]

SCRIPT = "job.sh"
BATCH_OUT = "batch.out"
STARTED = "started"
EXIT = "exitcode"
ENVIRONMENT = "environment"
_IDS = "ids"
# how the batch script names its directory (batch_body.mustache), and how much of the
# script is read to find it (the line comes after the directives)
_DIR_LINE = "\n_hj_dir="
_SCRIPT_HEAD = 65536
_SPARE = ".spare-"
# variables that describe the submitting shell, not the environment (and bash's
# read-only ones, which cannot be exported)
_SHELL_OWN = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "BASHOPTS", "BASH_VERSINFO", "EUID",
                        "PPID", "SHELLOPTS", "UID", "GROUPS"})


def exports(environment: Mapping[str, str], reserved: Sequence[str] = ()) -> bytes:
    """``environment`` as the ``export NAME=value`` lines of an environment file (see
    :meth:`JobDir.write_environment`). Left out: names a shell cannot export, the
    shell's own bookkeeping, and ``reserved`` names (a trailing '_' makes a prefix) the
    scheduler sets itself."""
    return _exports(tuple(environment.items()), tuple(reserved))


@functools.lru_cache(maxsize=4)
def _exports(environment: tuple[tuple[str, str], ...], reserved: tuple[str, ...]) -> bytes:
    """:func:`exports`, remembered, as a loop of submits captures the same environment
    every time (quoting it all cost more than the rest of a submit's own work)."""
    lines = []
    for name, value in environment:
        if (not VALID_NAME.match(name) or name in _SHELL_OWN
                or any(name.startswith(r) if r.endswith("_") else name == r
                       for r in reserved)):
            continue
        lines.append(f"export {name}={shell_quote(value)}\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


def _named_dir(script: str) -> Optional[str]:
    """The directory a batch script names on its ``_hj_dir=`` line (shell-quoted by the
    renderer), or None."""
    start = script.find(_DIR_LINE)
    if start < 0:
        return None
    lexer = shlex.shlex(script[start + len(_DIR_LINE):], posix=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    try:
        return lexer.get_token()
    except ValueError:  # (quotes not closed in what was read)
        return None


@dataclass(frozen=True)
class ExitRecord:
    """What the script recorded when it ended."""

    status: int            # the job's shell exit status (128+N: killed by signal N)
    caught: Optional[str]  # a signal the script itself received (TERM), else None
    mtime: float           # when it was written
    #: the JobSpec field the script could not use where the job ran, so that the job
    #: never started ("directory", "stdin_path", "stdout_path", "stderr_path"), else None
    unusable: Optional[str] = None

    @property
    def exit_code(self) -> int:
        """The PSI/J exit code: the status, or -N for a process killed by signal N."""
        return shell_exit_code(self.status)

    def final_status(self) -> JobStatus:
        """The final status this record alone tells (no word from the scheduler)."""
        return ended(self.exit_code, self.mtime)


class JobDir:
    """One job's directory (see the module docstring), on ``host``."""

    def __init__(self, path: Path, environment: Optional[bytes] = None,
                 empty_script: bool = False, host: Host = LOCAL) -> None:
        self.path = path
        self.host = host
        #: the text of its environment file, if this object wrote one (a spare's)
        self.environment = environment
        #: its job.sh exists, empty, made by this object (a spare's)
        self.empty_script = empty_script

    @classmethod
    def create(cls, work_dir: Path, name: str, host: Host = LOCAL) -> "JobDir":
        """Make ``work_dir/name`` (it must not exist yet), and its ``batch.out`` (0600:
        the scheduler would create it under the job's umask)."""
        job_dir = cls(work_dir / name, host=host)
        host.make_dir(os.fspath(job_dir.path))
        host.write_file(job_dir._file(BATCH_OUT), b"")
        return job_dir

    @classmethod
    def spare(cls, work_dir: Path, host: Host = LOCAL) -> "JobDir":
        """A job directory made before its job is known (see the module docstring), with
        an empty ``job.sh``: writing into a file costs far less than creating one."""
        spare = cls.create(work_dir, f"{_SPARE}{uuid.uuid4().hex}", host)
        try:
            host.write_file(spare._file(SCRIPT), b"", mode=0o700)
        except OSError:
            spare.remove()
            raise
        spare.empty_script = True
        return spare

    def adopt(self, name: str) -> "JobDir":
        """This spare directory, renamed ``name`` (which must not exist: rename(2) would
        replace an empty directory, but job ids are unique)."""
        path = self.path.with_name(name)
        self.host.rename(os.fspath(self.path), os.fspath(path))
        return JobDir(path, self.environment, self.empty_script, self.host)

    @classmethod
    def find(cls, work_dir: Path, native_id: str, host: Host = LOCAL) -> Optional["JobDir"]:
        """The directory of the job with ``native_id``, if this work directory has it."""
        link = os.path.join(work_dir, _IDS, native_id)
        linked, = host.read_files([link], limit=_SCRIPT_HEAD)
        if linked is None:
            return None
        if linked.is_dir:  # an earlier version's symlink to the directory
            script, = host.read_files([os.path.join(link, SCRIPT)], limit=0)
            return cls(Path(link), host=host) if script is not None else None
        # the directory the script names, in this work directory (which may have moved
        # since), if its job.sh is the linked file
        named = _named_dir(linked.data.decode("utf-8", "surrogateescape"))
        if not named:
            return None
        path = work_dir / os.path.basename(named)
        script, = host.read_files([os.path.join(path, SCRIPT)], limit=0)
        same = script is not None and script.identity == linked.identity
        return cls(path, host=host) if same else None

    def link(self, native_id: str) -> None:
        """Record that this directory belongs to the job ``native_id`` (a hard link to
        its script, see the module docstring)."""
        path = os.fspath(self.path)
        self.host.hard_link(self._file(SCRIPT),
                            os.path.join(os.path.dirname(path), _IDS, native_id))

    def write_script(self, text: str) -> None:
        """Write the batch script (mode 0700; the file must not exist yet, unless it is
        the empty one of a spare directory)."""
        data = text.encode("utf-8", "surrogateescape")
        self.host.write_file(self._file(SCRIPT), data, mode=0o700,
                             exclusive=not self.empty_script)
        self.empty_script = False

    def write_environment(self, data: bytes) -> None:
        """Write the environment file the script sources (mode 0600): ``data``, the
        text of :func:`exports`. Nothing is written when the file holds that text
        already (a spare directory made while the previous submit command ran)."""
        if data == self.environment:
            return
        self.host.write_file(self._file(ENVIRONMENT), data, exclusive=False)
        self.environment = data

    def drop_environment(self) -> None:
        """Remove the environment file this object wrote (a spare's, for a job that
        does not inherit the environment)."""
        if self.environment is not None:
            self.host.remove(self._file(ENVIRONMENT))
            self.environment = None

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def environment_file(self) -> Path:
        """The captured environment's path."""
        return self.path / ENVIRONMENT

    def remove(self) -> None:
        """Delete the directory (a submission that failed leaves nothing behind)."""
        self.host.remove(os.fspath(self.path))

    @property
    def script(self) -> Path:
        """The batch script's path."""
        return self.path / SCRIPT

    @property
    def batch_output(self) -> Path:
        """Where the scheduler writes the script's own output."""
        return self.path / BATCH_OUT

    def started(self) -> Optional[float]:
        """When the script started, or None if it has not (yet, as far as we can see)."""
        return self.look()[0]

    def exit_record(self) -> Optional[ExitRecord]:
        """The script's exit record, or None if there is none yet (or it is unreadable)."""
        return self.look()[1]

    def look(self) -> tuple[Optional[float], Optional[ExitRecord]]:
        """When the script started and its exit record (None: not yet), in one read."""
        return self.seen(*self.host.read_files([self._file(STARTED), self._file(EXIT)]))

    def paths(self) -> tuple[str, str]:
        """The files :meth:`seen` reads (for a read of many jobs' files at once)."""
        return self._file(STARTED), self._file(EXIT)

    @staticmethod
    def seen(started: Optional[FileData],
             exit_file: Optional[FileData]) -> tuple[Optional[float], Optional[ExitRecord]]:
        """The start time and exit record that the files of :meth:`paths` tell."""
        return (started.mtime if started else None,
                _record(exit_file) if exit_file else None)


def _record(exit_file: FileData) -> Optional[ExitRecord]:
    text = exit_file.data.decode("ascii", errors="replace")
    # (being written: "1" of "137 TERM"; a line may end at "\r" too)
    if not text.endswith(("\n", "\r")):
        return None
    fields = text.split()
    try:
        status = int(fields[0])
    except (ValueError, IndexError):
        return None
    caught = fields[1] if len(fields) > 1 and fields[1] != "-" else None
    unusable = fields[2] if len(fields) > 2 and fields[2] != "-" else None
    return ExitRecord(status, caught, exit_file.mtime, unusable)
