#!/usr/bin/env python3
"""Run the differential test on fresh seeds: each case on real Batsim and on hpcjobs.sim.

    scripts/differential.py [--seeds N] [--first SEED] [--batsim PROGRAM] [--stop] [--distinct]
    scripts/differential.py --explain SEED [--batsim PROGRAM]

Cases and comparison: tests/sim/differential.py. Prints one line per disagreement and a
final JSON summary line (also on Ctrl-C: the seeds run so far); exits 1 if any case
disagreed or the run was interrupted. Needs a real ``batsim`` (PATH or
--batsim; scripts/test.sh installs one when the project's real-systems builds are at hand).

``--explain SEED`` runs one case and prints both transcripts a message a line (``!!``
where they differ, each followed by the decision process's reply), then writes real
Batsim's debug log with times to the picosecond (``[t] [actor] ...``) to
``differential-SEED-batsim.log`` in the current directory: the messages Batsim's actors
send its server and when each arrives, which is what decides how an instant's events
are grouped (docs/sim.md, "Still different").
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sim"))

from differential import EMBEDDED, compare, distinct_case, make_case, run  # noqa: E402

#: Batsim's debug log, each line stamped with the simulated time to 1e-12 s and the actor
BATSIM_DEBUG = ["-v", "debug", "--sg-log=root.fmt:[%.12d]%e[%a]%e%m%n"]


def _compact(message: dict[str, Any]) -> str:
    """A message on one line: ``now=T`` then ``time:TYPE:subject`` per event."""
    out = []
    for event in message["events"]:
        kind, data = event["type"], event["data"]
        subject = str(data.get("job_id") or data.get("type") or "")
        if kind == "JOB_COMPLETED":
            subject += "/" + data["job_state"]
        elif kind == "JOB_KILLED":
            subject = ",".join(data["job_ids"]) + json.dumps(data["job_progress"])
        out.append(f"{event['timestamp']:g}:{kind}:{subject}")
    return f"now={message['now']:g} " + " ".join(out)


def explain(seed: int, batsim: str) -> int:
    """Print the two transcripts of ``seed`` side by side; write Batsim's debug log."""
    case = make_case(seed)
    with tempfile.TemporaryDirectory(prefix="hpcjobs-differential-") as tmp:
        real = run(case, [batsim, *BATSIM_DEBUG], Path(tmp) / "batsim", quiet=False)
        ours = run(case, EMBEDDED, Path(tmp) / "sim")
    print(f"seed {seed}: workload {json.dumps(case.workload)}\n  dynamic jobs {case.dynamic_jobs}, "
          f"acks {case.acks}, p_delay {case.p_delay}, p_kill {case.p_kill}, "
          f"p_reject {case.p_reject}, p_call {case.p_call}")
    for i in range(max(len(real.transcript), len(ours.transcript))):
        a = _compact(real.transcript[i]) if i < len(real.transcript) else "-"
        b = _compact(ours.transcript[i]) if i < len(ours.transcript) else "-"
        print(f"{'  ' if a == b else '!!'}{i:3} batsim      {a}")
        if a != b:
            print(f"     hpcjobs.sim {b}")
        for name, side in (("batsim", real), ("hpcjobs.sim", ours)):
            if i < len(side.replies) and (a != b or name == "batsim"):
                print(f"       reply to {name}: {_compact(side.replies[i])}")
    log = Path(f"differential-{seed}-batsim.log")
    log.write_text(real.stderr, encoding="utf-8")
    diff = compare(real, ours)
    print(f"{'agree' if diff is None else diff.splitlines()[0]}; Batsim's debug log: {log}")
    return 0 if diff is None else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first", type=int, default=None, help="first seed (default: random)")
    parser.add_argument("--batsim", default="batsim")
    parser.add_argument("--stop", action="store_true", help="stop at the first disagreement")
    parser.add_argument("--distinct", action="store_true",
                        help="cases whose times are drawn to the microsecond: no two events share an instant")
    parser.add_argument("--explain", type=int, metavar="SEED",
                        help="show one case's two transcripts and keep Batsim's debug log")
    args = parser.parse_args()
    batsim = shutil.which(args.batsim)
    if batsim is None:
        parser.error(f"no {args.batsim!r} program (install the real Batsim 4.2.1)")
    if args.explain is not None:
        return explain(args.explain, batsim)
    first = args.first if args.first is not None else random.randrange(10**9)
    bad = []
    done = 0
    interrupted = False
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hpcjobs-differential-") as tmp:
        try:
            for seed in range(first, first + args.seeds):
                case = distinct_case(seed) if args.distinct else make_case(seed)
                real = run(case, [batsim], Path(tmp) / f"{seed}-batsim")
                ours = run(case, EMBEDDED, Path(tmp) / f"{seed}-sim")
                diff = compare(real, ours)
                done += 1
                if diff is not None:
                    bad.append(seed)
                    print(f"seed {seed}: {diff}", flush=True)
                    if args.stop:
                        break
                shutil.rmtree(Path(tmp) / f"{seed}-batsim", ignore_errors=True)
                shutil.rmtree(Path(tmp) / f"{seed}-sim", ignore_errors=True)
        except KeyboardInterrupt:
            interrupted = True  # Ctrl-C (or SIGINT): the summary of the seeds run so far
    print(json.dumps({"first_seed": first, "distinct": args.distinct, "seeds": done, "interrupted": interrupted, "disagreements": len(bad),
                      "disagreeing_seeds": bad[:50], "seconds": round(time.monotonic() - started, 1)}))
    return 1 if bad or interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
