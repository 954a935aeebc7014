"""The passive model: construction, type checks, validation, state order."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Optional

import pytest

from hpcjobs import (InvalidJobException, JobAttributes, JobSpec, JobState, JobStatus,
                     ResourceSpec, ResourceSpecV1)
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
    (S.NEW, S.COMPLETED, False, [S.QUEUED, S.STAGE_IN, S.ACTIVE, S.STAGE_OUT, S.CLEANUP,
                                 S.COMPLETED]),
    (S.QUEUED, S.FAILED, False, [S.FAILED]),
    (S.QUEUED, S.FAILED, True, [S.STAGE_IN, S.ACTIVE, S.STAGE_OUT, S.CLEANUP, S.FAILED]),
    (S.NEW, S.CANCELED, False, [S.QUEUED, S.CANCELED]),
    (S.STAGE_IN, S.FAILED, False, [S.FAILED]),  # a stage-in that failed: it never ran
    (S.ACTIVE, S.CANCELED, False, [S.STAGE_OUT, S.CLEANUP, S.CANCELED]),  # it ran
    (S.QUEUED, S.ACTIVE, False, [S.STAGE_IN, S.ACTIVE]),
    (S.CLEANUP, S.STAGE_OUT, True, []),
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
    ({"environment": {"A": "ok", "B": [2]}}, "environment"),  # not only the first item
    ({"arguments": ["ok", None]}, "arguments"),
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
])
def test_inconsistent_specs_are_invalid(spec: JobSpec, field: str) -> None:
    with pytest.raises(InvalidJobException, match=field):
        spec.validate()


@pytest.mark.parametrize("counts,computed,requested_nodes", [
    # psij-python 0.9.11's rules: (process_count, node_count, processes_per_node)
    ({}, (1, 1, 1), None),
    ({"process_count": 4}, (4, 1, 4), None),
    ({"node_count": 3}, (3, 3, 1), 3),
    ({"processes_per_node": 2}, (2, 1, 2), None),
    ({"node_count": 2, "processes_per_node": 3}, (6, 2, 3), 2),
    ({"process_count": 6, "processes_per_node": 2}, (6, 3, 2), 3),
    ({"process_count": 4, "node_count": 2}, (4, 2, 2), 2),
    ({"process_count": 4, "node_count": 2, "processes_per_node": 2}, (4, 2, 2), 2),
])
def test_resource_computations_follow_psij(counts: dict[str, int], computed: tuple[int, int, int],
                                           requested_nodes: Optional[int]) -> None:
    r = ResourceSpecV1(**counts)
    assert (r.computed_process_count, r.computed_node_count,
            r.computed_processes_per_node) == computed
    assert r.requested_node_count == requested_nodes
    if r.computed_node_count > 1:  # what psij-python code writes; a TypeError on None
        assert requested_nodes is not None


@pytest.mark.parametrize("counts,field", [
    ({"process_count": 3, "node_count": 2}, "node_count"),
    ({"process_count": 3, "processes_per_node": 2}, "processes_per_node"),
    ({"process_count": 2, "node_count": 4}, "node_count"),
    ({"process_count": 8, "node_count": 2, "processes_per_node": 2}, "processes_per_node"),
    ({"process_count": 0}, "process_count"),
])
def test_inconsistent_resources_are_refused_by_the_constructor(counts: dict[str, int],
                                                               field: str) -> None:
    with pytest.raises(InvalidJobException, match=field):
        ResourceSpecV1(**counts)


def test_resources_changed_after_construction_are_checked_at_submit() -> None:
    r = ResourceSpecV1(process_count=3)
    r.node_count = 2
    with pytest.raises(InvalidJobException, match="multiple of node_count"):
        JobSpec("/bin/true", resources=r).validate()


def test_resource_constructor_takes_psij_positional_order() -> None:
    r = ResourceSpecV1(2, 4, 2, 3, 1, True, 2048)
    assert (r.node_count, r.process_count, r.processes_per_node, r.cpu_cores_per_process,
            r.gpu_cores_per_process, r.exclusive_node_use, r.memory) == (2, 4, 2, 3, 1, True, 2048)
    assert r.memory_kb == 2 and ResourceSpecV1().memory_kb is None
    assert ResourceSpec.get_instance(1) == ResourceSpecV1()
    with pytest.raises(ValueError):
        ResourceSpec.get_instance(2)


def test_account_and_project_name_are_two_fields() -> None:
    a = JobAttributes(account="acct")
    assert a.project_name is None and a.account == "acct"
    a.project_name = "proj"
    assert (a.account, a.project_name) == ("acct", "proj")
    # psij-python 0.9.11's positional order: duration, queue_name, account
    assert JobAttributes(timedelta(minutes=1), "q", "acct").account == "acct"
    assert a != JobAttributes(account="acct") and a == JobAttributes(account="acct",
                                                                    project_name="proj")
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
