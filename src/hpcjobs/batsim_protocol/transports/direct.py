"""Both ends in one process: messages handed over as they are, with no socket and no
encoding in between.

The Batsim end is a generator (a *conversation*): it yields each request and is sent
the reply, and returns once the simulation is over. :class:`DirectEndpoint` is the
decision end over it, with the :class:`.Endpoint` interface of every other transport,
so the decision loop cannot tell it from a socket. The Batsim end runs in the thread
that calls :meth:`DirectEndpoint.send`, as a simulator process would compute while
the decision process waits for its next message; what it raises is held and raised
by the next :meth:`DirectEndpoint.receive`, where a decision process finds a dead
simulator. A reply is checked as the receiving end's decoder checks it (``check``):
what the JSON decoder refuses is refused here too, at the same message number.
"""

from __future__ import annotations

from typing import Callable, Generator, Optional

from ..errors import PeerGone, ProtocolError
from ..events import Message

__all__ = ["Conversation", "DirectEndpoint"]

#: the Batsim end: yields requests, is sent replies, returns when the simulation is over
Conversation = Generator[Message, Message, None]


class DirectEndpoint:
    """The decision process's end of a conversation running in this process."""

    def __init__(self, batsim: Conversation, check: Callable[[Message], Message], protocol: str) -> None:
        self._batsim = batsim
        self._check = check
        self._protocol = protocol
        self._sent = 0  # replies handed over (the Batsim end's message numbers)
        self._started = False
        self._next: Optional[Message] = None
        self._error: Optional[BaseException] = None
        self._stopped = False

    def receive(self, alive: Callable[[], None]) -> Message:
        """The Batsim end's next request (computed by the first call, else by the
        :meth:`send` before); what the Batsim end raised meanwhile is raised here."""
        if not self._started:
            self._started = True
            self._step(None)
        alive()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        message, self._next = self._next, None
        if message is None:
            raise PeerGone("the simulator ended the conversation")
        return message

    def send(self, message: Message) -> None:
        """Hand ``message`` to the Batsim end, which computes its next request now."""
        self._sent += 1
        try:
            checked = self._check(message)
        except ProtocolError as e:
            self._error = e.at(self._protocol, self._sent)
            return
        self._step(checked)

    def _step(self, reply: Optional[Message]) -> None:
        if self._stopped:
            self._error = PeerGone("the simulator was stopped")
            return
        try:
            self._next = next(self._batsim) if reply is None else self._batsim.send(reply)
        except StopIteration:
            self._next = None
        except Exception as e:  # the simulator's failure: the decision end's to report
            self._error = e

    @property
    def pending_error(self) -> Optional[BaseException]:
        """What the Batsim end raised that no :meth:`receive` reported yet (after the
        last reply, writing the outputs can still fail)."""
        return self._error

    def stop(self) -> None:
        """Stop at the next exchange (thread-safe: only a flag; the generator belongs
        to the thread that exchanges)."""
        self._stopped = True

    def close(self) -> None:
        """End the conversation (the Batsim end sees ``GeneratorExit`` if it is not over)."""
        try:
            self._batsim.close()
        except ValueError:  # still running in another thread: it ends at its stop flag
            self._stopped = True
