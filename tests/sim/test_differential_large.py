"""The differential test on the benchmark's large workloads (bench/sim_throughput.py):
thousands of delay jobs with arrivals to the millisecond on 1,000 zero-latency hosts,
run on real Batsim 4.2.1 and on hpcjobs.sim by the differential's FCFS decision process
(lowest free hosts first); every job must have the same outcome (start, finish, final
state, allocation). Both the benchmark's platform (1 GBps: each of Batsim's internal
messages takes 1e-9 s) and the executor's (10 GBps: 1e-10 s, within SimGrid's timing
precision) run, so a grouping rule fitted to one cannot break the other unseen.

On the executor's platform each run takes a fresh seed, printed in the failure message
(``HPCJOBS_DIFF_SEED`` replays one); a first difference decided by SimGrid's clock is an
expected failure that says which (docs/sim.md, "Known differences from Batsim"): at a
job submitted at the instant another ended, or, past 2**14 s of simulated time, at an
instant two jobs ended. On the benchmark's, two timers exactly 1e-9 s
apart meet SimGrid's timing precision, and which way Batsim goes depends on rounding in
its clock (docs/sim.md, "Known differences from Batsim"): a few fresh seeds in a hundred
meet one, so that platform runs fixed seeds that do not (two of them failed before the
rules they pin); ``HPCJOBS_DIFF_SEED`` runs another. ``HPCJOBS_DIFF_JOBS`` sets the size
(default 3,000; 20,000 is the benchmark's, about a minute per run here; 100,000, some
30,000 simulated seconds, takes about three minutes and meets the clock past 2**14 s). Needs
``batsim`` on PATH (skips without, fails under ``CI=true``).
"""

from __future__ import annotations

import json
import math
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
    # Batsim's clock falls behind past 2**14 s on the executor's 10 GBps platform only
    behind = CLOCK_BEHIND if platform == "executor" else math.inf
    known = clock_decided(real.rows, ours.rows, bad, behind) if bad else None
    if known is not None:
        pytest.xfail(f"{where}: {known} (docs/sim.md, known differences)")
    assert not bad, where


#: from 2**14 s on, SimGrid's clock (a double) moves by 27 units in its last place
#: (9.8e-11 s) for each of Batsim's 1e-10 s messages (10 GBps): it falls behind exact
#: time by about 3e-9 s per 100 simulated seconds, where before it ran ahead by 4e-14 s
#: a message (docs/sim.md, "Batsim's clock past 2^14 s"); a 1e-9 s message (1 GBps)
#: moves it ahead by 4.4e-13 s on either side of 2**14 s
CLOCK_BEHIND = 2.0 ** 14


def clock_decided(real: list[dict[str, str]], ours: list[dict[str, str]], bad: list[str],
                  behind: float = CLOCK_BEHIND) -> str | None:
    """Why the first difference is SimGrid's clock's call (None: it is not a known one).

    The first difference is at the earliest instant a differing job started (on either
    simulator). Past ``behind`` (:data:`CLOCK_BEHIND` on a 10 GBps platform), two jobs that ended at that printed instant
    end in one step of Batsim's clock or in two messages, and a submission then comes
    after or before an end, depending on how far behind the clock is; at any time, a
    job submitted at the instant another ended is placed by the clock's drift."""
    wrong = set(bad)
    started = [float(r["starting_time"]) for rows in (real, ours) for r in rows
               if r["job_id"] in wrong and r["final_state"] != "REJECTED"]
    instant = f"{min(started):f}" if started else None  # as _jobs.csv prints times
    if instant is not None and float(instant) >= behind:
        ended = [r["job_id"] for r in real if r["finish_time"] == instant]
        if len(ended) >= 2:
            return (f"jobs {' and '.join(ended[:2])} ended at {instant} s, past 2^14 s where Batsim's clock falls "
                    "behind exact time: one step of its clock or two messages")
    ending = coinciding_end(real, bad[0])
    if ending is None:
        return None
    late = float(next(r["submission_time"] for r in real if r["job_id"] == bad[0])) >= behind
    return (f"job {bad[0]} submitted at the instant job {ending} ended" +
            (", past 2^14 s where Batsim's clock falls behind exact time" if late else ""))


def coinciding_end(rows: list[dict[str, str]], job: str) -> str | None:
    """A job that ended at the instant ``job`` was submitted, by real Batsim's output."""
    submitted = next(r["submission_time"] for r in rows if r["job_id"] == job)
    return next((r["job_id"] for r in rows if r["finish_time"] == submitted), None)


def _row(job: str, submitted: str, started: str, finished: str, hosts: str) -> dict[str, str]:
    return {"job_id": job, "submission_time": submitted, "starting_time": started, "finish_time": finished,
            "final_state": "COMPLETED_SUCCESSFULLY", "allocated_resources": hosts}


#: real Batsim's and hpcjobs.sim's rows at the first difference of the 100,000-job
#: workflow of bench/inprocess_throughput.py, seed 11 (docs/sim.md)
_WORKFLOW_REAL = [_row("80644", "24299.402000", "24299.402000", "24408.672000", "25 212"),
                  _row("80696", "24316.038000", "24316.038000", "24408.672000", "78 334 336 539 634 735"),
                  _row("80981", "24408.672000", "24408.672000", "24420.291000", "78 212 334"),
                  _row("80980", "24408.672000", "24408.672000", "24465.218000", "25")]
_WORKFLOW_OURS = [_WORKFLOW_REAL[1], _WORKFLOW_REAL[0],
                  _row("80981", "24408.672000", "24408.672000", "24420.291000", "25 212 334"),
                  _row("80980", "24408.672000", "24408.672000", "24465.218000", "78")]


def test_two_ends_at_one_instant_past_2_14_s_are_the_clocks_call() -> None:
    bad = differing(_WORKFLOW_REAL, _WORKFLOW_OURS)
    assert bad == ["80980", "80981"]
    assert clock_decided(_WORKFLOW_REAL, _WORKFLOW_OURS, bad) == (
        "jobs 80644 and 80696 ended at 24408.672000 s, past 2^14 s where Batsim's clock falls behind "
        "exact time: one step of its clock or two messages")


def test_two_ends_at_one_instant_before_2_14_s_are_not_a_known_difference() -> None:
    # the same rows 20,000 s earlier, the two started jobs queued since before: a rule of ours
    def earlier(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{**r, **{k: f"{float(r[k]) - 20000:f}" for k in ("submission_time", "starting_time", "finish_time")},
                 **({"submission_time": "4400.000000"} if r["job_id"] in ("80980", "80981") else {})}
                for r in rows]
    real, ours = earlier(_WORKFLOW_REAL), earlier(_WORKFLOW_OURS)
    assert clock_decided(real, ours, differing(real, ours)) is None
    # past 2**14 s but on a 1 GBps platform, where the clock does not fall behind
    assert clock_decided(_WORKFLOW_REAL, _WORKFLOW_OURS, ["80980", "80981"], math.inf) == (
        "job 80980 submitted at the instant job 80644 ended")
