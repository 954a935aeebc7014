"""Fixtures every test directory can use."""

from __future__ import annotations

import signal
from typing import Callable

import pytest

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
