"""``ssh://[user@]host[:port][/path]``: the one parser of the URLs executors are given.

A URL names where the commands run, nothing else: no password (hpcjobs never takes
one), no query. A path only for an executor that asks for one (``path=True``: Flux's
socket of the remote instance); the others refuse it. The host may be an alias from
the user's ``~/.ssh/config``; ``user`` and ``port``, when absent, come from that config
as ssh resolves it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

__all__ = ["SshTarget", "parse_ssh_url", "is_ssh_url"]

_URL = re.compile(r"ssh://(?:(?P<user>[^@/]*)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^/:@\[\]]*)"
                  r"(?::(?P<port>[^/]*))?(?P<path>/.*)?", re.S)
# what a user or host name may be: no shell or ssh metacharacters, no option look-alike
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# what a path may be: absolute, and words no shell (sh, csh) or ssh reads specially, so
# that it can be a word of a remote command line as it is (no quoting to get wrong)
_PATH = re.compile(r"(?:/[A-Za-z0-9_.,+=@:-]+)+/?")


@dataclass(frozen=True)
class SshTarget:
    """Where to connect: ``host`` (a name, an alias from ssh's config or an address),
    and ``user``, ``port`` and ``path`` (absolute) when the URL gave them."""

    host: str
    user: Optional[str] = None
    port: Optional[int] = None
    path: Optional[str] = None

    def ssh_args(self) -> list[str]:
        """The ssh options and destination naming this target (``-l``, ``-p``, host)."""
        args = []
        if self.user is not None:
            args += ["-l", self.user]
        if self.port is not None:
            args += ["-p", str(self.port)]
        return [*args, "--", self.host.strip("[]")]

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user is not None else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"ssh://{user}{self.host}{port}{self.path or ''}"


def is_ssh_url(url: str) -> bool:
    """True if ``url`` is meant as an ssh URL (its scheme is ``ssh``)."""
    return url[:6].lower() == "ssh://"


def parse_ssh_url(url: str, *, path: bool = False) -> SshTarget:
    """The target of ``ssh://[user@]host[:port]`` (with ``path``, also
    ``ssh://[user@]host[:port]/path``); ValueError saying what is wrong."""
    if not isinstance(url, str):
        raise TypeError(f"url must be str, got {type(url).__name__}")
    if not is_ssh_url(url):
        raise ValueError(f"url {url!r}: not an ssh URL (ssh://[user@]host[:port])")
    m = _URL.fullmatch("ssh://" + url[6:])
    if m is None:
        raise ValueError(f"url {url!r}: expected ssh://[user@]host[:port], with no "
                         "query or fragment")
    user, host, port = m.group("user"), m.group("host"), m.group("port")
    where = m.group("path")
    if where == "/":
        where = None
    if where is not None and not path:
        raise ValueError(f"url {url!r}: expected ssh://[user@]host[:port], with no path "
                         "(this executor takes none)")
    if where is not None and not _PATH.fullmatch(where):
        raise ValueError(f"url {url!r}: path {where!r} is not one hpcjobs passes on "
                         "(an absolute path of letters, digits and '_.,+=@:-')")
    if user is not None and ":" in user:
        raise ValueError(f"url {url!r}: a password in the URL is refused; hpcjobs never "
                         "handles passwords (use keys, an agent or Kerberos in ~/.ssh/config)")
    if user is not None and not _NAME.fullmatch(user):
        raise ValueError(f"url {url!r}: user name {user!r} is not one ssh can be given "
                         "safely (letters, digits, '_', '.', '-', not starting with '-')")
    if not host.startswith("[") and not _NAME.fullmatch(host):
        raise ValueError(f"url {url!r}: host {host!r} is not a host name or address")
    port_number: Optional[int] = None
    if port is not None:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"url {url!r}: port {port!r} is not a number from 1 to 65535")
        port_number = int(port)
    return SshTarget(host, user, port_number, where.rstrip("/") if where else None)
