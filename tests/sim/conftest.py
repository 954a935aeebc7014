"""The start_sim fixture for hpcjobs.sim tests (helpers live in simharness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simharness import Sim


@pytest.fixture
def start_sim(tmp_path: Path) -> Iterator[Any]:
    """Factory: start_sim(args[, endpoint]) -> Sim; every simulator started is killed at teardown."""
    started: list[Sim] = []

    def start(args: list[str], endpoint: str | None = None) -> Sim:
        run_dir = tmp_path / f"r{len(started)}"
        run_dir.mkdir()
        sim = Sim(run_dir, args, endpoint)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.close()
