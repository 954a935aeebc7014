"""psij-python 0.9.11's tests that take an executor (``execparams``) pass on the real
Slurm cluster with each launcher, through the ``psij`` alias
(tests/psij_python_suite.py; the expected outcomes are in
tests/psij_python_harness/psij_suite_plugin.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from psij_python_suite import RUN_TIMEOUT, check_executor_tests

# Not in the slow group: beside it, the suite's jobs (this user's) showed up in the
# "nothing was submitted" listings of the conformance tests of the Slurm group. In that
# group it runs after them. Two launchers: the conformance suite runs all four on Slurm.
pytestmark = pytest.mark.timeout(RUN_TIMEOUT + 60)


def test_psij_python_suite_on_slurm(slurm_cluster: str, tmp_path: Path) -> None:
    check_executor_tests(tmp_path, "slurm", ["single", "srun"])
