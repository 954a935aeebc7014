"""Job documents: exact round trips (property-based, hostile strings) and clear refusals."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpcjobs
from hpcjobs import Job, JobAttributes, JobSpec, JobState, JobStatus, ResourceSpecV1
from hpcjobs.serialize import (FORMAT, SerializationError, dumps, from_dict, loads, to_dict)
from hpcjobs.staging import URI, StageIn, StageOut, StageOutFlags, StagingMode, uri_text

HOSTILE = ["", " ", "'", '"', "$HOME", "${HOME}", "$(id)", "`id`", "a\nb", "\r\t", "\\",
           "é ü 漢字 🙂", "\0", "\ud800", "--", "-n", "*", "~", "a'; echo foo"]

# every code point, lone surrogates included (os.fsdecode makes them from bad bytes)
any_text = st.one_of(st.sampled_from(HOSTILE),
                     st.text(st.characters(blacklist_categories=()), max_size=20))
path_text = any_text.filter(bool)
ints = st.integers(min_value=-(2**63), max_value=2**63)
json_values = st.recursive(
    st.none() | st.booleans() | ints | st.floats(allow_nan=False, allow_infinity=False)
    | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12)
# whole seconds are exact at any size; sub-second ones while a float carries microseconds
durations = st.one_of(
    st.integers(min_value=-86_399_999_913_600, max_value=86_399_999_999_999)
    .map(lambda s: timedelta(seconds=s)),
    st.timedeltas(min_value=timedelta(days=-20000), max_value=timedelta(days=20000)))


@st.composite
def resources(draw: Any) -> ResourceSpecV1:
    counts = {f: draw(st.none() | ints) for f in (
        "node_count", "process_count", "processes_per_node", "cpu_cores_per_process",
        "gpu_cores_per_process", "memory")}
    # set after construction: any counts, even ones the constructor (and submit) refuse,
    # must survive a round trip exactly
    res = ResourceSpecV1(exclusive_node_use=draw(st.booleans()))
    for name, value in counts.items():
        setattr(res, name, value)
    return res


@st.composite
def attributes(draw: Any) -> JobAttributes:
    return JobAttributes(
        duration=draw(durations),
        queue_name=draw(st.none() | any_text),
        account=draw(st.none() | any_text),
        project_name=draw(st.none() | any_text),
        reservation_id=draw(st.none() | any_text),
        custom_attributes=draw(st.none() | st.dictionaries(any_text, json_values, max_size=4)))


def _writable_uri(text: str) -> Any:
    """The URI for ``text``, or None where urllib refuses it or its text would read
    back as another URI (both refused, tested apart)."""
    try:
        uri = URI(text)
        uri_text(uri)
    except ValueError:
        return None
    return uri


uris = st.one_of(
    path_text,
    st.builds("{}://{}/{}".format, st.sampled_from(["file", "ssh", "gsiftp", "s3"]),
              st.sampled_from(["", "h", "u@h:22", "[::1]"]), any_text),
).map(_writable_uri).filter(lambda u: u is not None)
flag_sets = st.integers(min_value=0, max_value=15).map(StageOutFlags)
modes = st.sampled_from(StagingMode)
stage_ins = st.builds(StageIn, uris, path_text, modes)
stage_outs = st.builds(StageOut, path_text, uris, flag_sets, modes)


@st.composite
def specs(draw: Any) -> JobSpec:
    opt_path = st.none() | path_text
    return JobSpec(
        executable=draw(opt_path),
        arguments=draw(st.none() | st.lists(any_text | ints, max_size=5)),
        directory=draw(opt_path),
        name=draw(st.none() | any_text),
        inherit_environment=draw(st.booleans()),
        environment=draw(st.none() | st.dictionaries(any_text, any_text | ints, max_size=4)),
        stdin_path=draw(opt_path), stdout_path=draw(opt_path), stderr_path=draw(opt_path),
        resources=draw(st.none() | resources()),
        attributes=draw(st.none() | attributes()),
        pre_launch=draw(opt_path), post_launch=draw(opt_path),
        launcher=draw(st.none() | any_text),
        stage_in=draw(st.none() | st.lists(stage_ins, max_size=3)),
        stage_out=draw(st.none() | st.lists(stage_outs, max_size=3)),
        cleanup=draw(st.none() | st.lists(path_text, max_size=3)),
        cleanup_flags=draw(flag_sets))


@st.composite
def jobs(draw: Any) -> Job:
    job = Job(draw(st.none() | specs()))
    job._native_id = draw(st.none() | any_text.filter(bool))
    job._status = JobStatus(
        draw(st.sampled_from(list(JobState))),
        time=draw(st.floats(allow_nan=False, allow_infinity=False)),
        exit_code=draw(st.none() | ints), message=draw(st.none() | any_text),
        metadata=draw(st.none() | st.dictionaries(any_text, json_values, max_size=3)))
    return job


def assert_same_spec(a: JobSpec, b: JobSpec) -> None:
    for field in ("executable", "arguments", "directory", "name", "inherit_environment",
                  "environment", "stdin_path", "stdout_path", "stderr_path", "pre_launch",
                  "post_launch", "launcher"):
        assert getattr(a, field) == getattr(b, field), field
    assert a.resources == b.resources
    assert a.attributes.duration == b.attributes.duration
    assert a.attributes == b.attributes
    for field in ("stage_in", "stage_out", "cleanup"):
        assert (getattr(a, field) or set()) == (getattr(b, field) or set()), field
    assert a.cleanup_flags == b.cleanup_flags


@settings(max_examples=300, deadline=None)
@given(specs())
def test_jobspec_round_trip_is_exact(spec: JobSpec) -> None:
    text = dumps(spec)
    assert text.isascii()  # safe in any file or terminal, surrogates included
    back = loads(text)
    assert isinstance(back, JobSpec)
    assert_same_spec(back, spec)
    assert dumps(back) == text


@settings(max_examples=200, deadline=None)
@given(jobs())
def test_job_round_trip_is_exact(job: Job) -> None:
    back = loads(dumps(job))
    assert isinstance(back, Job)
    assert (back.id, back.native_id, back.executor) == (job.id, job.native_id, None)
    s, t = back.status, job.status
    assert (s.state, s.time, s.exit_code, s.message, s.metadata) == \
        (t.state, t.time, t.exit_code, t.message, t.metadata)
    if job.spec is None:
        assert back.spec is None
    else:
        assert back.spec is not None
        assert_same_spec(back.spec, job.spec)
    assert dumps(back) == dumps(job)


def test_document_shape_is_the_documented_envelope() -> None:
    spec = JobSpec("/bin/echo", ["hi", 3], directory=Path("/tmp"),
                   resources=ResourceSpecV1(node_count=2, processes_per_node=4),
                   attributes=JobAttributes(duration=timedelta(hours=1), account="p1"))
    assert json.loads(dumps(spec)) == {
        "format": FORMAT, "version": 1, "kind": "JobSpec",
        "spec": {"executable": "/bin/echo", "arguments": ["hi", "3"], "directory": "/tmp",
                 "resources": {"version": 1, "node_count": 2, "processes_per_node": 4},
                 "attributes": {"duration": 3600, "account": "p1"}}}


def test_sub_second_duration_is_written_as_exact_float() -> None:
    spec = JobSpec("/bin/true", attributes=JobAttributes(duration=timedelta(seconds=1.5)))
    assert json.loads(dumps(spec))["spec"]["attributes"]["duration"] == 1.5


def test_to_dict_is_a_copy() -> None:
    spec = JobSpec("/bin/echo", ["a"])
    to_dict(spec)["spec"]["arguments"].append("b")
    assert spec.arguments == ["a"]


@pytest.mark.parametrize("value,where", [
    ((1, 2), "['k']: a tuple is not a JSON value"),
    ({1: "x"}, "['k']: key 1 is a int"),
    ([1, math.nan], "['k'][1]: nan is not a JSON number"),
    (math.inf, "['k']: inf is not a JSON number"),
    (Path("/x"), "['k']: a PosixPath is not a JSON value"),
    ({"a": {"b": object()}}, "['k']['a']['b']: a object is not a JSON value"),
])
def test_custom_attributes_must_be_plain_json(value: Any, where: str) -> None:
    spec = JobSpec("/bin/true", attributes=JobAttributes(custom_attributes={"k": value}))
    with pytest.raises(SerializationError) as e:
        dumps(spec)
    assert str(e.value).startswith("spec.attributes.custom_attributes" + where)


def test_metadata_must_be_plain_json() -> None:
    job = Job(JobSpec("/bin/true"))
    job._status = JobStatus(JobState.FAILED, metadata={"nodes": ("n1", "n2")})
    with pytest.raises(SerializationError, match=r"status.metadata\['nodes'\]"):
        dumps(job)


def test_duration_that_a_json_number_cannot_carry_is_refused() -> None:
    spec = JobSpec("/bin/true",
                   attributes=JobAttributes(duration=timedelta(days=900_000, microseconds=1)))
    with pytest.raises(SerializationError, match="spec.attributes.duration"):
        dumps(spec)


def doc(**changes: Any) -> dict[str, Any]:
    d = to_dict(JobSpec("/bin/true"))
    d.update(changes)
    return d


@pytest.mark.parametrize("document,message", [
    ([], "not a job document: a JSON list"),
    # without "format", a psij-python document, whose fields these are not
    ({"version": 1, "kind": "JobSpec", "spec": {}},
     "not a job document: field 'version' is not one of psij-python's"),
    (doc(format="psij"), "format: 'psij' is not a job document format"),
    (doc(version=2), "version 2 is not supported"),
    (doc(version="1"), "version '1' is not supported"),
    (doc(kind="Executor"), "unknown job document kind 'Executor'"),
    (doc(extra=1), "unknown field(s) extra"),
    (doc(spec={"executable": "/x", "exe": "/y"}), "unknown field(s) spec.exe"),
    (doc(spec=None), "spec is missing"),
    (doc(spec=[]), "spec has the wrong type: list"),
    (doc(spec={"resources": {"version": 2}}), "spec.resources.version: resource spec version 2"),
    (doc(spec={"resources": {"nodes": 2}}), "unknown field(s) spec.resources.nodes"),
    (doc(spec={"resources": {"node_count": "2"}}), "spec: ResourceSpecV1.node_count must be int"),
    (doc(spec={"attributes": {"duration": "1h"}}), "spec.attributes.duration has the wrong type"),
    (doc(spec={"attributes": {"duration": True}}), "spec.attributes.duration has the wrong type"),
    (doc(spec={"attributes": {"walltime": 1}}), "unknown field(s) spec.attributes.walltime"),
    (doc(spec={"arguments": "a b"}), "spec: JobSpec.arguments"),
    (doc(spec={"directory": 5}), "spec: JobSpec.directory must be str or PathLike"),
    (doc(kind="Job", id="x", status={"state": "DONE", "time": 0}),
     "status.state: 'DONE' is not a job state"),
    (doc(kind="Job", id="x", status={"state": "NEW"}), "status.time is missing"),
    (doc(kind="Job", id="x", status={"state": "NEW", "time": 0, "exit_code": 1.0}),
     "status.exit_code has the wrong type: float"),
    (doc(kind="Job", status={"state": "NEW", "time": 0}), "id is missing"),
    (doc(spec={"attributes": {"duration": 1e300}}), "spec.attributes.duration: out of range"),
    (doc(spec={"stage_in": {"source": "/a"}}), "spec.stage_in has the wrong type: dict"),
    (doc(spec={"stage_in": ["/a"]}), "spec.stage_in[0] has the wrong type: str"),
    (doc(spec={"stage_in": [{"target": "a", "mode": "COPY"}]}),
     "spec.stage_in[0].source is missing"),
    (doc(spec={"stage_in": [{"source": "/a", "target": "a"}]}), "spec.stage_in[0].mode is missing"),
    (doc(spec={"stage_in": [{"source": "/a", "target": "a", "mode": 1}]}),
     "spec.stage_in[0].mode has the wrong type: int"),
    (doc(spec={"stage_in": [{"source": "/a", "target": "a", "mode": "CLIENT_TO_CN"}]}),
     "spec.stage_in[0].mode: 'CLIENT_TO_CN' is not a staging mode (COPY, LINK, MOVE)"),
    (doc(spec={"stage_in": [{"source": "//[", "target": "a", "mode": "COPY"}]}),
     "spec.stage_in[0].source: '//[': Invalid IPv6 URL"),
    (doc(spec={"stage_in": [{"source": "/a", "target": "a", "mode": "COPY", "flags": 2}]}),
     "unknown field(s) spec.stage_in[0].flags"),
    (doc(spec={"stage_out": [{"source": "o", "target": "/o", "mode": "COPY"}]}),
     "spec.stage_out[0].flags is missing"),
    (doc(spec={"stage_out": [{"source": "o", "target": "/o", "mode": "COPY", "flags": -1}]}),
     "spec.stage_out[0].flags: -1 is not a sum of StageOutFlags"),
    (doc(spec={"stage_out": [{"source": "o", "target": "/o", "mode": "COPY", "flags": True}]}),
     "spec.stage_out[0].flags has the wrong type: bool"),
    (doc(spec={"stage_out": [{"source": 3, "target": "/o", "mode": "COPY", "flags": 2}]}),
     "spec.stage_out[0].source has the wrong type: int"),
    (doc(spec={"cleanup": [1]}), "spec.cleanup[0] has the wrong type: int"),
    (doc(spec={"cleanup_flags": 16}), "spec.cleanup_flags: 16 is not a sum of StageOutFlags"),
])
def test_bad_documents_are_refused_naming_the_field(document: Any, message: str) -> None:
    with pytest.raises(SerializationError) as e:
        from_dict(document)
    assert message in str(e.value)


def test_staging_documented_shape() -> None:
    spec = JobSpec("/bin/cat", stage_in=[StageIn("/d/in", "in", StagingMode.LINK)],
                   stage_out=[StageOut("out", "/r/out", StageOutFlags.ON_ERROR)],
                   cleanup=["out"], cleanup_flags=StageOutFlags.ON_SUCCESS)
    assert json.loads(dumps(spec))["spec"] == {
        "executable": "/bin/cat",
        "stage_in": [{"source": "/d/in", "target": "in", "mode": "LINK"}],
        "stage_out": [{"source": "out", "target": "/r/out", "mode": "COPY", "flags": 4}],
        "cleanup": ["out"], "cleanup_flags": 2}


def test_a_uri_whose_text_reads_back_as_another_is_refused() -> None:
    # urllib prints URI('file:////x') as 'file://x', whose host is x
    spec = JobSpec("/bin/true", stage_in=[StageIn(URI("file:////x"), "x")])
    with pytest.raises(SerializationError,
                       match="spec.stage_in: a URI with host part '' and path '//x' "
                             "is written 'file://x', which reads back as host part 'x'"):
        dumps(spec)


_WRITE_TIED_ENTRIES = """
from hpcjobs import JobSpec
from hpcjobs.serialize import PSIJ_FORMAT, dumps
from hpcjobs.staging import StageIn, StageOut, StageOutFlags, StagingMode
spec = JobSpec("/x", stage_in=[StageIn("/a", "a", m) for m in StagingMode],
               stage_out=[StageOut("o", "/o", StageOutFlags(f)) for f in (2, 4, 8, 6)])
print(dumps(spec))
print(dumps(spec, format=PSIJ_FORMAT))
"""


def test_entries_differing_only_in_mode_or_flags_are_written_in_one_order() -> None:
    """A set's order follows its members' hashes, which change with each process's
    hash seed (an enum's hash is its name's): the text must not."""
    texts = set()
    for seed in ("1", "2", "3", "4", "5", "6"):
        # (the hpcjobs this test imports, wherever it comes from)
        src = str(Path(hpcjobs.__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
        texts.add(subprocess.run([sys.executable, "-c", _WRITE_TIED_ENTRIES], env=env,
                                 capture_output=True, text=True, check=True).stdout)
    assert len(texts) == 1, texts


def test_invalid_json_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="not a JSON document"):
        loads('{"format": ')


def test_job_document_loads_as_a_record_without_executor() -> None:
    job = Job(JobSpec("/bin/true"))
    job._native_id = "1234"
    job._status = JobStatus(JobState.COMPLETED, time=5.0, exit_code=0)
    back = loads(dumps(job))
    assert isinstance(back, Job)
    assert back.executor is None and back.native_id == "1234"
    assert back.status.state is JobState.COMPLETED and back.status.exit_code == 0


@pytest.mark.parametrize("text,message", [
    ('"time": 1e400}', "status.time: inf is not a time"),
    ('"time": 0, "metadata": {"x": [-1e400]}}', "status.metadata['x'][0]: -inf is not a JSON"),
])
def test_numbers_json_reads_as_infinite_are_refused(text: str, message: str) -> None:
    head = '{"format": "hpcjobs.job", "version": 1, "kind": "Job", "id": "j", "status": ' \
           '{"state": "NEW", '
    with pytest.raises(SerializationError) as e:
        loads(head + text + "}")
    assert message in str(e.value)


def test_custom_attributes_read_as_infinite_are_refused() -> None:
    text = dumps(JobSpec("/bin/true", attributes=JobAttributes(custom_attributes={"k": 1})))
    with pytest.raises(SerializationError, match=r"custom_attributes\['k'\]: inf"):
        loads(text.replace('"k": 1', '"k": 1e999'))


def test_psij_json_serializer_offers_psij_methods(tmp_path: Path) -> None:
    """psij-python code: ``from psij.serialize import JSONSerializer``; every pair of
    methods writes psij-python's documents for a spec (ours for a Job, or with
    ``format=FORMAT``) and reads them back equal."""
    from hpcjobs.serialize import PSIJ_FORMAT, JSONSerializer

    s = JSONSerializer()
    spec = JobSpec("/bin/sleep", ["1"], name="test", directory=Path("/tmp"),
                   environment={"VAR1": "value1"},
                   resources=ResourceSpecV1(node_count=1),
                   attributes=JobAttributes(duration=timedelta(minutes=10),
                                            custom_attributes={"slurm.constraint": "x"}),
                   launcher="single")
    text = s.dumps(spec)
    assert text == dumps(spec, format=PSIJ_FORMAT) and "format" not in json.loads(text)
    assert s.loads(text) == spec and s.dumps(s.loads(text)) == text
    assert s.to_dict(spec) == to_dict(spec, format=PSIJ_FORMAT)
    assert s.from_dict(s.to_dict(spec)) == spec
    assert JSONSerializer(format=FORMAT).dumps(spec) == dumps(spec)
    job = Job(spec)
    assert s.to_dict(job) == to_dict(job)
    with open(tmp_path / "spec.json", "w") as f:
        s.dump(spec, f)
    with open(tmp_path / "spec.json") as f:
        assert s.load(f) == spec
    with open(tmp_path / "spec.bin", "wb") as b:
        s.dump(spec, b)
    with open(tmp_path / "spec.bin", "rb") as rb:
        assert s.load(rb) == spec
    with pytest.raises(ValueError):
        s.loads('{"executable": "/bin/true", "exe": 1}')
    with pytest.raises(ValueError):
        JSONSerializer(format="yaml")
