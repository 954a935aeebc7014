"""File staging on the batch executors, over ssh (files travel from this machine to the
test login node and back through the executor's connection) and on this machine:
stage-in before the submit, stage-out by the way the job ended, cleanup, the staging
states, and failures that name the file and leave nothing half-copied."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpcjobs import InvalidJobException, Job, JobExecutor, JobSpec, JobState, JobStatus
from hpcjobs.errors import SubmitException
from hpcjobs.remote import SshConnection
from hpcjobs.remote.ops import ReadFile
from hpcjobs.staging import StageIn, StageOut, StageOutFlags, StagingMode
from ssh_login import Login
from test_batch_over_ssh import WAIT, _require

F = StageOutFlags
RAN = [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE, JobState.STAGE_OUT, JobState.CLEANUP]
pytestmark = pytest.mark.remote


@pytest.fixture(params=["local", pytest.param("pbs", marks=pytest.mark.pbs)])
def remote(request: pytest.FixtureRequest, login: Login, conn: SshConnection) -> Iterator[tuple[JobExecutor, str]]:
    """An executor over ssh and a fresh directory for its jobs on the login node."""
    _require(request.param)
    home = conn.run(["sh", "-c", 'printf %s "$HOME"'], check=True).text
    d = f"{home}/hpcjobs-staging-{uuid.uuid4().hex[:8]}"
    conn.run(["mkdir", "-m", "700", d, f"{d}/job"], check=True)
    ex = JobExecutor.get_instance(request.param, url=f"ssh://{login.host}", config={
        "ssh_options": ["-F", str(login.config)], "work_directory": f"{d}/work"})
    yield ex, f"{d}/job"
    ex.close()
    conn.run(["rm", "-rf", d])


def _run(ex: JobExecutor, spec: JobSpec) -> tuple[JobStatus, list[JobState]]:
    seen: list[JobState] = []
    job = Job(spec)
    job.set_job_status_callback(lambda j, s: seen.append(s.state))
    ex.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None
    return status, seen


def test_files_and_directories_go_there_and_come_back(remote: tuple[JobExecutor, str],
                                                      tmp_path: Path, conn: SshConnection) -> None:
    ex, job_dir = remote
    src = tmp_path / "src"
    (src / "tree").mkdir(parents=True)
    (src / "f1").write_bytes(b"AB\x00\xffCD")
    (src / "tree" / "f2").write_text("EFGH")
    (src / "tree" / "run.sh").write_text("#!/bin/sh\ncat f2\n")
    (src / "tree" / "run.sh").chmod(0o755)
    back = tmp_path / "back"
    spec = JobSpec("/bin/sh", ["-c", "cat in1 > out1; cd 'sub dir/tree' && ./run.sh > ../../out2; "
                               "mkdir -p outdir && echo z > outdir/z"],
                   directory=job_dir,
                   stage_in={StageIn(src / "f1", "in1"), StageIn(src / "tree", "sub dir/tree")},
                   stage_out={StageOut("out1", back / "out1"), StageOut("out2", back / "nested" / "out2"),
                              StageOut("sub dir/tree/outdir", back / "outdir"),
                              StageOut("absent", back / "absent", F.IF_PRESENT | F.ALWAYS)},
                   cleanup={"in1", "sub dir"})
    status, seen = _run(ex, spec)
    assert status.state is JobState.COMPLETED, status
    assert seen == [*RAN, JobState.COMPLETED]
    assert (back / "out1").read_bytes() == b"AB\x00\xffCD"
    assert (back / "nested" / "out2").read_text() == "EFGH"
    assert (back / "outdir" / "z").read_text() == "z\n"
    assert not (back / "absent").exists()
    assert not any(p.name.count("hpcjobs-part") for p in back.rglob("*"))
    left = conn.run(["ls", "-A", job_dir], check=True).text.split()
    assert sorted(left) == ["out1", "out2"]  # cleaned up: the staged-in files


def test_a_hostile_name_and_binary_bytes_arrive_exactly(remote: tuple[JobExecutor, str],
                                                        tmp_path: Path) -> None:
    ex, job_dir = remote
    name = os.fsdecode(b"it's \"$HOME\" `id` a\nb\tc \xff\xfe")
    data = os.urandom(200_000) + b"\0" * 70_000  # binary, past the 64 KiB of a small write
    (tmp_path / name).write_bytes(data)
    spec = JobSpec("/bin/sh", ["-c", 'cp -- "$1" "$1.out"', "sh", name], directory=job_dir,
                   stage_in={StageIn(tmp_path / name, name)},
                   stage_out={StageOut(f"{name}.out", tmp_path / "back" / name)})
    status, _ = _run(ex, spec)
    assert status.state is JobState.COMPLETED, status
    assert (tmp_path / "back" / name).read_bytes() == data


def test_stage_out_follows_how_the_job_ended(remote: tuple[JobExecutor, str], tmp_path: Path) -> None:
    ex, job_dir = remote
    spec = JobSpec("/bin/sh", ["-c", "echo f > f; exit 3"], directory=job_dir,
                   stage_out={StageOut("f", tmp_path / "on_success", F.ON_SUCCESS),
                              StageOut("f", tmp_path / "on_error", F.ON_ERROR)})
    status, seen = _run(ex, spec)
    assert status.state is JobState.FAILED and status.exit_code == 3, status
    assert (tmp_path / "on_error").read_text() == "f\n"
    assert not (tmp_path / "on_success").exists()


def test_a_missing_stage_out_fails_the_job_naming_the_file(remote: tuple[JobExecutor, str],
                                                          tmp_path: Path) -> None:
    ex, job_dir = remote
    spec = JobSpec("/bin/true", directory=job_dir, stage_out={StageOut("nothing", tmp_path / "x")})
    status, _ = _run(ex, spec)
    assert status.state is JobState.FAILED and "nothing" in str(status.message), status
    assert "the job itself: COMPLETED" in str(status.message)


def test_a_failed_stage_in_submits_nothing(remote: tuple[JobExecutor, str], tmp_path: Path) -> None:
    ex, job_dir = remote
    job = Job(JobSpec("/bin/true", directory=job_dir,
                      stage_in={StageIn(tmp_path / "no-such-file", "x")}))
    with pytest.raises(SubmitException, match="no-such-file"):
        ex.submit(job)
    assert job.status.state is JobState.NEW and job.native_id is None


def test_move_removes_the_source_and_link_cannot_cross_machines(
        remote: tuple[JobExecutor, str], tmp_path: Path, conn: SshConnection) -> None:
    ex, job_dir = remote
    (tmp_path / "m").write_text("moved")
    status, _ = _run(ex, JobSpec("/bin/true", directory=job_dir,
                                 stage_in={StageIn(tmp_path / "m", "m", StagingMode.MOVE)}))
    assert status.state is JobState.COMPLETED and not (tmp_path / "m").exists()
    assert conn.batch([ReadFile(f"{job_dir}/m")])[0].stdout == b"moved"
    (tmp_path / "l").write_text("x")
    job = Job(JobSpec("/bin/true", directory=job_dir,
                      stage_in={StageIn(tmp_path / "l", "l", StagingMode.LINK)}))
    with pytest.raises(SubmitException, match="cannot point to a file on this machine"):
        ex.submit(job)


def test_a_staging_job_names_its_directory(remote: tuple[JobExecutor, str], tmp_path: Path) -> None:
    ex, _ = remote
    with pytest.raises(InvalidJobException, match="JobSpec.directory"):
        ex.submit(Job(JobSpec("/bin/true", stage_out={StageOut("o", tmp_path / "o")})))


@pytest.mark.parametrize("name", [pytest.param("slurm", marks=pytest.mark.slurm),
                                  pytest.param("pbs", marks=pytest.mark.pbs)])
def test_staging_on_this_machine(name: str, tmp_path: Path) -> None:
    # the batch executors stage on this machine too (the same host calls, local ones)
    _require(name)
    src, job_dir = tmp_path / "src", tmp_path / "job"
    src.mkdir()
    job_dir.mkdir()
    os.chmod(tmp_path, 0o755)
    (src / "in").write_text("pear\napple\n")
    spec = JobSpec("/bin/sh", ["-c", "sort in > out"], directory=job_dir,
                   stage_in={StageIn(src / "in", "in")},
                   stage_out={StageOut("out", tmp_path / "results" / "out", F.ON_SUCCESS)},
                   cleanup={"in", "out"})
    with JobExecutor.get_instance(name, config={"work_directory": tmp_path / "work"}) as ex:
        status, seen = _run(ex, spec)
    assert status.state is JobState.COMPLETED, status
    assert seen == [*RAN, JobState.COMPLETED]
    assert (tmp_path / "results" / "out").read_text() == "apple\npear\n"
    assert os.listdir(job_dir) == []
