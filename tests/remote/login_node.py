"""``Login``: the test login node the fixtures of tests/remote hand to the tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hpcjobs.remote import SshConnection, SshTarget


@dataclass(frozen=True)
class Login:
    """The test login node: the host alias its client config defines, that config,
    the remote user (not this one) and the server's files."""

    host: str
    config: Path
    user: str
    port: int
    dir: Path

    def connection(self, config: Path | None = None) -> SshConnection:
        return SshConnection(SshTarget(self.host), ["-F", str(config or self.config)],
                             connect_timeout=10)

    def config_with(self, tmp_path: Path, **changes: str) -> Path:
        """A copy of the client config with some options changed (e.g. another key)."""
        lines = []
        for line in self.config.read_text().splitlines():
            key = line.strip().split(" ", 1)[0]
            lines.append(f"  {key} {changes[key]}" if key in changes else line)
        path = tmp_path / "ssh_config"
        path.write_text("\n".join(lines) + "\n")
        return path
