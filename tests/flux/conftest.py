"""Fixtures of the Flux tests: a real flux-core instance of two nodes (real_flux.py).

Without Flux the tests that need it skip, except under ``CI=true``, where they FAIL
(CI must prove the Flux executor works, not skip it). The session's instance is
reached through ``FLUX_URI``, as a user's program inside ``flux start`` would.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import real_flux
from real_flux import require_flux

if TYPE_CHECKING:
    from hpcjobs import JobExecutor


@pytest.fixture(scope="session")
def flux_instance() -> Iterator[real_flux.FluxInstance]:
    """The session's instance of two brokers (nodes), stopped at the end."""
    require_flux()
    instance = real_flux.FluxInstance()
    yield instance
    instance.stop()


@pytest.fixture
def flux_uri(flux_instance: real_flux.FluxInstance,
             monkeypatch: pytest.MonkeyPatch) -> str:
    """The session instance's URI, also as ``FLUX_URI`` for the test."""
    monkeypatch.setenv("FLUX_URI", flux_instance.uri)
    return flux_instance.uri


@pytest.fixture
def executor(flux_uri: str) -> Iterator[JobExecutor]:
    """A Flux executor on the enclosing instance ($FLUX_URI), closed afterwards; jobs
    it left behind are cancelled so the next test starts with the instance idle."""
    from hpcjobs import JobExecutor

    ex = JobExecutor.get_instance("flux")
    yield ex
    ex.close()
    cancel_all(flux_uri)


def cancel_all(uri: str) -> None:
    """Cancel every active job of the instance and wait until they are gone."""
    import flux
    import flux.job

    handle = flux.Flux(uri)
    for info in flux.job.JobList(handle, filters=["pending", "running"]).jobs():
        try:
            flux.job.cancel(handle, info.id)
        except FileNotFoundError:
            continue
        flux.job.event_wait(handle, info.id, "clean", raiseJobException=False)
