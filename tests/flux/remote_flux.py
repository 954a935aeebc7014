"""A real Flux instance of the test login node's user, for the tests over ssh.

``flux start --test-size=1`` run as that user (``su``, so the tests need root), which
owns it and its socket; the tests reach it only through the login node's sshd, as a
laptop reaches a cluster. Like real_flux.py's instance, it lives as long as the pipe
to its initial program is open.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from real_flux import START_TIMEOUT

#: the initial program prints the instance's URI, then lives until its stdin closes
_INITIAL_PROGRAM = 'printf "%s\\n" "$FLUX_URI"; exec cat >/dev/null'


def unavailable() -> str | None:
    """Why no instance can be started as another user here (None: it can)."""
    if os.geteuid() != 0:
        return "starting a Flux instance as the test login node's user needs root (su)"
    if shutil.which("su") is None:
        return "no su command"
    return None


class RemoteFluxInstance:
    """An instance owned by ``user``; ``socket`` is its socket path on the login node."""

    def __init__(self, user: str) -> None:
        flux = shutil.which("flux")
        assert flux is not None
        command = shlex.join(["env", "-i", "PATH=/usr/bin:/bin", flux, "start",
                              "--test-size=1", "sh", "-c", _INITIAL_PROGRAM])
        self._process = subprocess.Popen(["su", "-s", "/bin/sh", user, "-c", command],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, start_new_session=True, cwd="/")
        assert self._process.stdout is not None
        uri = self._process.stdout.readline().strip()
        if not uri.startswith("local://"):
            self.stop()
            raise RuntimeError(f"flux start as {user} printed no URI ({uri!r}, exit "
                               f"status {self._process.returncode})")
        self.socket = uri.removeprefix("local://")
        self.user = user
        self._dirs: list[Path] = []

    def shared_dir(self) -> Path:
        """A new directory both this process and the instance's user may write."""
        path = Path(tempfile.mkdtemp(prefix="hpcjobs-flux-ssh-"))
        shutil.chown(path, self.user, self.user)
        self._dirs.append(path)
        return path

    def stop(self) -> None:
        """Shut the instance down (its jobs are killed) and wait until it is gone."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        for path in getattr(self, "_dirs", ()):
            shutil.rmtree(path, ignore_errors=True)
