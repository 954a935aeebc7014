"""The client's end of a nanny: start it, send it requests, read its events.

One reader thread per nanny turns the nanny's event lines into calls of a handler. It
blocks in ``select`` on the event pipe and a wake-up pipe (for ``close()``), so it costs
nothing while nothing happens and reacts at once when a job starts or ends. The handler
is held weakly: a forgotten executor is collected and its reader ends.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from ...errors import SubmitException
from ...private import opener
from ...threads import OwnedThread, weak_callable
from . import nanny

__all__ = ["NannyLink"]

log = logging.getLogger(__name__)

#: handler(event) for each event; handler(None) when the nanny died
Handler = Callable[[Optional[list[Any]]], None]


class NannyLink:
    """A running nanny and the thread that reads its reports."""

    def __init__(self, name: str, jobs_dir: Path, nannies_dir: Path,
                 records: Callable[[str], Path], grace: float, handler: Handler) -> None:
        self.token = os.urandom(4).hex()
        log_path = nannies_dir / f"{self.token}.log"
        with open(log_path, "ab", opener=opener) as err:
            # -I -S: the nanny needs only the standard library; skipping site and user
            # paths makes it start fast and immune to the user's PYTHON* settings
            p = subprocess.Popen([sys.executable, "-I", "-S", nanny.__file__, str(jobs_dir),
                                  str(records(self.token)), repr(grace)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=err, start_new_session=True)
        assert p.stdin is not None and p.stdout is not None
        p.wait()  # the intermediate process; the nanny itself is its orphaned child
        self._requests = p.stdin.fileno()
        self._files = (p.stdin, p.stdout)
        self._events = p.stdout.fileno()
        first = _read_line(self._events)
        if first is None:
            self._close_pipes()
            raise SubmitException(f"the local job nanny did not start (see {log_path})",
                                  transient=True)
        _, self.pid, self.ticks = json.loads(first)
        self._send_lock = threading.Lock()
        self._last_env: Optional[dict[str, str]] = None
        self._wake_r, self._wake_w = os.pipe()
        self._closing = False
        self.alive = True
        self._handler = weak_callable(handler)
        self._thread = OwnedThread(f"{name}-reader", self._read, self._wake, self._release)
        self._thread.start()

    def spawn(self, native_id: str, argv: list[str], env: dict[str, str], cwd: str,
              stdin: Optional[str], stdout: Optional[str], stderr: Optional[str],
              held: bool = False) -> None:
        """Ask the nanny to start a job (``held``: when released); raises OSError if the
        nanny is gone."""
        with self._send_lock:
            # most jobs share one environment: send it only when it changes
            same = env == self._last_env
            self._last_env = env
            request = ["S", native_id, argv, None if same else env, cwd, stdin, stdout, stderr]
            self._write([*request, True] if held else request)

    def release(self, native_id: str) -> None:
        """Ask the nanny to start a held job; raises OSError if the nanny is gone."""
        with self._send_lock:
            self._write(["R", native_id])

    def cancel(self, native_id: str) -> None:
        """Ask the nanny to cancel a job; raises OSError if the nanny is gone."""
        with self._send_lock:
            self._write(["K", native_id])

    def _write(self, request: list[Any]) -> None:
        view = memoryview(json.dumps(request).encode() + b"\n")
        while view:
            view = view[os.write(self._requests, view):]

    def close(self) -> None:
        """Stop reading and let the nanny go: it finishes its jobs, then exits."""
        if self._closing:
            return
        self._closing = True
        # (on the reader thread itself, a forgotten executor collected there: the reader
        # sees _closing after this handler returns and releases on its way out)
        self._thread.stop()

    def _wake(self) -> None:
        os.write(self._wake_w, b"x")

    def _release(self) -> None:
        self._close_pipes()
        os.close(self._wake_w)
        os.close(self._wake_r)

    def _close_pipes(self) -> None:
        self.alive = False
        for f in self._files:
            f.close()

    def _read(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._events, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        partial = b""
        try:
            while True:
                ready = [key.fd for key, _ in sel.select()]
                if self._wake_r in ready:
                    return
                data = os.read(self._events, 1 << 16)
                handler = self._handler()
                if handler is None:
                    return
                if not data:
                    log.warning("the local job nanny (pid %s) died", self.pid)
                    self.alive = False
                    handler(None)
                    return
                *lines, partial = (partial + data).split(b"\n")
                for line in lines:
                    try:
                        handler(json.loads(line))
                    except Exception:
                        log.exception("failed to handle nanny event %r", line)
                del handler
                if self._closing:
                    return
        finally:
            sel.close()


def _read_line(fd: int) -> Optional[bytes]:
    buf = b""
    while not buf.endswith(b"\n"):
        data = os.read(fd, 4096)
        if not data:
            return None
        buf += data
    return buf
