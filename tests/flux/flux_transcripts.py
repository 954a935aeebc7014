"""Readers for the recorded flux-core 0.88 transcripts in tests/fixtures/flux-0.88,
which the unit tests of the event decoding (test_flux_events.py) feed to it.
(A uniquely named module: several test directories have a conftest.)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flux-0.88"

Event = tuple[str, dict[str, Any]]

_MAIN = re.compile(r"^\s*eventlog: (\S+)\s+t=\+\s*[\d.]+ context=(\{.*\})$")
_CLI = re.compile(r"^\d+\.\d+ (\S+)(.*)$")
_CLI_FIELD = re.compile(r'(\S+?)=("(?:[^"\\]|\\.)*"|\{.*\}|\S+)')


def _local_uid(context: dict[str, Any]) -> dict[str, Any]:
    """The recording ran as root: put our uid where it had 0."""
    return {k: (os.getuid() if k == "userid" else v) for k, v in context.items()}


def main_eventlogs(name: str) -> list[list[Event]]:
    """Every main-eventlog listing in ``name``.txt, as lists of (event, context)."""
    logs: list[list[Event]] = []
    for line in (FIXTURES / f"{name}.txt").read_text().splitlines():
        match = _MAIN.match(line)
        if match:
            if match.group(1) == "submit":
                logs.append([])
            logs[-1].append((match.group(1), _local_uid(json.loads(match.group(2)))))
    return logs


def cli_eventlogs() -> dict[str, list[Event]]:
    """``flux job eventlog ID`` listings of cli.txt, keyed by the job's f58 id."""
    logs: dict[str, list[Event]] = {}
    current = None
    for line in (FIXTURES / "cli.txt").read_text().splitlines():
        if line.startswith("+ flux job eventlog ƒ"):
            current = logs.setdefault(line.split()[-1], [])
        elif current is not None and _CLI.match(line):
            event, rest = _CLI.match(line).groups()  # type: ignore[union-attr]
            context = {k: json.loads(v) if v[0] in '"{' else _scalar(v)
                       for k, v in _CLI_FIELD.findall(rest)}
            current.append((event, _local_uid(context)))
        else:
            current = None
    return logs


def _scalar(text: str) -> Any:
    return {"true": True, "false": False}.get(text, int(text) if text.isdigit() else text)


def names(events: list[Event]) -> list[str]:
    return [name for name, _ in events]
