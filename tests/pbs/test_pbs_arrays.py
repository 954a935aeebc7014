"""Bursts of jobs as PBS job arrays (qsub -J), on the real OpenPBS (executors/batch/
arrays.py; the Slurm half's tests are tests/slurm/test_slurm_arrays.py).

Every job of an array keeps its own subjob id (``123[4].server``), output, environment
(the submitting process's, which PBS's qsub -V cannot carry) and exit code; cancel and
attach work per subjob; a burst larger than the array limit is split.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState

from pbs_helpers import WAIT, qsub, run, running_blocker, whole_node

SRC = Path(__file__).resolve().parents[2] / "src"


def array_of(job: Job) -> str:
    assert job.native_id is not None
    return job.native_id.split("[")[0]


def test_a_burst_goes_out_as_one_array_per_shape(executor: JobExecutor, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCJOBS_ARRAY_TEST", "from the client's environment")
    jobs = [Job(JobSpec("/bin/sh", ["-c", 'echo "$WHO: $HPCJOBS_ARRAY_TEST"; exit $CODE'],
                        environment={"WHO": f"job{i}", "CODE": str(i % 4)},
                        stdout_path=tmp_path / f"out{i}",
                        attributes=JobAttributes(duration=timedelta(minutes=5 + i % 2))))
            for i in range(12)]
    executor.submit_many(jobs)
    assert len({array_of(job) for job in jobs}) == 2  # one qsub -J per walltime
    assert all("[" in str(job.native_id) for job in jobs)
    for i, job in enumerate(jobs):
        status = job.wait(timeout=WAIT)
        assert status is not None and status.exit_code == i % 4, (job.native_id, status)
        assert (tmp_path / f"out{i}").read_text() == f"job{i}: from the client's environment\n"


def test_cancel_one_subjob_leaves_the_others_running(executor: JobExecutor) -> None:
    jobs = [Job(JobSpec("/bin/sleep", ["15" if i == 2 else "300"])) for i in range(3)]
    executor.submit_many(jobs)
    assert len({array_of(job) for job in jobs}) == 1
    for job in jobs:
        assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    executor.cancel(jobs[0])
    run("qdel", str(jobs[1].native_id))  # plainly
    for job in jobs[:2]:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.CANCELED, status
    assert jobs[2].status.state is JobState.ACTIVE
    assert jobs[2].wait(timeout=WAIT).state is JobState.COMPLETED  # type: ignore[union-attr]


ATTACH = """
import sys
from hpcjobs import Job, JobExecutor
with JobExecutor.get_instance("pbs", config={"work_directory": sys.argv[1]}) as ex:
    job = Job()
    ex.attach(job, sys.argv[2])
    status = job.wait(timeout=180)
    print(status.state.name, status.exit_code, status.message)
"""


def test_attach_to_a_subjob_from_a_fresh_process(executor: JobExecutor,
                                                 work_dir: Path) -> None:
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"echo out {code}; exit {code}"])) for code in (0, 5)]
    executor.submit_many(jobs)
    executor.close()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", ATTACH, str(work_dir), str(jobs[1].native_id)],
                         capture_output=True, text=True, timeout=WAIT, env=env, check=True)
    assert out.stdout.split(None, 2) == ["FAILED", "5", "exited with code 5\n"], out
    # (endswith: a PBS job runs in root's login shell here, whose pyenv init may warn
    # "cannot rehash: couldn't acquire lock" on stderr when two subjobs start at once)
    assert (work_dir / jobs[1].id / "batch.out").read_text().endswith("out 5\n")


def test_a_burst_larger_than_the_array_limit_is_split(pbs_server: None, work_dir: Path) -> None:
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir,
                                                 "max_array_size": 4}) as ex:
        assert ex.scheduler.max_array_size() == 10000  # type: ignore[attr-defined]  # the server's
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i % 2}"])) for i in range(10)]
        ex.submit_many(jobs)
        sizes: dict[str, int] = {}
        for job in jobs:
            sizes[array_of(job)] = sizes.get(array_of(job), 0) + 1
        assert sorted(sizes.values()) == [2, 4, 4], sizes
        for i, job in enumerate(jobs):
            assert job.wait(timeout=WAIT).exit_code == i % 2  # type: ignore[union-attr]


def test_a_subjob_deleted_while_queued_is_cancelled(executor: JobExecutor,
                                                    work_dir: Path) -> None:
    # deleted by plain qdel (another process, say): PBS shows it X with its queued
    # substate while the array lives, then F/93 with a placeholder Exit_status 1
    blocker = running_blocker(executor)
    jobs = [Job(JobSpec("/bin/sh", ["-c", "exit 5"], resources=whole_node())) for _ in range(2)]
    try:
        executor.submit_many(jobs)
        run("qdel", str(jobs[1].native_id))
        status = jobs[1].wait(timeout=WAIT)
        assert status is not None and status.state is JobState.CANCELED, status
    finally:  # (a whole node: never left behind on a shared server)
        blocker.cancel()
    assert jobs[0].wait(timeout=WAIT).exit_code == 5  # type: ignore[union-attr]
    # and once the array has ended, to a client attaching afterwards
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir / "other"}) as ex:
        later = Job()
        ex.attach(later, str(jobs[1].native_id))
        status = later.wait(timeout=WAIT)
    assert status is not None and (status.state, status.exit_code) == (JobState.CANCELED, None)


def test_list_has_the_jobs_sent_in_an_array(executor: JobExecutor) -> None:
    jobs = [Job(JobSpec("/bin/sleep", ["600"])) for _ in range(2)]
    executor.submit_many(jobs)
    try:
        listed = executor.list()
        assert {job.native_id for job in jobs} <= set(listed), listed
        assert not [i for i in listed if i.endswith(f"{array_of(jobs[0])}[].vm")]
    finally:
        for job in jobs:
            job.cancel()
    for job in jobs:
        assert job.wait(timeout=WAIT).state is JobState.CANCELED  # type: ignore[union-attr]


def test_an_array_attached_as_a_whole_has_no_exit_code_of_its_own(executor: JobExecutor) -> None:
    # PBS gives the array Exit_status 0 when one of its subjobs failed: not an exit code
    array_id = qsub("-J", "0-2", "--", "/bin/sh", "-c", "[ $PBS_ARRAY_INDEX -ne 1 ]")
    job = Job()
    executor.attach(job, array_id)
    status = job.wait(timeout=WAIT)
    assert status is not None and (status.state, status.exit_code) == (JobState.FAILED, None)
    assert "a subjob failed" in (status.message or ""), status
