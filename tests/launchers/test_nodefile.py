"""The node file (PSIJ_NODEFILE): where it is written, and what it lists inside Slurm
(``scontrol show hostnames``, here a shell stand-in on PATH), inside PBS
(``PBS_NODEFILE``) and outside any allocation."""

from __future__ import annotations

import os
from pathlib import Path

from launcher_helpers import RunLauncher, write_script

SCONTROL = """#!/bin/sh
# stand-in for Slurm's scontrol: records its arguments, prints two host names
printf '%s\\n' "$@" > "$PROBE_DIR/../scontrol_args"
[ "$1 $2" = "show hostnames" ] || exit 1
printf 'node-a\\nnode-b\\n'
"""


def test_inside_slurm_hosts_come_from_scontrol(run_launcher: RunLauncher, bin_dir: Path,
                                               probe_dir: Path) -> None:
    write_script(bin_dir / "scontrol", SCONTROL)
    r = run_launcher("multiple", n=4, ppn=2, env={"SLURM_JOB_NODELIST": "node-[a-b]"})
    assert r.returncode == 0, r.stderr
    assert (probe_dir.parent / "scontrol_args").read_text() == "show\nhostnames\nnode-[a-b]\n"
    assert r.records[0]["nodes"] == ["node-a", "node-a", "node-b", "node-b"]


def test_more_processes_than_slots_wrap_around(run_launcher: RunLauncher,
                                               bin_dir: Path) -> None:
    write_script(bin_dir / "scontrol", SCONTROL)
    r = run_launcher("multiple", n=3, ppn=1, env={"SLURM_JOB_NODELIST": "node-[a-b]"})
    assert r.records[2]["nodes"] == ["node-a", "node-b", "node-a"]


def test_failing_scontrol_falls_back_to_this_host(run_launcher: RunLauncher,
                                                  bin_dir: Path) -> None:
    write_script(bin_dir / "scontrol", "#!/bin/sh\necho 'scontrol: error' >&2\nexit 1\n")
    r = run_launcher("multiple", n=2, env={"SLURM_JOB_NODELIST": "node-[a-b]"})
    assert r.returncode == 0, r.stderr
    assert r.records[0]["nodes"] == [os.uname().nodename] * 2
    assert "cannot list the allocation's hosts" in r.stderr


def test_inside_pbs_hosts_come_from_pbs_nodefile(run_launcher: RunLauncher,
                                                 tmp_path: Path) -> None:
    pbs = tmp_path / "pbs_nodes"
    pbs.write_text("h1\nh1\nh2\nh2\n")  # PBS lists a host once per slot
    r = run_launcher("multiple", n=2, ppn=1, env={"PBS_NODEFILE": str(pbs)})
    assert r.returncode == 0, r.stderr
    assert r.records[0]["nodes"] == ["h1", "h2"]


def test_written_in_the_job_directory_when_given(run_launcher: RunLauncher,
                                                 tmp_path: Path) -> None:
    job_dir = tmp_path / "private dir 'x'"
    job_dir.mkdir()
    r = run_launcher("multiple", n=2, env={"HPCJOBS_JOB_DIR": str(job_dir)})
    assert r.returncode == 0, r.stderr
    assert r.records[0]["nodefile"] == str(job_dir / "nodefile")
    # the executor owns its job directory: the file stays for post-mortems
    assert (job_dir / "nodefile").read_text().splitlines() == [os.uname().nodename] * 2


def test_temporary_node_file_is_removed_at_exit(run_launcher: RunLauncher) -> None:
    r = run_launcher("multiple", n=2, codes={1: 4})
    assert r.returncode == 4
    path = r.records[0]["nodefile"]
    assert path and r.records[1]["nodefile"] == path
    assert not Path(path).exists()


def test_unwritable_job_directory_is_reported(run_launcher: RunLauncher,
                                              tmp_path: Path) -> None:
    r = run_launcher("multiple", n=2, env={"HPCJOBS_JOB_DIR": str(tmp_path / "missing")})
    assert r.returncode == 1
    assert r.records == {}
    assert "cannot write the node file" in r.stderr
