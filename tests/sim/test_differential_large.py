"""The differential test on the benchmark's large workloads (bench/sim_throughput.py):
thousands of delay jobs with arrivals to the millisecond on 1,000 zero-latency hosts,
run on real Batsim 4.2.1 and on hpcjobs.sim by the differential's FCFS decision process
(lowest free hosts first); every job must have the same outcome (start, finish, final
state, allocation). Both the benchmark's platform (1 GBps: each of Batsim's internal
messages takes 1e-9 s) and the executor's (10 GBps: 1e-10 s, within SimGrid's timing
precision) run, so a grouping rule fitted to one cannot break the other unseen.

On the executor's platform each run takes a fresh seed, printed in the failure message
(``HPCJOBS_DIFF_SEED`` replays one); a first difference at a job submitted at the
instant another ended is the known, clock-decided one (an expected failure, saying so). On the benchmark's, two timers exactly 1e-9 s
apart meet SimGrid's timing precision, and which way Batsim goes depends on rounding in
its clock (docs/sim.md, "Known differences from Batsim"): a few fresh seeds in a hundred
meet one, so that platform runs fixed seeds that do not (two of them failed before the
rules they pin); ``HPCJOBS_DIFF_SEED`` runs another. ``HPCJOBS_DIFF_JOBS`` sets the size
(default 3,000; 20,000 is the benchmark's, about a minute per run here). Needs
``batsim`` on PATH (skips without, fails under ``CI=true``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path

import pytest
from differential import EMBEDDED, Case, run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import sim_throughput  # noqa: E402  (the benchmark's workload generator)

from hpcjobs.executors.batsim.platform import write_platform  # noqa: E402

JOBS = int(os.environ.get("HPCJOBS_DIFF_JOBS", "3000"))
OUTCOME = ("starting_time", "finish_time", "final_state", "allocated_resources")


@pytest.fixture(scope="module")
def batsim() -> str:
    program = shutil.which("batsim")
    if program is None:
        message = "no 'batsim' program on PATH (scripts/test.sh installs the real Batsim 4.2.1)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: the real Batsim tests must run, not skip)")
        pytest.skip(message)
    return program


def large_case(seed: int, jobs: int, platform: str, folder: Path) -> Case:
    """The benchmark's workload of ``seed`` at millisecond resolution, on its own
    platform ("bench") or on the executor's written one ("executor")."""
    bench_platform, workload = sim_throughput.write_inputs(str(folder), jobs, 1000, seed, 0.001)
    text = Path(bench_platform).read_text() if platform == "bench" else \
        write_platform(folder / "executor.xml", 1000, 1, "1Gf").read_text()
    return Case(seed, 1000, json.loads(Path(workload).read_text()), False, False, 0, 0, 0, 0, platform=text)


def differing(real: list[dict[str, str]], ours: list[dict[str, str]]) -> list[str]:
    """Ids of the jobs whose outcome differs (or that only one run has)."""
    a = {row["job_id"]: row for row in real}
    b = {row["job_id"]: row for row in ours}
    return sorted((j for j in a.keys() | b.keys()
                   if j not in a or j not in b or any(a[j][k] != b[j][k] for k in OUTCOME)), key=int)


#: (platform, seed): None is a fresh seed. 445285 and 500250 disagreed before the
#: rules of a submission sent alone and of a timer ending as the server looks
CASES = [("executor", None), ("bench", 445285), ("bench", 500250), ("bench", 654842)]


@pytest.mark.parametrize("platform, fixed", CASES)
def test_large_workloads_have_the_same_outcomes_as_real_batsim(platform: str, fixed: int | None, batsim: str,
                                                               tmp_path: Path) -> None:
    seed = int(os.environ.get("HPCJOBS_DIFF_SEED") or (random.randrange(10**6) if fixed is None else fixed))
    case = large_case(seed, JOBS, platform, tmp_path)
    real = run(case, [batsim], tmp_path / "batsim", timeout=300)
    ours = run(case, EMBEDDED, tmp_path / "sim", timeout=300)
    assert real.returncode == 0 and len(real.rows) == JOBS, real.stderr[-2000:]
    bad = differing(real.rows, ours.rows)
    where = (f"seed {seed} ({platform} platform, {JOBS} jobs; replay with HPCJOBS_DIFF_SEED={seed}): "
             f"{len(bad)} jobs differ, from job {bad[0] if bad else None}")
    ending = coinciding_end(real.rows, bad[0]) if bad else None
    if ending is not None:
        # a known difference (docs/sim.md): the first job to differ was submitted at the
        # instant another ended, and which of the two SimGrid's drifting clock put first
        # decides; anything else that differs is a rule of ours to fix
        pytest.xfail(f"{where}: submitted at the instant job {ending} ended "
                     "(docs/sim.md, known differences)")
    assert not bad, where


def coinciding_end(rows: list[dict[str, str]], job: str) -> str | None:
    """A job that ended at the instant ``job`` was submitted, by real Batsim's output."""
    submitted = next(r["submission_time"] for r in rows if r["job_id"] == job)
    return next((r["job_id"] for r in rows if r["finish_time"] == submitted), None)
