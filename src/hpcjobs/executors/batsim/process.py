"""The simulator as a process: which program, with which of Batsim's flags.

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
import tempfile
from pathlib import Path
from typing import Callable, Optional

from ...batsim_protocol.codecs import Codec
from ...batsim_protocol.errors import InputError, ProtocolError
from ...batsim_protocol.events import Message
from ...batsim_protocol.transports.zeromq import RepEndpoint
from ...errors import SubmitException
from ...final_status import describe_exit
from ...private import opener
from .simulator import SimulatorGone

__all__ = ["batsim_flags", "simulator_command", "SimulatorProcess", "spawn", "wait", "tail", "explain"]

#: Batsim 4.2.1 flags: dynamic jobs, acknowledged, with profile reuse (DESIGN.md)
_DYNAMIC = ["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse"]


def batsim_flags(platform: Path, export_prefix: Path, protocol: str = "json") -> list[str]:
    """Batsim's flags for the executor's simulation, but the socket's (the in-process
    simulator gets these; with batprotocol the features come from the executor's EDC
    hello, not flags)."""
    flags = ["-p", str(platform), "-e", str(export_prefix), "-q"]
    return flags + _DYNAMIC if protocol == "json" else flags


def simulator_command(simulator: str, platform: Path, export_prefix: Path, endpoint: str,
                      protocol: str = "json") -> list[str]:
    """The argument list that starts the configured simulator process speaking
    ``protocol`` on ``endpoint``."""
    flags = batsim_flags(platform, export_prefix, protocol)
    flags[4:4] = ["-s", endpoint]  # (after -p and -e, where it always was)
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


class SimulatorProcess:
    """A simulator process (real Batsim or ``python -m hpcjobs.sim``) connected to the
    decision process's REP socket, bound first: the simulator connects and sends first.
    Its stderr goes to ``run_dir/simulator.stderr``; its death is the session's to
    report (:meth:`check`), with the simulator's own error from that file."""

    def __init__(self, command: Callable[[str], list[str]], run_dir: Path, endpoint: Optional[str],
                 codec: Codec) -> None:
        self._sock_dir: Optional[Path] = None
        if endpoint is None:
            # a private (0700) directory: nobody else can connect to our socket
            self._sock_dir = Path(tempfile.mkdtemp(prefix="hpcjobs-batsim-"))
            endpoint = f"ipc://{self._sock_dir}/decision.sock"
        self.endpoint = endpoint
        self.stderr_path = run_dir / "simulator.stderr"
        try:
            self._channel = RepEndpoint(endpoint, codec)
        except InputError as e:
            self._remove_sock_dir()
            raise SubmitException(f"batsim config 'endpoint': {e}") from None
        except BaseException:
            self._remove_sock_dir()
            raise
        try:
            argv = command(endpoint)
            self.process = spawn(argv, run_dir, self.stderr_path)
        except BaseException:
            self.close()
            raise
        self.description = f"{argv[0]} (pid {self.process.pid}), endpoint {endpoint}"

    def receive(self) -> Message:
        try:
            return self._channel.receive(self.check)
        except ProtocolError as e:
            raise SimulatorGone(f"the simulator broke the protocol: {e}") from None

    def send(self, message: Message) -> None:
        self._channel.send(message)

    def check(self) -> None:
        if self.process.poll() is not None:
            raise SimulatorGone(self._death())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()

    def finish(self, timeout: float) -> None:
        try:
            wait(self.process, timeout)  # (the decision loop, which polls it too, is over)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self._channel.close()
        self._remove_sock_dir()

    def _death(self) -> str:
        code = self.process.poll()
        last = explain(self.stderr_path)
        return f"the simulator ended ({describe_exit(code)})" + (f": {last}" if last else
                                                                  " (no error output)")

    def _remove_sock_dir(self) -> None:
        if self._sock_dir is not None:
            shutil.rmtree(self._sock_dir, ignore_errors=True)


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
