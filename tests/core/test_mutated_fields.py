"""Lists and dicts changed in place after construction are checked again at submit.

Setters check what they are given, but ``spec.environment['X'] = [2]`` bypasses them;
psij-python raises ``TypeError`` at submit for it, and so must we, before anything
reaches a backend (here the real local executor: no process may be started).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState

Mutation = Callable[[JobSpec], None]


@pytest.fixture
def local(tmp_path: Path) -> Iterator[JobExecutor]:
    ex = JobExecutor.get_instance("local", config={"work_directory": tmp_path / "work"})
    yield ex
    ex.close()


def _env_list(spec: JobSpec) -> None:
    assert spec.environment is not None
    spec.environment["X"] = [2]  # type: ignore[assignment]


def _env_key(spec: JobSpec) -> None:
    assert spec.environment is not None
    spec.environment[1] = "x"  # type: ignore[index]


def _argument(spec: JobSpec) -> None:
    assert spec.arguments is not None
    spec.arguments.append(None)  # type: ignore[arg-type]


def _custom_attribute_name(spec: JobSpec) -> None:
    spec.attributes.set_custom_attribute("slurm.constraint", "x")
    assert spec.attributes.custom_attributes is not None
    spec.attributes.custom_attributes[3] = "x"  # type: ignore[index]


@pytest.mark.parametrize("mutate,field", [
    (_env_list, "environment"), (_env_key, "environment"), (_argument, "arguments"),
    (_custom_attribute_name, "custom_attributes"),
])
def test_wrong_types_put_into_containers_raise_type_error_at_submit(
        local: JobExecutor, tmp_path: Path, mutate: Mutation, field: str) -> None:
    marker = tmp_path / "ran"
    spec = JobSpec("/bin/sh", ["-c", f"touch {marker}"], environment={"A": "b"})
    mutate(spec)
    job = Job(spec)
    with pytest.raises(TypeError, match=field):
        local.submit(job)
    assert job.status.state is JobState.NEW and job.executor is None and job.native_id is None
    assert local.list() == [] and not marker.exists()


def test_ints_put_into_containers_are_converted_at_submit(local: JobExecutor,
                                                          tmp_path: Path) -> None:
    """Ints are accepted by the setters (as their decimal string), so they are accepted
    when put in later too, with the same conversion."""
    out = tmp_path / "out"
    spec = JobSpec("/bin/sh", ["-c", 'printf "%s %s" "$N" "$1"', "sh"], stdout_path=out,
                   environment={})
    assert spec.environment is not None and spec.arguments is not None
    spec.environment["N"] = 7  # type: ignore[assignment]
    spec.arguments.append(42)  # type: ignore[arg-type]
    job = Job(spec)
    local.submit(job)
    status = job.wait(timeout=60)
    assert status is not None and status.state is JobState.COMPLETED, status
    assert out.read_text() == "7 42"
