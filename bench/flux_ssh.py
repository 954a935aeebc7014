"""Benchmark: the Flux executor over ssh against the same executor on the instance's host.

N ``/bin/true`` jobs submitted one after the other, each with a status callback
(``flux_throughput.hpcjobs_round``), in the same run: ``local``, the executor talking
to a fresh instance of this user through its socket; ``ssh``, the executor talking to
a fresh instance of the test login node's user through ``url='ssh://<login>/<socket>'``
(a submit is one ssh round trip running ``flux job submit`` there; events come through
the ``flux relay`` tunnel). Rounds alternate local, ssh, ssh, local, ... (``--rounds``
pairs). Each instance is ``flux start --test-size=1``, the ssh one started with ``su``
(so: run as root). Needs the test login node (``eval "$(scripts/sshd.sh up)"``).

Prints one JSON line: each round's ``jobs_per_s`` and ``end_to_final_ms`` (the job's
end in Flux to the final callback, median and p95), the ratios ssh / local per round,
and the ssh round trips per submit counted on the executor's connection (the survey
when it is made is the one more), so a WAN figure can be read off them.

    .venv/bin/python bench/flux_ssh.py [--jobs 100] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
from typing import Any

from flux_throughput import hpcjobs_round


def start(user: str | None) -> tuple[subprocess.Popen[str], str]:
    """``flux start --test-size=1`` (as ``user``, with su, if given) living until its
    stdin closes; returns it and its URI."""
    flux = shutil.which("flux") or "flux"
    argv = [flux, "start", "--test-size=1", "sh", "-c",
            'printf "%s\\n" "$FLUX_URI"; exec cat >/dev/null']
    if user is not None:
        argv = ["su", "-s", "/bin/sh", user, "-c",
                shlex.join(["env", "-i", "PATH=/usr/bin:/bin", *argv])]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, cwd="/")
    assert process.stdout is not None
    uri = process.stdout.readline().strip()
    if not uri.startswith("local://"):
        raise SystemExit(f"flux start printed no URI ({uri!r})")
    return process, uri


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of rounds")
    args = parser.parse_args()
    host, config = os.environ["HPCJOBS_TEST_SSH_HOST"], os.environ["HPCJOBS_TEST_SSH_CONFIG"]
    user = os.environ.get("HPCJOBS_TEST_SSH_USER", "hpcjobs-remote")
    results: dict[str, list[dict[str, Any]]] = {"local": [], "ssh": []}
    for pair in range(args.rounds):
        order = ["local", "ssh"] if pair % 2 == 0 else ["ssh", "local"]
        for kind in order:
            process, uri = start(user if kind == "ssh" else None)
            try:
                if kind == "ssh":
                    url = f"ssh://{host}{uri.removeprefix('local://')}"
                    result = hpcjobs_round(url, args.jobs, {"ssh_options": ["-F", config]})
                else:
                    result = hpcjobs_round(uri, args.jobs)
                results[kind].append(result)
            finally:
                assert process.stdin is not None
                process.stdin.close()
                process.wait()
    pairs = list(zip(results["ssh"], results["local"]))
    print(json.dumps({
        "benchmark": "flux_ssh", "jobs": args.jobs, "rounds": args.rounds, **results,
        "ratio_jobs_per_s": [round(s["jobs_per_s"] / lo["jobs_per_s"], 3) for s, lo in pairs],
        "ratio_end_to_final_median": [
            round(s["end_to_final_ms"]["median"] / lo["end_to_final_ms"]["median"], 2)
            for s, lo in pairs],
        "ssh_round_trips_per_submit": [round((s["ssh_round_trips"] - 1) / args.jobs, 2)
                                       for s in results["ssh"]]}))


if __name__ == "__main__":
    main()
