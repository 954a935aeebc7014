"""Conformance provider for the Flux executor: a real flux-core instance of two nodes
(``flux start --test-size=2``, tests/flux/real_flux.py), started for the session and
reached through its URI. Without Flux (the ``flux`` command and its bindings) the
backend is unavailable: skipped, FAILED under CI=true.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any, Optional

from hpcjobs import JobExecutor

NAME = "flux"
LAUNCHERS = ["single", "multiple", "mpirun"]
# "attach_after_client_death": the instance outlives the client process that submitted
CAPABILITIES = {"executes", "exit_code", "stdin", "cancel", "list", "attach",
                "attach_after_client_death", "signal_exit", "parallel"}

_HELPERS = str(Path(__file__).resolve().parents[2] / "flux")
_instance: Any = None
_URI_VARIABLE = "HPCJOBS_CONFORMANCE_FLUX_URI"


def _real_flux() -> Any:
    if _HELPERS not in sys.path:
        sys.path.insert(0, _HELPERS)
    import real_flux
    return real_flux


def unavailable() -> Optional[str]:
    """Why no real Flux can be started here (None: it can)."""
    reason: Optional[str] = _real_flux().unavailable()
    return reason


def make_executor(work_dir: Path) -> JobExecutor:
    """A Flux executor on the session's instance (started on first use, stopped at exit:
    its jobs are real processes, none may outlive the test session). A child process
    of the session (the attach tests' submitter) uses the same instance: its URI is
    handed down in the environment."""
    global _instance
    uri = os.environ.get(_URI_VARIABLE)
    if uri is None:
        _instance = _real_flux().FluxInstance()
        atexit.register(_instance.stop)
        uri = os.environ[_URI_VARIABLE] = _instance.uri
    return JobExecutor.get_instance(NAME, url=uri, config={"work_directory": work_dir})
