"""How dear creating a file is on this file system now, for the submit benchmarks.

hpcjobs' submit makes a job directory and three or four files where a raw ``sbatch`` or
``qsub`` loop makes none, so its ratio to the raw loop follows the file system's state.
On this machine's ext4, creating a file costs 7-25 us normally and 50-230 us for minutes
after many files nearby were deleted (a previous run's cleanup, a removed checkout):
bench/slurm_submit.py gave 0.82 and 0.91 five minutes apart, at 69 and 23 us. The
benchmarks print this figure so that a run on a disturbed file system can be told.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def file_create_us(directory: Path, pairs: int = 150) -> float:
    """Wall microseconds per creation (a directory, then an empty file in it, ``pairs``
    times) in a new directory under ``directory``. The files are left there: deleting
    them would slow what follows (the benchmark's directory goes at its end)."""
    probe = tempfile.mkdtemp(prefix="fs-probe-", dir=directory)
    start = time.perf_counter()
    for i in range(pairs):
        sub = os.path.join(probe, str(i))
        os.mkdir(sub)
        os.close(os.open(os.path.join(sub, "f"), os.O_CREAT | os.O_WRONLY, 0o600))
    return round((time.perf_counter() - start) / (2 * pairs) * 1e6, 1)
