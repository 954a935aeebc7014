"""The operations a round trip carries, and what each one returned.

A batch is a list of these; :meth:`SshConnection.batch` runs them in order in one
round trip and returns one :class:`Result` per operation. Paths, arguments and data are
``str`` (file names with undecodable bytes as ``os.fsencode`` gives them back) or
``bytes``; they reach the remote side byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from ..executors.batch.host import Follow
from .errors import RemoteCommandError, RemoteCommandNotFound

__all__ = ["Op", "Run", "WriteFile", "ReadFile", "StatRead", "StatReadMany", "ReadNotes", "ListDir",
           "MakeDirs", "NewDirs", "NewFile", "Remove", "Result", "Text"]

#: a string that reaches the remote side as its bytes (``os.fsencode`` of a str)
Text = Union[str, bytes]


@dataclass(frozen=True)
class Run:
    """Run ``argv`` (found on the remote PATH) with ``input`` as its stdin (empty if
    None), in ``cwd`` if given."""

    argv: Sequence[Text]
    input: Optional[bytes] = None
    cwd: Optional[Text] = None


@dataclass(frozen=True)
class WriteFile:
    """Write ``data`` to ``path``: into a temporary file beside it, then renamed over
    it, so the path never holds a partial file. ``mode`` (e.g. ``0o600``) if given;
    ``exclusive``: fail if ``path`` exists (the file is linked in, not renamed over).
    ``gzipped``: ``data`` is gzip's compression of what to write (``gzip -dc`` there)."""

    path: Text
    data: bytes
    mode: Optional[int] = None
    exclusive: bool = False
    gzipped: bool = False


@dataclass(frozen=True)
class ReadFile:
    """The bytes of ``path`` (a missing file is a non-zero result, not an error)."""

    path: Text


@dataclass(frozen=True)
class StatRead:
    """A file's status and bytes: stdout is one line ``<mtime> <device> <inode> <size>
    <d or f>`` (mtime with nanoseconds), then up to ``limit`` bytes from ``offset``
    (none for a directory). Needs a ``stat`` with ``-c`` (GNU coreutils, BusyBox)."""

    path: Text
    offset: int = 0
    limit: int = 1 << 20


@dataclass(frozen=True)
class StatReadMany:
    """Many files' status and bytes with a constant number of processes (one ``stat``,
    one ``cat`` for those read from offset 0), for a status tick over many jobs. stdout:
    a line of one digit per path (0 missing, 1 file, 2 directory), a stat line per
    existing path as in :class:`StatRead`, then the bytes of the files from their
    offsets, in path order. Whole files are sent; the reader keeps ``limit`` of each.
    See :func:`hpcjobs.remote.host.split_many` for reading it back."""

    paths: tuple[Text, ...]
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class ReadNotes:
    """A batch executor's change notes (executors/batch/changes.py) and the files of the
    jobs they name, in one operation, for a status tick: every regular file of
    ``directory`` (each named in ``offsets`` from its offset, the others from their
    start), then, read after them, what ``follow`` asks for (its ``paths``, and its
    ``files`` of ``<jobs>/<name>`` for each of its ``names``, which must be directory
    names, and of its first ``most`` names on the whole lines read). Processes: a
    ``tail`` a notes file, two ``stat`` and two ``cat``. stdout: see
    :func:`hpcjobs.remote.notes.split_notes`."""

    directory: Text
    offsets: tuple[tuple[Text, int], ...]
    follow: Follow


@dataclass(frozen=True)
class ListDir:
    """The names in a directory (hidden ones too), each followed by a NUL byte."""

    path: Text


@dataclass(frozen=True)
class MakeDirs:
    """``mkdir -p path``, then ``chmod mode path`` if a mode is given."""

    path: Text
    mode: Optional[int] = None


#: a file of :class:`NewDirs`: (name, data, mode), or (name, gzip's data, mode, True)
NewFile = Union[tuple[Text, bytes, int], tuple[Text, bytes, int, bool]]


@dataclass(frozen=True, repr=False)
class NewDirs:
    """Make each directory (0700: it must not exist yet, its parent must) and write its
    files in it, ``(name, data, mode)`` each, data without a NUL byte: one ``mkdir`` for
    all, the files by the ``printf`` builtin, one ``chmod`` per mode other than 0600.
    ``(name, data, mode, True)``: ``data`` is gzip's compression of the file (any
    bytes; one ``gzip -dc`` for it). Fails at the first that cannot be made or written
    (those before it stay)."""

    directories: tuple[tuple[Text, tuple[NewFile, ...]], ...]

    def __repr__(self) -> str:  # (the paths, not the files' contents)
        shown = ", ".join(repr(_show(d)) for d, _ in self.directories[:3])
        return f"NewDirs({shown}{', ...' if len(self.directories) > 3 else ''})"


@dataclass(frozen=True)
class Remove:
    """``rm -f path`` (``rm -rf`` with ``recursive``); a missing path is no error."""

    path: Text
    recursive: bool = False


Op = Union[Run, WriteFile, ReadFile, StatRead, StatReadMany, ReadNotes, ListDir, MakeDirs, NewDirs,
           Remove]


@dataclass(frozen=True)
class Result:
    """What one operation returned: its exit code, stdout and stderr as bytes, and
    ``missing`` when a :class:`Run` named a command the remote PATH does not have."""

    op: Op
    returncode: int
    stdout: bytes = b""
    stderr: bytes = b""
    missing: bool = field(default=False)

    @property
    def ok(self) -> bool:
        """True if the operation succeeded (exit code 0)."""
        return self.returncode == 0

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    def check(self, where: str = "the remote host") -> "Result":
        """This result if it succeeded; else RemoteCommandNotFound (a missing command)
        or RemoteCommandError with the exit code and stderr."""
        if self.returncode == 0:
            return self
        what = _describe(self.op)
        if self.missing:
            raise RemoteCommandNotFound(f"{what}: command not found on {where}", self)
        err = self.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise RemoteCommandError(f"{what} on {where} exited with code {self.returncode}"
                                 + (f": {err}" if err else ""), self)


def _describe(op: Op) -> str:
    if isinstance(op, Run):
        return f"command {[_show(a) for a in op.argv]!r}"
    if isinstance(op, StatReadMany):
        return f"StatReadMany({len(op.paths)} paths)"
    if isinstance(op, NewDirs):
        return repr(op)
    if isinstance(op, ReadNotes):
        return f"ReadNotes({_show(op.directory)!r})"
    return f"{type(op).__name__}({_show(op.path)!r})"


def _show(t: Text) -> str:
    return t.decode("utf-8", "backslashreplace") if isinstance(t, bytes) else t
