"""The ZeroMQ side: like Batsim, a REQ socket that connects to the decision process and
sends first; it never waits forever (peer disconnection and a reply timeout both end it).
"""

from __future__ import annotations

import logging
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from .engine import Engine
from .errors import PeerGone
from .protocol import Codec, Message

log = logging.getLogger(__name__)

_SLICE_MS = 200  # how often a long wait looks at the connection's monitor socket


class Channel:
    """A REQ socket plus a monitor that notices when the decision process goes away."""

    def __init__(self, endpoint: str, codec: Codec, timeout: float) -> None:
        self.endpoint = endpoint
        self.codec = codec
        self.timeout = timeout
        self.waited = 0.0  # wall-clock seconds spent waiting for replies
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.REQ)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._monitor = self._sock.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        self._connected = False
        self._slice_ms = -1
        try:
            self._sock.connect(endpoint)
        except zmq.ZMQError as exc:
            self.close()
            raise PeerGone(f"cannot connect to the decision process at {endpoint!r}: {exc}") from None

    def exchange(self, now: float, events: list[dict[str, object]]) -> Message:
        """Send one request and wait for its reply."""
        sock = self._sock
        sock.send(self.codec.encode(now, events))
        start = time.monotonic()
        while True:
            # a receive timeout rather than poll(): one call per reply on the fast path
            slice_ms = _SLICE_MS if self._connected else 50
            if slice_ms != self._slice_ms:
                sock.setsockopt(zmq.RCVTIMEO, slice_ms)
                self._slice_ms = slice_ms
            try:
                raw = sock.recv()
                break
            except zmq.Again:
                self._check_monitor()
                if self.timeout and time.monotonic() - start > self.timeout:
                    raise PeerGone(f"no reply from the decision process at {self.endpoint!r} within "
                                   f"{self.timeout:g} s (see --timeout)") from None
        self.waited += time.monotonic() - start
        return self.codec.decode(raw)

    def _check_monitor(self) -> None:
        while self._monitor.poll(0):
            event = recv_monitor_message(self._monitor)
            if event["event"] == zmq.EVENT_CONNECTED:
                self._connected = True
            elif event["event"] == zmq.EVENT_DISCONNECTED and self._connected:
                raise PeerGone(f"the decision process at {self.endpoint!r} closed the connection "
                               "while Batsim was waiting for its reply")

    def close(self) -> None:
        self._sock.disable_monitor()
        self._monitor.close(linger=0)
        self._sock.close(linger=0)
        self._ctx.term()


def serve(engine: Engine, channel: Channel) -> None:
    """Run the request/reply loop until SIMULATION_ENDS has been answered."""
    events = engine.simulation_begins()
    while True:
        reply = channel.exchange(engine.now, events)
        if engine.ended:
            if reply.events:
                log.warning("ignoring %d event(s) in the reply to SIMULATION_ENDS", len(reply.events))
            return
        engine.apply_reply(reply.now, reply.events)
        events = engine.next_events()
