"""How messages travel between Batsim and the decision process.

Every transport has the same two ends: the Batsim end (:class:`Channel` ``exchange``:
send a request, wait for its reply, never forever) and the decision end
(:class:`Endpoint` ``receive`` / ``send``). Both count the messages they receive and
locate a codec's :class:`..errors.ProtocolError` at the protocol and message number.
"""

from __future__ import annotations

from typing import Callable, Protocol

from ..codecs import Codec
from ..errors import ProtocolError
from ..events import Message

__all__ = ["Channel", "Endpoint", "Decoder"]


class Decoder:
    """A codec plus the count of messages decoded with it (for error messages)."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.received = 0

    def decode(self, raw: bytes) -> Message:
        self.received += 1
        try:
            return self.codec.decode(raw)
        except ProtocolError as e:
            raise e.at(self.codec.name, self.received) from None


class Channel(Protocol):
    """The Batsim end of a connection."""

    @property
    def waited(self) -> float:
        """Wall-clock seconds spent waiting for replies."""

    def exchange(self, message: Message) -> Message:
        """Send ``message`` and return the reply; ``PeerGone`` if there is none."""

    def farewell(self, message: Message) -> None:
        """Send a last message that expects no reply (best effort)."""

    def close(self) -> None:
        """Release the connection."""


class Endpoint(Protocol):
    """The decision-process end of a connection."""

    def receive(self, alive: Callable[[], None]) -> Message:
        """The next message from Batsim; ``alive`` is called while waiting (it raises
        when Batsim is known to be gone)."""

    def send(self, message: Message) -> None:
        """Reply to the last message received."""

    def close(self) -> None:
        """Release the connection."""
