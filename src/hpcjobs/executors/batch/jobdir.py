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
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ...environment import VALID_NAME
from ...final_status import ended, shell_exit_code
from ...private import DIR_MODE, create, fill
from ...state import JobStatus
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
    """One job's directory (see the module docstring)."""

    def __init__(self, path: Path, environment: Optional[bytes] = None,
                 empty_script: bool = False) -> None:
        self.path = path
        #: the text of its environment file, if this object wrote one (a spare's)
        self.environment = environment
        #: its job.sh exists, empty, made by this object (a spare's)
        self.empty_script = empty_script

    @classmethod
    def create(cls, work_dir: Path, name: str) -> "JobDir":
        """Make ``work_dir/name`` with mode 0700 (it must not exist yet), and its
        ``batch.out`` (0600: the scheduler would create it under the job's umask)."""
        job_dir = cls(work_dir / name)
        os.mkdir(job_dir.path, DIR_MODE)
        create(job_dir._file(BATCH_OUT), b"")
        return job_dir

    @classmethod
    def spare(cls, work_dir: Path) -> "JobDir":
        """A job directory made before its job is known (see the module docstring), with
        an empty ``job.sh``: writing into a file costs far less than creating one."""
        spare = cls.create(work_dir, f"{_SPARE}{uuid.uuid4().hex}")
        try:
            create(spare._file(SCRIPT), b"", mode=0o700, exclusive=True)
        except OSError:
            spare.remove()
            raise
        spare.empty_script = True
        return spare

    def adopt(self, name: str) -> "JobDir":
        """This spare directory, renamed ``name`` (which must not exist: rename(2) would
        replace an empty directory, but job ids are unique)."""
        path = self.path.with_name(name)
        os.rename(self.path, path)
        return JobDir(path, self.environment, self.empty_script)

    @classmethod
    def find(cls, work_dir: Path, native_id: str) -> Optional["JobDir"]:
        """The directory of the job with ``native_id``, if this work directory has it."""
        link = os.path.join(work_dir, _IDS, native_id)
        try:
            linked = os.stat(link)
            if stat.S_ISDIR(linked.st_mode):  # an earlier version's symlink to it
                target = Path(link).resolve(strict=True)
                return cls(target) if (target / SCRIPT).is_file() else None
            with open(link, "rb") as f:
                head = f.read(_SCRIPT_HEAD).decode("utf-8", "surrogateescape")
        except (OSError, RuntimeError):
            return None
        # the directory the script names, in this work directory (which may have moved
        # since), if its job.sh is the linked file
        named = _named_dir(head)
        if not named:
            return None
        path = work_dir / os.path.basename(named)
        try:
            same = os.path.samestat(os.stat(os.path.join(path, SCRIPT)), linked)
        except OSError:
            return None
        return cls(path) if same else None

    def link(self, native_id: str) -> None:
        """Record that this directory belongs to the job ``native_id`` (a hard link to
        its script, see the module docstring)."""
        # paths as str: the monitor links every job it follows, and pathlib adds to each
        path = os.fspath(self.path)
        ids = os.path.join(os.path.dirname(path), _IDS)
        link = os.path.join(ids, native_id)
        script = self._file(SCRIPT)
        try:
            os.link(script, link)
        except FileNotFoundError:
            if not os.path.isdir(ids):  # the first job of this work directory
                try:
                    os.mkdir(ids, DIR_MODE)
                except FileExistsError:
                    pass
            os.link(script, link)
        except FileExistsError:  # an id reused (the scheduler's state was reset)
            os.unlink(link)
            os.link(script, link)

    def write_script(self, text: str) -> None:
        """Write the batch script (mode 0700; the file must not exist yet, unless it is
        the empty one of a spare directory)."""
        data = text.encode("utf-8", "surrogateescape")
        if self.empty_script:
            fill(self._file(SCRIPT), data, mode=0o700)
        else:
            create(self._file(SCRIPT), data, mode=0o700, exclusive=True)
        self.empty_script = False

    def write_environment(self, data: bytes) -> None:
        """Write the environment file the script sources (mode 0600): ``data``, the
        text of :func:`exports`. Nothing is written when the file holds that text
        already (a spare directory made while the previous submit command ran: one
        file creation fewer on the submit path, where the scheduler's own disk writes
        make it slow)."""
        if data == self.environment:
            return
        create(self._file(ENVIRONMENT), data)
        self.environment = data

    def drop_environment(self) -> None:
        """Remove the environment file this object wrote (a spare's, for a job that
        does not inherit the environment)."""
        if self.environment is not None:
            os.unlink(self._file(ENVIRONMENT))
            self.environment = None

    def _file(self, name: str) -> str:
        """The path of its file ``name``, as a str: what the submit path and the monitor
        hand to os calls (joining to a Path and converting it back would add to each file,
        several times a submit)."""
        return os.path.join(self.path, name)

    @property
    def environment_file(self) -> Path:
        """The captured environment's path."""
        return self.path / ENVIRONMENT

    def remove(self) -> None:
        """Delete the directory (a submission that failed leaves nothing behind)."""
        for child in self.path.iterdir():
            child.unlink()
        self.path.rmdir()

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
        try:
            return os.stat(self._file(STARTED)).st_mtime
        except OSError:
            return None

    def exit_record(self) -> Optional[ExitRecord]:
        """The script's exit record, or None if there is none yet (or it is unreadable).
        Read with os calls on one descriptor rather than pathlib's stat and read_text:
        the monitor reads a record for every job that ends."""
        try:
            fd = os.open(self._file(EXIT), os.O_RDONLY)
        except OSError:
            return None
        try:
            mtime = os.fstat(fd).st_mtime
            chunks = []
            while chunk := os.read(fd, 4096):
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        text = b"".join(chunks).decode("ascii", errors="replace")
        # (being written: "1" of "137 TERM"; a line may end at "\r" too, as it did when
        # the file was read as text)
        if not text.endswith(("\n", "\r")):
            return None
        fields = text.split()
        try:
            status = int(fields[0])
        except (ValueError, IndexError):
            return None
        caught = fields[1] if len(fields) > 1 and fields[1] != "-" else None
        unusable = fields[2] if len(fields) > 2 and fields[2] != "-" else None
        return ExitRecord(status, caught, mtime, unusable)
