"""One connection to a remote host through the system's OpenSSH client.

The user's ``~/.ssh/config`` applies as it is (ProxyJump, agent, Kerberos, per-host
options): hpcjobs adds only what makes the connection safe to automate. ``BatchMode``
(never a password or passphrase prompt, an unknown or changed host key is refused, not
asked about), a connect timeout and keep-alives (a dead link ends in bounded time), and
OpenSSH multiplexing: one master connection, started once and kept while the
connection object is open, through a socket in a private 0700 directory. Every round
trip is one ``ssh`` run through that master: ``exec /bin/sh -s`` with a generated
script on its stdin (shscript.py), so it costs no new login. A round trip that carries
a large stream (a stage-in's tar) sends it raw on the session's stdin after a one-line
script (``shscript.STREAM_COMMAND``). If the master dies, the
next round trip starts a new one. No port is opened on either side (no forwarding).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from typing import Any, BinaryIO, Callable, Optional, Sequence, cast

from . import shscript
from .errors import (HostKeyError, HostUnreachableError, LoginError, SshConnectionLost,
                     SshError, SshTimeout)
from .ops import Op, Result, Run, Text
from .url import SshTarget

__all__ = ["SshConnection", "Writer", "Reader", "CUT_SHORT"]

_FEED_ABOVE = 1 << 20  # bytes of script above which a thread writes it to ssh
_JOIN_TIMEOUT = 30.0  # seconds a feeding thread may take to end after its ssh did
_LINE_ABOVE = 64 * 1024  # bytes of a streaming round trip's script line: more go first

#: what writes a round trip's raw stdin, to the binary file it is given
Writer = Callable[[BinaryIO], None]
#: what reads a session's raw stdout (:meth:`SshConnection.stream_out`), from the file
Reader = Callable[[BinaryIO], None]
#: what follows a stream its writer could not finish: a 512-byte block that no tar
#: takes for a header (a checksum that fails). Without it, a tar stream cut at the
#: end of a member reads as a whole, shorter archive: GNU tar exits 0 with what came
CUT_SHORT = b"\xff" * 512

log = logging.getLogger(__name__)

#: ssh's words for each kind of failure (OpenSSH 7 to 9), first match wins
_FAILURES: tuple[tuple[re.Pattern[str], type[SshError], str], ...] = (
    (re.compile(r"REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed|"
                r"host key .* (?:not known|mismatch)", re.I), HostKeyError,
     "the host key of {t} is unknown or has changed; connection refused"),
    (re.compile(r"Permission denied|Too many authentication failures|"
                r"no matching (?:key|host key)", re.I), LoginError,
     "login to {t} was refused (hpcjobs never asks for a password: use a key, an agent "
     "or a Kerberos ticket)"),
    (re.compile(r"Could not resolve hostname|Name or service not known|Connection refused|"
                r"Connection timed out|timed out during banner exchange|No route to host|"
                r"Network is unreachable|Connection closed by .* port|"
                r"kex_exchange_identification|Connection reset", re.I), HostUnreachableError,
     "cannot connect to {t}"),
)


def _classify(target: SshTarget, stderr: str, default: str) -> SshError:
    for pattern, cls, message in _FAILURES:
        if pattern.search(stderr):
            return cls(message.format(t=target), stderr,
                       transient=cls is HostUnreachableError)
    return SshError(default.format(t=target), stderr)


class SshConnection:
    """A multiplexed ssh connection to ``target``, and round trips through it.

    ``options`` are extra ssh command-line arguments placed before the destination
    (``["-F", path]`` for another config file). ``connect_timeout`` bounds a login,
    ``persist`` is how long an idle master outlives a client that vanished without
    :meth:`close`. ``round_trips`` counts the ssh runs that carried operations,
    ``logins`` the masters started (a login each).
    """

    def __init__(self, target: SshTarget, options: Sequence[str] = (), *,
                 connect_timeout: float = 15.0, persist: int = 600,
                 ssh: str = "ssh") -> None:
        self.target = target
        self.options = list(options)
        self.connect_timeout = connect_timeout
        self.persist = persist
        self.round_trips = 0
        self.logins = 0
        self._ssh = ssh
        self._lock = threading.Lock()  # one master start at a time
        self._dir: Optional[str] = None
        self._master_pid: Optional[int] = None
        self._closed = False
        self._finalizer: Optional["weakref.finalize[Any, Any]"] = None

    # -- the master ---------------------------------------------------------------------
    def _base(self, control: str) -> list[str]:
        path = shutil.which(self._ssh)
        if path is None:
            raise SshError(f"no ssh client ({self._ssh!r}) on PATH: install OpenSSH's client")
        return [path, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(self.connect_timeout)}",
                "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3",
                "-o", f"ControlPath={control}", "-o", "ClearAllForwardings=yes",
                *self.options]

    def _control(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="hpcjobs-ssh-")  # 0700
            control = os.path.join(self._dir, "master")
            stop = [self._ssh, "-o", f"ControlPath={control}", *self.options, "-O", "exit",
                    *self.target.ssh_args()]
            self._finalizer = weakref.finalize(self, _stop_master, stop, self._dir)
        return os.path.join(self._dir, "master")

    def _master_alive(self) -> bool:
        # A connect to the control socket is the test: a killed master leaves its socket
        # file behind (refusing connections) and may linger as a zombie whose pid answers
        if self._master_pid is None or self._dir is None:
            return False
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(os.path.join(self._dir, "master"))
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def open(self) -> None:
        """Start the master connection unless it runs. Raises HostKeyError, LoginError,
        HostUnreachableError or SshError within about ``connect_timeout``."""
        with self._lock:
            if self._closed:
                raise SshError(f"connection to {self.target} is closed")
            if self._master_alive():
                return
            control = self._control()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(control)  # a dead master's socket
            argv = [*self._base(control), "-M", "-N", "-f", "-o", "ControlMaster=yes",
                    "-o", f"ControlPersist={self.persist}", *self.target.ssh_args()]
            # stderr to a file, not a pipe: the master that -f puts in the background
            # keeps it open, and a pipe would never reach end-of-file
            err_path = os.path.join(os.path.dirname(control), "master.err")
            with open(err_path, "w+b") as err:
                t0 = time.monotonic()
                try:
                    rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=err, timeout=self.connect_timeout * 2 + 5).returncode
                except subprocess.TimeoutExpired:
                    raise HostUnreachableError(f"cannot connect to {self.target}: no login "
                                               f"within {self.connect_timeout * 2 + 5:.0f} s",
                                               transient=True) from None
                err.seek(0)
                stderr = err.read().decode("utf-8", "replace")
            self.logins += 1
            if rc != 0:
                raise _classify(self.target, stderr, "ssh to {t} failed (exit %d)" % rc)
            self._master_pid = self._ask_master_pid(control)
            log.debug("ssh master to %s up in %.2f s (pid %s)", self.target,
                      time.monotonic() - t0, self._master_pid)

    def _ask_master_pid(self, control: str) -> Optional[int]:
        p = subprocess.run([*self._base(control), "-O", "check", *self.target.ssh_args()],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        m = re.search(rb"pid=(\d+)", p.stderr)
        return int(m.group(1)) if m else None

    @property
    def master_pid(self) -> Optional[int]:
        """The pid of the running master connection, if there is one."""
        return self._master_pid if self._master_alive() else None

    def close(self) -> None:
        """End the master connection and remove its directory. Idempotent."""
        with self._lock:
            self._closed = True
            self._master_pid = None
            if self._finalizer is not None:
                self._finalizer()

    def __enter__(self) -> "SshConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- round trips --------------------------------------------------------------------
    def batch(self, ops: Sequence[Op], *, timeout: float = 120.0, retry: bool = False,
              guard: int = 0, group: int = 1, parallel: int = 1,
              meanwhile: Optional[Callable[[], None]] = None,
              stdin: Optional[Writer] = None) -> list[Result]:
        """Run ``ops`` in order in ONE round trip; one Result each (a failing operation
        does not stop the next). ValueError/TypeError before anything is sent for an
        operation that cannot be expressed (a NUL in an argument or path).

        Raises SshConnectionLost (its ``completed`` holds the results that did come
        back) if the connection breaks, SshTimeout after ``timeout`` seconds, or a
        login error (open()). With ``retry`` (operations safe to run twice, such as
        reads and status queries), a lost connection is retried once on a new master.
        ``guard``: if one of the first ``guard`` operations fails, the ones after it are
        not run (the results end with the failed one). ``group``, ``parallel``: the
        results of the operations after those come back ``group`` at a time, and up to
        ``parallel`` of them run at once (:func:`shscript.render`). ``meanwhile`` is
        called here while ssh starts and the script runs (its exceptions are logged,
        not raised).

        ``stdin``: the last operation (a Run without input) reads, as its stdin, the raw
        bytes ``stdin`` writes to the file it is given (from a thread of its own), sent
        after the script on the session's stdin: no encoding, no copy in memory. The
        exception it raises (but a broken pipe: the other side ended, its result says
        why) is raised here once the round trip is over. Not retried.
        """
        ops = list(ops)
        if stdin is not None:
            if retry:
                raise ValueError("a round trip that streams its stdin cannot be retried")
            return self._streamed(ops, stdin, timeout, guard, meanwhile)
        script, marker = shscript.render(ops, guard=guard, group=group, parallel=parallel)
        try:
            return self._round_trip(ops, script, marker, timeout, meanwhile)
        except SshConnectionLost:
            if not retry:
                raise
            log.info("connection to %s lost; retrying on a new connection", self.target)
            return self._round_trip(ops, script, marker, timeout, None)

    def _streamed(self, ops: list[Op], stdin: Writer, timeout: float, guard: int,
                  meanwhile: Optional[Callable[[], None]]) -> list[Result]:
        script, marker = shscript.render(ops, guard=guard, stream=True)
        line = shscript.one_line(script)
        if len(line) > _LINE_ABOVE and len(ops) > 1:
            # the remote shell reads the line a byte at a time: operations with much
            # data (file writes) go first in a round trip of their own
            first = self.batch(ops[:-1], timeout=timeout, guard=guard, meanwhile=meanwhile)
            if len(first) < len(ops) - 1 or not all(r.ok for r in first[:guard]):
                return first  # (stopped at a guarded failure: the last op is not run)
            return first + self._streamed(ops[-1:], stdin, timeout, 0, None)
        return self._round_trip(ops, line, marker, timeout, meanwhile, stdin)

    def run(self, argv: Sequence[Text], *, input: Optional[bytes] = None,
            cwd: Optional[Text] = None, timeout: float = 120.0, check: bool = False,
            retry: bool = False) -> Result:
        """Run one command remotely (one round trip). With ``check``, a non-zero exit
        raises RemoteCommandError (RemoteCommandNotFound for a missing command)."""
        result = self.batch([Run(list(argv), input, cwd)], timeout=timeout, retry=retry)[0]
        return result.check(str(self.target)) if check else result

    def session_argv(self, command: str) -> list[str]:
        """The ssh command line of one session through the master (no new login while
        it runs), running ``command`` with the remote login shell: the caller makes
        sure that shell reads ``command`` as meant. Call :meth:`open` first."""
        return [*self._base(self._control()), "-o", "ControlMaster=no", "-T",
                *self.target.ssh_args(), command]

    def _round_trip(self, ops: list[Op], script: bytes, marker: bytes, timeout: float,
                    meanwhile: Optional[Callable[[], None]],
                    stream: Optional[Writer] = None) -> list[Result]:
        self.open()
        argv = self.session_argv(shscript.STREAM_COMMAND if stream is not None
                                 else shscript.REMOTE_COMMAND)
        with self._lock:  # (executors' threads share a connection)
            self.round_trips += 1
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        if meanwhile is not None:
            try:
                meanwhile()
            except Exception:  # the round trip's outcome must reach the caller
                log.exception("work done during a round trip to %s failed", self.target)
        given: Optional[bytes] = script
        feeder: Optional[_Feeder] = None
        if len(script) > _FEED_ABOVE or stream is not None:
            # a large script or a stream goes from a thread of its own: communicate()
            # writes 4 KiB per poll
            feeder = _Feeder(p.stdin, script, stream)
            p.stdin, given = None, None
        try:
            out, err = p.communicate(given, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            if feeder is not None:
                feeder.join(_JOIN_TIMEOUT)
            parsed = shscript.parse(ops, marker, out)
            raise SshTimeout(f"round trip to {self.target} took over {timeout:.0f} s; "
                             f"{len(parsed.results)} of {len(ops)} operations finished",
                             err.decode("utf-8", "replace"), parsed.results) from None
        parsed = shscript.parse(ops, marker, out)
        if feeder is not None:
            feeder.join(_JOIN_TIMEOUT)  # (ssh has ended: a write left fails at once)
            if feeder.error is not None:  # (the writer's failure is the cause of the rest)
                raise feeder.error
        if parsed.complete:
            return parsed.results
        stderr = err.decode("utf-8", "replace")
        if p.returncode == 255 and not parsed.results and not out:
            failure = _classify(self.target, stderr, "ssh to {t} failed")
            if type(failure) is not SshError:
                raise failure
        raise SshConnectionLost(f"connection to {self.target} lost (ssh exit {p.returncode}); "
                                f"{len(parsed.results)} of {len(ops)} operations finished",
                                stderr, parsed.results)

    def stream_out(self, script: bytes, reader: Reader, *, timeout: float = 120.0
                   ) -> tuple[int, str]:
        """Run the POSIX sh ``script`` there in ONE round trip, its stdout handed raw to
        ``reader`` (here, as it comes: no copy in memory or on either disk); its exit
        status and stderr. ``reader``'s exception is raised once the session is over
        (it is ended at once), unless the script had failed by itself (its exit status
        and stderr then say why the stream fell short). SshConnectionLost if the
        connection breaks, SshTimeout after ``timeout`` seconds (the session is killed)."""
        self.open()
        argv = self.session_argv(shscript.STREAM_COMMAND)
        with self._lock:
            self.round_trips += 1
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        errors: list[bytes] = []
        drain = threading.Thread(target=lambda: errors.append(p.stderr.read()),  # type: ignore[union-attr]
                                 name="hpcjobs-ssh-stderr", daemon=True)
        drain.start()
        expired: list[bool] = []

        def expire() -> None:
            expired.append(True)
            p.kill()

        killer = threading.Timer(timeout, expire)
        killer.start()
        failure: Optional[BaseException] = None
        try:
            with contextlib.suppress(BrokenPipeError):
                p.stdin.write(shscript.one_line(script))
            with contextlib.suppress(OSError):
                p.stdin.close()
            try:
                reader(cast(BinaryIO, p.stdout))
            except BaseException as e:  # (raised after the session is ended)
                failure = e
                p.kill()
        finally:
            with contextlib.suppress(OSError):
                p.stdout.read()  # (the rest, unread by a reader that stopped early)
            p.wait()
            killer.cancel()
            drain.join(_JOIN_TIMEOUT)
        stderr = b"".join(errors).decode("utf-8", "replace")
        if expired:
            raise SshTimeout(f"round trip to {self.target} took over {timeout:.0f} s", stderr, [])
        if failure is not None and not 0 < p.returncode < 255:
            raise failure
        if p.returncode == 255:
            failure = _classify(self.target, stderr, "ssh to {t} failed")
            if type(failure) is not SshError:
                raise failure
            raise SshConnectionLost(f"connection to {self.target} lost (ssh exit 255)",
                                    stderr, [])
        return p.returncode, stderr

    def __repr__(self) -> str:
        return (f"<SshConnection {self.target} round_trips={self.round_trips} "
                f"logins={self.logins}{' closed' if self._closed else ''}>")


class _Feeder(threading.Thread):
    """Writes a round trip's script, then what its ``stream`` writes, to ssh's stdin,
    and closes it. ``error``: the exception ``stream`` raised, but a broken pipe (a
    killed ssh, or a remote side that ended without reading all). A stream cut short
    by its writer's failure ends with :data:`CUT_SHORT`, not at a point a reader
    could take for its end."""

    def __init__(self, stdin: Any, script: bytes, stream: Optional[Writer]) -> None:
        super().__init__(name="hpcjobs-ssh-feed", daemon=True)
        self.stdin, self.script, self.stream = stdin, script, stream
        self.error: Optional[BaseException] = None
        self.start()

    def run(self) -> None:
        try:
            self.stdin.write(self.script)
            if self.stream is not None:
                self.stream(self.stdin)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except BaseException as e:  # (raised by the round trip, in the caller's thread)
            self.error = e
            with contextlib.suppress(OSError):
                self.stdin.write(CUT_SHORT)
        finally:
            with contextlib.suppress(OSError):
                self.stdin.close()


def _stop_master(stop: list[str], directory: str) -> None:
    """Ask the master to exit, then remove its directory (also run by the finalizer
    of a connection that was never closed)."""
    try:
        if os.path.exists(os.path.join(directory, "master")):
            subprocess.run(stop, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        log.debug("ssh -O exit: %s", e)
    shutil.rmtree(directory, ignore_errors=True)
