"""psij-python 0.9.11's tests that take an executor (``execparams``) pass on a real
Flux instance (reached through ``FLUX_URI``) with the ``single`` and ``multiple``
launchers, through the ``psij`` alias (tests/psij_python_suite.py; the expected
outcomes are in tests/psij_python_harness/psij_suite_plugin.py)."""

from __future__ import annotations

from pathlib import Path

from psij_python_suite import run_suite, unexplained_skips

LAUNCHERS = ("single", "multiple")


def test_psij_python_suite_on_flux(flux_uri: str, tmp_path: Path) -> None:
    outcomes = run_suite(tmp_path, [f"flux:{name}" for name in LAUNCHERS],
                         "--psij-execparams-only")
    assert not unexplained_skips(outcomes)
    for name in LAUNCHERS:
        assert outcomes[f"tests/test_executor.py::test_simple_job[flux:{name}]"]["outcome"] \
            == "passed"
