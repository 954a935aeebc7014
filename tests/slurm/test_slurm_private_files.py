"""Every file and folder the Slurm executor makes for itself is private (0600/0700) on
the real cluster, though Slurm runs the job under the submitter's umask; a path the
user names for the job keeps that umask."""

from __future__ import annotations

import os
from pathlib import Path

from hpcjobs import Job, JobExecutor, JobSpec, JobState

from slurm_helpers import WAIT, wait_until


def test_job_files_are_private_and_user_paths_keep_the_umask(slurm_cluster: str,
                                                             tmp_path: Path) -> None:
    work = tmp_path / "work"
    out = tmp_path / "out.txt"
    old = os.umask(0o022)  # sbatch passes it on (SLURM_UMASK): files 0644, folders 0755
    try:
        ex = JobExecutor.get_instance("slurm", config={"work_directory": work})
        try:
            mine = Job(JobSpec("/bin/sh", ["-c", "echo out; echo err >&2"], stdout_path=out))
            default = Job(JobSpec("/bin/sh", ["-c", "echo to batch.out"]))
            alone = Job(JobSpec("/bin/true"))
            spared = Job(JobSpec("/bin/sh", ["-c", "echo spared"]))  # (in a spare made ahead)
            ex.submit_many([mine, default])  # one Slurm array
            ex.submit(alone)
            ex.submit(spared)
            for job in (mine, default, alone, spared):
                status = job.wait(timeout=WAIT)
                assert status is not None and status.state is JobState.COMPLETED, status
            wait_until(lambda: (work / "ids").is_dir(), "the ids folder")
        finally:
            ex.close()
    finally:
        os.umask(old)
    made = {p.relative_to(work).as_posix(): p.lstat().st_mode & 0o777
            for p in [work, *work.rglob("*")] if not p.is_symlink()}
    # (an array task's batch.out links to the array's <index>.out)
    assert {f"{job.id}/{name}" for name in ("job.sh", "started", "exitcode")
            for job in (default, alone, spared)} | {f"{alone.id}/batch.out"} <= set(made), made
    assert {name: oct(mode) for name, mode in made.items() if mode & 0o077} == {}
    assert not [name for name in made if name.startswith(".spare-")], made  # closed: gone
    assert (work / default.id / "batch.out").read_text() == "to batch.out\n"
    assert (work / spared.id / "batch.out").read_text() == "spared\n"
    assert out.read_text() == "out\n" and out.stat().st_mode & 0o777 == 0o644
