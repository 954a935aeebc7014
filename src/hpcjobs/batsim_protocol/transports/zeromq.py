"""ZeroMQ REQ/REP (Batsim 2-5): Batsim connects a REQ socket to the decision process's
REP socket (``ipc://`` or ``tcp://``) and sends first.

The Batsim end never waits forever: a monitor socket notices when the decision process
disconnects, and an optional timeout bounds each reply.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Callable

import zmq

from ..codecs import Codec
from ..errors import InputError, PeerGone
from ..events import Message
from . import Decoder

__all__ = ["ReqChannel", "RepEndpoint"]

_SLICE_MS = 200  # how often a long wait looks at the connection (monitor / liveness)
#: the first frame of a monitor event (zmq_socket_monitor(3)): event number (16 bits),
#: value (32 bits). Read here rather than with zmq.utils.monitor, whose import brings
#: in asyncio: 20 ms of every simulator's start-up
_MONITOR_EVENT = struct.Struct("=HI")


class ReqChannel:
    """Batsim's end: a REQ socket plus a monitor that notices when the peer goes away."""

    def __init__(self, endpoint: str, codec: Codec, timeout: float) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.waited = 0.0
        self._encode = codec.encode
        self._decoder = Decoder(codec)
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

    def exchange(self, message: Message) -> Message:
        sock = self._sock
        sock.send(self._encode(message))
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
        return self._decoder.decode(raw)

    def farewell(self, message: Message) -> None:
        """Send ``message`` without waiting for a reply (batprotocol's SimulationError
        before Batsim stops): best effort, for up to a second."""
        try:
            self._sock.send(self._encode(message), zmq.NOBLOCK)
            self._sock.setsockopt(zmq.LINGER, 1000)
        except zmq.ZMQError:
            pass

    def _check_monitor(self) -> None:
        while self._monitor.poll(0):
            frames = self._monitor.recv_multipart()  # the event, then the peer's address
            event, _ = _MONITOR_EVENT.unpack_from(frames[0])
            if event == zmq.EVENT_CONNECTED:
                self._connected = True
            elif event == zmq.EVENT_DISCONNECTED and self._connected:
                raise PeerGone(f"the decision process at {self.endpoint!r} closed the connection "
                               "while Batsim was waiting for its reply")

    def close(self) -> None:
        self._sock.disable_monitor()
        self._monitor.close(linger=0)
        self._sock.close(linger=0)
        self._ctx.term()


def _check_free(endpoint: str) -> None:
    """``InputError`` if a socket listens at ``ipc://`` path ``endpoint``: ZeroMQ would
    bind it anyway, replacing the file, and Batsim processes started for either
    decision process could reach the other one (tcp:// refuses a second bind itself)."""
    if not endpoint.startswith("ipc://"):
        return
    path = endpoint[len("ipc://"):]
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:  # nothing there, or a file left by a process that is gone
        return
    finally:
        probe.close()
    raise InputError(f"the decision process's endpoint {endpoint!r} is in use: another process "
                     "listens there")


class RepEndpoint:
    """The decision process's end: a REP socket bound to ``endpoint``."""

    def __init__(self, endpoint: str, codec: Codec) -> None:
        self.endpoint = endpoint
        self._encode = codec.encode
        self._decoder = Decoder(codec)
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.REP)
        self._sock.setsockopt(zmq.LINGER, 0)
        # a receive timeout rather than poll() then recv(): one call, one release of
        # the GIL per message (the decision thread shares it with the client's)
        self._sock.setsockopt(zmq.RCVTIMEO, _SLICE_MS)
        try:
            _check_free(endpoint)
            self._sock.bind(endpoint)
        except zmq.ZMQError as exc:
            self.close()
            raise InputError(f"cannot bind the decision process's endpoint {endpoint!r}: {exc}") from None
        except BaseException:
            self.close()
            raise

    def receive(self, alive: Callable[[], None]) -> Message:
        sock = self._sock
        while True:
            try:
                raw = sock.recv()
                break
            except zmq.Again:
                alive()
        return self._decoder.decode(raw)

    def send(self, message: Message) -> None:
        self._sock.send(self._encode(message))

    def close(self) -> None:
        self._sock.close(linger=0)
        self._ctx.term()
