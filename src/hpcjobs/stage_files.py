"""Staging done on this machine: the copies, links and moves of ``hpcjobs.staging``
between the client's files and a job directory both on this machine (the local
executor). A target is never left half-written: each copy goes to a temporary name
beside it and is renamed over it. Errors are ``StagingError``s naming the file.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Iterable, Optional

from .staging import URI, StageIn, StageOut, StageOutFlags, StagingMode

if TYPE_CHECKING:
    from pathlib import Path

    from .state import JobState

__all__ = ["StagingError", "stage_in", "stage_out", "clean_up"]


class StagingError(Exception):
    """A file could not be staged; the message names it and says why."""


def _local(uri: URI, what: str) -> str:
    if not uri.is_local:
        raise StagingError(f"{what} {uri}: only files on this machine can be staged here")
    return uri.path


def _in_job_dir(path: "Path", job_dir: str) -> str:
    return os.path.join(job_dir, os.path.expanduser(str(path)))


def _place(source: str, target: str, mode: StagingMode) -> None:
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
            _remove(source)
    except BaseException:
        _remove(part)
        raise


def _copy(source: str, target: str) -> None:
    if os.path.isdir(source):
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def stage_in(entries: Iterable[StageIn], job_dir: str) -> None:
    """Each entry's source to its target in ``job_dir``; StagingError at the first
    that fails."""
    for entry in entries:
        source = _local(entry.source, "stage-in source")
        target = _in_job_dir(entry.target, job_dir)
        try:
            _place(source, target, entry.mode)
        except OSError as e:
            raise StagingError(f"stage-in of {source} to {target} failed: "
                               f"{e.strerror or e}") from e


def stage_out(entries: Iterable[StageOut], job_dir: str, final: "JobState") -> None:
    """The entries whose flags cover ``final``, from ``job_dir`` to their targets; a
    missing source is skipped with IF_PRESENT, else an error. StagingError at the
    first that fails (the rest are still tried first)."""
    errors = []
    for entry in entries:
        if not entry.flags.applies_to(final):
            continue
        source = _in_job_dir(entry.source, job_dir)
        target = _local(entry.target, "stage-out target")
        if not os.path.lexists(source):
            if not entry.flags & StageOutFlags.IF_PRESENT:
                errors.append(f"stage-out of {source}: no such file")
            continue
        try:
            _place(source, target, entry.mode)
        except OSError as e:
            errors.append(f"stage-out of {source} to {target} failed: {e.strerror or e}")
    if errors:
        raise StagingError("; ".join(errors))


def clean_up(paths: Iterable["Path"], job_dir: str, flags: StageOutFlags,
             final: "JobState") -> Optional[str]:
    """Remove ``paths`` (relative: in ``job_dir``) if ``flags`` cover ``final``; a
    message for those that could not be removed, or None."""
    if not flags.applies_to(final):
        return None
    failed = []
    for path in paths:
        full = _in_job_dir(path, job_dir)
        try:
            _remove(full)
        except OSError as e:
            failed.append(f"{full}: {e.strerror or e}")
    return f"cleanup could not remove {', '.join(failed)}" if failed else None
