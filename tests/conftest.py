"""What every test directory shares: the markers of tests that need a real system, the
machine's hygiene before tests of a batch system (machine_hygiene.py), and fixtures any
test can use."""

from __future__ import annotations

import signal
from typing import Callable

import pytest

from machine_hygiene import clear_stale_pyenv_lock

#: a test that asks for one of these fixtures needs that real system: the marker
#: (pyproject.toml's) lets ``-m "not slurm"`` leave it out (the conformance suite marks its
#: parametrised backends itself: tests/conformance/conftest.py)
_MARKER_OF_FIXTURE = {"slurm_cluster": "slurm", "torque_wrappers": "slurm", "pbs_server": "pbs"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in _MARKER_OF_FIXTURE:
                item.add_marker(_MARKER_OF_FIXTURE[fixture])


def pytest_sessionstart(session: pytest.Session) -> None:
    clear_stale_pyenv_lock()


@pytest.fixture(autouse=True)
def _no_stale_pyenv_lock(request: pytest.FixtureRequest) -> None:
    """Before each test of a batch system, whose jobs start in root login shells."""
    if any(request.node.iter_markers(name) for name in ("slurm", "pbs")):
        clear_stale_pyenv_lock()


#: the signals the tests send to the programs they start
_SENT = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)


def _default_signals() -> None:
    for sig in _SENT:
        signal.signal(sig, signal.SIG_DFL)


@pytest.fixture
def default_signals() -> Callable[[], None]:
    """A ``preexec_fn`` that gives a child the default action for the signals a test
    sends it. A child inherits ignored signals, and a shell cannot trap a signal it was
    started with ignored (POSIX, "trap"): a test suite started in the background by a
    non-interactive shell (SIGINT ignored) or under nohup (SIGHUP ignored) would
    otherwise wait for a child that never hears the signal."""
    return _default_signals
