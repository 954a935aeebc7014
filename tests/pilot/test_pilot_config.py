"""PilotConfig refuses what a pilot cannot be, before anything is submitted (no Slurm,
no Flux needed)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hpcjobs.executors.pilot import PilotConfig


@pytest.mark.parametrize("settings, field", [
    ({"node_count": 2}, "node_count: pilots of more than one node"),
    ({"node_count": 0}, "node_count: a positive int"),
    ({"backend": "flux"}, "backend"),
    ({"cores_per_node": 0}, "cores_per_node"),
    ({"walltime": timedelta(0)}, "walltime"),
    ({"on_close": "later"}, "on_close"),
    ({"attach": ""}, "attach"),
    ({"flux_test_size": 0}, "flux_test_size"),
    ({"flux_test_size": "2"}, "flux_test_size"),
])
def test_refused(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"PilotConfig.{field}"):
        PilotConfig.coerce(settings)


def test_defaults() -> None:
    config = PilotConfig.coerce(None)
    assert isinstance(config, PilotConfig)
    assert (config.backend, config.node_count, config.on_close) == ("slurm", 1, "cancel")


def test_test_brokers_are_the_nodes_jobs_see() -> None:
    config = PilotConfig.coerce({"flux_test_size": 3})
    assert isinstance(config, PilotConfig)
    assert (config.node_count, config.flux_nodes) == (1, 3)
