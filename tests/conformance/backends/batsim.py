"""Conformance provider for the Batsim executor: a simulated cluster, driven through
the embedded simulator ``hpcjobs.sim`` as a real separate process over real ZeroMQ.

A simulated job runs nothing on this machine: no output files, no environment, no
stdin, no signals ("executes", "stdin", "signal_exit" are absent). Its exit code is
the profile's return code (``true``/``false``/``sleep`` give 0/1/0). Jobs live in the
simulation of the executor that submitted them, so "attach" (from another executor
instance) does not apply. Real-time mode at wall-clock speed, so waits, timeouts and
cancels behave as on a real cluster; 64 hosts so parallel jobs do not queue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

NAME = "batsim"
LAUNCHERS = ["single"]
CAPABILITIES = {"exit_code", "cancel", "list", "parallel"}


def unavailable() -> Optional[str]:
    """The embedded simulator needs only pyzmq, a dependency of hpcjobs."""
    try:
        import zmq  # noqa: F401
    except ImportError as e:
        return f"pyzmq is not importable: {e}"
    return None


def make_executor(work_dir: Path) -> JobExecutor:
    """A Batsim executor on the embedded simulator, simulating 64 hosts."""
    return JobExecutor.get_instance(NAME, config={"work_directory": work_dir, "hosts": 64,
                                                  "simulator": "hpcjobs.sim"})
