"""Fixtures: Batsim executors on every simulator: hpcjobs.sim in the executor's process
(the default), and as a real process over real ZeroMQ, hpcjobs.sim and real Batsim.

Every test asking for ``make_executor`` runs three times: on the embedded ``hpcjobs.sim``
in this process and as a process, and on the real Batsim 4.2.1 program, found as a user's configuration finds it (a ``batsim``
program on PATH; scripts/test.sh installs one when the project's real-systems builds are
at hand). Without one the real-Batsim runs skip, and FAIL under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from hpcjobs import JobExecutor
from hpcjobs.executors.batsim import BatsimJobExecutor

MakeExecutor = Callable[..., BatsimJobExecutor]

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(params=["in-process", "hpcjobs.sim", "batsim"])
def simulator(request: pytest.FixtureRequest) -> str:
    """The ``simulator`` setting under test: the embedded one (in this process or as a
    process), or real Batsim."""
    name: str = request.param
    if name == "in-process" and request.node.get_closest_marker("simulator_process"):
        pytest.skip("about the simulator's process or socket: there is none in-process")
    if name == "batsim" and shutil.which("batsim") is None:
        message = "no 'batsim' program on PATH (scripts/test.sh installs the real Batsim 4.2.1)"
        if IN_CI:
            pytest.fail(message + " (CI=true: the real Batsim tests must run, not skip)")
        pytest.skip(message)
    return name


@pytest.fixture
def make_executor(tmp_path: Path, simulator: str) -> Iterator[MakeExecutor]:
    """``make_executor(**config)``: a Batsim executor working in tmp_path (virtual time
    unless the config says otherwise) on the simulator under test, closed after the test."""
    made: list[BatsimJobExecutor] = []

    def make(**config: Any) -> BatsimJobExecutor:
        config.setdefault("work_directory", tmp_path / f"work{len(made)}")
        config.setdefault("simulator", simulator)
        config.setdefault("virtual_time", True)
        ex = JobExecutor.get_instance("batsim", config=config)
        assert isinstance(ex, BatsimJobExecutor)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close()
