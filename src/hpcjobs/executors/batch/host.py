"""``Host``: where a batch executor's commands run and its files are read and written.

Every scheduler command (``sbatch``, ``qstat``, ...) and every file of the work
directory (job scripts, the files a script writes about itself, change notes, id links)
goes through one ``Host``, so that where the scheduler is can change under every
backend at once. :class:`Host` is this machine; a host reached over a connection (ssh)
is a subclass that overrides its methods. The bulk ones (:meth:`Host.read_files`,
:meth:`Host.read_notes`) let the monitor look at all the jobs a tick needs in one round
trip.

The methods that change files return nothing, so that a host over a connection may
queue them and send them with its next ``run`` or ``read_files``: a submit's directory,
script and command then cost one round trip. Paths are strings, as the other side sees
them. Files hpcjobs writes are private
(0600, scripts 0700; directories 0700).
"""

from __future__ import annotations

import getpass
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple, Optional, Sequence, Union

from ... import external
from ...errors import CommandError
from ...launchers.base import SCRIPTS
from ...private import DIR_MODE, FILE_MODE, create, fill, make_dirs

if TYPE_CHECKING:
    from ...staging import StagingMode

__all__ = ["FileData", "Follow", "Host", "LOCAL", "NotesRead", "noted_names", "work_directory_on"]


@dataclass(frozen=True)
class FileData:
    """A file as read: when it last changed, which file it is, and its bytes."""

    mtime: float
    #: (device, inode): tells a file replaced or a hard link to it
    identity: tuple[int, int]
    size: int
    is_dir: bool = False
    #: the bytes read (from the offset asked for; none for a directory)
    data: bytes = b""


class Follow(NamedTuple):
    """What :meth:`Host.read_notes` may read besides the notes, in the same request: the
    files ``files`` of each job directory ``<jobs>/<name>`` named on a line the notes
    gained (up to ``most`` such names) or in ``names``, and the files ``paths``."""

    jobs: str
    files: tuple[str, ...]
    names: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    #: the most names taken from the lines (a command line holds their paths)
    most: int = 1000


class NotesRead(NamedTuple):
    """What :meth:`Host.read_notes` found: the notes directory itself, each notes file
    read (by name: a known one from its offset, a new one from its start), whether
    the directory was listed (else only the known files were read), and the files
    :class:`Follow` asked for, by path (a path left out was not read: read it anew)."""

    directory: FileData
    files: dict[str, Optional[FileData]]
    listed: bool
    followed: dict[str, Optional[FileData]]


def noted_names(data: bytes) -> list[str]:
    """The whole lines of ``data`` (up to its last newline), empty ones left out."""
    return [n for n in os.fsdecode(data[:data.rfind(b"\n") + 1]).split("\n") if n]


class Host:
    """What the batch machinery asks of the machine the scheduler is on: this machine.
    A host reached over a connection is a subclass that overrides every method."""

    #: where the host is, for messages ("this machine", "ssh://login")
    where = "this machine"

    def environ(self) -> Mapping[str, str]:
        """The environment a command run there starts with (what a job inherits when
        its scheduler does not carry the submitter's environment itself)."""
        return os.environ

    def user(self) -> tuple[int, str]:
        """The id and name of the user the commands run as there."""
        return os.getuid(), getpass.getuser()

    def expand_user(self, path: str) -> str:
        """``path`` with a leading ``~`` replaced by the home directory there."""
        return os.path.expanduser(path)

    def make_dirs(self, path: str) -> None:
        """Make the directory ``path`` and the parents it lacks, each 0700."""
        make_dirs(Path(path))

    def launcher_scripts(self, work_directory: str) -> str:
        """The directory holding the launcher scripts (launchers/scripts) there."""
        return os.fspath(SCRIPTS)

    def close(self) -> None:
        """Let go of the host (a connection ends; nothing to do here)."""

    def flush(self) -> None:
        """Carry out the file changes asked so far (here: done as asked)."""

    # -- file staging (stage_files.py): the client's files to and from the host --------
    def put(self, source: str, target: str, mode: "StagingMode") -> None:
        """The client's file or directory ``source`` as ``target`` here, by ``mode``
        (through a temporary name beside the target)."""
        from ...stage_files import place
        place(source, target, mode)

    def get(self, source: str, target: str, mode: "StagingMode") -> None:
        """``source`` here as the client's ``target``, by ``mode``."""
        from ...stage_files import place
        place(source, target, mode)

    def exists(self, path: str) -> bool:
        """True if ``path`` exists here (a dangling link counts)."""
        return os.path.lexists(path)

    def run(self, argv: Sequence[str], *, timeout: float, check: bool = True,
            meanwhile: Optional[Callable[[], None]] = None) -> external.CommandResult:
        """Run ``argv`` there (:func:`hpcjobs.external.run`'s contract: no shell, a
        timeout, ``CommandError`` with the output on failure; ``meanwhile`` runs here
        while the command runs there)."""
        return external.run(argv, timeout=timeout, check=check, meanwhile=meanwhile)

    #: whether :meth:`run_many` costs less than a :meth:`run` each (one round trip)
    batches_commands = False

    def run_ahead(self, argvs: Sequence[Sequence[str]]) -> None:
        """Commands the caller is about to :meth:`run` (``()``: none any more; each
        call replaces the last). A host where a request is a round trip runs them
        with its next :meth:`read_notes`, just before the read, and its :meth:`run` of
        one of them returns that result, once: a status tick's notes and its scheduler
        query come in one round trip. Here they run when asked, so this does nothing."""

    def run_many(self, argvs: Sequence[Sequence[str]], *, timeout: float
                 ) -> list[Union[external.CommandResult, CommandError]]:
        """Run each command there, each with :meth:`run`'s contract (``check``): its
        result, or the CommandError it failed with, in the order given. The commands
        must not depend on each other (a burst of submits): here they run one after the
        other, a host over a connection may run some at once. ``timeout`` is for each
        command here, for all of them over a connection."""
        outcomes: list[Union[external.CommandResult, CommandError]] = []
        for argv in argvs:
            try:
                outcomes.append(self.run(argv, timeout=timeout))
            except CommandError as e:
                outcomes.append(e)
        return outcomes

    def read_files(self, paths: Sequence[str], offsets: Optional[Sequence[int]] = None,
                   limit: int = 1 << 20) -> list[Optional[FileData]]:
        """Each path's file, read from its offset (0 if none given), at most ``limit``
        bytes; None for one that cannot be read (missing). One request for all."""
        return [self._read(p, offsets[i] if offsets else 0, limit) for i, p in enumerate(paths)]
    @staticmethod
    def _read(path: str, offset: int, limit: int) -> Optional[FileData]:
        # (one descriptor for the stat and the read: the mtime is that of what is read)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            is_dir = stat.S_ISDIR(st.st_mode)
            data = b"" if is_dir or st.st_size <= offset else os.pread(fd, limit, offset)
        except OSError:
            return None
        finally:
            os.close(fd)
        return FileData(st.st_mtime, (st.st_dev, st.st_ino), st.st_size, is_dir, data)

    def read_notes(self, directory: str, offsets: Mapping[str, int],
                   list_if: Callable[[FileData], bool], follow: Follow) -> Optional[NotesRead]:
        """An executor's notes (changes.py) and the job files they name, in one request:
        the notes files of ``directory``, each of ``offsets`` from its offset, and, if
        the directory is listed, the others from their start; then, read after them, the
        files ``follow`` asks for. A host where a request is a round trip reads them all
        (SshHost: the directory listed every time, which costs nothing more there); this
        one reads the notes only, and lists the directory only when ``list_if`` of its
        own FileData says so: here a read costs no round trip, and the caller reads the
        files of the jobs it follows, no others (NotesRead.followed is empty). None if
        the directory is gone."""
        names = list(offsets)
        here, *found = self.read_files([directory] + [os.path.join(directory, n) for n in names],
                                       [0, *offsets.values()])
        if here is None:
            return None
        listed = list_if(here)
        if listed:
            now = self.list_dir(directory)
            if now is None:
                return None
            new = [n for n in now if n not in offsets]
            found += self.read_files([os.path.join(directory, n) for n in new]) if new else []
            names += new
        return NotesRead(here, dict(zip(names, found)), listed, {})

    def list_dir(self, path: str) -> Optional[list[str]]:
        """The names in the directory ``path``; None if it does not exist."""
        try:
            return os.listdir(path)
        except FileNotFoundError:
            return None

    def make_dir(self, path: str, exist_ok: bool = False) -> None:
        """Make the directory ``path`` (mode 0700); its parent must exist."""
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            if not exist_ok:
                raise

    def write_file(self, path: str, data: bytes, mode: int = FILE_MODE,
                   exclusive: bool = True) -> None:
        """Write ``data`` as the file ``path`` (``mode`` if it is created);
        ``exclusive``: it must not exist yet (else an existing one is overwritten)."""
        # (an existing file is filled, not truncated by open: see private.fill)
        if exclusive:
            create(path, data, mode=mode, exclusive=True)
        else:
            fill(path, data, mode=mode)

    def rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``."""
        os.rename(source, target)

    def hard_link(self, target: str, link: str) -> None:
        """Make ``link`` a hard link to ``target``, replacing a link of that name and
        making its directory (0700) if it is missing."""
        try:
            os.link(target, link)
        except FileNotFoundError:
            self.make_dir(os.path.dirname(link), exist_ok=True)
            os.link(target, link)
        except FileExistsError:  # (an id reused: the scheduler's state was reset)
            os.unlink(link)
            os.link(target, link)

    def remove(self, path: str) -> None:
        """Remove the file or the directory tree ``path`` (gone already: no error)."""
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


#: this machine
LOCAL = Host()


def work_directory_on(host: Host, configured: Optional[str], name: str) -> Path:
    """An executor's work directory on a host reached over a connection: ``configured``
    (default ``~/.hpcjobs/work/<name>``), ``~`` and a relative path taken from the home
    directory there; made (0700) with the host's next round trip."""
    path = host.expand_user(configured if configured is not None else f"~/.hpcjobs/work/{name}")
    if not path.startswith("/"):
        path = host.expand_user("~/" + path)
    host.make_dirs(path)
    return Path(path)
