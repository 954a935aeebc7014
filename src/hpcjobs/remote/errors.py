"""What can go wrong on the way to a remote machine, each with its own class.

Every one is a :class:`~hpcjobs.errors.SubmitException` (a submit that meets it raises
it as is), with ``transient`` set where trying again later may help: an unreachable
host or a dropped connection may come back; a refused login or a changed host key will
not until a person acts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from ..errors import SubmitException

if TYPE_CHECKING:
    from .ops import Result

__all__ = ["SshError", "HostKeyError", "LoginError", "HostUnreachableError",
           "SshConnectionLost", "SshTimeout", "RemoteCommandError", "RemoteCommandNotFound"]


class SshError(SubmitException):
    """ssh could not do what was asked; ``stderr`` holds ssh's own words."""

    def __init__(self, message: str, stderr: str = "", transient: bool = False) -> None:
        tail = stderr.strip()[-1000:]
        super().__init__(f"{message}: {tail}" if tail else message, None, transient)
        self.stderr = stderr


class HostKeyError(SshError):
    """The server's host key is unknown or has changed: the connection is refused (check
    the key with the site, then update ``known_hosts``; hpcjobs never skips this)."""


class LoginError(SshError):
    """The server refused the login (no key, agent or ticket it accepts; hpcjobs never
    asks for a password)."""


class HostUnreachableError(SshError):
    """No connection to the host (name unknown, refused, timed out, no route)."""


class SshConnectionLost(SshError):
    """The connection broke during a round trip. ``completed`` holds the results of the
    operations known to have finished; the others may or may not have run."""

    def __init__(self, message: str, stderr: str = "",
                 completed: Sequence["Result"] = ()) -> None:
        super().__init__(message, stderr, transient=True)
        self.completed = list(completed)


class SshTimeout(SshConnectionLost):
    """A round trip outlived its deadline; its ssh was killed."""


class RemoteCommandError(SubmitException):
    """A remote command exited non-zero (``result`` has its exit code and output)."""

    def __init__(self, message: str, result: Optional["Result"] = None) -> None:
        super().__init__(message)
        self.result = result


class RemoteCommandNotFound(RemoteCommandError):
    """The remote side has no such command on its PATH (e.g. no ``sbatch`` there)."""
