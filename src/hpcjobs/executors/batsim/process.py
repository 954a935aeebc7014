"""Starting the simulator: which program, with which of Batsim's flags.

``simulator="auto"`` uses a ``batsim`` program when one is on PATH, else the embedded
``hpcjobs.sim`` (``python -m hpcjobs.sim``); both get the same Batsim 4.2.1 flags, so
the executor cannot tell them apart. The process runs in the run directory, its stderr
goes to a file there (its last lines explain a death), and it is started from an
argument list, never through a shell.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import site
import subprocess
import sys
from pathlib import Path

from ...errors import SubmitException
from ...private import opener

__all__ = ["simulator_command", "spawn", "wait", "tail", "explain"]

#: Batsim 4.2.1 flags: dynamic jobs, acknowledged, with profile reuse (DESIGN.md)
_DYNAMIC = ["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse"]


def simulator_command(simulator: str, platform: Path, export_prefix: Path, endpoint: str,
                      protocol: str = "json") -> list[str]:
    """The argument list that starts the configured simulator speaking ``protocol``
    (with batprotocol the features come from the executor's EDC hello, not flags)."""
    flags = ["-p", str(platform), "-e", str(export_prefix), "-s", endpoint, "-q"]
    if protocol == "json":
        flags += _DYNAMIC
    if simulator == "auto":
        # a batsim on PATH is taken for Batsim 4 (JSON): a Batsim 5 is named explicitly
        simulator = "batsim" if protocol == "json" and shutil.which("batsim") else "hpcjobs.sim"
    if simulator == "hpcjobs.sim":
        # --timeout 0 (hpcjobs.sim only): in virtual time the executor may hold a reply
        # for as long as its client does not wait
        return [sys.executable, "-m", "hpcjobs.sim", *flags, "--timeout", "0", "--protocol", protocol]
    program = shutil.which(simulator)
    if program is None:
        raise SubmitException(f"batsim config 'simulator': {simulator!r} is not a program on PATH "
                              "(use 'auto' or 'hpcjobs.sim')")
    return [program, *flags]


#: the directory this hpcjobs package was imported from: ``python -m hpcjobs.sim`` runs in
#: the run directory, where a relative PYTHONPATH entry (a checkout's ``src``) means
#: something else, and must run this very code, not another installed version
_PACKAGE_ROOT = Path(__file__).resolve().parents[3]


def _environment() -> dict[str, str]:
    """The simulator's environment: ours, with :data:`_PACKAGE_ROOT` first on its
    PYTHONPATH unless it is a site directory (there it is found anyway, and first on
    the path it would shadow the standard library with whatever is installed)."""
    env = dict(os.environ)
    sites = {Path(d).resolve() for d in (*site.getsitepackages(), site.getusersitepackages())}
    if _PACKAGE_ROOT not in sites:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


def spawn(argv: list[str], cwd: Path, stderr_path: Path) -> "subprocess.Popen[bytes]":
    """Start the simulator; its stderr goes to ``stderr_path``."""
    env = _environment()
    with open(stderr_path, "wb", opener=opener) as err:
        try:
            # umask: the simulator's outputs are ours, private like every hpcjobs file
            return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                    umask=0o077)
        except OSError as e:
            raise SubmitException(f"cannot start the simulator {argv!r}: {e}", e) from None


def wait(process: "subprocess.Popen[bytes]", timeout: float) -> None:
    """``process.wait(timeout)``, but told of the exit at once (Linux: a pidfd) rather
    than by Popen's polling, whose sleeps grow to 50 ms, so an exit may be seen that
    late. Only for a process no other
    thread reaps (its pid could be reused meanwhile)."""
    if process.returncode is None:
        try:
            fd = os.pidfd_open(process.pid)
        except OSError:  # no pidfds here, or already gone: Popen finds out
            pass
        else:
            try:
                select.select([fd], [], [], timeout)  # readable once the process ended
            finally:
                os.close(fd)
            timeout = 0.0
    process.wait(timeout)


def tail(path: Path, lines: int = 10) -> str:
    """The last ``lines`` lines of a text file ('' if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 8192))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


#: the line a simulator explains its abort with: Batsim's failed assertion (SimGrid's
#: "[host:actor:(pid) time] file:line: [root/CRITICAL] message", then a backtrace),
#: SimGrid's error (a platform it cannot parse: "[xbt_exception/ERROR] Parse error
#: ...", then "... Exiting now."), or hpcjobs.sim's "hpcjobs.sim: error: message"
_ABORT = re.compile(r"\[\w+/(?:CRITICAL|ERROR)\] (?P<batsim>(?!Exiting now\.).*)"
                    r"|^(?P<sim>hpcjobs\.sim: error: .*)")
#: SimGrid's log lines that report progress, not trouble (Batsim prints its start-up
#: even with -q)
_PROGRESS = re.compile(r"^\[[^]]*\] (?:\S+: )?\[\w+/(?:INFO|VERBOSE|DEBUG)\] ")


def explain(path: Path) -> str:
    """The simulator's own error message from its stderr file, or its last lines
    other than progress reports ('' when there are none)."""
    lines = tail(path, lines=200).splitlines()
    for line in reversed(lines):
        match = _ABORT.search(line)
        if match:
            return (match.group("batsim") or match.group("sim")).strip()
    return "\n".join([line for line in lines if not _PROGRESS.match(line)][-10:])
