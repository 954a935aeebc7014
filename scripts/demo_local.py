"""Demo part 1: real jobs on the local executor, watched through callbacks."""

from __future__ import annotations

import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import hpcjobs as psij


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="hpcjobs-demo-"))
    print(f"== local executor (job files under {work})")
    with psij.JobExecutor.get_instance("local", config={"work_directory": work}) as ex:
        def show(job: psij.Job, status: psij.JobStatus) -> None:
            extra = f" exit_code={status.exit_code}" if status.final else ""
            why = f" ({status.message})" if status.message and status.final else ""
            print(f"  [{job.spec.name if job.spec else job.id}] {status.state}{extra}{why}")

        ex.set_job_status_callback(show)
        out = work / "hello.out"
        jobs = [
            psij.Job(psij.JobSpec("/bin/echo", ["hello from", "${USER_GREETING}"],
                                  name="echo", stdout_path=out,
                                  environment={"USER_GREETING": "hpcjobs"})),
            psij.Job(psij.JobSpec("/bin/sh", ["-c", "exit 3"], name="fails")),
            psij.Job(psij.JobSpec("/bin/sleep", ["30"], name="cancelled")),
            psij.Job(psij.JobSpec("/bin/hostname", name="two ranks", launcher="multiple",
                                  resources=psij.ResourceSpecV1(process_count=2),
                                  stdout_path=work / "ranks.out")),
        ]
        for job in jobs:
            ex.submit(job)
        jobs[2].wait(target_states=[psij.JobState.ACTIVE], timeout=timedelta(seconds=30))
        jobs[2].cancel()
        for job in jobs:
            job.wait(timeout=timedelta(seconds=60))
        print(f"  echo wrote: {out.read_text().strip()!r}")
        print(f"  two ranks wrote {len((work / 'ranks.out').read_text().splitlines())} lines")
        print(f"  native ids: {[j.native_id for j in jobs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
