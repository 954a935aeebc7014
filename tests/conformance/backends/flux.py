"""Conformance provider for the Flux executor, run against the TEST DOUBLE of
flux-core 0.88's Python bindings (tests/flux_double): no Flux can be installed here.

The double runs every job as a real process on this machine, so the suite's
behavioural checks are meaningful; it reproduces the recorded real transcripts
(tests/flux/test_flux_double_fidelity.py). All executors of a session share one
simulated instance, so a job can be attached from another executor instance.
"""

from __future__ import annotations

import atexit
import sys
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor

NAME = "flux"
LAUNCHERS = ["single", "multiple"]
# not "attach_after_client_death": the double's instance lives in the test process
CAPABILITIES = {"executes", "exit_code", "stdin", "cancel", "list", "attach",
                "signal_exit", "parallel"}

_DOUBLE = str(Path(__file__).resolve().parents[2] / "flux_double")
_uri: Optional[str] = None


def unavailable() -> Optional[str]:
    """The double needs nothing but this machine."""
    return None


def make_executor(work_dir: Path) -> JobExecutor:
    """A Flux executor on the session's simulated instance (16 cores, so parallel jobs
    do not queue behind each other)."""
    global _uri
    if _DOUBLE not in sys.path:
        sys.path.insert(0, _DOUBLE)
    if _uri is None:
        import flux.double
        _uri = flux.double.start_instance(cores=16)
        # its jobs are real processes: none may outlive the test session
        atexit.register(flux.double.stop_instance, _uri)
    return JobExecutor.get_instance(NAME, url=_uri, config={"work_directory": work_dir})
