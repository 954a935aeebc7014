"""psij-python's documents for objects other than a JobSpec: a ``JobStatus`` (its main
branch writes and reads them; 0.9.11 refuses both), and a ``JobAttributes`` or a
``ResourceSpecV1`` on its own (0.9.11 and main write them and read neither back).

Attributes and resources are checked against the real psij-python 0.9.11 (the documents
in tests/fixtures/psij-python-0.9.11/attributes_*.json and resources_*.json are what it
writes); statuses against documents made by hand after psij-python main's source, in
tests/fixtures/psij-python-main/status_*.json (see the README there)."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
# the real psij-python 0.9.11 (checked there), and the strategies of its documents
from test_psij_documents import counts, custom_values, psij, theirs, words

from hpcjobs import Job, JobAttributes, JobSpec, JobState, JobStatus, ResourceSpecV1
from hpcjobs.serialize import (FORMAT, PSIJ_FORMAT, JSONSerializer, SerializationError,
                               document_format, document_kind, dumps, loads, to_dict)

FIXTURES_0_9_11 = Path(__file__).parents[1] / "fixtures" / "psij-python-0.9.11"
FIXTURES_MAIN = Path(__file__).parents[1] / "fixtures" / "psij-python-main"

#: JobState numbers in psij-python main's job_state.py (commit 447666939412570c...):
#: what its serializer writes as "state"
MAIN_STATE_NUMBERS = {"NEW": 0, "QUEUED": 1, "STAGE_IN": 2, "ACTIVE": 3, "STAGE_OUT": 4,
                      "CLEANUP": 5, "COMPLETED": 6, "FAILED": 7, "CANCELED": 8}


def status_fields(status: JobStatus) -> tuple[Any, ...]:
    return status.state, status.time, status.message, status.exit_code, status.metadata


def their_attribute_fields(a: Any) -> tuple[Any, ...]:
    return a.duration, a.queue_name, a.account, a.reservation_id, a.custom_attributes


RESOURCE_FIELDS = ("node_count", "process_count", "processes_per_node",
                   "cpu_cores_per_process", "gpu_cores_per_process", "exclusive_node_use",
                   "memory")


def same_resources(ours: ResourceSpecV1, their: Any) -> None:
    for name in RESOURCE_FIELDS:
        assert getattr(ours, name) == getattr(their, name), name


# -- attributes and resources on their own: written by the real psij-python 0.9.11 --------
#: the stored documents: name -> the psij-python object that wrote it
CASES_0_9_11: Dict[str, Callable[[], Any]] = {
    "attributes_every_field": lambda: psij.JobAttributes(
        duration=timedelta(hours=2, seconds=5), queue_name="debug", account="acct-1",
        reservation_id="R1", custom_attributes={"pbs.l": "place=scatter", "n": 2, "x": False}),
    "attributes_project_name_alias": lambda: psij.JobAttributes(project_name="proj-1"),
    "resources_nodes": lambda: psij.ResourceSpecV1(
        node_count=2, processes_per_node=4, cpu_cores_per_process=2, exclusive_node_use=True,
        memory=2**30),
    "resources_default": lambda: psij.ResourceSpecV1(),
}


@pytest.mark.parametrize("case", sorted(CASES_0_9_11))
def test_stored_documents_are_what_psij_python_writes(case: str) -> None:
    stored = (FIXTURES_0_9_11 / f"{case}.json").read_text(encoding="ascii")
    assert theirs().dumps(CASES_0_9_11[case]()) + "\n" == stored


@pytest.mark.parametrize("case", sorted(CASES_0_9_11))
def test_psij_python_cannot_read_back_what_it_wrote(case: str) -> None:
    """psij-python reads every document as a JobSpec (main too: as a JobStatus when it
    has "state"), so these fail there; they load here."""
    with pytest.raises((ValueError, AssertionError)):
        theirs().loads(theirs().dumps(CASES_0_9_11[case]()))


@pytest.mark.parametrize("case", sorted(CASES_0_9_11))
def test_a_document_psij_python_wrote_loads_here_as_its_object(case: str) -> None:
    text = (FIXTURES_0_9_11 / f"{case}.json").read_text(encoding="ascii")
    their = CASES_0_9_11[case]()
    ours = loads(text)
    assert document_format(text) == PSIJ_FORMAT
    if case.startswith("attributes"):
        assert document_kind(text) == "JobAttributes" and isinstance(ours, JobAttributes)
        assert (ours.duration, ours.queue_name, ours.account, ours.reservation_id,
                ours.custom_attributes) == their_attribute_fields(their)
        assert ours.project_name is None  # psij-python's project_name is its account
        # what we write, psij-python reads as the attributes it started from (it reads
        # attributes only inside a spec)
        back = theirs().loads(json.dumps({"attributes": to_dict(ours, format=PSIJ_FORMAT)}))
        assert back.attributes == their
    else:
        assert document_kind(text) == "ResourceSpecV1" and isinstance(ours, ResourceSpecV1)
        same_resources(ours, their)
        assert JSONSerializer().dumps(ours) + "\n" == text  # byte for byte
        back = theirs().loads(json.dumps({"resources": JSONSerializer().dumpd(ours)}))
        assert back.resources == their


def test_empty_attributes_are_psij_pythons_empty_spec() -> None:
    """psij-python writes default attributes as ``{}``, which it (and hpcjobs) reads as
    an empty JobSpec: the one document whose object cannot be told."""
    assert theirs().dumps(psij.JobAttributes()) == "{}"
    assert document_kind("{}") == "JobSpec" and loads("{}") == JobSpec()
    assert JSONSerializer().dumps(JobAttributes()) == "{}"


@st.composite
def their_attributes(draw: Any) -> Any:
    return psij.JobAttributes(
        duration=timedelta(seconds=draw(st.integers(min_value=0, max_value=10**9))),
        queue_name=draw(st.none() | words), account=draw(st.none() | words),
        reservation_id=draw(st.none() | words),
        custom_attributes=draw(st.none() | st.dictionaries(words, custom_values, max_size=3)))


@settings(max_examples=150, deadline=None)
@given(their_attributes())
def test_any_attributes_psij_python_writes_load_here_and_back(their: Any) -> None:
    text = theirs().dumps(their)
    ours = loads(text)
    if text == "{}":  # the defaults: psij-python's empty spec (above)
        assert ours == JobSpec() and their == psij.JobAttributes()
        return
    assert isinstance(ours, JobAttributes)
    assert (ours.duration, ours.queue_name, ours.account, ours.reservation_id,
            ours.custom_attributes) == their_attribute_fields(their)
    written = JSONSerializer().dumps(ours)
    assert theirs().loads('{"attributes": %s}' % written).attributes == their
    assert loads(written) == ours


@st.composite
def their_resources(draw: Any) -> Any:
    res = psij.ResourceSpecV1(exclusive_node_use=draw(st.booleans()))
    for name in RESOURCE_FIELDS:
        if name != "exclusive_node_use":
            setattr(res, name, draw(counts))  # any counts: they load as saved
    return res


@settings(max_examples=150, deadline=None)
@given(their_resources())
def test_any_resources_psij_python_writes_load_here_and_back(their: Any) -> None:
    text = theirs().dumps(their)
    ours = loads(text)
    assert isinstance(ours, ResourceSpecV1)
    same_resources(ours, their)
    assert JSONSerializer().dumps(ours) == text
    assert theirs().loads('{"resources": %s}' % text).resources == their


def test_psij_python_0_9_11_has_no_status_document() -> None:
    with pytest.raises(ValueError, match="Cannot convert type"):
        theirs().dumps(psij.JobStatus(psij.JobState.COMPLETED, time=1.0, exit_code=0))
    with pytest.raises(ValueError, match='Unexpected key "state"'):
        theirs().loads((FIXTURES_MAIN / "status_completed.json").read_text())


def test_a_job_is_written_in_hpcjobs_format_only() -> None:
    """psij-python refuses to write a Job that has a spec, and writes one without as
    ``{}`` (an empty spec to its reader): a Job goes to hpcjobs's format."""
    with pytest.raises(ValueError, match="Cannot convert type"):
        theirs().dumps(psij.Job(psij.JobSpec(executable="/bin/true")))
    assert theirs().dumps(psij.Job()) == "{}"
    job = Job(JobSpec("/bin/true"))
    with pytest.raises(SerializationError, match="not a Job"):
        dumps(job, format=PSIJ_FORMAT)
    text = JSONSerializer().dumps(job)
    assert document_format(text) == FORMAT and document_kind(text) == "Job"


# -- statuses: psij-python main's documents, made by hand ---------------------------------
#: each stored document -> the status it describes (psij-python main's meaning)
STATUS_CASES: Dict[str, Callable[[], JobStatus]] = {
    "status_queued": lambda: JobStatus(JobState.QUEUED, time=1764316800.0),
    "status_completed": lambda: JobStatus(
        JobState.COMPLETED, time=1764316923.25, message="done", exit_code=0,
        metadata={"held": False, "nodes": "n[1-2]", "cpus": 32, "load": 0.5}),
    "status_failed": lambda: JobStatus(JobState.FAILED, time=1764316900.5,
                                       message="exit code 3", exit_code=3),
    "status_stage_out": lambda: JobStatus(JobState.STAGE_OUT, time=1764316901.0),
}


def test_our_states_are_numbered_as_psij_python_mains() -> None:
    assert {s.name: s.value for s in JobState} == MAIN_STATE_NUMBERS


@pytest.mark.parametrize("case", sorted(STATUS_CASES))
def test_a_main_status_document_loads_as_the_status_it_describes(case: str) -> None:
    text = (FIXTURES_MAIN / f"{case}.json").read_text(encoding="ascii")
    assert (document_format(text), document_kind(text)) == (PSIJ_FORMAT, "JobStatus")
    ours = JSONSerializer().loads(text)
    assert isinstance(ours, JobStatus)
    assert status_fields(ours) == status_fields(STATUS_CASES[case]())


@pytest.mark.parametrize("case", sorted(STATUS_CASES))
def test_we_write_a_status_as_psij_python_main_does(case: str) -> None:
    text = (FIXTURES_MAIN / f"{case}.json").read_text(encoding="ascii")
    status = STATUS_CASES[case]()
    assert JSONSerializer().dumps(status) + "\n" == text
    # a status has no document in hpcjobs's own format: whatever format is chosen
    assert JSONSerializer(format=FORMAT).dumps(status) + "\n" == text
    assert dumps(status, format=PSIJ_FORMAT) + "\n" == text


def test_hpcjobs_format_names_the_format_that_holds_a_status() -> None:
    for obj in (JobStatus(JobState.NEW, time=0.0), JobAttributes(), ResourceSpecV1()):
        with pytest.raises(SerializationError, match="write it in psij-python's format"):
            dumps(obj)


metadata_values = st.one_of(words, st.integers(min_value=-2**63, max_value=2**63),
                            st.booleans(), st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def our_statuses(draw: Any) -> JobStatus:
    """Statuses within what psij-python main's format carries: flat metadata of str,
    int, float and bool."""
    return JobStatus(
        draw(st.sampled_from(list(JobState))),
        time=draw(st.floats(min_value=0, max_value=4e9)),
        message=draw(st.none() | words),
        exit_code=draw(st.none() | st.integers(min_value=-255, max_value=2**31)),
        metadata=draw(st.none() | st.dictionaries(words, metadata_values, max_size=3)))


@settings(max_examples=200, deadline=None)
@given(our_statuses())
def test_any_status_round_trips_in_psij_pythons_format(status: JobStatus) -> None:
    text = JSONSerializer().dumps(status)
    back = loads(text)
    assert isinstance(back, JobStatus)
    assert status_fields(back) == status_fields(status)
    assert JSONSerializer().dumps(back) == text


@st.composite
def main_status_documents(draw: Any) -> Dict[str, Any]:
    """Status documents as psij-python main writes them: its keys in its order, time a
    float, the rest only when set."""
    doc: Dict[str, Any] = {"state": draw(st.sampled_from(sorted(MAIN_STATE_NUMBERS.values()))),
                           "time": draw(st.floats(min_value=0, max_value=4e9))}
    for name, values in (("message", words),
                         ("exit_code", st.integers(min_value=-255, max_value=255)),
                         ("metadata", st.dictionaries(words, metadata_values, min_size=1,
                                                      max_size=3))):
        if draw(st.booleans()):
            doc[name] = draw(values)
    return doc


@settings(max_examples=200, deadline=None)
@given(main_status_documents())
def test_any_main_status_document_reads_with_its_meaning_and_writes_back_the_same(
        document: Dict[str, Any]) -> None:
    status = JSONSerializer().loadd(document)
    assert isinstance(status, JobStatus)
    assert status.state.name == {v: k for k, v in MAIN_STATE_NUMBERS.items()}[document["state"]]
    assert (status.time, status.message, status.exit_code, status.metadata) == tuple(
        document.get(k) for k in ("time", "message", "exit_code", "metadata"))
    assert json.dumps(JSONSerializer().dumpd(status)) == json.dumps(document)


def test_a_status_document_reads_plain_json_metadata_and_an_int_time() -> None:
    """psij-python main reads neither (its reader asserts a float time and flat
    metadata); both have one meaning, so they read here."""
    status = loads('{"state": 3, "time": 1700000000, "metadata": {"nodes": ["n1", "n2"], '
                   '"x": null}}')
    assert isinstance(status, JobStatus)
    assert (status.state, status.time) == (JobState.ACTIVE, 1700000000.0)
    assert status.metadata == {"nodes": ["n1", "n2"], "x": None}


@pytest.mark.parametrize("document, message", [
    ({"state": 9, "time": 1.0}, "state: 9 is not a job state number"),
    ({"state": "COMPLETED", "time": 1.0}, "state: expected int, got str"),
    ({"state": True, "time": 1.0}, "state: expected int, got bool"),
    ({"state": None, "time": 1.0}, "state is missing"),
    ({"state": 6}, "time is missing"),
    ({"state": 6, "time": "now"}, "time: expected int or float, got str"),
    ({"state": 6, "time": 1.0, "exit_code": 0.0}, "exit_code: expected int, got float"),
    ({"state": 6, "time": 1.0, "message": 5}, "message: expected str, got int"),
    ({"state": 6, "time": 1.0, "metadata": [1]}, "metadata: expected dict, got list"),
    ({"state": 6, "time": 1.0, "executable": "/x"}, "unknown field(s) executable"),
    ({"node_count": 2, "__version": 2}, "__version: resource spec version 2"),
    ({"nodes": 2, "__version": 1}, "unknown field(s) nodes"),
    ({"node_count": "2", "__version": 1}, "ResourceSpecV1.node_count must be int"),
    ({"duration": 600}, "duration: expected str, got int"),
    ({"duration": "ten minutes"}, "duration: 'ten minutes' is not a duration"),
    ({"queue_name": "q", "custom_attributes": []}, "custom_attributes: expected dict"),
    ({"duration": "10 m", "executable": "/x"}, "field 'duration' is not one of psij-python's"),
    ({"source": "/a", "target": "a"}, "field 'source' is not one of psij-python's"),
])
def test_a_malformed_document_is_refused_naming_the_field(
        document: Dict[str, Any], message: str) -> None:
    with pytest.raises(SerializationError) as e:
        loads(json.dumps(document))
    assert message in str(e.value)


def test_a_status_with_json_time_1e400_is_refused() -> None:
    with pytest.raises(SerializationError, match="time: inf is not a time"):
        loads('{"state": 1, "time": 1e400}')


@pytest.mark.parametrize("status, field", [
    (JobStatus(JobState.FAILED, time=1.0, metadata={"nodes": ["n1"]}),
     "metadata['nodes']: psij-python's format carries str, int, float and bool"),
    (JobStatus(JobState.FAILED, time=1.0, metadata={"x": None}), "metadata['x']"),
    (JobStatus(JobState.FAILED, time=1.0, metadata={"x": math.inf}),
     "metadata['x']: inf is not a JSON number"),
    (JobStatus(JobState.FAILED, time=math.nan), "time: nan is not a JSON number"),
    (JobAttributes(duration=timedelta(seconds=1.5)), "duration: "),
    (JobAttributes(account="a", project_name="p"), "project_name: psij-python's format"),
    (JobAttributes(custom_attributes={"k": [1]}), "custom_attributes['k']"),
])
def test_what_psij_python_cannot_carry_is_refused_naming_the_field(
        status: Any, field: str) -> None:
    with pytest.raises(SerializationError) as e:
        JSONSerializer().dumps(status)
    assert str(e.value).startswith(field)
