"""``StdioTunnel``: a local Unix socket whose every connection is a remote command's
stdin and stdout, over an :class:`~hpcjobs.remote.ssh.SshConnection`.

For a client library that can only connect to a socket path (flux-core's ``local://``
connector) and a remote command that speaks the same protocol on its stdio
(``flux relay``). Each accepted connection becomes the stdin and stdout of one ssh
session through the connection's master: ssh reads and writes the socket itself, so
no byte passes through Python. The session ends when either side closes; a killed
session closes the client's socket, and the client's next connection makes a new one
(restarting the master first if it died). The socket lives in a private (0700)
directory, so only this user can connect. Nothing listens on a port.
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
from typing import Sequence

from .errors import SshError
from .ssh import SshConnection

__all__ = ["StdioTunnel"]

log = logging.getLogger(__name__)

#: the words a tunnelled command line may have: read the same by every login shell (sh,
#: bash, csh), so they need no quoting (and none can be got wrong)
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./,+=@:-]+")
#: how often the accepting thread looks at its stop flag and reaps ended sessions (s)
_TICK = 0.25


def plain_words(words: Sequence[str], what: str) -> str:
    """``words`` as a command line any shell reads as these words; ValueError naming
    ``what`` for a word with any other character."""
    for word in words:
        if not isinstance(word, str) or not _PLAIN_WORD.fullmatch(word):
            raise ValueError(f"{what}: {word!r} cannot be passed to the remote shell as it "
                             "is (only letters, digits and '_./,+=@:-')")
    return " ".join(words)


class StdioTunnel:
    """Connections to :attr:`path` run ``command`` (plain words) on the far side of
    ``connection``. :meth:`close` ends the sessions and removes the socket."""

    def __init__(self, connection: SshConnection, command: Sequence[str], name: str) -> None:
        self.connection = connection
        self.name = name
        self.command = plain_words(command, "tunnelled command")
        self._dir = tempfile.mkdtemp(prefix="hpcjobs-tunnel-")  # 0700
        self.path = os.path.join(self._dir, "socket")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(16)
        self._listener.settimeout(_TICK)
        self._sessions: list[subprocess.Popen[bytes]] = []
        self._started: dict[int, float] = {}  # pid -> time.monotonic() at its start
        self._lock = threading.Lock()
        self._last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name=name, daemon=True)
        self._thread.start()

    @property
    def session_pids(self) -> list[int]:
        """The pids of the ssh sessions now running (one per open client connection)."""
        with self._lock:
            return [p.pid for p in self._sessions if p.poll() is None]

    def last_error(self) -> str:
        """What went wrong with the latest session that failed (ssh's or the remote
        command's stderr, or why no session could start); empty if none did."""
        with self._lock:
            return self._last_error

    def _accept(self) -> None:
        while not self._stop.is_set():
            self._reap()
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:  # the listener was closed: close() is under way
                return
            with client:
                self._start_session(client)

    def _start_session(self, client: socket.socket) -> None:
        try:
            self.connection.open()  # a new master if the old one died
            argv = self.connection.session_argv(self.command)
        except SshError as e:
            with self._lock:
                self._last_error = str(e)
            log.info("tunnel to %s: %s", self.connection.target, e)
            return  # the client reads end-of-file: its connect fails
        err = tempfile.TemporaryFile(dir=self._dir)
        try:
            process = subprocess.Popen(argv, stdin=client.fileno(), stdout=client.fileno(),
                                       stderr=err, start_new_session=True)
        except OSError as e:
            err.close()
            with self._lock:
                self._last_error = f"cannot run ssh: {e}"
            return
        process.stderr = err  # (read when it ends: _reap)
        with self._lock:
            self._sessions.append(process)
            self._started[process.pid] = time.monotonic()
        log.debug("tunnel to %s: session %d started", self.connection.target, process.pid)

    def _reap(self) -> None:
        with self._lock:
            running = []
            for process in self._sessions:
                if process.poll() is None:
                    running.append(process)
                    continue
                err = process.stderr
                assert err is not None
                err.seek(0)
                text = err.read().decode("utf-8", "replace").strip()
                err.close()
                if process.returncode != 0 and text:
                    self._last_error = text[-2000:]
                self._started.pop(process.pid, None)
                log.debug("tunnel to %s: session %d ended (exit %s) %s",
                          self.connection.target, process.pid, process.returncode, text)
            self._sessions = running

    def end_sessions_since(self, since: float, why: str) -> int:
        """Kill the running sessions started at ``since`` (``time.monotonic()``) or later,
        saying ``why`` as the last error: their clients read end-of-file. How many."""
        with self._lock:
            late = [p for p in self._sessions
                    if p.poll() is None and self._started.get(p.pid, 0.0) >= since]
            if late:
                self._last_error = why
        for process in late:
            process.kill()
        return len(late)

    def close(self) -> None:
        """Stop accepting, end the running sessions, remove the socket. Idempotent."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        if self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for process in sessions:
            if process.poll() is None:
                process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            if process.returncode is None:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()
        shutil.rmtree(self._dir, ignore_errors=True)
