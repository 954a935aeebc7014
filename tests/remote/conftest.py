"""The test login node: the OpenSSH server scripts/sshd.sh starts on a loopback port,
found through the variables its ``up`` prints. Without them the tests that need it
skip; under CI=true they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hpcjobs.remote import SshConnection
from login_node import Login

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def login() -> Login:
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


@pytest.fixture
def conn(login: Login):  # type: ignore[no-untyped-def]
    c = login.connection()
    yield c
    c.close()
