"""Run the whole test suite as independent pytest runs side by side, one or two per real
system that paces its tests, and report them as one.

The tests of the Slurm cluster and of the PBS server spend most of their time waiting for
those schedulers to start and end jobs; the rest (local processes, Flux, the simulator,
Batsim) spend theirs on this machine's CPU. No group touches another's system, and the
two Slurm groups only their own jobs, so they run at the same time: the suite takes about
as long as its longest group instead of the sum. Each group's output goes to a log that is
printed whole when the group ends (never interleaved); the last line adds them up in
pytest's words.

    scripts/pytest_groups.py PYTHON [PYTEST-ARGS...]

PYTEST-ARGS go to every group (e.g. ``-x``). Exit status: 0 if every group passed, else
the first non-zero status of a group.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: name -> marker expression; together they select every test exactly once
GROUPS = {
    # the slow Slurm tests wait minutes for Slurm's walltime checks and purges, their own
    # jobs only: beside the others they cost no more than their longest
    "slurm": "slurm and not slow and not remote",
    "slurm-slow": "slurm and slow and not remote",
    "pbs": "pbs and not slurm and not remote",
    # Slurm and PBS through the test login node: their own jobs, as another user
    "remote": "remote",
    "rest": "not slurm and not pbs and not remote",
}
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
# (deselected is left out: each test is deselected by the groups it is not in)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    python, extra = argv[1], argv[2:]
    logs = Path(tempfile.mkdtemp(prefix="hpcjobs-tests-"))
    started = time.monotonic()
    running = {}
    for name, marker in GROUPS.items():
        log = (logs / f"{name}.log").open("wb")
        # no cache plugin: the sessions would all write one .pytest_cache at once
        cmd = [python, "-m", "pytest", "-ra", "-p", "no:cacheprovider", "--durations=10",
               "-m", marker, *extra]
        running[name] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log)
    totals: dict[str, int] = {}
    status = 0
    while running:
        for name, (proc, log) in list(running.items()):
            if proc.poll() is None:
                continue
            log.close()
            del running[name]
            text = (logs / f"{name}.log").read_text(errors="replace")
            elapsed = time.monotonic() - started
            print(f"== pytest, group {name} (-m {GROUPS[name]!r}): exit {proc.returncode}"
                  f" after {elapsed:.0f} s", flush=True)
            sys.stdout.write(text)
            tail = text.strip().splitlines()[-1:] or [""]
            for count, word in _COUNT.findall(tail[0]):
                word = "errors" if word.startswith("error") else word
                totals[word] = totals.get(word, 0) + int(count)
            # 5: no test selected (a group can be empty under a narrow selection)
            if proc.returncode not in (0, 5) and status == 0:
                status = proc.returncode
        time.sleep(0.5)
    print(f"== all groups in {time.monotonic() - started:.0f} s")
    line = f"{totals.get('passed', 0)} passed, {totals.get('failed', 0)} failed"
    for word in ("skipped", "errors", "xfailed", "xpassed"):
        if totals.get(word):
            line += f", {totals[word]} {word}"
    print(f"total: {line}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
