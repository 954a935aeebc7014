"""``import hpcjobs`` time over a bare interpreter start.

Runs ``python -c "import hpcjobs"`` and ``python -c "pass"`` alternately in fresh
interpreters and prints one JSON line with the median difference in ms (target: <= 60 ms).
Usage: python bench/import_time.py [N]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time


def _run(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    bare, full = [], []
    for _ in range(n):
        bare.append(_run("pass"))
        full.append(_run("import hpcjobs"))
    diff = statistics.median(full) - statistics.median(bare)
    print(json.dumps({"bench": "import_time", "runs": n,
                      "bare_interpreter_ms": round(statistics.median(bare) * 1000, 2),
                      "with_import_ms": round(statistics.median(full) * 1000, 2),
                      "import_hpcjobs_ms": round(diff * 1000, 2), "target_ms": 60.0}))


if __name__ == "__main__":
    main()
