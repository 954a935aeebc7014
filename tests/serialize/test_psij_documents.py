"""psij-python's job documents, checked against the real psij-python 0.9.11 (a test
dependency): what it writes loads here field by field, what we write loads there, both
ways round, for every field of the spec, its resources and attributes; and the stored
documents in tests/fixtures/psij-python-0.9.11/ are what it writes."""

from __future__ import annotations

import importlib.metadata
import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcjobs import JobAttributes, JobSpec, ResourceSpecV1
import hpcjobs
from hpcjobs.serialize import (FORMAT, PSIJ_FORMAT, JSONSerializer, SerializationError,
                               document_format, dumps, loads)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "psij-python-0.9.11"


def _real_psij() -> Any:
    # the real package, never an alias of hpcjobs that may sit on the path under its name
    assert importlib.metadata.version("psij-python") == "0.9.11", \
        "the test extra pins psij-python 0.9.11 (pyproject.toml)"
    import psij
    import psij.serialize
    # (judged by where the module lives, not by its path's words: a checkout may be in a
    # folder named hpcjobs)
    ours = Path(hpcjobs.__file__).resolve().parent
    assert ours not in Path(psij.__file__ or "").resolve().parents, psij.__file__
    return psij


psij = _real_psij()
# psij-python logs a warning for every use of its deprecated project_name
logging.getLogger("psij.job_attributes").setLevel(logging.ERROR)


def theirs() -> Any:
    return psij.serialize.JSONSerializer()


def their_full_spec() -> Any:
    """A psij-python spec with every field set (hostile strings where a string goes)."""
    return psij.JobSpec(
        executable="/bin/echo", arguments=["a b", "$HOME", "it's", "é🙂", "", "--x"],
        directory="/tmp/run 1", name="n'1", inherit_environment=False,
        environment={"A": "1", "B": 2, "C": "${A}/x"}, stdin_path="/in", stdout_path="/o u t",
        stderr_path="/e", resources=psij.ResourceSpecV1(
            node_count=2, processes_per_node=2, cpu_cores_per_process=3,
            gpu_cores_per_process=1, exclusive_node_use=True, memory=1024**3),
        attributes=psij.JobAttributes(
            duration=timedelta(hours=1, seconds=30), queue_name="debug", account="acct-1",
            reservation_id="R12", custom_attributes={"slurm.constraint": "haswell&ib",
                                                      "pbs.n": 3, "flux.x": True}),
        pre_launch="/etc/pre.sh", post_launch="/etc/post.sh", launcher="multiple")


#: the stored documents: name -> the psij-python spec that wrote it
CASES: Dict[str, Callable[[], Any]] = {
    "default": lambda: psij.JobSpec(),
    "minimal": lambda: psij.JobSpec(executable="/bin/hostname"),
    "every_field": their_full_spec,
    "processes_only": lambda: psij.JobSpec(
        executable="/opt/app", resources=psij.ResourceSpecV1(process_count=4),
        launcher="mpirun"),
    "project_name_alias": lambda: psij.JobSpec(
        executable="/bin/true", attributes=psij.JobAttributes(project_name="proj-1")),
}


def same_as_theirs(ours: JobSpec, their: Any) -> None:
    """Field by field: our spec says what psij-python's does."""
    for name in ("executable", "arguments", "directory", "name", "inherit_environment",
                 "stdin_path", "stdout_path", "stderr_path", "pre_launch", "post_launch",
                 "launcher"):
        assert getattr(ours, name) == getattr(their, name), name
    assert ours.environment == (None if their.environment is None else
                                {k: str(v) for k, v in their.environment.items()})
    if their.resources is None:
        assert ours.resources is None
    else:
        for name in ("node_count", "process_count", "processes_per_node",
                     "cpu_cores_per_process", "gpu_cores_per_process", "exclusive_node_use",
                     "memory"):
            assert getattr(ours.resources, name) == getattr(their.resources, name), name
    a, t = ours.attributes, their.attributes
    assert (a.duration, a.queue_name, a.account, a.reservation_id, a.custom_attributes) == \
        (t.duration, t.queue_name, t.account, t.reservation_id, t.custom_attributes)
    assert a.project_name is None  # psij-python's project_name is its account


@pytest.mark.parametrize("case", sorted(CASES))
def test_stored_documents_are_what_psij_python_writes(case: str) -> None:
    stored = (FIXTURES / f"{case}.json").read_text(encoding="ascii")
    assert theirs().dumps(CASES[case]()) + "\n" == stored


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_document_psij_python_wrote_loads_here(case: str) -> None:
    text = (FIXTURES / f"{case}.json").read_text(encoding="ascii")
    assert document_format(text) == PSIJ_FORMAT
    ours = loads(text)
    assert isinstance(ours, JobSpec)
    their = CASES[case]()
    if case == "project_name_alias":  # their alias sets their account
        assert (ours.attributes.account, their.attributes.account) == ("proj-1", "proj-1")
    same_as_theirs(ours, their)
    # and what we write for it, psij-python reads as the spec it started from
    assert theirs().loads(JSONSerializer().dumps(ours)) == their


def test_psij_pythons_fractional_seconds_read_as_written() -> None:
    """psij-python writes "90.0 s" and reads it back as 0 s; we read 90 s, and write
    "90 s", which it reads right."""
    their = psij.JobSpec(executable="/bin/true",
                         attributes=psij.JobAttributes(duration=timedelta(seconds=90)))
    text = theirs().dumps(their)
    assert '"90.0 s"' in text
    assert theirs().loads(text).attributes.duration == timedelta(0)  # theirs, not ours
    ours = loads(text)
    assert isinstance(ours, JobSpec) and ours.attributes.duration == timedelta(seconds=90)
    written = JSONSerializer().dumps(ours)
    assert '"90 s"' in written
    assert theirs().loads(written).attributes.duration == timedelta(seconds=90)


def test_a_spec_we_write_loads_in_psij_python_and_comes_back_equal() -> None:
    ours = JobSpec("/bin/echo", ["x y", "$HOME"], directory="/tmp/d", name="n",
                   inherit_environment=False, environment={"A": "1"}, stdin_path="/i",
                   stdout_path="/o", stderr_path="/e",
                   resources=ResourceSpecV1(node_count=2, processes_per_node=2,
                                            cpu_cores_per_process=1, gpu_cores_per_process=2,
                                            exclusive_node_use=True, memory=2048),
                   attributes=JobAttributes(duration=timedelta(days=2, seconds=1),
                                            queue_name="q", account="a", reservation_id="r",
                                            custom_attributes={"k": "v", "n": -1, "b": False}),
                   pre_launch="/pre", post_launch="/post", launcher="single")
    their = theirs().loads(JSONSerializer().dumps(ours))
    same_as_theirs(ours, their)
    back = loads(theirs().dumps(their))
    assert back == ours


def test_a_project_alone_is_psij_pythons_account_and_ours_again() -> None:
    ours = JobSpec("/bin/true", attributes=JobAttributes(project_name="p"))
    text = JSONSerializer().dumps(ours)
    assert json.loads(text)["attributes"] == {"project_name": "p"}
    assert loads(text) == ours
    assert theirs().loads(text).attributes.account == "p"


# -- generated round trips: hypothesis draws specs psij-python's format can carry ------------
words = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                max_size=12)
paths = words.filter(lambda w: w not in ("", ".")).map(lambda w: "/" + w.replace("/", "_"))
counts = st.none() | st.integers(min_value=1, max_value=2**40)
custom_values = st.one_of(words, st.integers(min_value=-2**63, max_value=2**63), st.booleans())


@st.composite
def their_specs(draw: Any) -> Any:
    res = None
    if draw(st.booleans()):
        res = psij.ResourceSpecV1(
            process_count=draw(counts), cpu_cores_per_process=draw(counts),
            gpu_cores_per_process=draw(counts), exclusive_node_use=draw(st.booleans()),
            memory=draw(counts))
    seconds = draw(st.integers(min_value=0, max_value=10**9))
    return psij.JobSpec(
        executable=draw(st.none() | paths), arguments=draw(st.none() | st.lists(words, max_size=4)),
        directory=draw(st.none() | paths), name=draw(st.none() | words),
        inherit_environment=draw(st.booleans()),
        environment=draw(st.none() | st.dictionaries(
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), words, max_size=3)),
        stdin_path=draw(st.none() | paths), stdout_path=draw(st.none() | paths),
        stderr_path=draw(st.none() | paths), resources=res,
        attributes=psij.JobAttributes(
            duration=timedelta(seconds=seconds), queue_name=draw(st.none() | words),
            account=draw(st.none() | words), reservation_id=draw(st.none() | words),
            custom_attributes=draw(st.none() | st.dictionaries(words, custom_values,
                                                                max_size=3))),
        pre_launch=draw(st.none() | paths), post_launch=draw(st.none() | paths),
        launcher=draw(st.none() | words))


@settings(max_examples=150, deadline=None)
@given(their_specs())
def test_any_spec_psij_python_writes_loads_here_and_back(their: Any) -> None:
    text = theirs().dumps(their)
    ours = loads(text)
    assert isinstance(ours, JobSpec)
    same_as_theirs(ours, their)
    again = theirs().loads(JSONSerializer().dumps(ours))
    assert again == their
    assert theirs().dumps(again) == text  # psij-python writes it as it did


@st.composite
def our_specs(draw: Any) -> JobSpec:
    """hpcjobs specs within what psij-python's format carries: one of account and
    project_name, whole seconds, str/int/bool custom values."""
    res = None
    if draw(st.booleans()):
        res = ResourceSpecV1(exclusive_node_use=draw(st.booleans()))
        for name in ("node_count", "process_count", "processes_per_node",
                     "cpu_cores_per_process", "gpu_cores_per_process", "memory"):
            setattr(res, name, draw(counts))  # any counts: they load as saved
    who = draw(st.sampled_from(["account", "project_name", None]))
    billing = {who: draw(words)} if who else {}
    return JobSpec(
        draw(paths), draw(st.none() | st.lists(words, max_size=4)),
        directory=draw(st.none() | paths), name=draw(st.none() | words),
        inherit_environment=draw(st.booleans()),
        environment=draw(st.none() | st.dictionaries(
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), words, max_size=3)),
        stdin_path=draw(st.none() | paths), stdout_path=draw(st.none() | paths),
        stderr_path=draw(st.none() | paths), resources=res,
        attributes=JobAttributes(
            duration=timedelta(seconds=draw(st.integers(min_value=0, max_value=10**9))),
            queue_name=draw(st.none() | words), reservation_id=draw(st.none() | words),
            custom_attributes=draw(st.none() | st.dictionaries(words, custom_values,
                                                                max_size=3)),
            **billing),
        pre_launch=draw(st.none() | paths), post_launch=draw(st.none() | paths),
        launcher=draw(st.none() | words))


@settings(max_examples=150, deadline=None)
@given(our_specs())
def test_any_spec_we_write_loads_in_psij_python_and_back(ours: JobSpec) -> None:
    their = theirs().loads(JSONSerializer().dumps(ours))
    if ours.name is None:  # psij-python names a job after its executable
        assert their.name == ours.executable
        ours.name = ours.executable
    back = loads(theirs().dumps(their))
    assert isinstance(back, JobSpec)
    if ours.attributes.project_name is not None:  # psij-python's only field is its account
        assert their.attributes.account == back.attributes.account == ours.attributes.project_name
        back.attributes.project_name, back.attributes.account = back.attributes.account, None
    assert back == ours


@pytest.mark.parametrize("spec, field", [
    (JobSpec("/x", attributes=JobAttributes(account="a", project_name="p")),
     "attributes.project_name: psij-python's format has one field"),
    (JobSpec("/x", attributes=JobAttributes(duration=timedelta(seconds=1.5))),
     "attributes.duration"),
    (JobSpec("/x", attributes=JobAttributes(duration=timedelta(seconds=-1))),
     "attributes.duration"),
    (JobSpec("/x", attributes=JobAttributes(custom_attributes={"k": 1.5})),
     "attributes.custom_attributes['k']: psij-python's format carries str, int and bool"),
])
def test_what_psij_python_cannot_carry_is_refused_naming_the_field(
        spec: JobSpec, field: str) -> None:
    with pytest.raises(SerializationError, match=field.replace("[", r"\[")):
        JSONSerializer().dumps(spec)
    assert loads(dumps(spec)) == spec  # our own format carries it


@pytest.mark.parametrize("document, message", [
    ({"executable": "/x", "exe": "/y"}, "field 'exe' is not one of psij-python's"),
    ({"resources": {"nodes": 2, "__version": 1}}, "unknown field(s) resources.nodes"),
    ({"resources": {"__version": 2}}, "resources.__version: resource spec version 2"),
    ({"attributes": {"duration": 600}}, "attributes.duration: expected str, got int"),
    ({"attributes": {"duration": "ten minutes"}}, "attributes.duration: 'ten minutes'"),
    ({"attributes": {"walltime": "1h"}}, "unknown field(s) attributes.walltime"),
    ({"arguments": "a b"}, "arguments: expected list, got str"),
    ({"inherit_environment": 0}, "inherit_environment: expected bool, got int"),
    ({"resources": {"node_count": "2"}}, "ResourceSpecV1.node_count must be int"),
    ({"attributes": {"custom_attributes": {"k": float("inf")}}},
     "attributes.custom_attributes['k']: inf"),
])
def test_a_document_in_neither_format_is_refused_naming_the_field(
        document: Dict[str, Any], message: str) -> None:
    with pytest.raises(SerializationError) as e:
        loads(json.dumps(document))
    assert message in str(e.value)


def test_document_format_says_which_format_a_file_is_in(tmp_path: Path) -> None:
    spec = JobSpec("/bin/true", attributes=JobAttributes(duration=timedelta(minutes=5)))
    assert document_format(dumps(spec)) == FORMAT
    assert document_format(dumps(spec, format=PSIJ_FORMAT)) == PSIJ_FORMAT
    assert document_format((FIXTURES / "every_field.json").read_bytes()) == PSIJ_FORMAT
    assert document_format({}) == PSIJ_FORMAT  # psij-python's empty JobSpec()
    with pytest.raises(SerializationError, match="a JSON list"):
        document_format("[]")
    with pytest.raises(SerializationError, match="psij-python's format holds a JobSpec"):
        from hpcjobs import Job
        dumps(Job(spec), format=PSIJ_FORMAT)
