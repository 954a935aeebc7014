"""The helpers psij-python's tests import from ``_test_tools`` (hpcjobs's own stand-in
for the module psij-python keeps out of its sdist; see psij_suite_plugin.py)."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from executor_test_params import ExecutorTestParams
from psij import Job, JobExecutor, JobStatus, JobState

#: every executor a test asked for, closed when the session ends (psij-python's tests
#: never close theirs)
OPENED: List[JobExecutor] = []


def _test_dir() -> Path:
    # under the home directory, as the tests expect: a batch job's node sees it
    return Path.home() / ".psij" / "test"


def _make_test_dir() -> None:
    _test_dir().mkdir(parents=True, exist_ok=True)


def _get_timeout(execparams: ExecutorTestParams) -> timedelta:
    # a deadline guard, not a timing assertion: a batch queue shared with other work
    # may hold a one-cpu job for many minutes while a whole-node job runs
    return timedelta(seconds=60 if execparams.executor == "local" else 1200)


def _get_executor_instance(execparams: ExecutorTestParams,
                           job: Optional[Job] = None) -> JobExecutor:
    if job is not None:
        assert job.spec is not None
        job.spec.launcher = execparams.launcher
    executor = JobExecutor.get_instance(execparams.executor, url=execparams.url)
    OPENED.append(executor)
    return executor


def _tail(path: Optional[Path]) -> str:
    if path is None or not Path(path).exists():
        return ""
    return Path(path).read_text(errors="replace")[-2000:]


def assert_completed(job: Job, status: Optional[JobStatus], attached: bool = False) -> None:
    if status is None:
        pytest.fail(f"job {job.id} did not end in time (last status {job.status})")
    if status.state is not JobState.COMPLETED:
        detail = ""
        if not attached and job.spec is not None:
            detail = (f"\nstdout: {_tail(job.spec.stdout_path)}"
                      f"\nstderr: {_tail(job.spec.stderr_path)}")
        pytest.fail(f"job {job.id} ended {status.state.name}, exit code {status.exit_code}: "
                    f"{status.message}{detail}")


@contextmanager
def _deploy(path: str) -> Iterator[Path]:
    """A copy of a file the tests ship, where a job's node can read it."""
    _make_test_dir()
    copy = _test_dir() / Path(path).name
    shutil.copyfile(path, copy)
    try:
        yield copy
    finally:
        copy.unlink(missing_ok=True)
