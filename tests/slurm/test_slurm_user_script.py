"""A user's own #SBATCH script run as a PSI/J job on the real Slurm: its directives
reach Slurm as written, the script runs byte for byte with its arguments, and the job
is followed like any other: exit code, callbacks, attach from another executor, cancel."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hpcjobs import Job, JobExecutor, JobState, JobStatus
from hpcjobs.executors.batch.user_script import batch_script_spec

from slurm_helpers import WAIT

# quotes, $, backslashes and non-ASCII: the copy must be the user's bytes exactly
HOSTILE = "it's \"$HOME\" `id` \\\\ é 🙂"


def test_a_users_script_keeps_its_directives_and_ends_with_its_exit_code(
        executor: JobExecutor, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sbatch"
    quoted = "'" + HOSTILE.replace("'", "'\\''") + "'"  # one shell word
    script.write_text(f"""#!/bin/bash
#SBATCH --job-name=users-own
#SBATCH --output={out}
#SBATCH --time=00:02:00
printf '%s\\n' "name=$SLURM_JOB_NAME" "args=$1|$2" text={quoted}
printf '%s\\n' "bash=${{BASH_VERSION:+yes}}"
exit 6
""", encoding="utf-8")
    job = Job(batch_script_spec(script, ["a b", "$HOME"]))
    seen: list[JobStatus] = []
    job.set_job_status_callback(lambda _job, status: seen.append(status))
    executor.submit(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and (end.state, end.exit_code) == (JobState.FAILED, 6)
    assert [s.state for s in seen] == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                                       JobState.STAGE_OUT, JobState.CLEANUP, JobState.FAILED]
    assert out.read_text(encoding="utf-8").splitlines() == [
        "name=users-own", "args=a b|$HOME", f"text={HOSTILE}", "bash=yes"]
    limit = subprocess.run(["scontrol", "show", "job", str(job.native_id)],
                           capture_output=True, text=True, timeout=60).stdout
    assert "TimeLimit=00:02:00" in limit or limit == ""  # (gone after MinJobAge)


def test_a_users_script_is_attached_to_and_cancelled_like_any_job(
        executor: JobExecutor, tmp_path: Path, work_dir: Path) -> None:
    script = tmp_path / "long.sbatch"
    script.write_text("#!/bin/sh\n#SBATCH --output=/dev/null\nsleep 300\n")
    job = Job(batch_script_spec(script))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    other = JobExecutor.get_instance("slurm", config={"work_directory": work_dir})
    try:
        seen = Job()
        other.attach(seen, str(job.native_id))
        assert seen.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
        seen.cancel()
        end = job.wait(timeout=WAIT)
        assert end is not None and end.state is JobState.CANCELED
        assert seen.wait(timeout=WAIT) is not None and seen.status.state is JobState.CANCELED
    finally:
        other.close()
