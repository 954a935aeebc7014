"""Helpers for hpcjobs.sim tests: the simulator as a real subprocess, and a real ZeroMQ
REP socket playing the decision process. (A uniquely named module: every test folder has
its own conftest.py, so "from conftest import" could find another folder's.)"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import zmq

# the recorded real Batsim runs, carried in the repository (tests/fixtures/README.md)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1"
INPUTS = FIXTURES / "inputs"


class DecisionProcess:
    """A REP socket bound on an ipc:// endpoint; every receive has a timeout."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.REP)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(endpoint)

    def recv(self, timeout: float = 30.0) -> dict[str, Any] | None:
        """The next request, or None if the simulator sent nothing in time."""
        if not self.sock.poll(int(timeout * 1000)):
            return None
        msg: dict[str, Any] = json.loads(self.sock.recv())
        return msg

    def send(self, now: float, events: list[dict[str, Any]] | None = None) -> None:
        self.sock.send(json.dumps({"now": now, "events": events or []}).encode())

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.term()


class Sim:
    """One simulator subprocess plus its decision process."""

    def __init__(self, tmp: Path, args: list[str], endpoint: str | None = None) -> None:
        self.tmp = tmp
        self.prefix = str(tmp / "out")
        self.dp = DecisionProcess(endpoint or f"ipc://{tmp}/dp.sock")
        # the endpoint and prefix unless the test gives its own (an option given twice
        # is refused, as by Batsim)
        own = [*(["-s", self.dp.endpoint] if "-s" not in args else []), *(["-e", self.prefix] if "-e" not in args else [])]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hpcjobs.sim", *own, "-q", "--timeout", "60", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def begin(self) -> dict[str, Any]:
        """Receive SIMULATION_BEGINS (not yet answered)."""
        msg = self.dp.recv()
        assert msg is not None, self.finish()
        assert msg["events"][0]["type"] == "SIMULATION_BEGINS"
        return msg

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        """Exit code and stderr of the simulator."""
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
            raise AssertionError(f"simulator did not exit; stderr: {err}") from None
        return self.proc.returncode, err

    def jobs_csv(self) -> list[dict[str, str]]:
        return read_csv(Path(self.prefix + "_jobs.csv"))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        self.dp.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_json(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)
