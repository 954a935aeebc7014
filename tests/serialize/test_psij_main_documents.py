"""psij-python main's job documents, with its staging fields (``stage_in``,
``stage_out``, ``cleanup``, ``cleanup_flags``). psij-python main is not on PyPI, so the
documents in tests/fixtures/psij-python-main/ are hand-made after its source (see the
README there); what can be checked against the real psij-python 0.9.11 is: the rest of
each document is what 0.9.11 writes, and 0.9.11 refuses the staging keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
# the real psij-python 0.9.11 (checked there), and the strategies of its documents
from test_psij_documents import our_specs, psij, theirs

from hpcjobs import JobSpec, ResourceSpecV1
from hpcjobs.serialize import (FORMAT, PSIJ_FORMAT, JSONSerializer, SerializationError,
                               document_format, dumps, loads)
from hpcjobs.staging import URI, StageIn, StageOut, StageOutFlags, StagingMode

FIXTURES = Path(__file__).parents[1] / "fixtures" / "psij-python-main"
F = StageOutFlags
M = StagingMode
STAGING = ("stage_in", "stage_out", "cleanup", "cleanup_flags")

#: each stored document -> the hpcjobs spec it describes (psij-python main's meaning)
CASES: Dict[str, Callable[[], JobSpec]] = {
    "staging_defaults": lambda: JobSpec(
        "/bin/cat", ["in.txt"], name="/bin/cat",
        stage_in=[StageIn("/data/in.txt", "in.txt")],
        # psij-python's stage-out default; hpcjobs's own is ALWAYS
        stage_out=[StageOut("out.txt", "/results/out.txt", F.ON_SUCCESS)],
        cleanup=["out.txt"]),
    "staging_every_field": lambda: JobSpec(
        "/opt/app/run", ["--in", "a b.dat"], directory="/scratch/run 1", name="stager",
        resources=ResourceSpecV1(node_count=1), launcher="single",
        stage_in=[StageIn("/data/a b.dat", "a b.dat", M.LINK),
                  StageIn("/data/lib", "lib", M.MOVE),
                  StageIn(URI("gsiftp://dtn.example.org:2811/project/ref.dat"), "ref/ref.dat")],
        stage_out=[StageOut("core", "/results/core", F.IF_PRESENT | F.ON_CANCEL, M.LINK),
                   StageOut("err.log", "/results/err.log", F.IF_PRESENT | F.ON_ERROR, M.MOVE),
                   StageOut("run.log", URI("file:///results/run.log"), F.ALWAYS)],
        cleanup=["a b.dat", "core", "lib"], cleanup_flags=F.ON_SUCCESS | F.ON_ERROR),
    "staging_empty_sets": lambda: JobSpec("/bin/true", name="/bin/true", stage_in=[],
                                          stage_out=[], cleanup=[]),
}


def stored(case: str) -> str:
    return (FIXTURES / f"{case}.json").read_text(encoding="ascii")


def without_staging(document: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in document.items() if k not in STAGING}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rest_of_each_document_is_what_psij_python_writes(case: str) -> None:
    """What precedes the staging keys is what the real psij-python 0.9.11 writes for
    those fields: main's format is 0.9.11's plus the staging keys at the end."""
    document = json.loads(stored(case))
    keys = list(document)
    assert keys[keys.index("stage_in"):] == [k for k in STAGING if k in document]
    rest = without_staging(document)
    assert theirs().dumps(theirs().loads(json.dumps(rest))) == json.dumps(rest)


@pytest.mark.parametrize("case", sorted(CASES))
def test_psij_python_0_9_11_refuses_the_staging_keys(case: str) -> None:
    with pytest.raises(ValueError, match="Unexpected key \"stage_in\""):
        theirs().loads(stored(case))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_main_document_loads_as_the_spec_it_describes(case: str) -> None:
    text = stored(case)
    assert document_format(text) == PSIJ_FORMAT
    spec = JSONSerializer().loads(text)
    assert spec == CASES[case]()
    assert loads(dumps(spec)) == spec  # and hpcjobs's own format carries it


@pytest.mark.parametrize("case", ["staging_defaults", "staging_every_field"])
def test_we_write_a_spec_as_psij_python_main_does(case: str) -> None:
    assert JSONSerializer().dumps(CASES[case]()) + "\n" == stored(case)


def test_empty_staging_lists_are_left_out_and_read_the_same() -> None:
    written = json.loads(JSONSerializer().dumps(CASES["staging_empty_sets"]()))
    assert written == without_staging(json.loads(stored("staging_empty_sets")))
    assert loads(json.dumps(written)) == CASES["staging_empty_sets"]()


def test_psij_pythons_stage_out_default_is_kept_both_ways() -> None:
    """psij-python main's StageOut defaults to ON_SUCCESS, as hpcjobs's does: a document
    without "flags" reads as ON_SUCCESS, and ON_SUCCESS is left out, ALWAYS written."""
    spec = loads(stored("staging_defaults"))
    assert isinstance(spec, JobSpec) and spec.stage_out is not None
    assert [s.flags for s in spec.stage_out] == [F.ON_SUCCESS]
    ours = JobSpec("/bin/cat", stage_out=[StageOut("out.txt", "/r/out.txt")])
    entry = json.loads(JSONSerializer().dumps(ours))["stage_out"][0]
    assert entry == {"source": "out.txt", "target": "/r/out.txt"}
    ours.stage_out = {StageOut("out.txt", "/r/out.txt", F.ALWAYS)}
    entry = json.loads(JSONSerializer().dumps(ours))["stage_out"][0]
    assert entry == {"source": "out.txt", "target": "/r/out.txt", "flags": 14}


@pytest.mark.parametrize("flags, meaning", [
    (0, F.ON_SUCCESS), (1, F.IF_PRESENT | F.ON_SUCCESS), (2, F.ON_SUCCESS),
    (4, F.ON_ERROR), (9, F.IF_PRESENT | F.ON_CANCEL), (15, F.IF_PRESENT | F.ALWAYS)])
def test_stage_out_flags_read_as_psij_python_means_them(flags: int, meaning: F) -> None:
    # (psij-python adds ON_SUCCESS to flags with no end condition; hpcjobs would add ALWAYS)
    spec = loads(json.dumps({"stage_out": [{"source": "o", "target": "/o", "flags": flags}]}))
    assert isinstance(spec, JobSpec) and spec.stage_out is not None
    assert [s.flags for s in spec.stage_out] == [meaning]


# -- generated round trips ---------------------------------------------------------------
names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0/"),
                min_size=1, max_size=8).filter(lambda w: w not in (".", ".."))
relative = st.lists(names, min_size=1, max_size=3).map("/".join)
absolute = relative.map(lambda p: "/" + p)
# (as str(URI) gives them, which is what psij-python writes: "/a?" is written "/a")
uri_texts = st.one_of(absolute, st.builds(
    "{}://{}{}".format, st.sampled_from(["file", "ssh", "gsiftp"]),
    st.sampled_from(["", "host", "u@host:2222"]), absolute)).map(lambda t: str(URI(t)))
flag_numbers = st.integers(min_value=0, max_value=15)


@st.composite
def our_staging_specs(draw: Any) -> JobSpec:
    """Every staging field, with any mode and flags, on a spec of psij-python's fields."""
    spec: JobSpec = draw(our_specs())
    spec.stage_in = draw(st.lists(st.builds(StageIn, uri_texts.map(URI), relative | absolute,
                                            st.sampled_from(M)), max_size=3))
    spec.stage_out = draw(st.lists(st.builds(StageOut, relative | absolute,
                                             uri_texts.map(URI), flag_numbers.map(F),
                                             st.sampled_from(M)), max_size=3))
    spec.cleanup = draw(st.lists(relative | absolute, max_size=3))
    spec.cleanup_flags = F(draw(st.integers(min_value=2, max_value=15)))  # an end condition
    return spec


@settings(max_examples=150, deadline=None)
@given(our_staging_specs())
def test_any_staging_spec_round_trips_in_psij_pythons_format(spec: JobSpec) -> None:
    text = JSONSerializer().dumps(spec)
    assert document_format(text) == PSIJ_FORMAT
    back = loads(text)
    assert back == spec
    assert JSONSerializer().dumps(back) == text
    assert document_format(dumps(spec)) == FORMAT and loads(dumps(spec)) == spec


@st.composite
def main_documents(draw: Any) -> Dict[str, Any]:
    """Staging keys as psij-python main writes them: defaults left out, numbers for
    modes and flags (its flags always hold an end condition, once normalised)."""
    doc: Dict[str, Any] = {"executable": "/bin/true", "name": "/bin/true", "attributes": {}}

    def entry(source: str, target: str, flags: Any, mode: int) -> Dict[str, Any]:
        e: Dict[str, Any] = {"source": source, "target": target}
        if flags is not None and flags != 2:
            e["flags"] = flags
        if mode != 1:
            e["mode"] = mode
        return e

    modes = st.sampled_from([1, 2, 3])
    with_end = st.integers(min_value=0, max_value=15).filter(lambda f: f & 14)
    if draw(st.booleans()):
        doc["stage_in"] = draw(st.lists(st.builds(entry, uri_texts, relative, st.none(), modes),
                                        max_size=3, unique_by=lambda e: json.dumps(e)))
    if draw(st.booleans()):
        doc["stage_out"] = draw(st.lists(st.builds(entry, relative, uri_texts, with_end, modes),
                                         max_size=3, unique_by=lambda e: json.dumps(e)))
    if draw(st.booleans()):
        doc["cleanup"] = draw(st.lists(relative, max_size=3, unique=True))
    if draw(st.booleans()):
        doc["cleanup_flags"] = draw(with_end.filter(lambda f: f != 14))
    return doc


def canonical(document: Dict[str, Any]) -> Dict[str, Any]:
    """The document with its lists' order left aside (psij-python writes a set's order),
    and the empty lists it writes for an empty set dropped."""
    return {k: sorted(json.dumps(e, sort_keys=True) for e in v) if isinstance(v, list) else v
            for k, v in document.items() if v != []}


@settings(max_examples=200, deadline=None)
@given(main_documents())
def test_any_main_document_reads_with_its_meaning_and_writes_back_the_same(
        document: Dict[str, Any]) -> None:
    spec = loads(json.dumps(document))
    assert isinstance(spec, JobSpec)
    for i, e in enumerate(document.get("stage_in", [])):
        assert StageIn(URI(e["source"]), e["target"], M(e.get("mode", 1))) in spec.stage_in, i
    for i, e in enumerate(document.get("stage_out", [])):
        assert StageOut(e["source"], URI(e["target"]), F(e.get("flags", 2)),
                        M(e.get("mode", 1))) in spec.stage_out, i
    assert {str(p) for p in spec.cleanup or ()} == set(document.get("cleanup", []))
    assert spec.cleanup_flags == F(document.get("cleanup_flags", 14))
    assert canonical(json.loads(JSONSerializer().dumps(spec))) == canonical(document)


# -- refusals ------------------------------------------------------------------------------
def staged(**fields: Any) -> str:
    return json.dumps({"executable": "/bin/true", **fields})


IN = {"source": "/a", "target": "a"}
OUT = {"source": "o", "target": "/o"}


@pytest.mark.parametrize("document, message", [
    (staged(stage_in=IN), "stage_in: expected list, got dict"),
    (staged(stage_in=["/a"]), "stage_in[0]: expected dict, got str"),
    (staged(stage_in=[IN, {"target": "b"}]), "stage_in[1].source is missing"),
    (staged(stage_in=[{"source": "/a"}]), "stage_in[0].target is missing"),
    (staged(stage_in=[{**IN, "target": 3}]), "stage_in[0].target: expected str, got int"),
    (staged(stage_in=[{**IN, "mode": "LINK"}]), "stage_in[0].mode: expected int, got str"),
    (staged(stage_in=[{**IN, "mode": True}]), "stage_in[0].mode: expected int, got bool"),
    (staged(stage_in=[{**IN, "mode": 5}]),
     "stage_in[0].mode: 5 is psij-python's CLIENT_TO_CN, a mode of its remote executor"),
    (staged(stage_in=[{**IN, "mode": 9}]), "stage_in[0].mode: 9 is not a staging mode"),
    (staged(stage_in=[{**IN, "flags": 2}]), "unknown field(s) stage_in[0].flags"),
    (staged(stage_in=[{**IN, "source": "//["}]), "stage_in[0].source: '//[': Invalid IPv6"),
    (staged(stage_out=[{**OUT, "flags": 16}]), "stage_out[0].flags: 16 is not a sum of"),
    (staged(stage_out=[{**OUT, "flags": -1}]), "stage_out[0].flags: -1 is not a sum of"),
    (staged(stage_out=[{**OUT, "flags": "ALWAYS"}]), "stage_out[0].flags: expected int, got str"),
    (staged(stage_out=[{**OUT, "mode": 4}]), "stage_out[0].mode: 4 is psij-python's CLIENT_TO_HN"),
    (staged(stage_out=[{**OUT, "target": "//["}]), "stage_out[0].target: '//['"),
    (staged(stage_out=[{**OUT, "src": "o"}]), "unknown field(s) stage_out[0].src"),
    (staged(cleanup="out.txt"), "cleanup: expected list, got str"),
    (staged(cleanup=["a", 1]), "cleanup[1]: expected str, got int"),
    (staged(cleanup=["a"], cleanup_flags=1),
     "cleanup_flags: 1 has none of ON_SUCCESS, ON_ERROR and ON_CANCEL"),
    (staged(cleanup_flags="ALWAYS"), "cleanup_flags: expected int, got str"),
    (staged(cleanup_flags=99), "cleanup_flags: 99 is not a sum of StageOutFlags"),
])
def test_a_malformed_staging_entry_is_refused_naming_the_field(
        document: str, message: str) -> None:
    with pytest.raises(SerializationError) as e:
        loads(document)
    assert message in str(e.value)


def test_a_uri_that_would_read_back_as_another_is_not_written() -> None:
    spec = JobSpec("/bin/true", stage_out=[StageOut("o", URI("file:////x"))])
    with pytest.raises(SerializationError,
                       match=r"stage_out\[0\]\.target: a URI with host part '' and path '//x'"):
        JSONSerializer().dumps(spec)
