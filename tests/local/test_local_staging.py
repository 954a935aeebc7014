"""File staging on the local executor: stage-in before the job runs, stage-out by the
way it ended, cleanup, the staging states in every callback, and failures that name
the file and leave nothing half-copied."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState, JobStatus
from hpcjobs.staging import StageIn, StageOut, StageOutFlags, StagingMode

F = StageOutFlags
RAN = [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE, JobState.STAGE_OUT, JobState.CLEANUP]


@pytest.fixture
def local() -> Iterator[JobExecutor]:
    ex = JobExecutor.get_instance("local")
    yield ex
    ex.close()


def _run(ex: JobExecutor, spec: JobSpec) -> tuple[JobStatus, list[JobState]]:
    seen: list[JobState] = []
    job = Job(spec)
    job.set_job_status_callback(lambda j, s: seen.append(s.state))
    ex.submit(job)
    status = job.wait(timeout=60)
    assert status is not None
    return status, seen


@pytest.mark.parametrize("mode", list(StagingMode))
def test_stage_in_files_and_directories(local: JobExecutor, tmp_path: Path, mode: StagingMode) -> None:
    src, job_dir = tmp_path / "src", tmp_path / "job"
    (src / "tree").mkdir(parents=True)
    job_dir.mkdir()
    (src / "f1").write_text("ABCD")
    (src / "tree" / "f2").write_text("EFGH")
    out = tmp_path / "out"
    spec = JobSpec("/bin/cat", ["in1.txt", "sub dir/tree/f2"], directory=job_dir, stdout_path=out,
                   stage_in={StageIn(src / "f1", "in1.txt", mode),
                             StageIn(src / "tree", "sub dir/tree", mode)})
    status, seen = _run(local, spec)
    assert status.state is JobState.COMPLETED, status
    assert out.read_text() == "ABCDEFGH"
    assert seen == RAN + [JobState.COMPLETED]
    assert (job_dir / "in1.txt").is_symlink() == (mode is StagingMode.LINK)
    assert (src / "f1").exists() == (mode is not StagingMode.MOVE)
    assert not [p for p in job_dir.rglob("*") if "hpcjobs-part" in p.name]


def test_a_failed_stage_in_fails_the_job_before_it_runs(local: JobExecutor, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    spec = JobSpec("/usr/bin/touch", [str(marker)], directory=tmp_path,
                   stage_in={StageIn(tmp_path / "missing file", "x")})
    status, seen = _run(local, spec)
    assert status.state is JobState.FAILED and "missing file" in (status.message or "")
    assert seen == [JobState.QUEUED, JobState.STAGE_IN, JobState.FAILED]
    assert not marker.exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize("script, flags, copied, state", [
    ("printf ABC > out.txt", F.ON_SUCCESS, True, JobState.COMPLETED),
    ("printf ABC > out.txt; exit 1", F.ON_SUCCESS, False, JobState.FAILED),
    ("printf ABC > out.txt", F.ON_ERROR, False, JobState.COMPLETED),
    ("printf ABC > out.txt; exit 1", F.ON_ERROR, True, JobState.FAILED),
    ("printf ABC > out.txt; exit 3", F.ALWAYS, True, JobState.FAILED),
    ("true", F.IF_PRESENT, False, JobState.COMPLETED),
    ("printf ABC > out.txt; exit 1", F.NONE, False, JobState.FAILED),  # no end condition
    ("printf ABC > out.txt", F.NONE, True, JobState.COMPLETED),         # means ON_SUCCESS
])
def test_stage_out_follows_the_flags(local: JobExecutor, tmp_path: Path, script: str,
                                     flags: F, copied: bool, state: JobState) -> None:
    target = tmp_path / "results" / "out.txt"
    spec = JobSpec("/bin/sh", ["-c", script], directory=tmp_path,
                   stage_out={StageOut("out.txt", target, flags)})
    status, seen = _run(local, spec)
    assert status.state is state, status
    assert seen == RAN + [state]
    assert target.exists() == copied and (not copied or target.read_text() == "ABC")


def test_a_missing_stage_out_source_fails_the_job_naming_it(local: JobExecutor, tmp_path: Path) -> None:
    status, _ = _run(local, JobSpec("/bin/true", directory=tmp_path,
                                    stage_out={StageOut("never-written", tmp_path / "t")}))
    assert status.state is JobState.FAILED and "never-written" in (status.message or "")
    assert status.exit_code == 0 and "COMPLETED" in (status.message or "")


def test_cleanup_after_stage_out_by_its_flags(local: JobExecutor, tmp_path: Path) -> None:
    target = tmp_path / "kept"
    spec = JobSpec("/bin/sh", ["-c", "printf ABC > out.txt; mkdir d; touch d/x"], directory=tmp_path,
                   stage_out={StageOut("out.txt", target, F.IF_PRESENT)}, cleanup={"out.txt", "d"})
    status, _ = _run(local, spec)
    assert status.state is JobState.COMPLETED
    assert target.read_text() == "ABC" and not (tmp_path / "out.txt").exists()
    assert not (tmp_path / "d").exists()
    failing = JobSpec("/bin/sh", ["-c", "printf ABC > out.txt; exit 1"], directory=tmp_path,
                      cleanup={"out.txt"}, cleanup_flags=F.ON_SUCCESS)
    status, _ = _run(local, failing)
    assert status.state is JobState.FAILED and (tmp_path / "out.txt").exists()


def test_a_stage_out_over_an_existing_target_replaces_it_whole(local: JobExecutor, tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.write_text("old")
    spec = JobSpec("/bin/sh", ["-c", "head -c 300000 /dev/zero > big"], directory=tmp_path,
                   stage_out={StageOut("big", target)})
    status, _ = _run(local, spec)
    assert status.state is JobState.COMPLETED and os.path.getsize(target) == 300000
    assert [p.name for p in tmp_path.iterdir() if "hpcjobs-part" in p.name] == []
