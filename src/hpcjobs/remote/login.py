"""Who and where a login on a remote host is: its environment and its user.

Every executor that works over ssh needs the same three facts about the login node
before its first job: the environment a non-interactive login starts with (what a job
that inherits it gets, and where ``~`` is), the user's id and name (to list and follow
only that user's jobs). :data:`PROBE` asks for all of them; an executor puts these
operations in the first batch it sends anyway, so they cost no round trip of their own,
and :func:`read_login` makes sense of the answers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Sequence

from .errors import SshError
from .ops import Result, Run

__all__ = ["PROBE", "RemoteLogin", "read_login"]

#: the login's environment NUL-separated (GNU, BusyBox), else one variable a line; the
#: user's id; the user's name; gzip's path, if there is one
PROBE = (Run(["sh", "-c", "env -0 2>/dev/null || env"]), Run(["id", "-u"]), Run(["id", "-un"]),
         Run(["sh", "-c", "command -v gzip || :"]))


@dataclass(frozen=True)
class RemoteLogin:
    """A login on the remote host, as :data:`PROBE` found it."""

    environ: Mapping[str, str]
    uid: int
    name: str
    gzip: bool = False  # (large files then go compressed: WriteFile.gzipped)

    @property
    def home(self) -> str:
        """The login's home directory (``$HOME``)."""
        return self.environ["HOME"]


def read_login(results: Sequence[Result], where: str) -> RemoteLogin:
    """The login that :data:`PROBE`'s ``results`` (in its order) describe; a
    RemoteCommandError if one of them failed, an SshError if the answer makes no sense.
    Without ``env -0`` a value holding a newline comes out cut at it."""
    if len(results) != len(PROBE):
        raise ValueError(f"{len(PROBE)} results expected, got {len(results)}")
    for r in results:
        r.check(where)
    out = results[0].stdout
    environ: dict[str, str] = {}
    for entry in out.split(b"\0" if b"\0" in out else b"\n"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            environ[os.fsdecode(name)] = os.fsdecode(value)
    if "HOME" not in environ:
        raise SshError(f"no HOME in the environment on {where}")
    try:
        uid = int(results[1].text)
    except ValueError:
        raise SshError(f"'id -u' on {where} printed {results[1].text[:100]!r}") from None
    return RemoteLogin(environ, uid, results[2].text.strip(), bool(results[3].text.strip()))
