"""Change notes: how a job script tells its executor's monitor "look at my files now".

Looking at every live job's files on every monitor tick costs a stat or two per job: with
thousands of jobs in flight that is most of a core, and a submit loop pays for it. So
each executor has its own notes directory, ``<work directory>/changes/<pid>-<random>/``
(mode 0700). A job script it submitted writes ``started`` or ``exitcode`` in its job
directory, then creates an empty file named after that job directory in the notes
directory. The monitor lists the notes directory (empty when nothing happened), removes
each note and looks at those jobs' files only: a tick costs what changed, not what is in
flight.

Removing a note before reading the job's files is what makes it safe: a script that
writes again afterwards makes a new note, seen on the next tick. A script whose notes
directory is gone (its executor closed) writes its own files all the same; whoever
attaches to the job later looks at them directly.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from pathlib import Path

__all__ = ["ChangeNotes"]

log = logging.getLogger(__name__)

CHANGES = "changes"


class ChangeNotes:
    """One executor's notes directory (see the module docstring); made on first use."""

    def __init__(self, work_dir: Path) -> None:
        self.path = work_dir / CHANGES / f"{os.getpid()}-{secrets.token_hex(4)}"
        self._made = False

    def note_for(self, name: str) -> Path:
        """The note the job script of job directory ``name`` writes (the directory is
        created here, so it exists before any script can run)."""
        if not self._made:
            self.path.parent.mkdir(mode=0o700, exist_ok=True)
            self.path.mkdir(mode=0o700, exist_ok=True)
            self._made = True
        return self.path / name

    def take(self) -> list[str]:
        """The job directory names noted since the last call (their notes removed)."""
        if not self._made:
            return []
        names = []
        try:
            with os.scandir(self.path) as entries:
                for entry in entries:
                    try:
                        os.unlink(entry.path)
                    except FileNotFoundError:
                        continue
                    names.append(entry.name)
        except FileNotFoundError:  # removed from outside: make it again on next use
            self._made = False
        return names

    def remove(self) -> None:
        """Delete the notes directory (the executor is closed: nobody reads it)."""
        if self._made:
            shutil.rmtree(self.path, ignore_errors=True)
            self._made = False
