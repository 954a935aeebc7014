"""psij-python 0.9.11's tests that take an executor (``execparams``) pass on the real
OpenPBS server with each launcher, through the ``psij`` alias
(tests/psij_python_suite.py; the expected outcomes are in
tests/psij_python_harness/psij_suite_plugin.py)."""

from __future__ import annotations

from pathlib import Path

from psij_python_suite import SUITE_MARKS, check_executor_tests

pytestmark = SUITE_MARKS


def test_psij_python_suite_on_pbs(pbs_server: None, tmp_path: Path) -> None:
    check_executor_tests(tmp_path, "pbs", ["single", "multiple", "mpirun"])
