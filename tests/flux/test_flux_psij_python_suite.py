"""psij-python 0.9.11's tests that take an executor (``execparams``) pass on a real
Flux instance (reached through ``FLUX_URI``) with the ``single`` and ``multiple``
launchers, through the ``psij`` alias (tests/psij_python_suite.py; the expected
outcomes are in tests/psij_python_harness/psij_suite_plugin.py)."""

from __future__ import annotations

from pathlib import Path

from psij_python_suite import SUITE_MARKS, check_executor_tests

pytestmark = SUITE_MARKS


def test_psij_python_suite_on_flux(flux_uri: str, tmp_path: Path) -> None:
    check_executor_tests(tmp_path, "flux", ["single", "multiple"])
