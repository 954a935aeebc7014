"""A user's own #PBS script run as a PSI/J job on the real OpenPBS: its directives reach
PBS as written, the script runs byte for byte with its arguments, its exit code is the
job's; a held one waits for its release like any other job."""

from __future__ import annotations

from pathlib import Path

from hpcjobs import Job, JobExecutor, JobState
from hpcjobs.executors.batch.user_script import batch_script_spec

from pbs_helpers import WAIT, qstat


def test_a_users_script_keeps_its_directives_and_ends_with_its_exit_code(
        executor: JobExecutor, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    out = tmp_path / "out.txt"
    script = tmp_path / "job.pbs"
    script.write_text(f"""#!/bin/sh
#PBS -N users-own
#PBS -l walltime=00:02:00
#PBS -o {out}
#PBS -j oe
printf '%s\\n' "name=$PBS_JOBNAME" "args=$1|$2" 'text=it'"'"'s $HOME é'
exit 6
""", encoding="utf-8")
    job = Job(batch_script_spec(script, ["a b", "$HOME"]))
    executor.submit(job, hold=True)
    record = qstat(str(job.native_id))
    assert (record["Job_Name"], record["Resource_List"]["walltime"]) == ("users-own",
                                                                          "00:02:00")
    executor.release(job)
    end = job.wait(timeout=WAIT)
    assert end is not None and (end.state, end.exit_code) == (JobState.FAILED, 6)
    assert out.read_text(encoding="utf-8").splitlines() == [
        "name=users-own", "args=a b|$HOME", "text=it's $HOME é"]
