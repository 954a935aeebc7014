"""The launchers inside a real Slurm allocation (scripts/slurm-cluster.sh up): the node
file comes from the real ``scontrol show hostnames``, and Open MPI's ``mpirun`` gets it
as its hostfile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_helpers import IN_CI, PROBE, TIMEOUT, launch_command, need_openmpi

pytestmark = pytest.mark.slurm


def slurm_nodes() -> list[str]:
    """The hosts of a one-process allocation, from Slurm itself (skip if no Slurm)."""
    try:
        p = subprocess.run(["srun", "-n1", "sh", "-c",
                            'scontrol show hostnames "$SLURM_JOB_NODELIST"'],
                           capture_output=True, text=True, timeout=TIMEOUT)
        reason = p.stderr.strip() if p.returncode else ""
    except (OSError, subprocess.TimeoutExpired) as e:
        reason = str(e)
    if reason:
        msg = f"no working Slurm cluster (scripts/slurm-cluster.sh up): {reason}"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return p.stdout.split()


@pytest.mark.parametrize("launcher", ["multiple", "mpirun"])
def test_node_file_and_ranks_inside_slurm(launcher: str, tmp_path: Path) -> None:
    if launcher == "mpirun":
        need_openmpi()
    hosts = slurm_nodes()
    probe = tmp_path / "probe"
    probe.mkdir()
    pre = tmp_path / "pre.sh"
    pre.write_text('export PROBE_FROM_PRE="in slurm"\n')
    cmd = launch_command(launcher, [sys.executable, str(PROBE), "", "a b"], pre=str(pre), n=2,
                         ppn=2)
    p = subprocess.run(["srun", "-n1", "--export=ALL,PROBE_DIR=" + str(probe), *cmd],
                       cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    records = [json.loads(f.read_text()) for f in sorted(probe.glob("*.json"))]
    assert sorted(r["rank"] for r in records) == [0, 1]
    for r in records:
        assert r["nodes"] == [hosts[0]] * 2
        assert r["env"]["PROBE_FROM_PRE"] == "in slurm"
        assert [bytes.fromhex(a) for a in r["argv"]] == [b"a b"]
