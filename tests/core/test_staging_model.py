"""hpcjobs.staging: psij-python's staging model, the JobSpec fields that hold it, the
staging states in the state order, and executors that refuse staging they cannot do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpcjobs import InvalidJobException, Job, JobExecutor, JobSpec, JobState
from hpcjobs.staging import URI, StageIn, StageOut, StageOutFlags, StagingMode

F = StageOutFlags


def test_uri_parts() -> None:
    u = URI("ssh://alice@login.example.org:2222/home/alice/in.txt")
    assert (u.scheme, u.hostname, u.port, u.username, u.path) == (
        "ssh", "login.example.org", 2222, "alice", "/home/alice/in.txt")
    assert str(u) == "ssh://alice@login.example.org:2222/home/alice/in.txt"
    assert not u.is_local and URI("/x").is_local and URI("file:///x").is_local
    assert URI("/x") == URI("/x") and len({URI("/x"), URI("/x")}) == 1


def test_relative_sources_are_taken_from_the_current_directory(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = StageIn("in.txt", "data/in.txt")
    assert s.source == URI(str(tmp_path / "in.txt")) and s.target == Path("data/in.txt")
    assert s.mode is StagingMode.COPY
    assert StageIn(Path("in.txt"), "t").source == s.source
    o = StageOut("out.txt", "results/out.txt")
    assert o.target == URI(os.path.join(tmp_path, "results/out.txt"))
    assert StageIn("file:///abs", "t").source == URI("file:///abs")


def test_a_path_names_its_file_exactly() -> None:
    # urllib.parse takes '#', '?' and ';' for URI syntax and drops tabs and line breaks
    name = "/data/run #1?a;b\tc\nd \udcff"
    for given in (name, Path(name)):
        assert StageIn(given, "t").source.path == name
        assert StageOut("o", given).target.path == name
    # a job document writes a URI's text, which would read back as another file: refused
    from hpcjobs.serialize import SerializationError, dumps
    with pytest.raises(SerializationError, match="reads back as"):
        dumps(JobSpec("/bin/true", stage_in={StageIn(Path("/data/run #1"), "t")}))


@pytest.mark.parametrize("given, normalized", [
    (F.NONE, F.ON_SUCCESS), (F.IF_PRESENT, F.IF_PRESENT | F.ON_SUCCESS),
    (F.ON_ERROR, F.ON_ERROR), (F.IF_PRESENT | F.ON_SUCCESS, F.IF_PRESENT | F.ON_SUCCESS),
])
def test_flags_without_an_end_condition_mean_on_success(given: F, normalized: F) -> None:
    # (psij-python main's meaning, and its StageOut's default)
    assert StageOut("a", "/b", flags=given).flags == normalized
    assert JobSpec(cleanup_flags=given).cleanup_flags == normalized


def test_flags_say_which_ends_they_cover() -> None:
    assert F.ON_SUCCESS.applies_to(JobState.COMPLETED)
    assert not F.ON_SUCCESS.applies_to(JobState.FAILED)
    assert F.ON_ERROR.applies_to(JobState.FAILED) and F.ON_CANCEL.applies_to(JobState.CANCELED)
    assert F.IF_PRESENT.applies_to(JobState.COMPLETED)
    assert not any(F.IF_PRESENT.applies_to(s) for s in (JobState.FAILED, JobState.CANCELED))
    assert StageOut("a", "/b").flags is F.ON_SUCCESS
    with pytest.raises(ValueError):
        F.ALWAYS.applies_to(JobState.ACTIVE)


def test_spec_fields_check_and_convert() -> None:
    spec = JobSpec("/bin/cat", stage_in=[StageIn("/a", "a")], cleanup=["out.txt", Path("x")])
    assert spec.stage_in == {StageIn("/a", "a")} and spec.cleanup == {Path("out.txt"), Path("x")}
    spec.stage_out = {StageOut("out.txt", "/r/out.txt", F.ON_SUCCESS)}
    assert spec.stages_files and not JobSpec("/bin/true").stages_files
    assert spec.cleanup_flags == F.ALWAYS
    with pytest.raises(TypeError, match="stage_in holds StageIns"):
        spec.stage_in = {StageOut("a", "/b")}  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cleanup holds paths"):
        spec.cleanup = {3}  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mode"):
        StageIn("/a", "a", mode="COPY")  # type: ignore[arg-type]


def test_staging_survives_to_dict_and_back() -> None:
    spec = JobSpec("/bin/cat", stage_in={StageIn("/a b", "in/a", StagingMode.LINK)},
                   stage_out={StageOut("o", "/res/o", F.IF_PRESENT | F.ON_ERROR, StagingMode.MOVE)},
                   cleanup={"o"}, cleanup_flags=F.ON_SUCCESS)
    again = JobSpec.from_dict(spec.to_dict())
    assert again == spec
    assert (again.stage_in, again.stage_out, again.cleanup, again.cleanup_flags) == (
        spec.stage_in, spec.stage_out, spec.cleanup, spec.cleanup_flags)


def test_states_in_psij_pythons_order() -> None:
    order = [JobState.NEW, JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
             JobState.STAGE_OUT, JobState.CLEANUP]
    for earlier, later in zip(order, order[1:]):
        assert later.is_greater_than(earlier) and not earlier.is_greater_than(later)
    for final in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELED):
        assert final.is_greater_than(JobState.CLEANUP) and final.final
    assert not any(s.final for s in order)


@pytest.mark.parametrize("field, value", [
    ("stage_in", {StageIn("/etc/hostname", "h")}),
    ("stage_out", {StageOut("o", "/tmp/o")}),
    ("cleanup", {"o"}),
])
def test_an_executor_that_cannot_stage_refuses_the_job(field: str, value: object) -> None:
    from hpcjobs.executors.local import LocalJobExecutor

    class NoStaging(LocalJobExecutor):
        """A test double: the local executor, saying it cannot stage (the core's rule)."""
        supports_staging = False

    ex = NoStaging()
    try:
        spec = JobSpec("/bin/true")
        setattr(spec, field, value)
        job = Job(spec)
        with pytest.raises(InvalidJobException, match=f"JobSpec.{field}.*does not stage"):
            ex.submit(job)
        assert job.status.state is JobState.NEW and job.native_id is None
    finally:
        ex.close()
