"""Helpers of the PBS tests: plain PBS commands (found as the executor finds them), used
to set up and check jobs."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Optional

from hpcjobs import Job, JobExecutor, JobSpec, JobState, ResourceSpecV1
from hpcjobs.executors.pbs import pbs_exec_bin

WAIT = 180.0  # upper bound for any wait (never a timing assertion)


def command(name: str) -> str:
    """The path of a PBS client command, resolved as the executor resolves it."""
    directory = pbs_exec_bin()
    return str(directory / name) if directory else name


def run(name: str, *args: str, user: Optional[str] = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a PBS client command (as ``user`` through runuser when given)."""
    argv = [command(name), *args]
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=60,
                          cwd="/tmp")


def server_problem() -> Optional[str]:
    """None if a PBS server answers, else why not."""
    try:
        p = run("qstat", "-B", check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if p.returncode == 0 else (p.stderr or p.stdout).strip()


def qsub(*args: str, user: Optional[str] = None) -> str:
    """Submit with plain qsub (not hpcjobs); returns the job id."""
    return run("qsub", "-o", "/dev/null", "-j", "oe", *args, user=user).stdout.strip()


def qstat(native_id: str) -> dict[str, Any]:
    """The job's ``qstat -f -F json -x`` record ({} once PBS has none)."""
    p = run("qstat", "-f", "-F", "json", "-x", native_id, check=False)
    jobs: dict[str, Any] = json.loads(p.stdout, strict=False).get("Jobs", {})
    return jobs.get(native_id, {})


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``predicate`` every 0.5 s; fail the test with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def shim(directory: Path, name: str, body: str) -> Path:
    """Write ``directory/name``, a /bin/sh script standing in for the PBS command (``$REAL``
    is the real one's path); give ``directory`` as the executor's ``bin_directory``, with
    the other commands linked beside it."""
    directory.mkdir(exist_ok=True)
    for other in ("qsub", "qstat", "qdel", "qselect"):
        if other != name and not (directory / other).exists():
            (directory / other).symlink_to(command(other))
    path = directory / name
    # a second shim in the same directory replaces the link an earlier one made to the
    # real command: writing through that link would overwrite the real command itself
    path.unlink(missing_ok=True)
    path.write_text(f"#!/bin/sh\nREAL={command(name)}\n{body}\n")
    path.chmod(0o755)
    return directory


def whole_node() -> ResourceSpecV1:
    """Every cpu of the server's (first) node, for one process."""
    nodes = json.loads(run("pbsnodes", "-a", "-F", "json").stdout)["nodes"]
    ncpus = int(next(iter(nodes.values()))["resources_available"]["ncpus"])
    return ResourceSpecV1(process_count=1, cpu_cores_per_process=ncpus)


def running_blocker(executor: JobExecutor) -> Job:
    """A job taking the whole node, once it runs: the jobs after it wait (cancel it)."""
    blocker = Job(JobSpec("/bin/sleep", ["600"], resources=whole_node()))
    executor.submit(blocker)
    assert blocker.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    return blocker
