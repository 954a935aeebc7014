"""The other end of a session: what the decision loop needs from a simulator, whether
it is a process over ZeroMQ (:class:`.process.SimulatorProcess`: real Batsim, or
``python -m hpcjobs.sim``) or hpcjobs.sim in this process
(:class:`.inprocess.InProcessSimulator`)."""

from __future__ import annotations

from typing import Protocol

from ...batsim_protocol.events import Message

__all__ = ["Simulator", "SimulatorGone"]


class SimulatorGone(Exception):
    """The simulator ended or broke the protocol (the message says which, and why)."""


class Simulator(Protocol):
    """A simulator and the connection to it, owned by one session."""

    #: what the log says the session runs
    description: str

    def receive(self) -> Message:
        """Batsim's next message; :class:`SimulatorGone` if there is none."""

    def send(self, message: Message) -> None:
        """Reply to the last message received."""

    def check(self) -> None:
        """:class:`SimulatorGone` if the simulator is known to be gone."""

    def stop(self) -> None:
        """Stop the simulator at once (any thread)."""

    def finish(self, timeout: float) -> None:
        """After the decision loop: let the simulator end (writing its outputs)."""

    def close(self) -> None:
        """Release the connection (the decision loop's thread, at its end)."""
