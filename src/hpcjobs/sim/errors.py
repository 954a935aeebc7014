"""The simulator's error types; each maps to one process exit code (see docs/sim.md)."""


class SimError(Exception):
    """Base class: a precise, user-facing reason why the simulation cannot go on."""

    exit_code = 1


class InputError(SimError):
    """A command-line option, platform file or workload file is invalid or unsupported."""

    exit_code = 1


class ProtocolViolation(SimError):
    """The decision process sent something Batsim would refuse (Batsim aborts on these)."""

    exit_code = 3


class Deadlock(SimError):
    """Nothing can happen any more but the simulation is not over (SimGrid's "deadlock")."""

    exit_code = 3


class PeerGone(SimError):
    """The decision process closed its socket or did not answer in time."""

    exit_code = 4
