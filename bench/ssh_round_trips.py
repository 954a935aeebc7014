"""Round trips over ssh: what a batch of operations costs through hpcjobs' connection.

Needs the test login node (``eval "$(scripts/sshd.sh up)"``) or any host in
HPCJOBS_TEST_SSH_HOST (with HPCJOBS_TEST_SSH_CONFIG as its client config). Measures,
in the same run: a fresh ``ssh host true`` per command (the baseline: a login each),
one command through the multiplexed master, and a submit-shaped batch of N jobs
(directory, script, run each) in one round trip, and a status tick reading two files
of each of those jobs in one round trip. Prints one JSON line with the times,
the round trips and logins counted, and the ratios, so a WAN figure can be read off
them: a batch costs one round trip whatever N.
Usage: python bench/ssh_round_trips.py [N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from hpcjobs.remote import MakeDirs, Run, SshConnection, SshHost, SshTarget, WriteFile


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    host, config = os.environ["HPCJOBS_TEST_SSH_HOST"], os.environ.get("HPCJOBS_TEST_SSH_CONFIG")
    options = ["-F", config] if config else []
    logins = []
    for _ in range(10):
        t0 = time.perf_counter()
        subprocess.run(["ssh", *options, "-o", "BatchMode=yes", host, "true"], check=True,
                       stdin=subprocess.DEVNULL)
        logins.append(time.perf_counter() - t0)
    with SshConnection(SshTarget(host), options) as conn:
        conn.run(["true"], check=True)  # the master's login
        muxed = []
        for _ in range(10):
            t0 = time.perf_counter()
            conn.run(["true"], check=True)
            muxed.append(time.perf_counter() - t0)
        home = conn.run(["sh", "-c", 'printf %s "$HOME"'], check=True).text
        work = f"{home}/hpcjobs-bench-{os.getpid()}"
        ops: list = [MakeDirs(work, 0o700)]
        for i in range(n):
            d = f"{work}/job{i}"
            ops += [MakeDirs(d, 0o700), WriteFile(f"{d}/script", b"#!/bin/sh\nexit 0\n", 0o700),
                    Run([f"{d}/script"])]
        trips = conn.round_trips
        t0 = time.perf_counter()
        results = conn.batch(ops, timeout=600)
        batch_s = time.perf_counter() - t0
        assert all(r.ok for r in results)
        batch_trips = conn.round_trips - trips
        # a status tick: two job files per job (one there, one not yet), one read for all
        paths = [p for i in range(n) for p in (f"{work}/job{i}/script", f"{work}/job{i}/ec")]
        trips = conn.round_trips
        t0 = time.perf_counter()
        found = SshHost(conn).read_files(paths)
        tick_s = time.perf_counter() - t0
        assert sum(f is not None for f in found) == n
        tick_trips = conn.round_trips - trips
        conn.run(["rm", "-rf", work])
        counts = {"round_trips": conn.round_trips, "logins": conn.logins}
    print(json.dumps({
        "bench": "ssh_round_trips", "jobs": n,
        "fresh_login_per_command_ms": _median_ms(logins),
        "command_through_master_ms": _median_ms(muxed),
        "ratio_login_to_master": round(statistics.median(logins) / statistics.median(muxed), 2),
        "batch_of_jobs_s": round(batch_s, 3), "batch_operations": len(ops),
        "batch_round_trips": batch_trips, "status_tick_s": round(tick_s, 3),
        "status_tick_files": len(paths), "status_tick_round_trips": tick_trips,
        "connection": counts}))


if __name__ == "__main__":
    main()
