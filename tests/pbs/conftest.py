"""Fixtures of the PBS tests: a real OpenPBS server reachable the way a user reaches one
(``PBS_CONF_FILE``/``/etc/pbs.conf`` naming ``PBS_EXEC``, or qstat on PATH;
scripts/test.sh starts one when the prebuilt OpenPBS is beside the checkout).

Without a server they skip, except under ``CI=true``, where they FAIL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import JobExecutor

sys.path.insert(0, str(Path(__file__).parent))
from pbs_helpers import server_problem  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def pbs_server() -> None:
    """Skips (fails under CI=true) when no PBS server answers ``qstat -B``."""
    problem = server_problem()
    if problem:
        message = f"no PBS server to test against: {problem}"
        if IN_CI:
            pytest.fail(message + " (CI=true: PBS tests must run, not skip)")
        pytest.skip(message)


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """The executor's work directory (job directories live here; world-traversable so
    that tests running jobs as pbsuser can use it too)."""
    tmp_path.chmod(0o755)
    return tmp_path / "work"


@pytest.fixture
def executor(pbs_server: None, work_dir: Path) -> Iterator[JobExecutor]:
    """A PBS executor with its own work directory, closed after the test."""
    ex = JobExecutor.get_instance("pbs", config={"work_directory": work_dir})
    try:
        yield ex
    finally:
        ex.close()
