"""Change notes: how a job script tells its executor's monitor "look at my files now".

Looking at every live job's files on every monitor tick costs a stat or two per job: with
thousands of jobs in flight that is most of a core, and a submit loop pays for it. So
each executor has its own notes directory, ``<work directory>/changes/<pid>-<random>/``
(mode 0700). A job script it submitted writes ``started`` or ``exitcode`` in its job
directory, then appends a line, the name of its job directory, to the notes file of the
host it runs on, ``<notes directory>/<host name>``. The monitor reads the lines the files
gained since its last look and looks at those jobs' files only: a tick costs what
changed, not what is in flight. Over ssh the host reads those jobs' files in the
round trip that reads the notes, after them (:meth:`Host.read_notes`): a tick is one
round trip, changes or none. The line carries the name only, no status: the files say
when (their mtimes) as well as what, and whoever attaches later reads the same files.

Why lines appended to a file, and a file per host:

* Appending to a file that exists makes no inode; creating a file per note makes one,
  and the monitor then removes it. Every job notes twice (start, end). A note made and
  removed costs several appends' CPU (docs/decisions.md), and on a cluster's shared
  file system the creation and the removal are each a request to the metadata server,
  which every user's jobs share.
* ``O_APPEND`` writes are atomic between the processes of one host, not between the
  clients of an NFS server: NFS has no append, the client computes the end of the
  file, and two hosts appending at once can write over each other's line (open(2),
  ``O_APPEND``). A host's file has one writer host. (The script reads the name from
  /proc, else from ``uname -n``; failing both, the file is ``localhost``.)

A line is taken once its newline is there: a write seen halfway is taken whole on the
next look. Reading a job's files after its line is read is what makes it safe: a
script that writes again afterwards appends a new line, seen on the next tick. A
script whose notes directory is gone (its executor closed) writes its own files all the
same, and no note: ``>>`` makes a missing file, not a missing directory. Whoever
attaches to the job later looks at its files directly.

The files grow by a line per change (the job directory's name: 37 bytes for a job id)
and go with the notes directory when the executor closes; the job directories
themselves take far more room.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Optional, Sequence

from .host import FileData, Follow, Host, noted_names

__all__ = ["ChangeNotes"]

CHANGES = "changes"
#: looks between two listings of the notes directory even when its mtime stays (a
#: file system whose mtimes are coarse may hide a new host's file that long)
_RELIST = 20


class ChangeNotes:
    """One executor's notes directory (see the module docstring), on ``host``; made on
    first use. ``follow``: the files of a noted job's directory (in ``work_dir``) that
    :meth:`take_and_read` reads with the notes."""

    def __init__(self, work_dir: Path, host: Host, follow: Sequence[str] = ()) -> None:
        self.path = work_dir / CHANGES / f"{os.getpid()}-{secrets.token_hex(4)}"
        self._follow = Follow(os.fspath(work_dir), tuple(follow))
        self._host = host
        self._made = False
        #: per notes file: its identity and the bytes of it taken (whole lines)
        self._taken: dict[str, tuple[tuple[int, int], int]] = {}
        self._again: list[str] = []
        # the directory's mtime when it was last listed, and the takes since: a file
        # is added when a new host first notes, which changes the directory's mtime
        self._listed: Optional[float] = None
        self._unlisted = 0

    def directory(self) -> Path:
        """The directory whose files job scripts append their notes to (it is created
        here, so it exists before any script can run)."""
        if not self._made:
            self._host.make_dir(os.fspath(self.path.parent), exist_ok=True)
            self._host.make_dir(os.fspath(self.path), exist_ok=True)
            self._made = True
        return self.path

    def again(self, name: str) -> None:
        """Have the next :meth:`take` return ``name`` too (a note read too early)."""
        self._again.append(name)

    def take(self) -> list[str]:
        """The job directory names noted since the last call, each once, in the order
        they were first noted in (one host's file after another)."""
        return self.take_and_read()[0]

    def take_and_read(self, paths: Sequence[str] = ()
                      ) -> tuple[list[str], dict[str, Optional[FileData]]]:
        """:meth:`take`, and, read in the same request after the notes, the ``follow``
        files of the jobs named (and of those given :meth:`again`) and ``paths``, by
        path (one left out was not read)."""
        names, self._again = self._again, []
        if not self._made:
            return names, {}
        # the directory is listed again only if its mtime moved (a new host's file)
        self._unlisted += 1
        follow = self._follow._replace(names=tuple(names), paths=tuple(paths)) \
            if names or paths else self._follow
        read = self._host.read_notes(
            os.fspath(self.path), {f: taken[1] for f, taken in self._taken.items()},
            self._relist, follow)
        if read is None:  # removed from outside: made again on next use
            self._made = False
            self._taken.clear()
            self._listed = None
            return names, {}
        if read.listed:
            self._listed, self._unlisted = read.directory.mtime, 0
        for name, found in read.files.items():
            known = self._taken.get(name)
            if found is not None and known is not None and found.identity != known[0]:
                # replaced: from its start (the files of the jobs it names were not read
                # with it: the caller reads them)
                found, known = self._host.read_files([os.path.join(self.path, name)])[0], None
            if found is None:
                continue
            whole = found.data.rfind(b"\n") + 1
            self._taken[name] = (found.identity, (known[1] if known else 0) + whole)
            names += noted_names(found.data)
        return list(dict.fromkeys(names)), read.followed

    def _relist(self, here: FileData) -> bool:
        """Whether to list the directory again, which is ``here`` now."""
        return here.mtime != self._listed or self._unlisted >= _RELIST

    def remove(self) -> None:
        """Delete the notes directory (the executor is closed: nobody reads it)."""
        if self._made:
            self._host.remove(os.fspath(self.path))
            self._made = False
