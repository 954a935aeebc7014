"""The one way hpcjobs runs an external command (sbatch, squeue, scancel, ...).

An argument list (never a shell), a timeout, a debug log line, and on failure a
``CommandError`` carrying the command, exit code, stdout and stderr.
"""

from __future__ import annotations

import logging
import math
import os
import select
import shutil
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
        p = _start(args)
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


def _start(args: list[str]) -> "subprocess.Popen[bytes]":
    """Start the command, its program found on PATH as :func:`_program` says."""
    program = _program(args[0])
    try:
        return _popen(args, program)
    except OSError:
        if program is None:
            raise
        # the file found before is gone or changed: look on PATH afresh, as a shell does
        _programs.pop((args[0], os.environ.get("PATH")), None)
        return _popen(args, None)


def _popen(args: list[str], program: Optional[str]) -> "subprocess.Popen[bytes]":
    # unbuffered: the pipes are read with os.read, so a buffered reader would be waste
    return subprocess.Popen(args, executable=program, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


def _program(name: str) -> Optional[str]:
    """The file a command ``name`` runs, looked up on PATH once per PATH value, as a
    shell's command hash does (None: ``name`` is a path, or is not found; exec then
    has its say). Each directory before the one that holds it costs the exec a failed
    try on every submit's wait for sbatch, and on a cluster's login node PATH is often
    long, on network file systems (docs/decisions.md)."""
    if "/" in name:
        return None
    key = (name, os.environ.get("PATH"))
    program = _programs.get(key)
    if program is None:
        program = shutil.which(name, path=key[1])
        # (a relative PATH entry gives a path that depends on the working directory)
        if program is None or not os.path.isabs(program):
            return None
        if len(_programs) >= _PROGRAMS_KEPT:  # (a caller that changes PATH all the time)
            _programs.clear()
        _programs[key] = program
    return program


#: (command name, PATH) -> the program's path, for _program
_programs: dict[tuple[str, Optional[str]], str] = {}
_PROGRAMS_KEPT = 64


def _collect(p: "subprocess.Popen[bytes]", stdout: list[bytes], stderr: list[bytes],
             deadline: float) -> None:
    """Read the command's output into ``stdout`` and ``stderr`` until both pipes close,
    then wait for it to exit, all before ``deadline``.

    Not ``subprocess.run(timeout=...)``: its wait for a command that has closed its
    pipes but is not yet reaped sleeps in growing steps (0.5 ms, 1 ms, 2 ms, ...), a
    millisecond or more on every call, which is most of what a submit adds to a bare
    ``sbatch``. A pidfd (Linux 5.3) wakes at the exit itself. The pipes are polled with
    ``select.poll`` directly, without the ``selectors`` module's objects, which cost a
    noticeable part of running a command, on every submit.
    """
    assert p.stdout is not None and p.stderr is not None  # (both are pipes)
    chunks = {p.stdout.fileno(): stdout, p.stderr.fileno(): stderr}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    while chunks:
        for fd, _ in _poll(poller, deadline):
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                del chunks[fd]
    if p.poll() is None:
        pidfd = os.pidfd_open(p.pid)
        try:
            poller.register(pidfd, select.POLLIN)
            _poll(poller, deadline)
        finally:
            os.close(pidfd)
    p.wait()


def _poll(poller: "select.poll", deadline: float) -> list[tuple[int, int]]:
    events = poller.poll(math.ceil(max(0.0, deadline - time.monotonic()) * 1000))
    if not events:
        raise _TimedOut
    return events


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")
