"""The differential test: seeded cases on real Batsim 4.2.1 and on hpcjobs.sim, with one
decision process, must get identical messages (types, data, grouping, order) and
identical ``_jobs.csv`` rows (tests/sim/differential.py; zero-latency platforms, so
exact). Fixed seeds here; ``scripts/differential.py`` runs thousands of fresh ones.

The seeds are cases the two agree on today (docs/sim.md lists what still differs:
SimGrid's scheduling rounds for parallel tasks ending at the same instant as other
events); each covers several of: every profile type, ``ret``, walltimes at and around
step ends, simultaneous submissions and completions, kills, rejections, dynamic
registration with and without acknowledgements, decision delays, requested calls.
Needs a ``batsim`` program on PATH: skips without one, fails under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from differential import EMBEDDED, compare, make_case, run

SEEDS = [1, 2, 4, 5, 9, 12, 13, 15, 20, 21, 22, 23, 25, 26]


@pytest.fixture(scope="module")
def batsim() -> str:
    program = shutil.which("batsim")
    if program is None:
        message = "no 'batsim' program on PATH (scripts/test.sh installs the real Batsim 4.2.1)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: the real Batsim tests must run, not skip)")
        pytest.skip(message)
    return program


@pytest.mark.parametrize("seed", SEEDS)
def test_same_messages_and_outputs_as_real_batsim(seed: int, batsim: str, tmp_path: Path) -> None:
    case = make_case(seed)
    real = run(case, [batsim], tmp_path / "batsim")
    ours = run(case, EMBEDDED, tmp_path / "sim")
    assert real.returncode == 0, real.stderr[-2000:]
    assert len(real.transcript) > 2 and real.rows  # a real run, not an empty one
    assert compare(real, ours) is None, compare(real, ours)


def test_the_seeds_cover_the_generator_features() -> None:
    cases = [make_case(seed) for seed in SEEDS]
    kinds = {p["type"] for c in cases for p in c.workload["profiles"].values()}
    assert kinds == {"delay", "parallel", "parallel_homogeneous", "parallel_homogeneous_total", "composed"}
    assert any(c.dynamic and c.acks for c in cases) and any(c.dynamic and not c.acks for c in cases)
    assert all(any(getattr(c, p) > 0 for c in cases) for p in ("p_delay", "p_kill", "p_reject", "p_call"))
    assert any(p.get("ret") for c in cases for p in c.workload["profiles"].values())
