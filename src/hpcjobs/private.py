"""Files and folders only their owner can read: what hpcjobs makes for itself.

Every file hpcjobs creates for its own bookkeeping is mode 0600 (0700 for a script) and
every folder 0700, whatever the user's umask: job records, logs and scripts can hold
arguments and environment values. A path the user names for a job (``stdout_path``,
``stderr_path``) is not ours: it is created under the user's umask, as a shell would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

__all__ = ["FILE_MODE", "DIR_MODE", "make_dirs", "opener", "create", "fill"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_dirs(path: Path) -> None:
    """Create ``path`` and the parents it lacks, each mode 0700 (a folder that exists
    already is left as it is)."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile by another process
            pass


def opener(path: str, flags: int) -> int:
    """An ``opener`` for :func:`open` that creates the file with mode 0600."""
    return os.open(path, flags, FILE_MODE)


def create(path: Union[str, Path], data: bytes, mode: int = FILE_MODE,
           exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` (mode ``mode`` if it is created); ``exclusive``: the
    file must not exist yet."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, mode)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def fill(path: Union[str, Path], data: bytes, mode: int = FILE_MODE) -> None:
    """Write ``data`` into ``path``, a file of ours made empty beforehand (a spare job
    directory's script), keeping its mode (``mode`` if it has gone meanwhile and is
    made again).

    Why not :func:`create`: ext4 flushes a file that was truncated to zero when it is
    closed (its ``auto_da_alloc`` heuristic for replace-via-truncate, ext4(5)), and
    ``O_TRUNC`` sets that off even on an empty file: the close then costs tens of
    microseconds, more on a busy disk, on the submit path. A file found not empty is
    truncated as usual."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, mode)
    try:
        if os.fstat(fd).st_size:
            os.ftruncate(fd, 0)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
