"""A real Flux instance for the tests: ``flux start --test-size=2``, two brokers on this
machine, i.e. two nodes (ranks 0 and 1), named ``node0`` and ``node1`` and configured
with 8 cores each (``resource.config``, not verified against this machine's cores), so
that the suites' parallel jobs all fit at once, as on a real cluster.

Found the way a user finds Flux: the ``flux`` command on PATH and the bindings
importable (``flux-core``'s site-packages on PYTHONPATH; scripts/test.sh sets both when
it installs the real build). The tests reach the instance through its URI
(``FLUX_URI``), as a user's program would. The instance lives as long as the pipe to
its initial program is open, so it ends with the test process even if that is killed.
(A uniquely named module: several test directories have a conftest.)
"""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import psutil

if TYPE_CHECKING:
    from hpcjobs import JobExecutor, JobSpec, JobStatus

IN_CI = os.environ.get("CI", "").lower() == "true"
#: generous bound for the instance to come up or go down (never a timing assertion)
START_TIMEOUT = 60.0

NODES = ["node0", "node1"]
CORES_PER_NODE = 8
_RESOURCES = f"""\
[resource]
noverify = true
[[resource.config]]
hosts = "node[0-{len(NODES) - 1}]"
cores = "0-{CORES_PER_NODE - 1}"
"""
# the initial program prints the instance's URI, then lives until its stdin closes
_INITIAL_PROGRAM = 'printf "%s\\n" "$FLUX_URI"; exec cat >/dev/null'


def run(ex: JobExecutor, spec: JobSpec, timeout: float) -> JobStatus:
    """Submit a job of ``spec`` and wait (at most ``timeout`` s) for its final status."""
    from hpcjobs import Job

    job = Job(spec)
    ex.submit(job)
    status = job.wait(timeout=timeout)
    assert status is not None, f"job {job.native_id} did not end"
    return status


def require_flux() -> None:
    """Skip (fail under CI=true) when no real Flux can run here."""
    import pytest

    reason = unavailable()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"{reason} (CI=true: Flux tests must run, not skip)")
        pytest.skip(reason)


def unavailable() -> Optional[str]:
    """Why no real Flux can be started here (None: it can)."""
    if shutil.which("flux") is None:
        return ("the flux command is not on PATH (flux-core; scripts/test.sh installs the "
                "real build when ../shared is there)")
    try:
        importlib.import_module("flux.job")
    except ImportError as e:
        return (f"flux-core's Python bindings do not import ({e}); put flux-core's "
                "site-packages on PYTHONPATH (and pip install cffi ply pyyaml)")
    return None


class FluxInstance:
    """A running instance of ``NODES``; ``uri`` is its ``FLUX_URI``."""

    def __init__(self) -> None:
        self.size = len(NODES)
        self._config = tempfile.TemporaryDirectory(prefix="hpcjobs-flux-config-")
        (Path(self._config.name) / "resource.toml").write_text(_RESOURCES)
        self._process = subprocess.Popen(
            ["flux", "start", f"--test-size={self.size}",
             f"--test-hosts=node[0-{self.size - 1}]", f"-o,--config-path={self._config.name}",
             "sh", "-c", _INITIAL_PROGRAM],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert self._process.stdout is not None
        self.uri = self._process.stdout.readline().strip()
        if not self.uri:
            self.stop()
            raise RuntimeError(f"flux start --test-size={self.size} printed no URI "
                               f"(exit status {self._process.returncode})")

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    def kill(self) -> None:
        """Kill every process of the instance at once (brokers, shells, jobs), as a
        crash of its nodes would: nothing is shut down cleanly."""
        members = []
        for process in psutil.process_iter(["pid", "name"]):
            try:
                if os.getsid(process.pid) == self._process.pid:
                    members.append(process)
            except (OSError, psutil.Error):
                continue
        # the brokers first: a shell killed while its broker lives is a job's end that
        # Flux reports ("killed by signal 9"), not a crash (pids alone give no order:
        # they wrap around)
        members.sort(key=lambda p: "broker" not in (p.info.get("name") or ""))
        for process in members:
            try:
                process.kill()
            except psutil.Error:
                continue
        self.stop()

    def kill_broker(self, rank: int) -> None:
        """Kill the broker of one rank with SIGKILL, as the crash of that node would
        (its job shells and tasks are left as they are)."""
        pid = subprocess.run(["flux", "exec", "-r", str(rank), "flux", "getattr", "broker.pid"],
                             env={**os.environ, "FLUX_URI": self.uri}, check=True,
                             capture_output=True, text=True, timeout=START_TIMEOUT).stdout
        os.kill(int(pid), signal.SIGKILL)

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
        self._config.cleanup()
