"""One ssh connection per destination, shared by every executor that uses it.

Executors ``acquire`` a connection for their URL and ``release`` it when they close;
the master connection ends when the last one releases it, so a site that asks for a
one-time password asks once however many executors talk to it. Two URLs naming the
same (user, host, port) share; different ssh options do not.
"""

from __future__ import annotations

import threading
from typing import Sequence

from .ssh import SshConnection
from .url import SshTarget

__all__ = ["SharedConnections", "CONNECTIONS"]


class SharedConnections:
    """Connections by destination, each with the count of its users."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[SshTarget, tuple[str, ...]], tuple[SshConnection, int]] = {}

    def acquire(self, target: SshTarget, options: Sequence[str] = ()) -> SshConnection:
        """The connection to ``target`` (opened on first use, by its first round trip)."""
        key = (target, tuple(options))
        with self._lock:
            conn, users = self._open.get(key, (None, 0))
            if conn is None:
                conn = SshConnection(target, options)
            self._open[key] = (conn, users + 1)
            return conn

    def release(self, conn: SshConnection) -> None:
        """One user fewer; the last one closes the connection."""
        key = (conn.target, tuple(conn.options))
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
            current, users = self._open.get((conn.target, tuple(conn.options)), (None, 0))
            return users if current is conn else 0


#: the connections of this process's executors (like a backend's shared poller: the
#: executors hold their connection, this table only lets them find it)
CONNECTIONS = SharedConnections()
