"""psij-python 0.9.11's tests that take an executor (``execparams``) pass on the real
OpenPBS server with each launcher, through the ``psij`` alias
(tests/psij_python_suite.py; the expected outcomes are in
tests/psij_python_harness/psij_suite_plugin.py)."""

from __future__ import annotations

from pathlib import Path

from psij_python_suite import run_suite, unexplained_skips

LAUNCHERS = ("single", "multiple", "mpirun")


def test_psij_python_suite_on_pbs(pbs_server: None, tmp_path: Path) -> None:
    outcomes = run_suite(tmp_path, [f"pbs:{name}" for name in LAUNCHERS],
                         "--psij-execparams-only")
    assert not unexplained_skips(outcomes)
    for name in LAUNCHERS:
        assert outcomes[f"tests/test_executor.py::test_simple_job[pbs:{name}]"]["outcome"] \
            == "passed"
