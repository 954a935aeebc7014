"""Benchmark: file staging over ssh against ``tar | ssh tar`` of the same files.

Needs the test login node (``eval "$(scripts/sshd.sh up)"``: HPCJOBS_TEST_SSH_HOST and
HPCJOBS_TEST_SSH_CONFIG) or any host those two variables name. A directory of
``--files`` files (``--megabytes`` in all, random bytes) goes to the host and comes back:

* the baseline: ``tar -cf - | ssh host tar -xf -`` there, ``ssh host tar -cf - | tar
  -xf -`` back (a fresh ssh each way, as a user would type it);
* hpcjobs: the staging calls of a batch executor's ssh host (``put`` for a stage-in,
  ``get`` for a stage-out: what ``StageIn``/``StageOut`` of that directory do), on one
  connection opened beforehand.

Rounds alternate (baseline, hpcjobs, hpcjobs, baseline, ...). Prints one JSON line: the
seconds of each way per round, MB/s, the ratio of hpcjobs' rate to the baseline's
(target >= 0.8) with its spread, and the round trips hpcjobs took per way.

    .venv/bin/python bench/remote_staging.py [--files 1000] [--megabytes 100] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from hpcjobs.remote.host import connect
from hpcjobs.staging import StagingMode


def make_files(root: Path, files: int, megabytes: int) -> None:
    size = megabytes * 1024 * 1024 // files
    for i in range(files):
        (root / f"d{i % 10}").mkdir(exist_ok=True)
        (root / f"d{i % 10}" / f"f{i}").write_bytes(os.urandom(size))


def baseline(src: Path, back: Path, ssh: list[str], remote: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    subprocess.run(f"tar -C {src} -cf - . | {' '.join(ssh)} 'mkdir -p {remote} && tar -xf - -C {remote}'",
                   shell=True, check=True)
    t1 = time.perf_counter()
    back.mkdir()
    subprocess.run(f"{' '.join(ssh)} 'tar -C {remote} -cf - .' | tar -xf - -C {back}",
                   shell=True, check=True)
    t2 = time.perf_counter()
    subprocess.run([*ssh, f"rm -rf {remote}"], check=True)
    return t1 - t0, t2 - t1


def staged(src: Path, back: Path, host: Any, remote: str) -> tuple[float, float, int, int]:
    conn = host.connection
    trips0 = conn.round_trips
    t0 = time.perf_counter()
    host.put(str(src), remote, StagingMode.COPY)
    t1 = time.perf_counter()
    trips1 = conn.round_trips
    host.get(remote, str(back), StagingMode.COPY)
    t2 = time.perf_counter()
    trips2 = conn.round_trips
    host.remove(remote)
    host.flush()
    return t1 - t0, t2 - t1, trips1 - trips0, trips2 - trips1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of alternated rounds")
    args = parser.parse_args()
    login = os.environ["HPCJOBS_TEST_SSH_HOST"]
    config = os.environ.get("HPCJOBS_TEST_SSH_CONFIG")
    options = ["-F", config] if config else []
    ssh = ["ssh", *options, "-o", "BatchMode=yes", login]
    host = connect(f"ssh://{login}", options)
    home = host.environ()["HOME"]
    times: dict[str, list[tuple[float, float]]] = {"baseline": [], "hpcjobs": []}
    trips: list[tuple[int, int]] = []
    with tempfile.TemporaryDirectory(prefix="hpcjobs-bench-staging-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        make_files(src, args.files, args.megabytes)
        for r in range(args.rounds):
            for kind in (("baseline", "hpcjobs") if r % 2 == 0 else ("hpcjobs", "baseline")):
                back = Path(tmp) / f"back-{uuid.uuid4().hex[:8]}"
                remote = f"{home}/hpcjobs-bench-staging-{uuid.uuid4().hex[:8]}"
                if kind == "baseline":
                    times[kind].append(baseline(src, back, ssh, remote))
                else:
                    up, down, t_up, t_down = staged(src, back, host, remote)
                    times[kind].append((up, down))
                    trips.append((t_up, t_down))
                assert sum(1 for _ in back.rglob("f*")) == args.files
                shutil.rmtree(back)
    host.close()
    result: dict[str, Any] = {"bench": "remote_staging", "files": args.files,
                              "megabytes": args.megabytes}
    for way, i in (("in", 0), ("out", 1)):
        base = [t[i] for t in times["baseline"]]
        ours = [t[i] for t in times["hpcjobs"]]
        result[way] = {
            "baseline_s": [round(x, 3) for x in base], "hpcjobs_s": [round(x, 3) for x in ours],
            "hpcjobs_mb_per_s": round(args.megabytes / statistics.median(ours), 1),
            "ratio": round(statistics.median(base) / statistics.median(ours), 2),
            "ratio_spread": [round(min(base) / max(ours), 2), round(max(base) / min(ours), 2)],
            "hpcjobs_round_trips": [t[i] for t in trips]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
