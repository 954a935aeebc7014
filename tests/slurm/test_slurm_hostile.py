"""Hostile job names, paths, arguments and environment values through a real Slurm: they
reach the job byte for byte (names are sanitised, as Slurm's tools need), or are refused
before anything is submitted."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from hpcjobs import (InvalidJobException, Job, JobAttributes, JobExecutor, JobSpec,
                     JobState)

from slurm_helpers import WAIT

HOSTILE = "it's \"q\" $HOME `id` $(id) \\ ; & | * ~ %j %% é\tx\nline2 "
# every argument printed NUL-terminated, then the variable, so the test can compare bytes
PRINT = 'for a in "$@"; do printf "%s\\0" "$a"; done; printf "%s\\0" "$V"'


def test_hostile_strings_reach_the_job_byte_for_byte(slurm_cluster: str, tmp_path: Path) -> None:
    # (sbatch drops backslashes from its --output path: a work directory may not have one)
    work = tmp_path / f"work {HOSTILE.strip()}".replace("\\", "")
    run_dir = tmp_path / f"dir {HOSTILE.strip()}"
    run_dir.mkdir()
    args = [HOSTILE, "$HOME", "${NO_SUCH_VARIABLE}", "", "-n", "a\\nb", "%j"]
    spec = JobSpec("/bin/sh", ["-c", PRINT, "sh", *args], name=HOSTILE, directory=run_dir,
                   environment={"V": HOSTILE}, stdout_path=f"out {HOSTILE.strip()}")
    with JobExecutor.get_instance("slurm", config={"work_directory": work}) as executor:
        job = Job(spec)
        executor.submit(job)
        name = subprocess.run(["squeue", "-h", "-t", "all", "-j", str(job.native_id), "-o", "%j"],
                              capture_output=True, text=True).stdout.strip()
        status = job.wait(timeout=WAIT)
        noted = _noted(work, job.id, expected=2)
    assert status is not None and status.state is JobState.COMPLETED, status
    # the script found its executor's notes file through the quoted work directory: a
    # line for its start and one for its end (a note written elsewhere fails silently)
    assert noted == 2
    out = (run_dir / f"out {HOSTILE.strip()}").read_bytes().split(b"\0")[:-1]
    # ${NAME} is the spec's substitution (an unset variable is empty); nothing else is
    expected = [HOSTILE, "$HOME", "", "", "-n", "a\\nb", "%j", HOSTILE]
    assert [o.decode() for o in out] == expected
    # the job name reached Slurm sanitised (quotes, spaces, $, newlines are replaced)
    assert name and all(c.isalnum() or c in "._-" for c in name), name


def _noted(work: Path, name: str, expected: int) -> int:
    """How many notes name job directory ``name`` in the executor's notes files (waiting
    up to 10 s for ``expected``: the end's note follows the exit record it announces)."""
    deadline = time.monotonic() + 10
    while True:
        count = sum(f.read_text().splitlines().count(name)
                    for f in (work / "changes").glob("*/*"))
        if count >= expected or time.monotonic() > deadline:
            return count
        time.sleep(0.1)


def test_values_sbatch_would_misread_are_refused_before_submitting(
        executor: JobExecutor, work_dir: Path) -> None:
    for attributes in (JobAttributes(queue_name="debug\n#SBATCH --hold"),
                       JobAttributes(custom_attributes={"slurm.comment": "a\\b"}),
                       JobAttributes(custom_attributes={"slurm.x; rm": "1"})):
        with pytest.raises(InvalidJobException):
            executor.submit(Job(JobSpec("/bin/true", attributes=attributes)))
    # nothing was half-submitted: no job directory was left behind
    assert not work_dir.exists() or not [p for p in os.listdir(work_dir) if p != "ids"]


def test_a_work_directory_slurm_cannot_name_is_refused(slurm_cluster: str, tmp_path: Path) -> None:
    with JobExecutor.get_instance("slurm", config={"work_directory": tmp_path / "a\\b"}) as ex:
        with pytest.raises(InvalidJobException, match="backslash"):
            ex.submit(Job(JobSpec("/bin/true")))
