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
from typing import Optional

from ..executors.batch.host import FileData, Follow, NotesRead, followed_paths, noted_lines
from .host import split_many
from .ops import ReadNotes

__all__ = ["split_notes", "Unreadable"]


class Unreadable(ValueError):
    """The output does not add up (a file changed or vanished while it was read)."""


def split_notes(out: bytes, op: ReadNotes, follow: Follow) -> Optional[NotesRead]:
    """What ``op`` (made for ``follow``) read, from its output; None if the notes
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
    followed = followed_paths(follow, files.values())
    found = None
    if followed is not None and followed[1] == int(count):
        found = split_many(rest, [0] * len(followed[0]), 1 << 62)
    return NotesRead(here, files, True, dict(zip(followed[0], found)) if found and followed else {})
