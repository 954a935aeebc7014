"""The one way hpcjobs runs an external command (sbatch, squeue, scancel, ...).

An argument list (never a shell), a timeout, a debug log line, and on failure a
``CommandError`` carrying the command, exit code, stdout and stderr.
"""

from __future__ import annotations

import logging
import os
import selectors
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from .errors import CommandError

__all__ = ["run", "CommandResult", "CommandError"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class CommandResult:
    """What a finished command printed and returned."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


class _TimedOut(Exception):
    """The command outlived its deadline."""


def run(argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, check: bool = True,
        meanwhile: Optional[Callable[[], None]] = None) -> CommandResult:
    """Run ``argv`` (stdin empty) and return its output.

    Raises ``CommandError`` when the program is missing, times out (it is killed), or
    (with ``check``) exits non-zero. Output is decoded as UTF-8 with replacement, so a
    stray byte in a scheduler's output never breaks a status query.

    ``meanwhile`` is called once the command has started, while it runs: work the
    caller would otherwise do before or after it (a scheduler command mostly waits on
    its server). An exception it raises is logged, never raised: the command's outcome
    must reach the caller.
    """
    args = [str(a) for a in argv]
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    except FileNotFoundError as e:
        raise CommandError(args, None, "", str(e), reason="could not be run: not found") from e
    except PermissionError as e:
        raise CommandError(args, None, "", str(e), reason="could not be run: permission denied") from e
    stdout: list[bytes] = []
    stderr: list[bytes] = []
    with p:
        if meanwhile is not None:
            try:
                meanwhile()
            except Exception:  # (a bug there must not lose what the command did)
                log.exception("while %s ran", args[0])
        try:
            _collect(p, stdout, stderr, t0 + timeout)
        except _TimedOut:
            p.kill()
            p.wait()
            raise CommandError(args, None, _text(stdout), _text(stderr),
                               reason=f"timed out after {timeout:g} s") from None
    out, err = _text(stdout), _text(stderr)
    log.debug("ran %s -> %d in %.3f s", args, p.returncode, time.monotonic() - t0)
    if check and p.returncode != 0:
        raise CommandError(args, p.returncode, out, err)
    return CommandResult(args, p.returncode, out, err)


def _collect(p: "subprocess.Popen[bytes]", stdout: list[bytes], stderr: list[bytes],
             deadline: float) -> None:
    """Read the command's output into ``stdout`` and ``stderr`` until both pipes close,
    then wait for it to exit, all before ``deadline``.

    Not ``subprocess.run(timeout=...)``: its wait for a command that has closed its
    pipes but is not yet reaped sleeps in growing steps (0.5 ms, 1 ms, 2 ms, ...), a
    millisecond or more on every call, which is most of what a submit adds to a bare
    ``sbatch``. A pidfd (Linux 5.3) wakes at the exit itself.
    """
    with selectors.PollSelector() as selector:  # (no epoll instance for two pipes)
        assert p.stdout is not None and p.stderr is not None  # (both are pipes)
        selector.register(p.stdout, selectors.EVENT_READ, stdout)
        selector.register(p.stderr, selectors.EVENT_READ, stderr)
        while selector.get_map():
            for key, _ in _select(selector, deadline):
                data = os.read(key.fd, 65536)
                if data:
                    key.data.append(data)
                else:
                    selector.unregister(key.fileobj)
        if p.poll() is None:
            pidfd = os.pidfd_open(p.pid)
            try:
                selector.register(pidfd, selectors.EVENT_READ)
                _select(selector, deadline)
            finally:
                os.close(pidfd)
    p.wait()


def _select(selector: selectors.BaseSelector,
            deadline: float) -> list[tuple[selectors.SelectorKey, int]]:
    events = selector.select(max(0.0, deadline - time.monotonic()))
    if not events:
        raise _TimedOut
    return events


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")
