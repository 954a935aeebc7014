"""Benchmark: the Slurm executor over ``ssh://`` against the same executor on the host.

Needs the real Slurm (scripts/slurm-cluster.sh) and the test login node
(``eval "$(scripts/sshd.sh up)"``: HPCJOBS_TEST_SSH_HOST and HPCJOBS_TEST_SSH_CONFIG), or
any login node of a Slurm cluster named by those two variables. In the same run, in
alternating rounds (host, ssh, ssh, host, ...), each figure against its baseline:

* ``burst``: ``--burst`` jobs of one shape in one ``submit_many`` (arrays, docs/arrays.md):
  jobs per second over ssh and on the host, their ratio (target >= 0.8), and the round
  trips the burst took over ssh (target <= 3);
* ``distinct``: ``--distinct`` jobs of as many shapes (walltimes), so that no two share
  an array: the same figures (target >= 0.7);
* ``raw_sbatch_ms``: a plain ``sbatch`` loop's cost per job on each side (the login
  node's user may pay more per ``sbatch`` than this one: on the test machine, the
  remote user is not root); its ratio bounds what ``distinct`` can reach;
* ``end_to_callback``: ``--follow`` jobs of ``sleep 2`` over ssh: from each job's end
  (the mtime of the exit file its script writes there) to its final callback here, the
  median and spread (target <= 1.5 s), and the round trips per second while they run,
  beside the monitor's ticks per second;
* ``tick_round_trips``: in the same follow rounds, the round trips of each monitor tick
  that saw jobs change (its read of the change notes, then of those jobs' files), and
  of each that ran a status query (``querying_ticks``; target: 1 each), against the
  baseline of the same rounds with the notes read as on this machine (the files after
  the notes, a request each, and the query in its own), alternated.

Each round's jobs are cancelled after it (``scancel`` through the same executor). Prints
one JSON line. The round trips are printed beside the rates, so a WAN figure can be
read off them: each round trip costs a laptop its distance to the login node.

    .venv/bin/python bench/remote_submit.py [--burst 1000] [--distinct 200] [--follow 20] [--rounds 2]
        [--only-follow]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import threading
import time
from datetime import timedelta
from typing import Any, Iterator

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobStatus


def executor(remote: bool) -> JobExecutor:
    if not remote:
        return JobExecutor.get_instance("slurm")
    options = ["-F", os.environ["HPCJOBS_TEST_SSH_CONFIG"]] if "HPCJOBS_TEST_SSH_CONFIG" in os.environ else []
    return JobExecutor.get_instance("slurm", url=f"ssh://{os.environ['HPCJOBS_TEST_SSH_HOST']}",
                                    config={"ssh_options": options})


def round_trips(ex: JobExecutor) -> int:
    connection = getattr(getattr(ex, "host"), "connection", None)
    return int(connection.round_trips) if connection is not None else 0


def submit_round(remote: bool, n: int, distinct: bool) -> tuple[float, int]:
    """Seconds to submit ``n`` jobs in one ``submit_many``, and the round trips it took."""
    with executor(remote) as ex:
        jobs = [Job(JobSpec("/bin/true", attributes=JobAttributes(
            duration=timedelta(minutes=10 + (i if distinct else 0))))) for i in range(n)]
        before = round_trips(ex)
        t0 = time.perf_counter()
        ex.submit_many(jobs)
        elapsed = time.perf_counter() - t0
        trips = round_trips(ex) - before
        ids = sorted({str(j.native_id).split("_")[0] for j in jobs})
        getattr(ex, "host").run(["scancel", *ids], timeout=120, check=False)
    return elapsed, trips


def raw_sbatch_ms(remote: bool, n: int = 50) -> float:
    """Milliseconds per plain ``sbatch --hold --wrap true`` in a shell loop, run by the
    executor's host (over ssh: as the login node's user, in one round trip): what the
    scheduler itself costs each user, which hpcjobs cannot change."""
    loop = (f'i=0; while [ $i -lt {n} ]; do sbatch --hold --wrap true || exit 1; '
            f'i=$((i+1)); done')
    with executor(remote) as ex:
        host = getattr(ex, "host")
        t0 = time.perf_counter()
        out = host.run(["sh", "-c", loop], timeout=600).stdout
        elapsed = time.perf_counter() - t0
        ids = [line.split()[-1] for line in out.splitlines() if line.strip()]
        host.run(["scancel", *ids], timeout=120, check=False)
    return round(elapsed / n * 1000, 2)


class Ticks:
    """The round trips of each monitor tick while ``counting`` (set it once no other
    thread sends: a submit's round trip would count), from one read of the change notes
    to the next: those of the ticks that took notes, and of those that ran a scheduler
    command (a status query)."""

    def __init__(self) -> None:
        self.counting = False
        self.trips: list[int] = []
        self.query_trips: list[int] = []
        self.commands = 0  # scheduler commands run (sent, or gone ahead with a read)


@contextlib.contextmanager
def tick_spy(ex: JobExecutor, one_request: bool) -> Iterator[Ticks]:
    """Counts each tick's round trips. With ``one_request`` False, the notes are read as
    on this machine (the baseline: the files after the notes, apart, and a due status
    query in a round trip of its own)."""
    from hpcjobs.executors.batch import Host
    from hpcjobs.executors.batch.changes import ChangeNotes
    from hpcjobs.remote import SshHost
    host = getattr(ex, "host")
    connection = host.connection
    ticks = Ticks()
    tick: dict[str, Any] = {}  # the tick under way: round trips and commands at its start
    take, read, ahead, run = (ChangeNotes.take_and_read, SshHost.read_notes,
                              SshHost.run_ahead, host.run)

    def spy_take(self: ChangeNotes, *args: Any) -> Any:
        now = connection.round_trips
        if tick and ticks.counting:  # (the last tick ended where this one starts)
            if tick["names"]:
                ticks.trips.append(now - tick["trips"])
            if ticks.commands > tick["commands"]:
                ticks.query_trips.append(now - tick["trips"])
        names, found = take(self, *args)
        tick.update(trips=now, commands=ticks.commands, names=bool(names))
        return names, found

    def counted(*args: Any, **kwargs: Any) -> Any:
        ticks.commands += 1
        return run(*args, **kwargs)

    setattr(ChangeNotes, "take_and_read", spy_take)
    host.run = counted
    if not one_request:
        setattr(SshHost, "read_notes", Host.read_notes)
        setattr(SshHost, "run_ahead", Host.run_ahead)
    try:
        yield ticks
    finally:
        setattr(ChangeNotes, "take_and_read", take)
        setattr(SshHost, "read_notes", read)
        setattr(SshHost, "run_ahead", ahead)
        host.run = run


def follow_round(n: int, one_request: bool = True) -> dict[str, Any]:
    """End -> final callback over ssh for ``n`` short jobs, and the round trips meanwhile
    (``one_request`` False: the notes read as on this machine, the baseline)."""
    from hpcjobs.executors.batch.jobdir import EXIT
    done: dict[str, float] = {}
    lock = threading.Lock()

    def callback(job: Job, status: JobStatus) -> None:
        if status.state.final:
            with lock:
                done[job.id] = time.time()

    with executor(True) as ex:
        ex.set_job_status_callback(callback)
        jobs = [Job(JobSpec("/bin/sleep", ["2"])) for _ in range(n)]
        for job in jobs:
            ex.submit(job)
        with tick_spy(ex, one_request) as ticks:
            ticks.counting = True
            t0, trips0 = time.monotonic(), round_trips(ex)
            for job in jobs:
                job.wait(timeout=600)
            seconds, trips = time.monotonic() - t0, round_trips(ex) - trips0
            ticks.counting = False
        host = getattr(ex, "host")
        ends = host.read_files([f"{ex.work_directory}/{job.id}/{EXIT}" for job in jobs])
        latencies = [done[job.id] - found.mtime for job, found in zip(jobs, ends)
                     if found is not None and job.id in done]
    return {"jobs": n, "ended_seen": len(latencies),
            "median_s": round(statistics.median(latencies), 3),
            "min_s": round(min(latencies), 3), "max_s": round(max(latencies), 3),
            "round_trips_per_s": round(trips / seconds, 2),
            "status_commands_per_s": round(ticks.commands / seconds, 2),
            "monitor_ticks_per_s": 1 / float(getattr(ex, "config").file_poll_interval),
            "ticks_with_changes": len(ticks.trips), "tick_round_trips": dict(sorted(
                collections.Counter(ticks.trips).items())),
            "query_tick_round_trips": dict(sorted(
                collections.Counter(ticks.query_trips).items()))}


def _tick_trips(rounds: list[dict[str, Any]], key: str = "tick_round_trips") -> dict[str, Any]:
    """The round trips of the ticks ``key`` counts (that saw changes; that ran a status
    query), over ``rounds``: mean, most, and how many ticks took each count."""
    counts: collections.Counter[int] = collections.Counter()
    for f in rounds:
        counts.update({int(k): v for k, v in f[key].items()})
    ticks = sum(counts.values())
    return {"ticks": ticks, "mean": round(sum(k * v for k, v in counts.items()) / max(ticks, 1), 2),
            "max": max(counts, default=0), "by_count": dict(sorted(counts.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--distinct", type=int, default=200)
    parser.add_argument("--follow", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of alternated rounds")
    parser.add_argument("--only-follow", action="store_true",
                        help="only the follow rounds (end_to_callback, tick_round_trips)")
    args = parser.parse_args()
    result: dict[str, Any] = {"bench": "remote_submit"}
    for kind, n in () if args.only_follow else (("burst", args.burst), ("distinct", args.distinct)):
        rates: dict[bool, list[float]] = {False: [], True: []}
        trips: list[int] = []
        for r in range(args.rounds):
            for remote in ((False, True) if r % 2 == 0 else (True, False)):
                elapsed, t = submit_round(remote, n, kind == "distinct")
                rates[remote].append(n / elapsed)
                if remote:
                    trips.append(t)
        host_rate, ssh_rate = statistics.median(rates[False]), statistics.median(rates[True])
        result[kind] = {"jobs": n, "host_jobs_per_s": [round(x, 1) for x in rates[False]],
                        "ssh_jobs_per_s": [round(x, 1) for x in rates[True]],
                        "ratio": round(ssh_rate / host_rate, 2),
                        "ratio_spread": [round(min(rates[True]) / max(rates[False]), 2),
                                         round(max(rates[True]) / min(rates[False]), 2)],
                        "ssh_round_trips": trips}
    if not args.only_follow:
        host_ms, ssh_ms = raw_sbatch_ms(False), raw_sbatch_ms(True)
        result["raw_sbatch_ms"] = {"host": host_ms, "ssh_user": ssh_ms,
                                   "ratio": round(host_ms / ssh_ms, 2)}
    # the follow rounds, alternated: the notes and the noted jobs' files in one request,
    # and the baseline, a request each
    follows: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for r in range(args.rounds):
        for joined in ((True, False) if r % 2 == 0 else (False, True)):
            follows[joined].append(follow_round(args.follow, joined))
    result["end_to_callback"] = follows[True][0]
    one, apart = _tick_trips(follows[True]), _tick_trips(follows[False])
    result["tick_round_trips"] = {
        "one_request": one, "file_by_file": apart,
        "ratio": round(one["mean"] / apart["mean"], 2) if apart["mean"] else None,
        "querying_ticks": {"one_request": _tick_trips(follows[True], "query_tick_round_trips"),
                           "file_by_file": _tick_trips(follows[False], "query_tick_round_trips")},
        "median_s": {"one_request": [f["median_s"] for f in follows[True]],
                     "file_by_file": [f["median_s"] for f in follows[False]]}}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
