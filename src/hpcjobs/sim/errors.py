"""The simulator's error types; each maps to one process exit code (see docs/sim.md).

Those the protocol stack raises (bad input files, undecodable messages, a vanished
peer) are its own; the simulator adds what only a simulation can run into.
"""

from ..batsim_protocol.errors import BatsimError as SimError
from ..batsim_protocol.errors import InputError, PeerGone, ProtocolError

__all__ = ["SimError", "InputError", "ProtocolViolation", "Deadlock", "PeerGone"]


class ProtocolViolation(ProtocolError):
    """The decision process sent something Batsim would refuse (Batsim aborts on these)."""


class Deadlock(SimError):
    """Nothing can happen any more but the simulation is not over (SimGrid's "deadlock")."""

    exit_code = 3
