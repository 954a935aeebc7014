"""Bursts of jobs as Slurm job arrays, on the real cluster (executors/batch/arrays.py).

Every job of an array keeps its own native id (``<array>_<index>``), output, environment,
directory, pre-launch script and exit code; cancel, attach and plain ``scancel`` work per
task; jobs that cannot share go alone; a refused array fails only its own jobs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import (BulkSubmitException, InvalidJobException, Job, JobAttributes, JobExecutor,
                     JobSpec, JobState, ResourceSpecV1)

from slurm_helpers import WAIT, shim, squeue_state

SRC = Path(__file__).resolve().parents[2] / "src"


def array_of(job: Job) -> str:
    """The Slurm submission a job went out in: its array's id, or its own id."""
    assert job.native_id is not None
    return job.native_id.split("_")[0]


def shaped(i: int, tmp_path: Path, shape: int) -> Job:
    """Job ``i`` of a burst: its own output file, environment, directory and exit code,
    in one of three shapes (cores, walltime, a custom sbatch option)."""
    workdir = tmp_path / f"dir{i % 7}"
    workdir.mkdir(exist_ok=True)
    attributes = [JobAttributes(duration=timedelta(minutes=5)),
                  JobAttributes(duration=timedelta(minutes=7)),
                  JobAttributes(duration=timedelta(minutes=5),
                                custom_attributes={"slurm.comment": "third shape"})][shape]
    resources = ResourceSpecV1(cpu_cores_per_process=1 + (shape == 1))
    return Job(JobSpec("/bin/sh", ["-c", 'echo "$WHO in $(pwd) after $PRE"; exit $CODE'],
                       environment={"WHO": f"job{i}", "CODE": str(i % 5)},
                       directory=workdir, stdout_path=tmp_path / f"out{i}",
                       pre_launch=tmp_path / "pre.sh",
                       attributes=attributes, resources=resources))


def test_a_burst_of_500_mixed_jobs_goes_out_as_one_array_per_shape(
        executor: JobExecutor, tmp_path: Path) -> None:
    (tmp_path / "pre.sh").write_text("export PRE=prelaunch\n")
    jobs = [shaped(i, tmp_path, i % 3) for i in range(500)]
    executor.submit_many(jobs)
    assert all(job.status.state is not JobState.NEW for job in jobs)
    # one sbatch per shape: 3 arrays, each job its own task
    arrays = {array_of(job) for job in jobs}
    assert len(arrays) == 3, arrays
    assert len({job.native_id for job in jobs}) == 500
    assert all(len({array_of(j) for j in jobs[s::3]}) == 1 for s in range(3))
    for job in jobs:
        job.wait(timeout=WAIT * 2)
    for i, job in enumerate(jobs):
        status = job.status
        assert status.exit_code == i % 5, (job.native_id, status)
        assert status.state is (JobState.COMPLETED if i % 5 == 0 else JobState.FAILED)
        assert (tmp_path / f"out{i}").read_text() == (
            f"job{i} in {tmp_path / f'dir{i % 7}'} after prelaunch\n")


def test_concurrent_submits_share_arrays(executor: JobExecutor, tmp_path: Path) -> None:
    """No submit_many: 16 threads calling submit() at once are grouped transparently,
    and each submit() returns with its own job submitted."""
    n_threads, per_thread = 16, 8
    start = threading.Barrier(n_threads)
    jobs: list[Job] = []
    errors: list[BaseException] = []

    def submitter(t: int) -> None:
        try:
            start.wait()
            for k in range(per_thread):
                job = Job(JobSpec("/bin/sh", ["-c", f"exit {(t + k) % 3}"]))
                executor.submit(job)
                assert job.native_id is not None and job.status.state is not JobState.NEW
                jobs.append(job)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT)
    assert not errors, errors
    assert len(jobs) == n_threads * per_thread
    submissions = {array_of(job) for job in jobs}
    assert len(submissions) <= len(jobs) // 2, f"{len(submissions)} sbatch calls"
    for job in jobs:
        job.wait(timeout=WAIT)
    assert all(job.status.exit_code == int(job.spec.arguments[1].split()[1])  # type: ignore
               for job in jobs)


def test_a_lone_submit_and_a_zero_window_are_not_arrays(slurm_cluster: str,
                                                        work_dir: Path) -> None:
    with JobExecutor.get_instance("slurm", config={"work_directory": work_dir,
                                                   "burst_window": 0}) as ex:
        lone = Job(JobSpec("/bin/true"))
        ex.submit(lone)
        assert lone.native_id is not None and "_" not in lone.native_id
        jobs = [Job(JobSpec("/bin/true")) for _ in range(8)]
        threads = [threading.Thread(target=ex.submit, args=(job,)) for job in jobs]
        for th in threads:
            th.start()
        for th in threads:
            th.join(WAIT)
        assert all(job.native_id and "_" not in job.native_id for job in jobs)
        # the explicit call still makes an array
        many = [Job(JobSpec("/bin/true")) for _ in range(3)]
        ex.submit_many(many)
        assert {array_of(job) for job in many} == {array_of(many[0])}
        assert [job.native_id for job in many] == [f"{array_of(many[0])}_{i}" for i in range(3)]
        for job in [lone, *jobs, *many]:
            assert job.wait(timeout=WAIT).state is JobState.COMPLETED  # type: ignore


def test_a_refused_array_fails_only_its_own_jobs(executor: JobExecutor) -> None:
    good = [Job(JobSpec("/bin/true")) for _ in range(3)]
    bad = [Job(JobSpec("/bin/true", attributes=JobAttributes(queue_name="no-such-partition")))
           for _ in range(3)]
    with pytest.raises(BulkSubmitException) as caught:
        executor.submit_many([good[0], bad[0], good[1], bad[1], good[2], bad[2]])
    failures = caught.value.failures
    assert [job for job, _ in failures] == bad
    for job, error in failures:
        assert "invalid partition" in error.get_message().lower(), error
        assert job.status.state is JobState.NEW and job.native_id is None
    assert not any((executor.work_directory / job.id).exists() for job in bad)
    assert len({array_of(job) for job in good}) == 1
    for job in good:
        assert job.wait(timeout=WAIT).state is JobState.COMPLETED  # type: ignore
    # a refused job may be submitted again (alone, through submit())
    bad[0].spec.attributes.queue_name = None  # type: ignore[union-attr]
    executor.submit(bad[0])
    assert bad[0].wait(timeout=WAIT).state is JobState.COMPLETED  # type: ignore


def test_an_invalid_job_submits_nothing(executor: JobExecutor) -> None:
    jobs = [Job(JobSpec("/bin/true")) for _ in range(3)]
    invalid = Job(JobSpec("/bin/true", attributes=JobAttributes(
        custom_attributes={"slurm.array": "0-3"})))
    with pytest.raises(InvalidJobException, match="array"):
        executor.submit_many([*jobs, invalid])
    assert all(job.status.state is JobState.NEW and job.native_id is None for job in jobs)
    assert not any((executor.work_directory / job.id).exists() for job in jobs)


def test_cancel_one_task_leaves_the_others_running(executor: JobExecutor) -> None:
    jobs = [Job(JobSpec("/bin/sleep", ["20" if i == 2 else "300"])) for i in range(3)]
    executor.submit_many(jobs)
    assert len({array_of(job) for job in jobs}) == 1
    for job in jobs:
        assert job.wait(timeout=WAIT, target_states=[JobState.ACTIVE]) is not None
    executor.cancel(jobs[0])                                  # through hpcjobs
    subprocess.run(["scancel", str(jobs[1].native_id)], check=True, timeout=60)  # plainly
    for job in jobs[:2]:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.CANCELED, status
    assert squeue_state(str(jobs[2].native_id)) == "RUNNING"
    assert jobs[2].status.state is JobState.ACTIVE
    assert jobs[2].wait(timeout=WAIT).state is JobState.COMPLETED  # type: ignore


ATTACH = """
import sys
from hpcjobs import Job, JobExecutor
with JobExecutor.get_instance("slurm", config={"work_directory": sys.argv[1]}) as ex:
    job = Job()
    ex.attach(job, sys.argv[2])
    status = job.wait(timeout=180)
    print(status.state.name, status.exit_code, status.message)
"""


def test_attach_to_a_task_from_a_fresh_process(executor: JobExecutor, work_dir: Path,
                                               tmp_path: Path) -> None:
    jobs = [Job(JobSpec("/bin/sh", ["-c", f"sleep 2; echo out {code}; exit {code}"]))
            for code in (0, 7)]
    executor.submit_many(jobs)
    executor.close()  # this process stops following them
    native_id = str(jobs[1].native_id)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", ATTACH, str(work_dir), native_id],
                         capture_output=True, text=True, timeout=WAIT, env=env, check=True)
    # "exited with code 7" is the task's own exit record, read from its job directory
    assert out.stdout.split(None, 2) == ["FAILED", "7", "exited with code 7\n"], out
    cli = subprocess.run([sys.executable, "-m", "hpcjobs", "status", "-x", "slurm",
                          "--config", f"work_directory={work_dir}", native_id],
                         capture_output=True, text=True, timeout=WAIT, env=env)
    assert f"{native_id} FAILED" in cli.stdout, cli
    # the job's own output (no stdout_path) is in its directory's batch.out, as for a
    # lone job
    assert (work_dir / jobs[1].id / "batch.out").read_text() == "out 7\n"
    # private, whatever the umask Slurm created it under (issue 11)
    assert (work_dir / jobs[1].id / "batch.out").stat().st_mode & 0o777 == 0o600
    assert (work_dir / jobs[1].id / "job.sh").read_text().startswith("#!/bin/sh")


KILLED_CLIENT = """
import sys, threading
from hpcjobs import Job, JobExecutor, JobSpec
ex = JobExecutor.get_instance("slurm", config={"work_directory": sys.argv[1]})
lock = threading.Lock()
def submitter():
    while True:
        job = Job(JobSpec("/bin/sh", ["-c", "exit 3"], name=sys.argv[2]))
        ex.submit(job)
        with lock:
            print(job.native_id, flush=True)
for _ in range(24):
    threading.Thread(target=submitter, daemon=True).start()
threading.Event().wait()
"""


def test_a_client_killed_mid_burst_loses_nothing(slurm_cluster: str, work_dir: Path) -> None:
    name = f"killed-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    client = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, str(work_dir), name],
                              stdout=subprocess.PIPE, text=True, env=env)
    assert client.stdout is not None
    returned = []
    try:
        for line in client.stdout:  # kill it in the middle of its burst
            returned.append(line.strip())
            if len(returned) == 150:
                break
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait(60)
    submitted = subprocess.run(["squeue", "-h", "-t", "all", "-n", name, "-O", "JobArrayID"],
                               capture_output=True, text=True, check=True, timeout=60)
    records = [line.strip() for line in submitted.stdout.splitlines()]
    ids = set()
    for record in records:  # pending tasks come as one record: 123_[4-99]
        base, _, rest = record.partition("_")
        if rest.startswith("["):
            first, _, last = rest.strip("[]").split("%")[0].partition("-")
            ids |= {f"{base}_{i}" for i in range(int(first), int(last or first) + 1)}
        else:
            ids.add(record)
    assert set(returned) <= ids, set(returned) - ids
    assert len(ids) >= 150
    # every job Slurm took runs its own script and is found, files and all, from a new client
    with JobExecutor.get_instance("slurm", config={"work_directory": work_dir}) as ex:
        jobs = [Job() for _ in ids]
        for job, native_id in zip(jobs, sorted(ids)):
            ex.attach(job, native_id)
        for job in jobs:
            status = job.wait(timeout=WAIT)
            assert status is not None and status.exit_code == 3, (job.native_id, status)
            if "_" in str(job.native_id):
                # an array task's own exit record, found through ids/<array>/index
                assert status.message == "exited with code 3", (job.native_id, status)
    # (a job that went alone, e.g. the first of the burst, is linked to its files by
    # the monitor just after its sbatch: one killed before that is known from Slurm)


def test_a_burst_larger_than_the_array_limit_is_split(slurm_cluster: str, work_dir: Path) -> None:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                            check=True, timeout=60).stdout
    max_array_size = next(int(line.split("=")[1]) for line in config.splitlines()
                          if line.startswith("MaxArraySize"))
    with JobExecutor.get_instance("slurm", config={"work_directory": work_dir,
                                                   "max_array_size": 100}) as ex:
        assert ex.scheduler.max_array_size() == max_array_size  # type: ignore[attr-defined]
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i % 2}"])) for i in range(250)]
        ex.submit_many(jobs)
        sizes: dict[str, int] = {}
        for job in jobs:
            sizes[array_of(job)] = sizes.get(array_of(job), 0) + 1
        assert sorted(sizes.values()) == [50, 100, 100], sizes
        for i, job in enumerate(jobs):
            assert job.wait(timeout=WAIT * 2).exit_code == i % 2  # type: ignore[union-attr]


def test_an_array_submit_that_times_out_after_submitting_is_not_lost(
        slurm_cluster: str, work_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # sbatch submits the array, prints nothing and hangs past the command timeout: the
    # array is found in squeue by its dispatcher's path, every job is its task
    fake = shim(tmp_path / "bin", "sbatch", '"$REAL" "$@" >/dev/null; status=$?; sleep 5; exit $status')
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    config = {"work_directory": work_dir, "command_timeout": 2.0}
    with JobExecutor.get_instance("slurm", config=config) as ex:
        jobs = [Job(JobSpec("/bin/sh", ["-c", f"exit {i + 4}"])) for i in range(3)]
        ex.submit_many(jobs)  # submitted after all: not an error
        array = array_of(jobs[0])
        assert [job.native_id for job in jobs] == [f"{array}_{i}" for i in range(3)]
        for i, job in enumerate(jobs):
            status = job.wait(timeout=WAIT)
            assert status is not None and status.exit_code == i + 4, status


def test_the_command_line_count_is_one_array(slurm_cluster: str, work_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    p = subprocess.run([sys.executable, "-m", "hpcjobs", "submit", "-x", "slurm", "--config",
                        f"work_directory={work_dir}", "--count", "4", "/bin/true"],
                       capture_output=True, text=True, timeout=WAIT, env=env, check=True)
    ids = p.stdout.split()
    array = ids[0].split("_")[0]
    assert ids == [f"{array}_{i}" for i in range(4)], p
    with JobExecutor.get_instance("slurm", config={"work_directory": work_dir}) as ex:
        jobs = [Job() for _ in ids]
        for job, native_id in zip(jobs, ids):
            ex.attach(job, native_id)
        for job in jobs:
            assert job.wait(timeout=WAIT).state is JobState.COMPLETED  # type: ignore
