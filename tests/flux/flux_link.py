"""A link to a real Flux broker that a test can cut: a byte relay listening on a Unix
socket of its own, in front of the broker's ``local://`` socket.

A client given ``link.uri`` talks real Flux end to end through it (nothing of Flux is
imitated: the bytes pass unchanged). ``cut()`` breaks every connection through it, so
both the client and the broker see them end, as when the path to the broker dies (an
``ssh://`` connection, a proxy, a network). Until ``restore()``, new connections are
accepted but held unanswered, as over a network path that is down; ``restore()`` joins
them to the broker. (A uniquely named module: several test directories have a conftest.)
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path


class _Pair:
    """One client connection and its connection to the broker, pumped both ways."""

    def __init__(self, client: socket.socket, broker: socket.socket) -> None:
        self._sockets = (client, broker)
        self._pumps = [threading.Thread(target=self._pump, args=(a, b), daemon=True)
                       for a, b in ((client, broker), (broker, client))]
        for pump in self._pumps:
            pump.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
        except OSError:
            pass
        self.shutdown()  # one way ended: the connection is gone both ways

    def shutdown(self) -> None:
        for s in self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:  # already shut down
                pass

    def close(self) -> None:
        """Shut down, and close once neither pump uses the sockets any more."""
        self.shutdown()
        for pump in self._pumps:
            if pump is not threading.current_thread():
                pump.join()
        for s in self._sockets:
            s.close()


class FluxLink:
    """A cuttable link to the broker at ``broker_uri`` (a ``local://`` URI); clients
    connect to ``uri``, a socket in ``directory``."""

    def __init__(self, broker_uri: str, directory: Path) -> None:
        assert broker_uri.startswith("local://"), broker_uri
        self._broker = broker_uri.removeprefix("local://")
        path = directory / "flux-link"
        self.uri = f"local://{path}"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen()
        self._lock = threading.Lock()
        self._up = True
        self._pairs: list[_Pair] = []
        self._held: list[socket.socket] = []
        self.connections = 0  # made through the link so far
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:  # closed
                return
            with self._lock:
                self.connections += 1
                if self._up:
                    self._join(client)
                else:
                    self._held.append(client)

    def _join(self, client: socket.socket) -> None:
        broker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        broker.connect(self._broker)
        self._pairs.append(_Pair(client, broker))

    def cut(self) -> None:
        """Break every connection; hold new ones until ``restore()``."""
        with self._lock:
            self._up = False
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()

    def restore(self) -> None:
        """Join the held connections, and every new one, to the broker again."""
        with self._lock:
            self._up = True
            held, self._held = self._held, []
            for client in held:
                self._join(client)

    def close(self) -> None:
        self._server.shutdown(socket.SHUT_RDWR)  # wakes accept() (Linux); close() would not
        self._acceptor.join()
        self._server.close()
        self.cut()
        for client in self._held:
            client.close()
