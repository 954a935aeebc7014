"""Staging: the copies, links and moves of ``hpcjobs.staging`` between the client's
files and a job's directory on the machine the job runs on: this one (the local
executor, a batch executor here) or a host over ssh, through that host's ``put`` and
``get`` (executors/batch/host.py; :func:`place` is this machine's). A target is never
left half-written: each copy goes to a temporary name beside it and is renamed over
it. Errors are ``StagingError``s naming the file.
"""

from __future__ import annotations

import os
import shutil
import logging
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Protocol

from .staging import URI, StageIn, StageOut, StageOutFlags, StagingMode

if TYPE_CHECKING:
    from pathlib import Path

    from .job import Job
    from .spec import JobSpec
    from .state import JobState, JobStatus

log = logging.getLogger(__name__)

__all__ = ["StagingError", "stage_in", "stage_out", "clean_up", "place", "Side", "finish"]


class StagingError(Exception):
    """A file could not be staged; the message names it and says why."""


class Side(Protocol):
    """Where the job's files are, as staging sees it (batch/host.py's ``Host``)."""

    def put(self, source: str, target: str, mode: StagingMode) -> None:
        """The client's ``source`` to ``target`` there."""

    def get(self, source: str, target: str, mode: StagingMode) -> None:
        """``source`` there to the client's ``target``."""

    def exists(self, path: str) -> bool:
        """True if ``path`` exists there."""

    def remove(self, path: str) -> None:
        """Remove ``path`` there (gone already: no error)."""

    def flush(self) -> None:
        """Carry out the changes asked so far."""

    def expand_user(self, path: str) -> str:
        """``path`` with a leading ``~`` made the home directory there."""


def _this_machine() -> Side:
    from .executors.batch.host import LOCAL
    return LOCAL


def _local(uri: URI, what: str) -> str:
    if not uri.is_local:
        raise StagingError(f"{what} {uri}: only files on this machine can be staged here")
    return uri.path


def _in_job_dir(path: "Path", job_dir: str, side: Optional[Side] = None) -> str:
    expand = side.expand_user if side is not None else os.path.expanduser
    return os.path.join(job_dir, expand(str(path)))


def place(source: str, target: str, mode: StagingMode) -> None:
    """``source`` to ``target`` by ``mode``, through a temporary name beside the target."""
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    part = f"{target}.hpcjobs-part.{os.getpid()}"
    try:
        if mode is StagingMode.LINK:
            os.symlink(os.path.abspath(source), part)
        elif mode is StagingMode.MOVE:
            try:
                os.rename(source, part)  # same filesystem: no copy at all
            except OSError:
                _copy(source, part)
        else:
            _copy(source, part)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(part, target)
        if mode is StagingMode.MOVE and os.path.lexists(source):
            remove(source)
    except BaseException:
        remove(part)
        raise


def _copy(source: str, target: str) -> None:
    if os.path.isdir(source):
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target)


def remove(path: str) -> None:
    """Remove the file, link or directory tree ``path`` on this machine."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def stage_in(entries: Iterable[StageIn], job_dir: str, side: Optional[Side] = None) -> None:
    """Each entry's source (the client's) to its target in ``job_dir`` (on ``side``,
    this machine by default); StagingError at the first that fails."""
    side = side or _this_machine()
    for entry in entries:
        source = _local(entry.source, "stage-in source")
        target = _in_job_dir(entry.target, job_dir, side)
        try:
            side.put(source, target, entry.mode)
        except OSError as e:
            raise StagingError(f"stage-in of {source} to {target} failed: "
                               f"{e.strerror or e}") from e


def stage_out(entries: Iterable[StageOut], job_dir: str, final: "JobState",
              side: Optional[Side] = None) -> None:
    """The entries whose flags cover ``final``, from ``job_dir`` (on ``side``) to their
    targets; a missing source is skipped with IF_PRESENT, else an error. StagingError
    at the first that fails (the rest are still tried first)."""
    side = side or _this_machine()
    errors = []
    for entry in entries:
        if not entry.flags.applies_to(final):
            continue
        source = _in_job_dir(entry.source, job_dir, side)
        target = _local(entry.target, "stage-out target")
        try:
            if not side.exists(source):
                if not entry.flags & StageOutFlags.IF_PRESENT:
                    errors.append(f"stage-out of {source}: no such file")
                continue
            side.get(source, target, entry.mode)
        except (OSError, StagingError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else e
            errors.append(f"stage-out of {source} to {target} failed: {why}")
    if errors:
        raise StagingError("; ".join(errors))


def clean_up(paths: Iterable["Path"], job_dir: str, flags: StageOutFlags,
             final: "JobState", side: Optional[Side] = None) -> Optional[str]:
    """Remove ``paths`` (relative: in ``job_dir``, on ``side``) if ``flags`` cover
    ``final``; a message for those that could not be removed, or None."""
    if not flags.applies_to(final):
        return None
    side = side or _this_machine()
    failed = []
    for path in paths:
        full = _in_job_dir(path, job_dir, side)
        try:
            side.remove(full)
        except OSError as e:
            failed.append(f"{full}: {e.strerror or e}")
    try:
        side.flush()
    except OSError as e:
        failed.append(str(e))
    return f"cleanup could not remove {', '.join(failed)}" if failed else None


def finish(jobs: Iterable["Job"], status: "JobStatus", spec: "JobSpec", job_dir: str,
           report: Callable[["Job", "JobStatus", bool], None],
           side: Optional[Side] = None) -> None:
    """A staged job ended with ``status``: STAGE_OUT, CLEANUP, then its final status
    (FAILED, naming the file, if a stage-out failed), each reported for every one of
    ``jobs`` (``report(job, status, ran)``). Slow (copies): run it on its own thread."""
    from .state import JobState, JobStatus
    jobs = list(jobs)
    for state in (JobState.STAGE_OUT, JobState.CLEANUP):
        for job in jobs:
            report(job, JobStatus(state), True)
        try:
            if state is JobState.STAGE_OUT:
                stage_out(spec.stage_out or (), job_dir, status.state, side)
            else:
                problem = clean_up(spec.cleanup or (), job_dir, spec.cleanup_flags,
                                   status.state, side)
                if problem:
                    log.warning("%s", problem)
        except StagingError as e:
            message = f"{e} (the job itself: {status.state.name}" + (
                f", {status.message})" if status.message else ")")
            status = JobStatus(JobState.FAILED, status.time, message, status.exit_code,
                               status.metadata)
    for job in jobs:
        report(job, status, True)
