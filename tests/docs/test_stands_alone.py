"""The tree carries everything its tests need: only scripts/real-systems.sh looks beside
the checkout (for the maintainers' prebuilt Batsim, Flux and OpenPBS, which it installs
into /opt when they are there). .ci/run relies on this when its second run, in a fresh
clone with nothing beside it, leaves out the tests that need the Slurm cluster or a PBS
server: those ran in its first run on the same tree, and nothing of theirs can reach
outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: a path into the maintainers' folder beside the checkout, however it is spelled
_BESIDE = re.compile(r"shared/(?:tools|real|fixtures|spec)\b|[\"']shared[\"']|/work/")
_ALLOWED = {"scripts/real-systems.sh", "tests/docs/test_stands_alone.py"}  # and this check
#: documentation may name the default ~/.hpcjobs/work directory
_DOC_PATH = re.compile(r"\.hpcjobs/work/")


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout: {e}")
    return [name for name in out.decode().split("\0") if name]


def test_no_file_but_real_systems_reaches_beside_the_tree() -> None:
    offenders = []
    for name in tracked_files():
        path = ROOT / name
        if name in _ALLOWED or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if _BESIDE.search(_DOC_PATH.sub("", line)):
                offenders.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not offenders, "\n".join(offenders)


def test_the_allowed_file_is_the_one_that_looks_beside() -> None:
    # the check above must be able to fail: the one allowed file does match
    text = (ROOT / "scripts/real-systems.sh").read_text()
    assert _BESIDE.search(text)
