"""A real Redis for the legacy protocol's job data: the one scripts/test.sh started
(``HPCJOBS_TEST_REDIS``, a URL), else a private redis-server started here on a Unix
socket in a 0700 directory (no TCP port). Without redis-server the tests skip; under
CI=true they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    given = os.environ.get("HPCJOBS_TEST_REDIS")
    if given:
        yield given
        return
    server = shutil.which("redis-server")
    if server is None:
        if IN_CI:
            pytest.fail("redis-server (Debian package redis-server) is needed under CI=true")
        pytest.skip("redis-server is not installed")
    folder = Path(tempfile.mkdtemp(prefix="hpcjobs-redis-"))
    sock = folder / "redis.sock"
    proc = subprocess.Popen([server, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
                             "--dir", str(folder), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.02)
        yield f"unix://{sock}"
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
