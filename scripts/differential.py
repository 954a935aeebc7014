#!/usr/bin/env python3
"""Run the differential test on fresh seeds: each case on real Batsim and on hpcjobs.sim.

    scripts/differential.py [--seeds N] [--first SEED] [--batsim PROGRAM] [--stop]

Cases and comparison: tests/sim/differential.py. Prints one line per disagreement and a
final JSON summary line (also on Ctrl-C: the seeds run so far); exits 1 if any case
disagreed or the run was interrupted. Needs a real ``batsim`` (PATH or
--batsim; scripts/test.sh installs one when the project's real-systems builds are at hand).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sim"))

from differential import EMBEDDED, compare, make_case, run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first", type=int, default=None, help="first seed (default: random)")
    parser.add_argument("--batsim", default="batsim")
    parser.add_argument("--stop", action="store_true", help="stop at the first disagreement")
    args = parser.parse_args()
    batsim = shutil.which(args.batsim)
    if batsim is None:
        parser.error(f"no {args.batsim!r} program (install the real Batsim 4.2.1)")
    first = args.first if args.first is not None else random.randrange(10**9)
    bad = []
    done = 0
    interrupted = False
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hpcjobs-differential-") as tmp:
        try:
            for seed in range(first, first + args.seeds):
                case = make_case(seed)
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
    print(json.dumps({"first_seed": first, "seeds": done, "interrupted": interrupted, "disagreements": len(bad),
                      "disagreeing_seeds": bad[:50], "seconds": round(time.monotonic() - started, 1)}))
    return 1 if bad or interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
