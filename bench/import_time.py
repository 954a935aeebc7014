"""``import hpcjobs`` time over a bare interpreter start.

Runs ``python -c "import hpcjobs"`` and ``python -c "pass"`` alternately in fresh
interpreters and prints one JSON line with the median difference in ms (target: <= 40 ms),
in wall time and in the child processes' CPU time (user + system, from ``wait4``), which
a busy machine blurs much less.
Usage: python bench/import_time.py [N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time


def _run(code: str) -> tuple[float, float]:
    """Wall and CPU seconds of one interpreter running ``code``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"python -c {code!r} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    bare, full = [], []
    for _ in range(n):
        bare.append(_run("pass"))
        full.append(_run("import hpcjobs"))

    def median_ms(runs: list[tuple[float, float]], which: int) -> float:
        return statistics.median(r[which] for r in runs) * 1000

    print(json.dumps({"bench": "import_time", "runs": n,
                      "bare_interpreter_ms": round(median_ms(bare, 0), 2),
                      "with_import_ms": round(median_ms(full, 0), 2),
                      "import_hpcjobs_ms": round(median_ms(full, 0) - median_ms(bare, 0), 2),
                      "import_hpcjobs_cpu_ms": round(median_ms(full, 1) - median_ms(bare, 1), 2),
                      "target_ms": 40.0}))


if __name__ == "__main__":
    main()
