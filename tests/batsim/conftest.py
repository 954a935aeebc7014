"""Fixtures: Batsim executors on the embedded simulator (a real process, real ZeroMQ)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from hpcjobs import JobExecutor
from hpcjobs.executors.batsim import BatsimJobExecutor

MakeExecutor = Callable[..., BatsimJobExecutor]


@pytest.fixture
def make_executor(tmp_path: Path) -> Iterator[MakeExecutor]:
    """``make_executor(**config)``: a Batsim executor working in tmp_path (virtual time
    unless the config says otherwise), closed after the test."""
    made: list[BatsimJobExecutor] = []

    def make(**config: Any) -> BatsimJobExecutor:
        config.setdefault("work_directory", tmp_path / f"work{len(made)}")
        config.setdefault("simulator", "hpcjobs.sim")
        config.setdefault("virtual_time", True)
        ex = JobExecutor.get_instance("batsim", config=config)
        assert isinstance(ex, BatsimJobExecutor)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close()
