"""A batch executor's change notes and the files of the jobs they name, read back from
the output of one :class:`~hpcjobs.remote.ops.ReadNotes` (a status tick in one round
trip: executors/batch/changes.py says what the notes are).

The output, in order: ``1`` (``0``: no such directory, and nothing else); the names of
the notes files, each followed by a NUL byte, then ``/`` (no name holds one); a status
line (as :class:`~hpcjobs.remote.ops.StatRead`'s) for the directory, then for each file
and for the copy of the bytes read from it (the copy's size is their length); those
bytes; the count of names taken from their whole lines; then, as
:class:`~hpcjobs.remote.ops.StatReadMany`'s, the job files.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional

from ..executors.batch.host import FileData, Follow, NotesRead, noted_names
from .host import split_many
from .ops import ReadNotes

__all__ = ["read_notes_op", "split_notes", "Unreadable"]


class Unreadable(ValueError):
    """The output does not add up (a file changed or vanished while it was read)."""


def read_notes_op(directory: str, offsets: Mapping[str, int], follow: Follow) -> ReadNotes:
    """The operation that reads the notes of ``directory`` (each file of ``offsets``
    from its offset) and what ``follow`` asks for."""
    return ReadNotes(directory, tuple(offsets.items()),
                     follow._replace(names=tuple(n for n in follow.names if followable(n))))


def split_notes(out: bytes, follow: Follow) -> Optional[NotesRead]:
    """What the :func:`read_notes_op` of ``follow`` read, from its output; None if the notes
    directory is gone. Unreadable if the output does not add up: read again another way.
    Job files whose part does not add up are left out (the caller reads them anew)."""
    head, _, rest = out.partition(b"\n")
    if head == b"0":
        return None
    blob, sep, rest = rest.partition(b"/\n")
    if head != b"1" or not sep or not blob.endswith(b"\0") and blob:
        raise Unreadable("ReadNotes: no list of notes files")
    names = [os.fsdecode(n) for n in blob.split(b"\0")[:-1]]
    stats = []
    for _ in range(1 + 2 * len(names)):
        line, sep, rest = rest.partition(b"\n")
        fields = line.split(b" ")
        if not sep or len(fields) < 5:
            raise Unreadable("ReadNotes: a status line is missing")
        try:
            stats.append(FileData(float(fields[0]), (int(fields[1]), int(fields[2])),
                                  int(fields[3]), b" ".join(fields[4:]) == b"directory"))
        except ValueError:
            raise Unreadable(f"ReadNotes: not a status line: {line!r}") from None
    here = stats[0]
    if not here.is_dir:
        raise Unreadable("ReadNotes: the notes directory is not one")
    files: dict[str, Optional[FileData]] = {}
    pos = 0
    for i, name in enumerate(names):
        st, copy = stats[1 + 2 * i], stats[2 + 2 * i]
        files[name] = FileData(st.mtime, st.identity, st.size, False, rest[pos:pos + copy.size])
        pos += copy.size
    count, sep, rest = rest[pos:].partition(b"\n")
    if not sep or not count.isdigit():
        raise Unreadable("ReadNotes: no count of the names followed")
    # the job files: none if the names taken here are not those the script took
    jobs = followed_names(follow, files.values())
    if jobs is None or jobs[1] != int(count):
        return NotesRead(here, files, True, {})
    paths = followed_paths(follow, jobs[0])
    found = split_many(rest, [0] * len(paths), 1 << 62)
    return NotesRead(here, files, True, {} if found is None else dict(zip(paths, found)))


def followed_names(follow: Follow, files: Iterable[Optional[FileData]]
                   ) -> Optional[tuple[list[str], int]]:
    """The job directories whose files a :class:`ReadNotes` reads for ``follow``, in
    order: its ``names``, then those on the whole lines of ``files`` (at most
    ``follow.most``; a name on two lines twice), leaving out a name that is no
    directory's (``.``, ``..``, one with a ``/``); and how many came from the lines.
    None if the data holds a NUL byte (which a shell reading the lines would drop)."""
    names = [n for n in follow.names if followable(n)]
    given = len(names)
    for found in files:
        if found is not None and found.data:
            if b"\0" in found.data:
                return None
            names += [n for n in noted_names(found.data) if followable(n)]
    del names[given + follow.most:]
    return names, len(names) - given


def followed_paths(follow: Follow, names: Iterable[str]) -> list[str]:
    """The paths read for ``follow`` and the job directories ``names``, in order: its
    ``paths``, then the ``files`` of each name's directory."""
    return [*follow.paths, *(os.path.join(follow.jobs, n, f) for n in names for f in follow.files)]


def followable(name: str) -> bool:
    """True if ``name`` can be a job directory's name (the notes name nothing else)."""
    return name not in ("", ".", "..") and "/" not in name
