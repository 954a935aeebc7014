"""One ssh connection per destination, shared by every executor that uses it.

Executors ``acquire`` a connection for their URL and ``release`` it when they close;
the master connection ends when the last one releases it, so a site that asks for a
one-time password asks once however many executors talk to it. Two URLs naming the
same (user, host, port) share (a path in the URL, such as a Flux socket's, names no
other host); different ssh options or connect timeouts do not.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Sequence

from .ssh import SshConnection
from .url import SshTarget

__all__ = ["SharedConnections", "CONNECTIONS"]

#: what tells connections apart: destination, ssh options, connect timeout
_Key = tuple[SshTarget, tuple[str, ...], float]


def _key(conn: SshConnection) -> _Key:
    return conn.target, tuple(conn.options), conn.connect_timeout


class SharedConnections:
    """Connections by destination, each with the count of its users."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[_Key, tuple[SshConnection, int]] = {}

    def acquire(self, target: SshTarget, options: Sequence[str] = (), *,
                connect_timeout: float = 15.0) -> SshConnection:
        """The connection to ``target`` (opened on first use, by its first round trip)."""
        target = dataclasses.replace(target, path=None)
        key = (target, tuple(options), connect_timeout)
        with self._lock:
            conn, users = self._open.get(key, (None, 0))
            if conn is None:
                conn = SshConnection(target, options, connect_timeout=connect_timeout)
            self._open[key] = (conn, users + 1)
            return conn

    def release(self, conn: SshConnection) -> None:
        """One user fewer; the last one closes the connection."""
        key = _key(conn)
        with self._lock:
            current, users = self._open.get(key, (None, 0))
            if current is not conn:
                return
            if users > 1:
                self._open[key] = (conn, users - 1)
                return
            del self._open[key]
        conn.close()

    def users(self, conn: SshConnection) -> int:
        """How many users hold ``conn`` (0 once closed)."""
        with self._lock:
            current, users = self._open.get(_key(conn), (None, 0))
            return users if current is conn else 0


#: the connections of this process's executors (like a backend's shared poller: the
#: executors hold their connection, this table only lets them find it)
CONNECTIONS = SharedConnections()
