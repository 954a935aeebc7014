"""Fixtures for the Flux tests: the flux-core bindings TEST DOUBLE and its instances.

No Flux can be installed here, so ``tests/flux_double`` (a test double of flux-core
0.88's Python bindings, built from the transcripts in tests/fixtures/flux-0.88)
is put first on ``sys.path``; ``import flux`` then finds the double.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from flux_transcripts import DOUBLE_PATH

if TYPE_CHECKING:
    from hpcjobs import JobExecutor


if DOUBLE_PATH not in sys.path:
    sys.path.insert(0, DOUBLE_PATH)

import flux
import flux.double


@pytest.fixture
def flux_uri(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh simulated 2-core instance on host ``vm`` (as recorded), as ``FLUX_URI``."""
    uri = flux.double.start_instance(cores=2, hostname="vm")
    monkeypatch.setenv("FLUX_URI", uri)
    yield uri
    flux.double.stop_instance(uri)


@pytest.fixture
def handle(flux_uri: str) -> flux.Flux:
    return flux.Flux(flux_uri)


@pytest.fixture
def executor(flux_uri: str) -> Iterator[JobExecutor]:
    """A Flux executor on the fresh simulated instance, closed afterwards."""
    from hpcjobs import JobExecutor

    ex = JobExecutor.get_instance("flux", url=flux_uri)
    yield ex
    ex.close()
