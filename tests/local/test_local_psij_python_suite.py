"""psij-python 0.9.11's own test suite passes on hpcjobs's local executor, with the
``single``, ``multiple`` and (where OpenMPI's mpirun is installed) ``mpirun`` launchers,
through the ``psij`` alias; what does not pass is listed with its reason in
tests/psij_python_harness/psij_suite_plugin.py (tests/psij_python_suite.py runs it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from psij_python_suite import IN_CI, SUITE_MARKS, check_suite

pytestmark = SUITE_MARKS


def test_psij_python_suite_on_local(tmp_path: Path) -> None:
    launchers = ["single", "multiple"]
    if shutil.which("mpirun"):
        launchers.append("mpirun")
    elif IN_CI:
        pytest.fail("mpirun is needed under CI=true (the mpirun launcher's tests)")
    check_suite(tmp_path, "local", launchers)
