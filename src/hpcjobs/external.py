"""The one way hpcjobs runs an external command (sbatch, squeue, scancel, ...).

An argument list (never a shell), a timeout, a debug log line, and on failure a
``CommandError`` carrying the command, exit code, stdout and stderr.
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

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


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    input: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    check: bool = True,
) -> CommandResult:
    """Run ``argv`` and return its output.

    Raises ``CommandError`` when the program is missing, times out, or (with
    ``check``) exits non-zero. Output is decoded as UTF-8 with replacement, so a
    stray byte in a scheduler's output never breaks a status query.
    """
    args = [str(a) for a in argv]
    t0 = time.monotonic()
    try:
        p = subprocess.run(args, input=input, capture_output=True, timeout=timeout,
                           env=None if env is None else dict(env), cwd=cwd,
                           encoding="utf-8", errors="replace")
    except FileNotFoundError as e:
        raise CommandError(args, None, "", str(e), reason="could not be run: not found") from e
    except PermissionError as e:
        raise CommandError(args, None, "", str(e), reason="could not be run: permission denied") from e
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise CommandError(args, None, out, err, reason=f"timed out after {timeout:g} s") from e
    log.debug("ran %s -> %d in %.3f s", args, p.returncode, time.monotonic() - t0)
    if check and p.returncode != 0:
        raise CommandError(args, p.returncode, p.stdout, p.stderr)
    return CommandResult(args, p.returncode, p.stdout, p.stderr)
