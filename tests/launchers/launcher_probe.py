"""A job rank for the launcher tests: records what it was given, then exits.

Run as ``python launcher_probe.py <exit code spec> <arguments...>``. Writes
``$PROBE_DIR/<rank>.json`` with its arguments (after the exit code spec), its rank,
selected environment variables, its node file and (for ``PROBE_STDIN=1``) its stdin.
The exit code spec is ``<rank>=<code>,...`` (ranks not listed exit 0); a rank listed
in ``PROBE_SLOW`` first sleeps a little so that it ends after the others.
"""

import json
import os
import sys
import time


def main() -> int:
    rank = int(os.environ.get("PSIJ_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or 0)
    codes = dict(item.split("=") for item in sys.argv[1].split(",") if item)
    if str(rank) in os.environ.get("PROBE_SLOW", "").split(","):
        time.sleep(0.5)
    nodefile = os.environ.get("PSIJ_NODEFILE")
    record = {
        "rank": rank,
        "pid": os.getpid(),
        "argv": [os.fsencode(a).hex() for a in sys.argv[2:]],
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("PROBE_", "PSIJ_", "_PSI_J_"))},
        "nodefile": nodefile,
        "nodes": open(nodefile).read().splitlines() if nodefile else None,
        "stdin": sys.stdin.read() if os.environ.get("PROBE_STDIN") else None,
    }
    path = os.path.join(os.environ["PROBE_DIR"], f"{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.rename(path + ".tmp", path)  # a reader never sees half a record
    return int(codes.get(str(rank), 0))


sys.exit(main())
