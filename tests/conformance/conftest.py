"""The conformance suite's plumbing: one suite, parametrised over backend x launcher.

How a backend joins
-------------------
Add ``tests/conformance/backends/<name>.py`` (the provider module; its contract is in
``backends/__init__.py``): ``NAME``, ``LAUNCHERS``, ``CAPABILITIES``, ``unavailable()``
and ``make_executor(work_dir)``. Nothing else: every module in ``backends/`` is found
here (files starting with ``_`` are ignored) and every test below runs against it.

Fixtures a test can ask for
---------------------------
``backend``   the provider module (parametrised over all providers; ids are file names)
``launcher``  each name in the backend's ``LAUNCHERS`` (only tests that ask for it are
              run once per launcher; the others use the backend's default, ``single``)
``executor``  ``backend.make_executor(tmp_path / "work")``, closed after the test
``scratch``   an empty directory for the test's own files (inputs, outputs)
``wait_final``  ``wait_final(job)``: the job's final status (fails the test if none comes
              within ``TIMEOUT``, a generous bound, never a timing assertion)
``run_job``   ``run_job(spec)``: submit a Job of ``spec`` to ``executor``, return
              ``(job, final status)``

Capabilities
------------
``@pytest.mark.requires("cancel", ...)`` skips the test for a backend whose
``CAPABILITIES`` lacks one of the names (a legitimate gap, so never a failure). The
names are checked against ``backends.CAPABILITIES``: a typo is a collection error.
Inside a test, the ``require`` fixture (``require("name")``) does the same for a part of
a test.

Availability
------------
``unavailable()`` (and the optional ``launcher_unavailable(launcher)``) is asked once per
session. A reason means skip, except under ``CI=true``, where it means FAIL unless the
provider sets ``OPTIONAL = True``: CI must never go green by skipping a backend it is
supposed to test.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterator, Optional

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobStatus

_HERE = Path(__file__).parent / "backends"
# a private package name, so the providers can never collide with another "backends"
_PACKAGE = "hpcjobs_conformance_backends"


def _load(name: str, path: Path, package: bool = False) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)] if package else None)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _providers() -> list[ModuleType]:
    package = sys.modules.get(_PACKAGE) or _load(_PACKAGE, _HERE / "__init__.py", package=True)
    known: dict[str, str] = package.CAPABILITIES
    found = []
    for path in sorted(_HERE.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = sys.modules.get(f"{_PACKAGE}.{path.stem}") or _load(f"{_PACKAGE}.{path.stem}", path)
        unknown = set(module.CAPABILITIES) - set(known)
        if unknown:
            raise pytest.UsageError(f"{path}: unknown capabilities {sorted(unknown)} "
                                    f"(known: {sorted(known)})")
        found.append(module)
    return found


PROVIDERS = _providers()
CAPABILITIES: dict[str, str] = sys.modules[_PACKAGE].CAPABILITIES
IN_CI = os.environ.get("CI", "").lower() == "true"

#: generous upper bound for any wait in the suite (never a timing assertion)
TIMEOUT = 120.0


def backend_id(backend: ModuleType) -> str:
    """The provider's file name: the id its tests are reported under."""
    return backend.__name__.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=None)
def _unavailable(module_name: str, launcher: Optional[str]) -> Optional[str]:
    backend = sys.modules[module_name]
    if launcher is None:
        reason: Optional[str] = backend.unavailable()
        return reason
    hook = getattr(backend, "launcher_unavailable", None)
    return None if hook is None else hook(launcher)  # type: ignore[no-any-return]


def _gate(backend: ModuleType, launcher: Optional[str]) -> None:
    reason = _unavailable(backend.__name__, None)
    if reason is None and launcher is not None:
        reason = _unavailable(backend.__name__, launcher)
        if reason is not None:
            reason = f"launcher {launcher!r}: {reason}"
    if reason is None:
        return
    what = f"backend {backend_id(backend)!r} is unavailable: {reason}"
    if IN_CI and not getattr(backend, "OPTIONAL", False):
        pytest.fail(f"{what} (CI=true: a required backend must run, not skip)")
    pytest.skip(what)


def _require(backend: ModuleType, *capabilities: str) -> None:
    """Skip the rest of the test unless ``backend`` has every one of ``capabilities``."""
    for cap in capabilities:
        if cap not in CAPABILITIES:
            raise ValueError(f"unknown capability {cap!r} (known: {sorted(CAPABILITIES)})")
        if cap not in backend.CAPABILITIES:
            pytest.skip(f"backend {backend_id(backend)!r} lacks {cap!r}: {CAPABILITIES[cap]}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*capabilities): conformance test needs these backend "
                   "capabilities (see tests/conformance/backends/__init__.py)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    names = metafunc.fixturenames
    if "launcher" in names:
        pairs = [(b, l) for b in PROVIDERS for l in b.LAUNCHERS]
        metafunc.parametrize(("backend", "launcher"), pairs,
                             ids=[f"{backend_id(b)}-{l}" for b, l in pairs])
    elif "backend" in names:
        metafunc.parametrize("backend", PROVIDERS, ids=[backend_id(b) for b in PROVIDERS])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(item, "callspec", None)
        backend = params.params.get("backend") if params is not None else None
        for name in getattr(backend, "MARKERS", ()):
            item.add_marker(name)
        for marker in item.iter_markers("requires"):
            unknown = set(marker.args) - set(CAPABILITIES)
            if unknown:
                raise pytest.UsageError(f"{item.nodeid}: unknown capabilities {sorted(unknown)}")


@pytest.fixture(autouse=True)
def _conformance_gate(request: pytest.FixtureRequest) -> None:
    """Skip/fail for unavailable backends and missing capabilities before the test runs."""
    if "backend" not in request.fixturenames:
        return
    backend: ModuleType = request.getfixturevalue("backend")
    launcher = request.getfixturevalue("launcher") if "launcher" in request.fixturenames else None
    _gate(backend, launcher)
    for marker in request.node.iter_markers("requires"):
        _require(backend, *marker.args)


@pytest.fixture
def require(backend: ModuleType) -> Callable[..., None]:
    """``require("cap", ...)``: skip the rest of the test unless the backend has them."""
    return functools.partial(_require, backend)


@pytest.fixture
def executor(backend: ModuleType, tmp_path: Path) -> Iterator[JobExecutor]:
    """A fresh executor of the backend with its own work directory, closed afterwards."""
    ex: JobExecutor = backend.make_executor(tmp_path / "work")
    try:
        yield ex
    finally:
        ex.close()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """An empty directory for the test's own files."""
    d = tmp_path / "scratch"
    d.mkdir()
    return d


def _wait_final(job: Job) -> JobStatus:
    status = job.wait(timeout=TIMEOUT)
    assert status is not None, f"job {job.native_id} did not end within {TIMEOUT} s: {job.status}"
    assert status.state.final, status
    return status


@pytest.fixture
def wait_final() -> Callable[[Job], JobStatus]:
    """``wait_final(job)``: the job's final status, within a generous bound."""
    return _wait_final


@pytest.fixture
def run_job(executor: JobExecutor) -> Callable[[JobSpec], tuple[Job, JobStatus]]:
    """``run_job(spec)``: submit a job of ``spec`` and wait for its final status."""
    def run(spec: JobSpec) -> tuple[Job, JobStatus]:
        job = Job(spec)
        executor.submit(job)
        return job, _wait_final(job)
    return run
