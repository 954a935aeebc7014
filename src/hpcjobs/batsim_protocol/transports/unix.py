"""A Unix stream socket with length-prefixed messages (the legacy protocol, Batsim < 1.0,
spec/batsim-protocol-legacy-socket.txt): each message is a 32-bit native-endian unsigned
byte count followed by that many bytes. Batsim is the server: it binds the socket file,
accepts one client (the decision process) and sends first.

A connection that ends between messages is the peer going away (``PeerGone``); one
that ends inside a message is a broken frame (``ProtocolError`` naming the length
prefix or the body), so neither end ever waits for bytes that cannot come.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from typing import Callable, Optional

from ..codecs import Codec
from ..errors import PeerGone, ProtocolError
from ..events import Message
from . import Decoder

__all__ = ["UnixServerChannel", "UnixClientEndpoint", "MAX_MESSAGE"]

_LENGTH = struct.Struct("=I")  # "=": native byte order, standard 4-byte size
#: a length prefix above this is refused rather than allocated (a corrupt stream)
MAX_MESSAGE = 1 << 30
_SLICE = 0.2  # seconds between liveness checks while waiting


def _frame(raw: bytes) -> bytes:
    return _LENGTH.pack(len(raw)) + raw


class _Stream:
    """Reads whole messages from a connected socket."""

    def __init__(self, sock: socket.socket, decoder: Decoder, peer: str) -> None:
        self.sock = sock
        self.decoder = decoder
        self.peer = peer

    def read(self, alive: Callable[[], None]) -> Message:
        number = self.decoder.received + 1
        head = self._exactly(_LENGTH.size, alive, at_boundary=True)
        if len(head) < _LENGTH.size:
            raise ProtocolError(f"the connection ended after {len(head)} of the 4 bytes of a length "
                                "prefix", "length prefix").at(self.decoder.codec.name, number)
        (size,) = _LENGTH.unpack(head)
        if size > MAX_MESSAGE:
            raise ProtocolError(f"a length prefix of {size} bytes is larger than {MAX_MESSAGE}",
                                "length prefix").at(self.decoder.codec.name, number)
        body = self._exactly(size, alive, at_boundary=False)
        if len(body) < size:
            raise ProtocolError(f"the connection ended after {len(body)} of the {size} bytes the length "
                                "prefix announced", "message").at(self.decoder.codec.name, number)
        return self.decoder.decode(body)

    def _exactly(self, size: int, alive: Callable[[], None], at_boundary: bool) -> bytes:
        chunks: list[bytes] = []
        got = 0
        while got < size:
            try:
                chunk = self.sock.recv(size - got)
            except socket.timeout:
                alive()
                continue
            except OSError as e:
                raise PeerGone(f"the connection to {self.peer} broke: {e}") from None
            if not chunk:
                if at_boundary and not got:
                    raise PeerGone(f"{self.peer} closed the connection")
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def write(self, raw: bytes) -> None:
        try:
            self.sock.sendall(_frame(raw))
        except OSError as e:
            raise PeerGone(f"the connection to {self.peer} broke: {e}") from None


class UnixServerChannel:
    """Batsim's end: binds ``path``, accepts one decision process, sends first."""

    def __init__(self, path: str, codec: Codec, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self.waited = 0.0
        self._encode = codec.encode
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn: Optional[socket.socket] = None
        try:
            if os.path.exists(path):
                os.unlink(path)  # a stale socket file of an earlier run, as Batsim does
            self._listener.bind(path)
            self._listener.listen(1)
        except OSError as e:
            self._listener.close()
            raise PeerGone(f"cannot listen on {path!r}: {e}") from None
        self._stream: Optional[_Stream] = None
        self._decoder = Decoder(codec)

    def _accept(self) -> _Stream:
        if self._stream is None:
            self._listener.settimeout(self.timeout or None)
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                raise PeerGone(f"no decision process connected to {self.path!r} within "
                               f"{self.timeout:g} s (see --timeout)") from None
            conn.settimeout(_SLICE)
            self._conn = conn
            self._stream = _Stream(conn, self._decoder, "the decision process")
        return self._stream

    def exchange(self, message: Message) -> Message:
        stream = self._accept()
        stream.write(self._encode(message))
        start = time.monotonic()

        def alive() -> None:
            if self.timeout and time.monotonic() - start > self.timeout:
                raise PeerGone(f"no reply from the decision process within {self.timeout:g} s "
                               "(see --timeout)")
        reply = stream.read(alive)
        self.waited += time.monotonic() - start
        return reply

    def farewell(self, message: Message) -> None:
        if self._stream is not None:
            try:
                self._stream.write(self._encode(message))
            except PeerGone:
                pass

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._listener.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class UnixClientEndpoint:
    """The decision process's end: connects to Batsim's socket file (retrying while
    Batsim starts, up to ``connect_timeout`` seconds)."""

    def __init__(self, path: str, codec: Codec, connect_timeout: float = 30.0) -> None:
        self._encode = codec.encode
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                if time.monotonic() > deadline:
                    sock.close()
                    raise PeerGone(f"cannot connect to Batsim at {path!r}: {e}") from None
                time.sleep(0.05)
        sock.settimeout(_SLICE)
        self._sock = sock
        self._stream = _Stream(sock, Decoder(codec), "Batsim")

    def receive(self, alive: Callable[[], None]) -> Message:
        return self._stream.read(alive)

    def send(self, message: Message) -> None:
        self._stream.write(self._encode(message))

    def close(self) -> None:
        self._sock.close()
