"""The passive model: construction, type checks, validation, state order."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import (InvalidJobException, JobAttributes, JobSpec, JobState, JobStatus,
                     ResourceSpecV1)
from hpcjobs.environment import expand, job_environment
from hpcjobs.state import path_to

S = JobState


def test_state_order_follows_the_spec() -> None:
    assert S.QUEUED.is_greater_than(S.NEW)
    assert S.ACTIVE.is_greater_than(S.QUEUED)
    for final in (S.COMPLETED, S.FAILED, S.CANCELED):
        assert final.final and final.is_greater_than(S.ACTIVE) and final.is_greater_than(S.NEW)
        for other in (S.COMPLETED, S.FAILED, S.CANCELED):
            assert not final.is_greater_than(other)
    assert not S.NEW.is_greater_than(S.QUEUED)
    assert not S.ACTIVE.final


@pytest.mark.parametrize("current,target,ran,expected", [
    (S.NEW, S.COMPLETED, False, [S.QUEUED, S.ACTIVE, S.COMPLETED]),
    (S.QUEUED, S.FAILED, False, [S.FAILED]),
    (S.QUEUED, S.FAILED, True, [S.ACTIVE, S.FAILED]),
    (S.NEW, S.CANCELED, False, [S.QUEUED, S.CANCELED]),
    (S.ACTIVE, S.QUEUED, False, []),
    (S.COMPLETED, S.FAILED, True, []),
])
def test_path_synthesises_skipped_states(current: S, target: S, ran: bool,
                                          expected: list[S]) -> None:
    assert list(path_to(current, target, ran)) == expected


def test_jobspec_defaults_and_conversions() -> None:
    spec = JobSpec("/bin/echo", ["a", 3, Path("/x")], directory="/tmp",
                   environment={"N": 5, "S": "v"})
    assert spec.arguments == ["a", "3", "/x"]
    assert spec.directory == Path("/tmp")
    assert spec.environment == {"N": "5", "S": "v"}
    assert spec.inherit_environment is True
    assert spec.attributes.duration == timedelta(minutes=10)
    assert spec.resources_v1.computed_process_count == 1


def test_jobspec_keeps_the_callers_argument_list() -> None:
    args = ["a"]
    spec = JobSpec("/bin/echo", args)
    args.append("b")  # the spec says the setter does not copy
    assert spec.arguments == ["a", "b"]


@pytest.mark.parametrize("kwargs,field", [
    ({"executable": 5}, "executable"),
    ({"arguments": "not a list"}, "arguments"),
    ({"arguments": [object()]}, "arguments"),
    ({"environment": {"A": 1.5}}, "environment"),
    ({"inherit_environment": "yes"}, "inherit_environment"),
    ({"resources": {"node_count": 1}}, "resources"),
    ({"directory": 3}, "directory"),
])
def test_wrong_types_raise_type_error_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(TypeError, match=field):
        JobSpec(**kwargs)  # type: ignore[arg-type]


def test_resource_type_errors() -> None:
    with pytest.raises(TypeError, match="node_count"):
        ResourceSpecV1(node_count="2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="process_count"):
        ResourceSpecV1(process_count=True)
    with pytest.raises(TypeError, match="duration"):
        JobAttributes(duration=60)  # type: ignore[arg-type]


@pytest.mark.parametrize("spec,field", [
    (JobSpec(), "executable"),
    (JobSpec("/bin/true", directory="relative/dir"), "directory"),
    (JobSpec("/bin/true", environment={"BAD-NAME": "x"}), "environment"),
    (JobSpec("/bin/true", arguments=["a\0b"]), "arguments"),
    (JobSpec("/bin/true", resources=ResourceSpecV1(node_count=2, processes_per_node=2,
                                                   process_count=3)), "process_count"),
    (JobSpec("/bin/true", resources=ResourceSpecV1(node_count=4, process_count=2)), "node_count"),
    (JobSpec("/bin/true", resources=ResourceSpecV1(process_count=0)), "process_count"),
])
def test_inconsistent_specs_are_invalid(spec: JobSpec, field: str) -> None:
    with pytest.raises(InvalidJobException, match=field):
        spec.validate()


def test_resource_computations() -> None:
    r = ResourceSpecV1(node_count=2, processes_per_node=3)
    assert (r.computed_process_count, r.computed_node_count) == (6, 2)
    r = ResourceSpecV1(process_count=5, processes_per_node=2)
    assert (r.computed_node_count, r.computed_processes_per_node) == (3, 2)
    r = ResourceSpecV1(process_count=4, node_count=2)
    assert r.computed_processes_per_node == 2
    r.validate()


def test_account_is_project_name() -> None:
    a = JobAttributes(account="proj")
    assert a.project_name == "proj" and a.account == "proj"
    a.set_custom_attribute("slurm.constraint", "haswell")
    a.set_custom_attribute("flux.x", 1)
    assert a.custom_for("slurm") == {"constraint": "haswell"}


def test_brace_expansion_only() -> None:
    env = {"HOME": "/h", "A": "1"}
    assert expand("${HOME}/x:$A:$(id):`id`:${MISSING}:${}", env) == "/h/x:$A:$(id):`id`::${}"
    out = job_environment(False, {"A": "a", "B": "${A}b", "P": "${PATH}"}, base={"PATH": "/bin"})
    assert out == {"A": "a", "B": "ab", "P": ""}
    out = job_environment(True, {"P": "${PATH}:/x"}, base={"PATH": "/bin"})
    assert out == {"PATH": "/bin", "P": "/bin:/x"}


def test_status_repr_and_final() -> None:
    st = JobStatus(S.FAILED, exit_code=3, message="exit code 3")
    assert st.final and st.is_final() and "exit_code=3" in repr(st)
    with pytest.raises(TypeError):
        JobStatus("FAILED")  # type: ignore[arg-type]
