"""Conformance: what every launcher does on every backend (pre/post-launch, node file,
exit code of multi-rank jobs, arguments reaching every rank).

Ranks are told apart without any launcher's rank variable: each writes its own file,
named by ``mktemp``, into the test's scratch directory. ``single`` runs one process
whatever the process count; every other launcher runs ``process_count``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from types import ModuleType
from typing import Callable, Optional

import pytest

from hpcjobs import Job, JobSpec, JobState, JobStatus, ResourceSpecV1

PROCESSES = 2  # the test machines have 2 cores
RunJob = Callable[[JobSpec], "tuple[Job, JobStatus]"]  # the suite's run_job fixture

pytestmark = pytest.mark.requires("executes")

# each rank: record its arguments (NUL-separated) and one environment variable
RANK = ('f=$(mktemp "$0/rank.XXXXXX") && printf "%s\\0" "$@" > "$f" && '
        'printf "%s" "${CONFORMANCE_VAR-unset}" > "$f.env"')


def ranks(launcher: str) -> int:
    return 1 if launcher == "single" else PROCESSES


def rank_spec(scratch: Path, launcher: str, args: list[str], pre_launch: Optional[Path] = None,
              post_launch: Optional[Path] = None) -> JobSpec:
    return JobSpec(executable="/bin/sh", arguments=["-c", RANK, str(scratch), *args],
                   launcher=launcher, directory=scratch, pre_launch=pre_launch,
                   post_launch=post_launch, stdout_path=scratch / "out",
                   stderr_path=scratch / "err",
                   resources=ResourceSpecV1(process_count=PROCESSES))


def rank_files(scratch: Path) -> list[Path]:
    return sorted(p for p in scratch.glob("rank.*") if not p.name.endswith(".env"))


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_pre_launch_environment_reaches_every_rank(run_job: RunJob, launcher: str,
                                                   scratch: Path) -> None:
    value = "pre 'launch' \"value\" $(not run) é"
    pre = script(scratch / "pre.sh", f"export CONFORMANCE_VAR={shlex.quote(value)}\n")
    _, status = run_job(rank_spec(scratch, launcher, ["a b", ""], pre_launch=pre))
    assert status.state is JobState.COMPLETED, (status, (scratch / "err").read_text())
    files = rank_files(scratch)
    assert len(files) == ranks(launcher)
    for f in files:
        assert Path(f"{f}.env").read_text() == value
        assert f.read_bytes() == b"a b\0\0"


def test_post_launch_runs_after_every_rank(run_job: RunJob, launcher: str,
                                           scratch: Path) -> None:
    post = script(scratch / "post.sh",
                  'set -- rank.*.env\necho "post saw $#" > post_saw\n')
    spec = rank_spec(scratch, launcher, [], post_launch=post)
    spec.arguments = ["-c", "sleep 1; " + RANK, str(scratch)]  # a post that did not wait sees 0
    _, status = run_job(spec)
    assert status.state is JobState.COMPLETED, (status, (scratch / "err").read_text())
    assert (scratch / "post_saw").read_text() == f"post saw {ranks(launcher)}\n"


def test_node_file_has_one_line_per_process(run_job: RunJob, launcher: str,
                                            scratch: Path) -> None:
    pre = script(scratch / "pre.sh", 'wc -l < "$PSIJ_NODEFILE" > lines\n')
    _, status = run_job(rank_spec(scratch, launcher, [], pre_launch=pre))
    assert status.state is JobState.COMPLETED, (status, (scratch / "err").read_text())
    assert int((scratch / "lines").read_text()) == PROCESSES


@pytest.mark.requires("exit_code")
def test_exit_code_of_a_multi_rank_job(run_job: RunJob, launcher: str,
                                       scratch: Path) -> None:
    spec = rank_spec(scratch, launcher, [])
    spec.arguments = ["-c", RANK + "; exit 3", str(scratch)]
    _, status = run_job(spec)
    assert status.state is JobState.FAILED
    assert status.exit_code == 3
    assert len(rank_files(scratch)) == ranks(launcher)  # every rank ran


def test_pre_launch_failure_fails_the_job_without_ranks(run_job: RunJob, launcher: str,
                                                        scratch: Path,
                                                        backend: ModuleType) -> None:
    pre = script(scratch / "pre.sh", "(exit 4)\n")
    _, status = run_job(rank_spec(scratch, launcher, [], pre_launch=pre))
    assert status.state is JobState.FAILED
    assert rank_files(scratch) == []
    assert "pre-launch" in (scratch / "err").read_text()
    if "exit_code" in backend.CAPABILITIES:
        assert status.exit_code == 4
