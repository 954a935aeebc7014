"""The test login node: the OpenSSH server scripts/sshd.sh starts on a loopback port,
found through the variables its ``up`` prints (``HPCJOBS_TEST_SSH_*``). Without them
the tests that need it skip; under CI=true they fail. Shared by the tests of the ssh
layer (tests/remote) and of the executors over ssh (tests/flux).

Its "compute node" (``find_node``) is a host name the login node's user reaches by
ssh from the login node: the same sshd on this machine again, under another name
(scripts/sshd.sh), so a second ssh hop is real but the node is not another machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from hpcjobs.remote import SshConnection, SshTarget

IN_CI = os.environ.get("CI", "").lower() == "true"


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


def find_login() -> Login:
    """The login node, or a skip (a failure under CI=true) saying why there is none."""
    names = ("HOST", "CONFIG", "USER", "PORT", "DIR")
    env = {n: os.environ.get(f"HPCJOBS_TEST_SSH_{n}") for n in names}
    why = None
    if None in env.values() or shutil.which("ssh") is None:
        why = "no test login node: eval \"$(scripts/sshd.sh up)\" (as root) starts one"
    else:
        probe = subprocess.run(["ssh", "-F", str(env["CONFIG"]), "-o", "BatchMode=yes",
                                "-o", "ConnectTimeout=10", str(env["HOST"]), "true"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        if probe.returncode != 0:
            why = f"the test login node does not answer: {probe.stderr.decode()[-500:]}"
    if why is not None:
        if IN_CI:
            pytest.fail(why + " (needed under CI=true)")
        pytest.skip(why)
    return Login(str(env["HOST"]), Path(str(env["CONFIG"])), str(env["USER"]),
                 int(str(env["PORT"])), Path(str(env["DIR"])))


#: the name scripts/sshd.sh gives the node behind the login node (its default)
NODE = "hpcjobs-test-node"


def find_node(login: Login) -> str:
    """The host name of the node behind the test login node, as the login node's user
    reaches it by ssh from there; a skip (a failure under CI=true) saying why not."""
    node = os.environ.get("HPCJOBS_TEST_SSH_NODE", NODE)
    with login.connection() as conn:
        probe = conn.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", node,
                          "true"], check=False, timeout=60)
    if probe.returncode != 0:
        why = (f"the login node's user cannot ssh to the node {node!r}: "
               f"{probe.stderr.decode(errors='replace')[-500:]} (scripts/sshd.sh node, as "
               "root, adds it)")
        if IN_CI:
            pytest.fail(why + " (needed under CI=true)")
        pytest.skip(why)
    return node


def relays_through(node: str, user: str) -> list[str]:
    """The second hops now running as ``user`` on this machine: ssh from the login node
    to ``node``, running ``flux relay`` there (a Flux executor's event stream)."""
    found = []
    for process in psutil.process_iter(["username", "cmdline"]):
        words = process.info["cmdline"] or []
        if process.info["username"] == user and words[:1] == ["ssh"] and node in words \
                and "relay" in words:
            found.append(" ".join(words))
    return found
