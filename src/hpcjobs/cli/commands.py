"""The subcommands of ``hpcjobs``: each is a few calls to the PSI/J API.

Exit codes (docs/cli.md): 0 success; the job's own exit code for ``run`` (128+N when a
signal N killed it, as a shell reports it); 1 a job failed or was canceled without an
exit code; 2 a usage error; 124 a ``--timeout`` passed; 125 hpcjobs itself failed
(invalid job, submission refused, unknown executor, unreadable file); 130 interrupted;
141 the output pipe was closed by its reader.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from .. import serialize
from ..executor import JobExecutor
from ..job import Job
from ..spec import JobSpec
from ..state import JobState
from . import options
from .progress import Progress

if TYPE_CHECKING:
    from ..executors.batch.host import Host

__all__ = ["run", "submit", "status", "cancel", "hold", "release", "list_jobs", "describe", "EXIT_JOB_FAILED",
           "EXIT_TIMEOUT", "EXIT_ERROR", "EXIT_INTERRUPTED"]

EXIT_JOB_FAILED = 1
EXIT_TIMEOUT = 124       # as timeout(1)
EXIT_ERROR = 125         # as env(1) and timeout(1) for their own failures
EXIT_INTERRUPTED = 130   # 128 + SIGINT, as a shell reports Ctrl-C


def err(message: str) -> None:
    """One line on stderr, prefixed with the program's name."""
    print(f"hpcjobs: {message}", file=sys.stderr, flush=True)


def _executor(ns: argparse.Namespace) -> JobExecutor:
    return JobExecutor.get_instance(ns.executor, url=ns.url,
                                    config=options.executor_config(ns.executor, ns.config))


def run(ns: argparse.Namespace) -> int:
    """Submit ``--count`` copies of the job, wait for all, exit like the first failure."""
    spec = options.build_spec(ns)
    jobs = [Job(spec) for _ in range(ns.count)]
    progress = Progress(jobs, sys.stderr) if len(jobs) > 1 else None
    with _executor(ns) as ex:
        if progress is not None:
            ex.set_job_status_callback(progress)
        # (a batch script of the user's says itself where its output goes)
        captured = (_capture_streams(spec, ex)
                    if len(jobs) == 1 and not ns.json and not ns.batch_script else None)
        _submit_all(ex, jobs)
        try:
            finished = _wait_all(jobs, ns.timeout)
        except KeyboardInterrupt:
            canceled = _cancel_all(jobs)
            _wait_all(jobs, 10.0)
            err(f"interrupted: canceled {canceled} job(s)")
            return EXIT_INTERRUPTED
        if captured is not None and finished:
            _relay_streams(ex, captured)
    if progress is not None:
        progress.finish(jobs)
    _print_jobs(jobs, ns.json)
    if not finished:
        left = [j.native_id or j.id for j in jobs if not j.status.final]
        err(f"--timeout passed; {len(left)} job(s) still running: {' '.join(left)}")
        return EXIT_TIMEOUT
    return _exit_code(jobs)


def _capture_streams(spec: JobSpec, ex: JobExecutor) -> Optional[Path]:
    """Point the streams ``run`` was not told where to put at files in a fresh folder
    of the executor's work directory (which batch nodes share), so that ``run`` can
    show the job's output like any command; returns the folder, or None."""
    if spec.stdout_path is not None and spec.stderr_path is not None:
        return None
    host = _remote_host(ex)
    if host is not None:  # (made with the submit's round trip)
        folder = ex.work_directory / f"run-{uuid.uuid4().hex[:12]}"
        host.make_dir(str(folder))
    else:
        folder = Path(tempfile.mkdtemp(prefix="run-", dir=ex.work_directory))
    if spec.stdout_path is None:
        spec.stdout_path = folder / "stdout"
    if spec.stderr_path is None:
        spec.stderr_path = folder / "stderr"
    return folder


def _remote_host(ex: JobExecutor) -> Optional["Host"]:
    """The host of a batch executor given an ``ssh://`` URL, else None."""
    from ..executors.batch.executor import BatchSchedulerExecutor
    from ..executors.batch.host import LOCAL
    if isinstance(ex, BatchSchedulerExecutor) and ex.host is not LOCAL:
        return ex.host
    return None


def _relay_streams(ex: JobExecutor, folder: Path) -> None:
    """Copy what the job wrote to our stdout/stderr (after it ended), then clean up.
    A backend that runs nothing real (a simulation) leaves no files: nothing to show."""
    host = _remote_host(ex)
    if host is not None:  # (both files in one round trip, then removed with the next)
        paths = [str(folder / "stdout"), str(folder / "stderr")]
        for found, out in zip(host.read_files(paths, limit=1 << 40), (sys.stdout, sys.stderr)):
            if found is not None:
                out.flush()
                out.buffer.write(found.data)
                out.buffer.flush()
        host.remove(str(folder))
        return
    for name, out in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        path = folder / name
        if path.is_file():
            out.flush()
            with path.open("rb") as f:
                shutil.copyfileobj(f, out.buffer)
            out.buffer.flush()
    shutil.rmtree(folder, ignore_errors=True)


def submit(ns: argparse.Namespace) -> int:
    """Submit ``--count`` copies of the job and print their native ids."""
    spec = options.build_spec(ns)
    jobs = [Job(spec) for _ in range(ns.count)]
    with _executor(ns) as ex:
        if ns.hold:
            if ex.name == "local":
                raise ValueError("the local executor releases a held job only from the "
                                 "process that submitted it: use the API "
                                 "(submit(job, hold=True), then release(job))")
            for job in jobs:  # (a held job goes alone: no array)
                ex.submit(job, hold=True)
        else:
            _submit_all(ex, jobs)
    for job in jobs:
        print(serialize.dumps(job) if ns.json else job.native_id)
    return 0


def status(ns: argparse.Namespace) -> int:
    """Attach to each native id and print its current status."""
    with _executor(ns) as ex:
        jobs = _attach_all(ex, ns.ids, ns.timeout)
    return _report(jobs, ns.json, ns.timeout, need_final=False)


def cancel(ns: argparse.Namespace) -> int:
    """Attach to each native id, cancel it, and print how it ended."""
    deadline = time.monotonic() + ns.timeout
    with _executor(ns) as ex:
        jobs = _attach_all(ex, ns.ids, ns.timeout)
        for job in jobs:
            if job.status.state is not JobState.NEW and not job.status.final:
                ex.cancel(job)
        _wait_all(jobs, max(0.0, deadline - time.monotonic()))
    return _report(jobs, ns.json, ns.timeout, need_final=True)


def hold(ns: argparse.Namespace) -> int:
    """Attach to each native id, hold it, and print its status."""
    return _hold_or_release(ns, held=True)


def release(ns: argparse.Namespace) -> int:
    """Attach to each native id, release it, and print its status."""
    return _hold_or_release(ns, held=False)


def _hold_or_release(ns: argparse.Namespace, held: bool) -> int:
    with _executor(ns) as ex:
        jobs = _attach_all(ex, ns.ids, ns.timeout)
        for job in jobs:
            if job.status.state is not JobState.NEW:
                (ex.hold if held else ex.release)(job)
    return _report(jobs, ns.json, ns.timeout, need_final=False)


def gantt(ns: argparse.Namespace) -> int:
    """``hpcjobs gantt``: draw a simulated schedule (Batsim's ``_jobs.csv``) as a PNG."""
    from ..executors.batsim.gantt import GanttUnavailable, draw
    try:
        print(draw(ns.jobs_csv, ns.png, title=ns.title))
    except GanttUnavailable as e:
        err(str(e))
        return EXIT_ERROR
    except (KeyError, ValueError) as e:
        err(f"{ns.jobs_csv}: not a Batsim jobs file ({e})")
        return EXIT_ERROR
    return 0


def list_jobs(ns: argparse.Namespace) -> int:
    """Print the native ids the executor knows about."""
    with _executor(ns) as ex:
        ids = ex.list()
    print(json.dumps(ids) if ns.json else "\n".join(ids), end="\n" if ids or ns.json else "")
    return 0


# -- shared steps -----------------------------------------------------------------------
def _submit_all(ex: JobExecutor, jobs: Sequence[Job]) -> None:
    # one submit_many: the batch schedulers send the copies as one array (docs/arrays.md)
    try:
        ex.submit_many(jobs)
    except BaseException:
        # all or nothing: a refused copy cancels the copies already submitted
        submitted = [job for job in jobs if job.status.state is not JobState.NEW]
        if submitted:
            err(f"{len(jobs) - len(submitted)} of {len(jobs)} submissions failed; "
                f"canceling the {len(submitted)} already submitted")
            _cancel_all(submitted)
        raise


def _cancel_all(jobs: Sequence[Job]) -> int:
    count = 0
    for job in jobs:
        if job.executor is not None and not job.status.final:
            try:
                job.cancel()
                count += 1
            except Exception as e:  # one job's trouble must not stop the others' cancel
                err(f"could not cancel job {job.native_id}: {e}")
    return count


def _wait_all(jobs: Sequence[Job], timeout: Optional[float],
              target: Optional[JobState] = None) -> bool:
    """Wait for every job (to ``target``, default a final state); False on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for job in jobs:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        if job.wait(timeout=remaining, target_states=target) is None:
            return False
    return True


def _attach_all(ex: JobExecutor, ids: Sequence[str], timeout: float) -> list[Job]:
    jobs = []
    for native_id in ids:
        job = Job()
        ex.attach(job, native_id)
        jobs.append(job)
    # attach is asynchronous: the first status follows (QUEUED or later, or FAILED)
    _wait_all(jobs, timeout, JobState.QUEUED)
    return jobs


def describe(job: Job) -> str:
    """``ID STATE (exit code N): message``, plus why a queued job waits and until when."""
    s = job.status
    text = f"{job.native_id} {s.state.name}"
    if s.exit_code is not None:
        text += f" (exit code {s.exit_code})"
    meta = s.metadata or {}
    if s.state is JobState.QUEUED and meta.get("held"):
        text += f" (held: {meta.get('reason_pending') or 'until released'})"
    elif s.state is JobState.QUEUED and meta.get("reason_pending"):
        text += f" (pending: {meta['reason_pending']}"
        if isinstance(meta.get("t_estimate"), (int, float)):
            start = datetime.fromtimestamp(meta["t_estimate"]).isoformat(" ", "seconds")
            text += f", estimated start {start}"
        text += ")"
    if s.message:
        text += ": " + " ".join(s.message.split())  # one line per job, whatever the backend said
    return text


def _print_jobs(jobs: Sequence[Job], as_json: bool) -> None:
    if as_json:
        for job in jobs:
            print(serialize.dumps(job))


def _report(jobs: Sequence[Job], as_json: bool, timeout: float, need_final: bool) -> int:
    code = 0
    for job in jobs:
        state = job.status.state
        if state is JobState.NEW:
            err(f"job {job.native_id}: no status within {timeout:g} s")
            code = EXIT_TIMEOUT
            continue
        if need_final and not state.final:
            err(f"job {job.native_id}: still {state.name} {timeout:g} s after cancel")
            code = EXIT_TIMEOUT
        if as_json:
            print(serialize.dumps(job))
        else:
            print(describe(job))
    return code


def _exit_code(jobs: Sequence[Job]) -> int:
    """The first unsuccessful job's exit code as a shell would show it, else 0."""
    code = 0
    for job in jobs:
        s = job.status
        if s.state is JobState.COMPLETED and not s.exit_code:
            continue
        err(f"job {describe(job)}")
        if code == 0:
            if s.exit_code is None or s.exit_code == 0:
                code = EXIT_JOB_FAILED
            elif s.exit_code < 0:
                code = 128 - s.exit_code  # killed by signal N -> 128+N
            else:
                code = s.exit_code & 0xFF or EXIT_JOB_FAILED
    return code
