"""Conformance: a job's life on every backend x launcher — run, streams, environment,
exit codes, failures, cancel, wait, callbacks, many jobs at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

import pytest

from hpcjobs import (InvalidJobException, Job, JobExecutor, JobSpec, JobState, JobStatus,
                     SubmitException)

Run = Callable[[JobSpec], "tuple[Job, JobStatus]"]
WaitFinal = Callable[[Job], JobStatus]
TIMEOUT = 120.0


class _Recorder:
    def __init__(self) -> None:
        self.states: list[JobState] = []
        self.done = threading.Event()

    def __call__(self, job: Job, status: JobStatus) -> None:
        self.states.append(status.state)
        if status.state.final:
            self.done.set()


def test_simple_job_completes(run_job: Run, launcher: str) -> None:
    job, status = run_job(JobSpec("/bin/true", launcher=launcher))
    assert status.state is JobState.COMPLETED, status
    assert job.native_id
    assert job.status is status


@pytest.mark.requires("executes")
def test_stdout_and_stderr_go_to_their_files(run_job: Run, launcher: str, scratch: Path) -> None:
    out, err = scratch / "out.txt", scratch / "err.txt"
    _, status = run_job(JobSpec("/bin/sh", ["-c", "echo to-out; echo to-err >&2"],
                                stdout_path=out, stderr_path=err, launcher=launcher))
    assert status.state is JobState.COMPLETED, status
    assert out.read_text() == "to-out\n"
    assert err.read_text() == "to-err\n"


@pytest.mark.requires("executes", "stdin")
def test_stdin_is_connected(run_job: Run, scratch: Path) -> None:
    data = "line one\nline two é\n"
    (scratch / "in.txt").write_text(data)
    _, status = run_job(JobSpec("/bin/cat", stdin_path=scratch / "in.txt",
                                stdout_path=scratch / "out.txt"))
    assert status.state is JobState.COMPLETED, status
    assert (scratch / "out.txt").read_text() == data


@pytest.mark.requires("executes")
def test_directory_is_the_working_directory(run_job: Run, scratch: Path) -> None:
    work = scratch / "w d"
    work.mkdir()
    _, status = run_job(JobSpec("/bin/pwd", directory=work, stdout_path=scratch / "pwd"))
    assert status.state is JobState.COMPLETED, status
    assert Path((scratch / "pwd").read_text().rstrip("\n")).resolve() == work.resolve()


def _environment_of(run_job: Run, scratch: Path, **spec: object) -> dict[str, str]:
    out = scratch / "env.bin"
    _, status = run_job(JobSpec("/usr/bin/env", ["-0"], stdout_path=out, **spec))  # type: ignore[arg-type]
    assert status.state is JobState.COMPLETED, status
    pairs = [entry.split("=", 1) for entry in out.read_bytes().decode().split("\0") if entry]
    return {k: v for k, v in pairs}


@pytest.mark.requires("executes")
def test_environment_values_ints_and_expansion(run_job: Run, scratch: Path) -> None:
    env = _environment_of(run_job, scratch, environment={
        "HPCJOBS_A": "alpha", "HPCJOBS_N": 42, "HPCJOBS_B": "${HPCJOBS_A}-beta",
        "HPCJOBS_LITERAL": "$HPCJOBS_A $(echo x) `echo y`", "HPCJOBS_UNSET": "<${HPCJOBS_NOPE}>"})
    assert env["HPCJOBS_A"] == "alpha"
    assert env["HPCJOBS_N"] == "42"
    assert env["HPCJOBS_B"] == "alpha-beta"
    assert env["HPCJOBS_LITERAL"] == "$HPCJOBS_A $(echo x) `echo y`"
    assert env["HPCJOBS_UNSET"] == "<>"


@pytest.mark.requires("executes")
def test_environment_is_inherited_by_default(run_job: Run, scratch: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCJOBS_FROM_CLIENT", "inherited value")
    env = _environment_of(run_job, scratch)
    assert env.get("HPCJOBS_FROM_CLIENT") == "inherited value"


@pytest.mark.requires("executes")
def test_environment_not_inherited(run_job: Run, scratch: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCJOBS_FROM_CLIENT", "must not reach the job")
    env = _environment_of(run_job, scratch, inherit_environment=False,
                          environment={"ONLY": "this"})
    assert "HPCJOBS_FROM_CLIENT" not in env
    assert env.get("ONLY") == "this"


@pytest.mark.requires("executes")
def test_arguments_expand_braced_variables_only(run_job: Run, scratch: Path) -> None:
    out = scratch / "args.bin"
    _, status = run_job(JobSpec("/usr/bin/printf", ["%s\\0", "${HPCJOBS_X}/y", "$HPCJOBS_X", 7],
                                environment={"HPCJOBS_X": "ex"}, stdout_path=out))
    assert status.state is JobState.COMPLETED, status
    assert out.read_bytes() == b"ex/y\0$HPCJOBS_X\x007\0"


@pytest.mark.requires("exit_code")
def test_failing_job_reports_exit_code(run_job: Run, launcher: str) -> None:
    _, status = run_job(JobSpec("/bin/false", launcher=launcher))
    assert status.state is JobState.FAILED, status
    assert status.exit_code == 1
    assert status.message


@pytest.mark.requires("exit_code", "executes")
def test_exit_code_is_the_jobs_own(run_job: Run, launcher: str) -> None:
    _, status = run_job(JobSpec("/bin/sh", ["-c", "exit 3"], launcher=launcher))
    assert status.state is JobState.FAILED, status
    assert status.exit_code == 3
    assert status.message and "3" in status.message


@pytest.mark.requires("signal_exit")
def test_job_killed_by_signal(run_job: Run) -> None:
    _, status = run_job(JobSpec("/bin/sh", ["-c", "kill -KILL $$"]))
    assert status.state is JobState.FAILED, status
    assert status.exit_code == -9
    assert status.message and "9" in status.message


def test_missing_executable_is_refused_or_fails_clearly(executor: JobExecutor,
                                                       wait_final: WaitFinal) -> None:
    missing = "/nonexistent/hpcjobs-no-such-program"
    job = Job(JobSpec(missing))
    try:
        executor.submit(job)
    except (SubmitException, InvalidJobException) as e:
        assert "hpcjobs-no-such-program" in str(e)
        return
    status = wait_final(job)
    assert status.state is JobState.FAILED, status
    assert status.message and "hpcjobs-no-such-program" in status.message


@pytest.mark.requires("executes")
@pytest.mark.parametrize("field", ["directory", "stdout_path", "stdin_path"])
def test_a_directory_or_stream_the_job_cannot_use_fails_it_before_it_runs(
        executor: JobExecutor, wait_final: WaitFinal, tmp_path: Path, field: str) -> None:
    """Refused, or FAILED naming the path, and the program never runs: Slurm's and
    Flux's own answer to a directory they cannot enter is to run the job in /tmp."""
    missing = tmp_path / "no-such-dir"
    marker = tmp_path / "ran"
    spec = JobSpec("/bin/sh", ["-c", f"touch '{marker}'"])
    if field == "directory":
        spec.directory = missing
    elif field == "stdout_path":
        spec.stdout_path = missing / "out"
    else:
        spec.stdin_path = missing / "in"
    job = Job(spec)
    try:
        executor.submit(job)
    except (SubmitException, InvalidJobException) as e:
        assert str(missing) in str(e)
        return
    status = wait_final(job)
    assert (status.state, status.exit_code) == (JobState.FAILED, None), status  # never ran
    assert status.message and str(missing) in status.message, status
    assert not marker.exists()


@pytest.mark.requires("cancel")
def test_cancel_running_job(executor: JobExecutor, launcher: str, wait_final: WaitFinal) -> None:
    rec = _Recorder()
    job = Job(JobSpec("/bin/sleep", ["600"], launcher=launcher))
    job.set_job_status_callback(rec)
    executor.submit(job)
    assert job.wait(timeout=TIMEOUT, target_states=JobState.ACTIVE) is not None
    job.cancel()
    status = wait_final(job)
    assert status.state is JobState.CANCELED, status
    assert status.message and "cancel" in status.message.lower()
    assert rec.done.wait(TIMEOUT)
    assert rec.states == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                          JobState.STAGE_OUT, JobState.CLEANUP, JobState.CANCELED]


@pytest.mark.requires("cancel")
def test_cancel_queued_or_just_submitted_job(executor: JobExecutor, wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    executor.cancel(job)
    assert wait_final(job).state is JobState.CANCELED


@pytest.mark.requires("cancel")
def test_cancel_of_finished_job_changes_nothing(run_job: Run) -> None:
    job, status = run_job(JobSpec("/bin/true"))
    job.cancel()
    assert job.wait(timeout=1) is status
    assert job.status.state is JobState.COMPLETED


def test_wait_with_target_state_and_timeout(executor: JobExecutor, require: Callable[..., None],
                                           wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/sleep", ["600"]))
    executor.submit(job)
    status = job.wait(timeout=TIMEOUT, target_states=[JobState.ACTIVE])
    assert status is not None and status.state in (JobState.ACTIVE, JobState.COMPLETED)
    # a ten-minute job cannot have ended: the wait must give up and say so
    assert job.wait(timeout=0.2) is None
    require("cancel")
    job.cancel()
    assert wait_final(job).state is JobState.CANCELED


def test_callbacks_see_each_state_once_in_order(executor: JobExecutor, launcher: str,
                                               wait_final: WaitFinal) -> None:
    at_executor, at_job = _Recorder(), _Recorder()
    executor.set_job_status_callback(at_executor)
    job = Job(JobSpec("/bin/true", launcher=launcher))
    job.set_job_status_callback(at_job)
    executor.submit(job)
    wait_final(job)
    assert at_job.done.wait(TIMEOUT) and at_executor.done.wait(TIMEOUT)
    expected = [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                JobState.STAGE_OUT, JobState.CLEANUP, JobState.COMPLETED]
    assert at_job.states == expected
    assert at_executor.states == expected


def test_callbacks_of_a_failed_job(executor: JobExecutor, wait_final: WaitFinal) -> None:
    rec = _Recorder()
    job = Job(JobSpec("/bin/false"))
    job.set_job_status_callback(rec)
    executor.submit(job)
    wait_final(job)
    assert rec.done.wait(TIMEOUT)
    assert rec.states == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                          JobState.STAGE_OUT, JobState.CLEANUP, JobState.FAILED]


@pytest.mark.requires("parallel", "executes")
def test_jobs_run_at_the_same_time(executor: JobExecutor, scratch: Path,
                                   wait_final: WaitFinal) -> None:
    # each job checks in, then waits until all have checked in: only possible if they
    # really run concurrently (bounded, so a serial backend fails instead of hanging)
    n = 8
    script = (f'touch "$1/$2"; i=0; while [ "$(ls "$1" | wc -l)" -lt {n} ]; do '
              'i=$((i+1)); [ $i -gt 1200 ] && exit 1; sleep 0.1; done')
    jobs = [Job(JobSpec("/bin/sh", ["-c", script, "sh", str(scratch), f"job{i}"]))
            for i in range(n)]
    for job in jobs:
        executor.submit(job)
    assert [wait_final(job).state for job in jobs] == [JobState.COMPLETED] * n


@pytest.mark.requires("parallel")
def test_many_jobs(executor: JobExecutor, wait_final: WaitFinal) -> None:
    jobs = [Job(JobSpec("/bin/true" if i % 3 == 0 else "/bin/false")) for i in range(200)]
    for job in jobs:
        executor.submit(job)
    ids = {job.native_id for job in jobs}
    assert len(ids) == len(jobs)
    for i, job in enumerate(jobs):
        status = wait_final(job)
        assert status.state is (JobState.COMPLETED if i % 3 == 0 else JobState.FAILED), status


@pytest.mark.requires("list", "cancel")
def test_list_includes_submitted_jobs(executor: JobExecutor, wait_final: WaitFinal) -> None:
    # the contract covers at least every job that has not ended: keep them running
    jobs = [Job(JobSpec("/bin/sleep", ["600"])) for _ in range(3)]
    for job in jobs:
        executor.submit(job)
    listed = executor.list()
    assert all(isinstance(n, str) for n in listed)
    assert {job.native_id for job in jobs} <= set(listed)
    for job in jobs:
        job.cancel()
    for job in jobs:
        assert wait_final(job).state is JobState.CANCELED
