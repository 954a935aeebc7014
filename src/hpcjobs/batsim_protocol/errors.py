"""Errors of the Batsim protocol stack, shared by both ends.

Each carries the exit code a Batsim-side process (``hpcjobs.sim``) ends with for it
(docs/sim.md); the decision side turns them into job failures instead.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["BatsimError", "InputError", "ProtocolError", "PeerGone"]


class BatsimError(Exception):
    """Base class: a precise, user-facing reason why the simulation cannot go on."""

    exit_code = 1


class InputError(BatsimError):
    """A platform or workload file (or an option) is invalid or unsupported."""

    exit_code = 1


class ProtocolError(BatsimError):
    """A message breaks the protocol: undecodable, or something Batsim would refuse.

    The transport that received it adds where: the protocol's name and the message's
    number on the connection (1 = the first message received), so the user can find
    it; ``field`` names the offending part of the message when the codec knows it.
    """

    exit_code = 3

    def __init__(self, reason: str, field: Optional[str] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.protocol: Optional[str] = None
        self.number: Optional[int] = None

    def at(self, protocol: str, number: int) -> ProtocolError:
        """This error, located at message ``number`` of ``protocol``."""
        self.protocol, self.number = protocol, number
        return self

    def __str__(self) -> str:
        where = []
        if self.protocol is not None:
            where.append(f"{self.protocol} protocol")
        if self.number is not None:
            where.append(f"message {self.number}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class PeerGone(BatsimError):
    """The other end closed its connection, or did not answer in time."""

    exit_code = 4
