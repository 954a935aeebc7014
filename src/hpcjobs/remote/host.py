"""``SshHost``: the batch machinery's host (where scheduler commands run and job files
live) on the other end of an :class:`~hpcjobs.remote.ssh.SshConnection`.

It answers the same calls as the local host of the batch executors (``run``,
``read_files``, ``list_dir``, ``make_dir``, ``write_file``, ``rename``, ``hard_link``,
``remove``) with the same meanings. The calls that change files return nothing and
are queued: they travel with the next ``run``, ``read_files`` or ``list_dir``, in the
same round trip and before it, and the first that fails stops the rest. So a submit
(its directory, its script, then ``sbatch``) is one round trip, and so is a status
tick (the change notes and the files of the jobs they name: ``read_notes``).
:meth:`flush` sends what is queued on its own.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import tarfile
import threading
import uuid
from typing import BinaryIO, Callable, Mapping, Optional, Sequence, Union

from ..errors import CommandError
from ..executors.batch.host import FileData, Follow, Host, NotesRead
from ..external import CommandResult
from ..launchers.base import SCRIPTS
from ..stage_files import StagingError
from ..staging import StagingMode
from ..private import DIR_MODE, FILE_MODE
from .errors import SshConnectionLost, SshError
from .ops import (ListDir, MakeDirs, NewDirs, NewFile, Op, Remove, Result, Run, StatRead, StatReadMany,
                  WriteFile)
from .shscript import quote
from .ssh import SshConnection, Writer
from .login import PROBE, RemoteLogin, read_login

__all__ = ["SshHost", "RemoteFileError", "connect"]

# make_dir's script: $2 = 1 when the directory may exist already
_MKDIR = 'mkdir -m 700 "$1" || { [ "$2" = 1 ] && [ -d "$1" ]; }'
# the launcher scripts: $1 the directory, then name and contents of each file; nothing
# to do if it exists (its name is their digest), else made beside it and renamed: one
# process there, three the first time
_LAUNCHERS = ('[ -d "$1" ] && exit 0; umask 077; d=$1; t=$1.part.$$; shift; mkdir -p "$t" && '
              'while [ $# -gt 1 ]; do printf %s "$2" >"$t/$1" || break; shift 2; done && '
              '[ $# = 0 ] && { [ -d "$d" ] || mv "$t" "$d"; }; rc=$?; rm -rf "$t"; exit $rc')
# bytes of directory paths in one NewDirs (its mkdir's command line: far below ARG_MAX)
_NEW_DIRS_BYTES = 64 * 1024
# unpack the tar on stdin (one member, "x") beside the target $1 in $2, then rename it
# over $1 (a directory it replaces is removed first)
_UNPACK = ('d=$(dirname "$1") && mkdir -p "$d" && mkdir -m 700 "$2" && tar -xf - -C "$2" && '
           '{ [ ! -d "$1" ] || [ -L "$1" ] || rm -rf "$1"; } && mv -f "$2/x" "$1"; '
           'rc=$?; rm -rf "$2"; exit $rc')
# $1 as a tar stream of one member, its own name
_PACK = 'cd "$(dirname "$1")" && tar -cf - "./$(basename "$1")"'
#: run_many's commands whose results come back together (two processes there for all of
#: them, where each alone costs two; a connection lost meanwhile leaves these unknown)
RUN_MANY_GROUP = 16
#: run_many's commands running at once there (independent submits: the scheduler's
#: client spends much of its time waiting for the scheduler)
RUN_MANY_PARALLEL = 4
#: bytes of a file written there above which it goes compressed, if gzip is there
_GZIP_ABOVE = 64 * 1024
#: seconds a staging round trip may take (it carries whole files)
_STAGING_TIMEOUT = 3600.0

log = logging.getLogger(__name__)

class RemoteFileError(OSError):
    """A queued file change failed on the remote host; the calls queued after it were
    not made, and the command or read it travelled with was not run."""

    def __init__(self, message: str, result: Result) -> None:
        super().__init__(message)
        self.result = result


class SshHost(Host):
    """The machine at the other end of ``connection``, as a batch executor's host."""

    def __init__(self, connection: SshConnection, shared: bool = False) -> None:
        self.connection = connection
        self._shared = shared  # (from CONNECTIONS: released, not closed, at close)
        self.where = str(connection.target)
        self._lock = threading.Lock()  # guards _queued
        self._order = threading.RLock()  # (an RLock: ``meanwhile`` may send from within)
        self._queued: list[Op] = []
        # run_ahead's commands: to send with the next read_notes, then their results
        self._ahead: list[list[str]] = []
        self._fetched: dict[tuple[str, ...], Result] = {}
        self._login: Optional[RemoteLogin] = None
        self._scripts: Optional[str] = None

    # -- what the other side is ----------------------------------------------------------
    def environ(self) -> Mapping[str, str]:
        """The environment a command run there over ssh starts with (that of a
        non-interactive login: the remote shell's startup files as ssh runs them), read
        once (:meth:`login`) and kept while the host lives; an SshError
        (a SubmitException) if it cannot be."""
        return self.login().environ

    def login(self) -> RemoteLogin:
        """The login's environment and user (:data:`~hpcjobs.remote.login.PROBE`), read
        in one round trip on first use and kept while the host lives."""
        if self._login is None:
            self._login = read_login(self._send(list(PROBE), 60.0), self.where)
        return self._login

    def user(self) -> tuple[int, str]:
        """The id and name of the user the commands run as there (``id``)."""
        login = self.login()
        return login.uid, login.name

    def expand_user(self, path: str) -> str:
        """``path`` with a leading ``~`` (or ``~/``) replaced by the home directory there
        (``~user`` is not expanded: the remote account database is not read)."""
        if path == "~" or path.startswith("~/"):
            return self.login().home + path[1:]
        return path

    def make_dirs(self, path: str) -> None:
        """Make ``path`` and the parents it lacks, each 0700 (queued)."""
        self._queue(Run(["sh", "-c", 'umask 077 && mkdir -p "$1"', "sh", path]))

    def launcher_scripts(self, work_directory: str) -> str:
        """A copy of the launcher scripts in the work directory there, named by their
        contents (so clients of other versions keep theirs), written once (queued: one
        operation, which finds them there if a client of this version wrote them)."""
        if self._scripts is None:
            files = sorted(p for p in SCRIPTS.iterdir() if p.suffix == ".sh")
            digest = hashlib.sha256()
            for p in files:
                digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
            directory = f"{work_directory}/launchers-{digest.hexdigest()[:12]}"
            contents = [w for p in files for w in (p.name, os.fsdecode(p.read_bytes()))]
            self._queue(Run(["sh", "-c", _LAUNCHERS, "sh", directory, *contents]))
            self._scripts = directory
        return self._scripts

    # -- file staging: the client's files to and from the host, as tar streams ---------
    def put(self, source: str, target: str, mode: StagingMode) -> None:
        """The client's file or directory ``source`` as ``target`` there: one tar
        stream in one round trip (raw on the session's stdin, after the changes queued
        before it), unpacked beside the target and renamed over it."""
        if mode is StagingMode.LINK:
            raise StagingError(f"{source}: a link there cannot point to a file on this "
                               f"machine ({self.where}); use COPY or MOVE")
        os.lstat(source)  # (a missing source: OSError naming it, nothing sent)
        part = f"{target}.hpcjobs-part.{uuid.uuid4().hex[:12]}"
        r = self._send_files([Run(["sh", "-c", _UNPACK, "sh", target, part])],
                             timeout=_STAGING_TIMEOUT, stdin=lambda out: _write_tar(source, out))[0]
        if not r.ok:
            raise StagingError(f"{target} on {self.where}: {r.stderr.decode('utf-8', 'replace').strip()}")
        if mode is StagingMode.MOVE:
            from ..stage_files import remove
            remove(source)

    def get(self, source: str, target: str, mode: StagingMode) -> None:
        """``source`` there as the client's ``target``: one tar stream in one round
        trip (raw on its own session's stdout, after the changes queued before it),
        unpacked as it comes beside the target and renamed over it."""
        from ..stage_files import remove
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        part = f"{target}.hpcjobs-part.{uuid.uuid4().hex[:12]}"
        os.mkdir(part, DIR_MODE)
        try:
            self.flush()
            with self._order:  # (after the changes in flight)
                pass
            try:
                rc, stderr = self.connection.stream_out(
                    b"set -- " + quote(source, "path") + b"\n" + _PACK.encode(),
                    lambda out: _extract(out, part), timeout=_STAGING_TIMEOUT)
            except SshError as e:
                raise ConnectionError(f"files on {self.connection.target}: {e.message}") from e
            except tarfile.TarError as e:
                rc, stderr = -1, f"what came back is not a whole tar stream: {e}"
            if rc != 0:
                raise StagingError(f"{source} on {self.where}: {stderr.strip()}")
            (name,) = os.listdir(part)
            if os.path.isdir(target) and not os.path.islink(target):
                remove(target)
            os.replace(os.path.join(part, name), target)
        finally:
            remove(part)
        if mode is StagingMode.MOVE:
            self.remove(source)
            self.flush()

    def exists(self, path: str) -> bool:
        """True if ``path`` exists there (a dangling link counts)."""
        r = self._send_files([Run(["sh", "-c", '[ -e "$1" ] || [ -L "$1" ]', "sh", path])])[0]
        return r.ok

    def close(self) -> None:
        """Send what is queued, then end the connection."""
        try:
            self.flush()
        except (OSError, SshError) as e:
            log.info("%s: changes not sent at close: %s", self.where, e)
        if self._shared:
            from .shared import CONNECTIONS
            CONNECTIONS.release(self.connection)
        else:
            self.connection.close()

    # -- changes: queued ---------------------------------------------------------------
    def make_dir(self, path: str, exist_ok: bool = False) -> None:
        """Make the directory ``path`` (0700); its parent must exist."""
        self._queue(Run(["sh", "-c", _MKDIR, "sh", path, "1" if exist_ok else "0"]))

    def write_file(self, path: str, data: bytes, mode: int = FILE_MODE,
                   exclusive: bool = True) -> None:
        """Write ``data`` as ``path`` (whole or not at all); ``exclusive``: it must not
        exist yet, else it is replaced. A large file goes compressed if the login has
        gzip (a burst's array of 1,000 job scripts: 2.4 MB, 50 kB compressed)."""
        if len(data) > _GZIP_ABOVE and self._login is not None and self._login.gzip:
            self._queue(WriteFile(path, gzip.compress(data, 1, mtime=0), mode, exclusive, True))
        else:
            self._queue(WriteFile(path, data, mode, exclusive))

    def rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``."""
        self._queue(Run(["mv", "-f", source, target]))

    def hard_link(self, target: str, link: str) -> None:
        """Make ``link`` a hard link to ``target``, replacing one of that name, making
        its directory (0700) if missing."""
        self._queue(MakeDirs(os.path.dirname(link) or ".", None))
        self._queue(Run(["ln", "-f", target, link]))

    def remove(self, path: str) -> None:
        """Remove the file or directory tree ``path`` (gone already: no error)."""
        self._queue(Remove(path, recursive=True))

    def flush(self, timeout: float = 120.0) -> None:
        """Send the queued changes now (one round trip; none if nothing is queued)."""
        with self._lock:
            pending = bool(self._queued)
        if pending:
            self._send_files([], timeout)

    # -- commands and reads: one round trip each, with the queued changes -------------
    def run(self, argv: Sequence[str], *, timeout: float, check: bool = True,
            meanwhile: Optional[Callable[[], None]] = None) -> CommandResult:
        """Run ``argv`` there (after the queued changes), with :func:`hpcjobs.external.run`'s
        contract: CommandError with the output when it cannot run or (``check``) fails."""
        args = [str(a) for a in argv]
        with self._lock:
            r = self._fetched.pop(tuple(args), None)
        try:
            if r is None:
                r = self._send([Run(args)], timeout, meanwhile)[0]
        except SshError as e:  # (the batch machinery handles CommandErrors of its commands)
            raise _unsent(args, e) from e
        outcome = self._outcome(args, r, check)
        if isinstance(outcome, CommandError):
            raise outcome
        return outcome

    batches_commands = True

    def run_ahead(self, argvs: Sequence[Sequence[str]]) -> None:
        """Send these commands with the next :meth:`read_notes`, in its round trip and
        before its read; :meth:`run` of one of them then takes its result (once).
        Replaces the commands and results kept from the last call."""
        with self._lock:
            self._ahead = [[str(a) for a in argv] for argv in argvs]
            self._fetched.clear()

    def run_many(self, argvs: Sequence[Sequence[str]], *, timeout: float
                 ) -> list[Union[CommandResult, CommandError]]:
        """Run the commands there in ONE round trip (after the queued changes), up to
        :data:`RUN_MANY_PARALLEL` at once (they must not depend on each other: a burst
        of submits): each one's result, or its CommandError, in the order given. If the
        connection breaks, the commands whose results did not come back get a
        CommandError without an exit code (they may or may not have run)."""
        args = [[str(a) for a in argv] for argv in argvs]
        if not args:
            return []
        lost: Optional[SshError] = None
        try:
            results = self._send([Run(a) for a in args], timeout,
                                 group=RUN_MANY_GROUP, parallel=RUN_MANY_PARALLEL)
        except SshConnectionLost as e:
            results, lost = list(e.completed), e
        except SshError as e:
            results, lost = [], e
        outcomes: list[Union[CommandResult, CommandError]] = [
            self._outcome(a, r, True) for a, r in zip(args, results)]
        assert lost is not None or len(outcomes) == len(args)
        return outcomes + [_unsent(a, lost) for a in args[len(outcomes):] if lost is not None]

    def _outcome(self, args: list[str], r: Result, check: bool) -> Union[CommandResult, CommandError]:
        out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
        if r.missing:
            return CommandError(args, None, out, err,
                                reason=f"could not be run: not found on {self.where}")
        if check and r.returncode != 0:
            return CommandError(args, r.returncode, out, err)
        return CommandResult(args, r.returncode, out, err)

    def read_files(self, paths: Sequence[str], offsets: Optional[Sequence[int]] = None,
                   limit: int = 1 << 20) -> list[Optional[FileData]]:
        """Each path's file from its offset, at most ``limit`` bytes; None for one that
        cannot be read. One round trip for all (and the queued changes)."""
        if not paths:
            return []
        offs = tuple(offsets) if offsets else (0,) * len(paths)
        r = self._send_files([StatReadMany(tuple(paths), offs)])[0]
        found = split_many(r.stdout, offs, limit)
        if found is not None:
            return found
        # a file changed between its stat and its read: read each on its own
        ops = [StatRead(p, offs[i], limit) for i, p in enumerate(paths)]
        return [_file_data(r) for r in self._send_files(ops)]

    def read_notes(self, directory: str, offsets: Mapping[str, int],
                   list_if: Callable[[FileData], bool], follow: Follow) -> Optional[NotesRead]:
        """The notes and the job files they name (:meth:`Host.read_notes`) in ONE round
        trip (and the queued changes): the directory is listed every time, as that
        costs nothing there (a shell glob)."""
        from .notes import Unreadable, read_notes_op, split_notes
        with self._lock:
            ahead, self._ahead = self._ahead, []
        # (the commands first: a status query that says a job ended was answered after
        # the job's script wrote its files, so the read after it sees them too)
        *fetched, r = self._send_files([*(Run(a) for a in ahead),
                                        read_notes_op(directory, offsets, follow)])
        with self._lock:
            self._fetched.update((tuple(a), f) for a, f in zip(ahead, fetched))
        try:
            return split_notes(r.stdout, follow)
        except Unreadable as e:  # a file changed while it was read: read as here
            log.debug("%s: notes read again as on the local host: %s", self.where, e)
            return super().read_notes(directory, offsets, list_if, follow)

    def list_dir(self, path: str) -> Optional[list[str]]:
        """The names in the directory ``path``; None if it does not exist."""
        r = self._send_files([ListDir(path)])[0]
        if not r.ok:
            return None
        return [os.fsdecode(n) for n in r.stdout.split(b"\0")[:-1]]

    # -- the round trip ----------------------------------------------------------------
    def _queue(self, op: Op) -> None:
        with self._lock:
            self._queued.append(op)

    def _send_files(self, ops: Sequence[Op], timeout: float = 120.0,
                    stdin: Optional[Writer] = None) -> list[Result]:
        """:meth:`_send` for file calls: a connection failure is a ConnectionError (an
        OSError, as the local host's file calls raise)."""
        try:
            return self._send(ops, timeout, stdin=stdin)
        except SshError as e:
            raise ConnectionError(f"files on {self.connection.target}: {e.message}") from e

    def _send(self, ops: Sequence[Op], timeout: float,
              meanwhile: Optional[Callable[[], None]] = None,
              stdin: Optional[Writer] = None, group: int = 1,
              parallel: int = 1) -> list[Result]:
        """The queued changes, then ``ops``, in one round trip: the results of ``ops``.
        A failed change raises RemoteFileError, and nothing after it was run.
        ``group``, ``parallel``: for ``ops``, as :meth:`SshConnection.batch` takes them.
        ``stdin``: the last of ``ops`` reads what it writes (SshConnection.batch), and
        the round trip is a change (in order with the others)."""
        with self._lock:
            carries_changes = bool(self._queued) or stdin is not None
        if not carries_changes:
            # after the changes in flight (a read sees what was written before it), then
            # side by side with other reads
            with self._order:
                pass
            return self.connection.batch(ops, timeout=timeout, meanwhile=meanwhile,
                                         group=group, parallel=parallel)
        # Changes go in the order they were made: a round trip carrying some holds
        # _order until it is back, so the next one's changes (say, a rename of the
        # directory the first one makes) cannot reach the host before them
        with self._order:
            with self._lock:
                queued, self._queued = self._queued, []
            queued = coalesce(queued)
            try:
                results = self.connection.batch([*queued, *ops], timeout=timeout,
                                                meanwhile=meanwhile, guard=len(queued),
                                                stdin=stdin, group=group, parallel=parallel)
            except SshError as e:
                # the changes not known done go with the next round trip, first (the
                # commands that need them may be sent by another thread meanwhile:
                # without their files they would run half-made jobs)
                done = len(e.completed) if isinstance(e, SshConnectionLost) else 0
                with self._lock:
                    self._queued[:0] = queued[done:]
                if isinstance(e, SshConnectionLost):
                    e.completed = e.completed[len(queued):]  # (those of ``ops`` only)
                raise
        for r in results[:len(queued)]:
            if not r.ok:
                raise _failed(r, self.connection)
        return results[len(queued):]


def connect(url: str, options: Sequence[str] = ()) -> SshHost:
    """The host at ``url`` (``ssh://[user@]host[:port]``), its connection open:
    HostKeyError, LoginError or HostUnreachableError (SubmitExceptions) within the
    connect timeout if it cannot be. ``options``: extra ssh arguments."""
    from .url import parse_ssh_url
    if isinstance(options, (str, bytes)) or not all(isinstance(o, str) for o in options):
        raise TypeError(f"ssh_options must be a list of str, got {options!r}")
    from .shared import CONNECTIONS
    connection = CONNECTIONS.acquire(parse_ssh_url(url), options)
    host = SshHost(connection, shared=True)
    try:
        connection.open()
        host.environ()  # (in the same moment: the home directory every path starts from)
    except BaseException:
        CONNECTIONS.release(connection)
        raise
    return host


def _extract(stream: BinaryIO, directory: str) -> None:
    """Unpack the tar ``stream`` into ``directory`` as it is read."""
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        if hasattr(tarfile, "tar_filter"):  # (Python 3.11.4 on: no absolute names)
            tar.extractall(directory, filter="tar")
        else:
            tar.extractall(directory)


def coalesce(ops: Sequence[Op]) -> list[Op]:
    """``ops`` with each run of new directories (an exclusive ``make_dir`` each) and the
    files then written into them made by one :class:`NewDirs`: a burst of job
    directories costs three processes there in all (a subshell, ``mkdir``, ``chmod``),
    not two or three a file. The meanings stay: each directory must not exist (so
    neither do its files) and its parent must; a removal of a file not yet written
    there is nothing to do. A file with a NUL byte (no shell word can hold one), unless
    it goes compressed, keeps its directory's calls as they are."""
    out: list[Op] = []
    run: list[tuple[str, tuple[NewFile, ...]]] = []
    size = 0  # (bytes of the paths in ``run``: one ``mkdir`` command line for them all)

    def close_run() -> None:
        nonlocal size
        if run:
            out.append(NewDirs(tuple(run)))
            run.clear()
            size = 0

    i = 0
    while i < len(ops):
        op = ops[i]
        directory = _new_directory(op)
        if directory is not None:
            files: dict[str, WriteFile] = {}
            j = i + 1
            while j < len(ops):
                nxt = ops[j]
                path = getattr(nxt, "path", None)
                if not isinstance(path, str) or os.path.dirname(path) != directory:
                    break
                name = os.path.basename(path)
                if isinstance(nxt, WriteFile) and name not in files:
                    files[name] = nxt
                elif not (isinstance(nxt, Remove) and name not in files):
                    break
                j += 1
            if not any(b"\0" in f.data and not f.gzipped for f in files.values()):
                if size > _NEW_DIRS_BYTES:
                    close_run()
                run.append((directory, tuple((name, f.data, f.mode or FILE_MODE, f.gzipped)
                                             for name, f in files.items())))
                size += len(directory) + 1
                i = j
                continue
        close_run()
        out.append(op)
        i += 1
    close_run()
    return out


def _new_directory(op: Op) -> Optional[str]:
    """The directory an exclusive ``make_dir`` queued, else None."""
    if isinstance(op, Run) and len(op.argv) == 6 and op.argv[2] == _MKDIR and op.argv[5] == "0":
        return str(op.argv[4])
    return None


def _write_tar(source: str, out: BinaryIO) -> None:
    """``source`` as a tar stream of one member, ``x``, written to ``out`` as it is read.
    (Not tarfile's stream mode: it gathers its buffer by ``bytes +=``, 0.42 s of CPU
    for 100 MB in 1 MiB writes, where this takes 0.08 s.)"""
    with tarfile.open(fileobj=_Appending(out), mode="w") as tar:
        tar.add(source, arcname="x")


class _Appending(io.RawIOBase):
    """``out`` as the file tarfile writes a new archive to: ``write``, and ``tell``
    (which it asks once, at the start) from the bytes written."""

    def __init__(self, out: BinaryIO) -> None:
        super().__init__()
        self.out, self.written = out, 0

    def writable(self) -> bool:
        return True

    def write(self, data: "bytes | bytearray | memoryview") -> int:  # type: ignore[override]
        self.out.write(data)
        self.written += len(data)
        return len(data)

    def tell(self) -> int:
        return self.written


def _unsent(args: list[str], e: SshError) -> CommandError:
    """The CommandError of a command the connection did not carry (or not back)."""
    return CommandError(args, None, "", e.stderr, reason=f"could not be run: {e.message}")


def _failed(r: Result, connection: SshConnection) -> RemoteFileError:
    err = r.stderr.decode("utf-8", "replace").strip()
    return RemoteFileError(f"{r.op!r} failed on {connection.target} (exit {r.returncode})"
                           + (f": {err}" if err else ""), r)


def split_many(out: bytes, offsets: Sequence[int], limit: int) -> Optional[list[Optional[FileData]]]:
    """The files in the output of a :class:`StatReadMany`, or None if the bytes do not
    add up to the sizes stat gave (a file changed in between)."""
    kinds, _, rest = out.partition(b"\n")
    if len(kinds) != len(offsets) or kinds.strip(b"012"):
        return None
    stats: list[Optional[tuple[float, tuple[int, int], int, bool]]] = []
    for kind in kinds:
        if kind == ord("0"):
            stats.append(None)
            continue
        line, sep, rest = rest.partition(b"\n")
        fields = line.split(b" ")
        if not sep or len(fields) < 5:
            return None
        is_dir = b" ".join(fields[4:]) == b"directory"
        if is_dir != (kind == ord("2")):
            return None
        stats.append((float(fields[0]), (int(fields[1]), int(fields[2])), int(fields[3]), is_dir))
    # the data: whole files read from offset 0 first, then those read from an offset
    order = [i for i, o in enumerate(offsets) if o == 0] + [i for i, o in enumerate(offsets) if o > 0]
    data: dict[int, bytes] = {}
    pos = 0
    for i in order:
        st = stats[i]
        if st is None or st[3]:
            continue
        n = max(0, st[2] - offsets[i])
        data[i] = rest[pos:pos + n][:limit]
        pos += n
    if pos != len(rest):
        return None
    return [None if st is None else FileData(st[0], st[1], st[2], st[3], data.get(i, b""))
            for i, st in enumerate(stats)]


def _file_data(r: Result) -> Optional[FileData]:
    if not r.ok:
        return None
    line, _, data = r.stdout.partition(b"\n")
    mtime, dev, ino, size, *kind = line.split(b" ")
    is_dir = b" ".join(kind) == b"directory"
    return FileData(float(mtime), (int(dev), int(ino)), int(size), is_dir, b"" if is_dir else data)
