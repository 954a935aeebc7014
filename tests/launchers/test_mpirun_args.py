"""How mpirun.sh picks an mpirun and builds its command line, with shell stand-ins for
``mpirun`` (each records its arguments) on PATH, as Parsl tests its launchers. The real
OpenMPI runs in test_scripts.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import pytest

from launcher_helpers import PROBE, RunLauncher, write_script

OPENMPI = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/"
HYDRA = "HYDRA build details:\n    Version:                                 4.0.2"
#: Slurm's contribs/torque/mpiexec.pl knows no --version: Getopt::Long rejects it, usage, 2
SLURM_MPIEXEC = "Unknown option: version\nUsage:\n    mpiexec.slurm args executable pgmargs"
#: what the scripts may call besides the stand-ins (their whole dependency list)
TOOLS = ["awk", "uname", "mktemp", "rm", "id", "cat"]


def stand_in(bin_dir: Path, name: str, version: str, status: int = 0) -> Path:
    """An mpirun stand-in: prints ``version`` for --version (exit status 2 for the Slurm
    wrapper, 0 otherwise), else records its arguments (NUL-separated) in
    ``<bin_dir>/<name>.args`` and exits with ``status``."""
    version_status = 2 if version == SLURM_MPIEXEC else 0
    return write_script(bin_dir / name, f"""#!/bin/sh
if [ "$1" = --version ]; then
    printf '%s\\n' '{version}'
    exit {version_status}
fi
printf '%s\\0' "$@" > "$0.args"
exit {status}
""")


def recorded(bin_dir: Path, name: str) -> Optional[list[str]]:
    f = bin_dir / f"{name}.args"
    if not f.exists():
        return None
    return f.read_bytes().decode().split("\0")[:-1]


@pytest.fixture
def only_stand_ins(bin_dir: Path) -> dict[str, str]:
    """PATH with nothing but the stand-ins and the few tools the scripts use."""
    for tool in TOOLS:
        target = next(Path(d, tool) for d in os.defpath.split(os.pathsep) + ["/usr/bin", "/bin"]
                      if Path(d, tool).exists())
        (bin_dir / tool).symlink_to(target)
    return {"PATH": str(bin_dir)}


def job(n_codes: str = "") -> list[str]:
    return [sys.executable, str(PROBE), n_codes]


def split(args: list[str]) -> tuple[list[str], list[str]]:
    """(mpirun options, job command) of a recorded command line."""
    j = job()
    assert args[-len(j):] == j, args
    return args[:-len(j)], args[-len(j):]


def exported(options: list[str]) -> set[str]:
    return {options[i + 1] for i, o in enumerate(options) if o == "-x"}


def test_openmpi_options(run_launcher: RunLauncher, bin_dir: Path, workdir: Path,
                         only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", OPENMPI)
    (workdir / "pre.sh").write_text(
        "export PROBE_NEW=1\nexport PROBE_SEED=changed\nPROBE_NOT_EXPORTED=1\n")
    r = run_launcher("mpirun", pre="pre.sh", n=3,
                     env={**only_stand_ins, "PROBE_SEED": "before", "PROBE_SAME": "x"})
    assert r.returncode == 0, r.stderr
    args = recorded(bin_dir, "mpirun")
    assert args is not None
    options, _ = split(args)
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    assert [o for o in options if o not in ("-x",) and o not in exported(options)] == \
        ["--oversubscribe", *root, "-n", "3"]
    # only what pre-launch set or changed, so it reaches ranks on other nodes too
    assert exported(options) == {"PROBE_NEW", "PROBE_SEED"}
    assert "--hostfile" not in options  # outside an allocation


def test_openmpi_forwards_what_pre_launch_changed_in_a_large_environment(
        run_launcher: RunLauncher, bin_dir: Path, workdir: Path,
        only_stand_ins: dict[str, str]) -> None:
    # 200 KiB of environment: more than one string may hold (execve(2)), as the
    # snapshot the launcher compares with once was, in awk's environment
    big = {f"PROBE_BIG{i}": "v" * 10_000 for i in range(20)}
    stand_in(bin_dir, "mpirun", OPENMPI)
    (workdir / "pre.sh").write_text("export PROBE_NEW=1\nexport PROBE_BIG3=changed\n")
    r = run_launcher("mpirun", pre="pre.sh", n=2, env={**only_stand_ins, **big})
    assert r.returncode == 0, r.stderr
    args = recorded(bin_dir, "mpirun")
    assert args is not None
    assert exported(split(args)[0]) == {"PROBE_NEW", "PROBE_BIG3"}, r.stderr


def test_openmpi_uses_node_file_inside_slurm(run_launcher: RunLauncher, bin_dir: Path,
                                             tmp_path: Path,
                                             only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", OPENMPI)
    write_script(bin_dir / "scontrol", "#!/bin/sh\nprintf 'n1\\nn2\\n'\n")
    # in the job directory, so the node file outlives the launcher and can be checked
    r = run_launcher("mpirun", n=4, ppn=2,
                     env={**only_stand_ins, "SLURM_JOB_NODELIST": "n[1-2]",
                          "HPCJOBS_JOB_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    args = recorded(bin_dir, "mpirun")
    assert args is not None
    options, _ = split(args)
    hostfile = options[options.index("--hostfile") + 1]
    assert Path(hostfile).read_text() == "n1\nn1\nn2\nn2\n"
    assert options[-2:] == ["-n", "4"]


def test_mpich_hydra_gets_only_the_count(run_launcher: RunLauncher, bin_dir: Path,
                                         only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", HYDRA)
    r = run_launcher("mpirun", n=2, env=only_stand_ins)
    assert r.returncode == 0, r.stderr
    args = recorded(bin_dir, "mpirun")
    assert args is not None and split(args)[0] == ["-n", "2"]


def test_mpich_hydra_uses_node_file_inside_pbs(run_launcher: RunLauncher, bin_dir: Path,
                                               tmp_path: Path,
                                               only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", HYDRA)
    (tmp_path / "pbs").write_text("h1\nh2\n")
    r = run_launcher("mpirun", n=2, env={**only_stand_ins, "PBS_NODEFILE": str(tmp_path / "pbs")})
    args = recorded(bin_dir, "mpirun")
    assert r.returncode == 0 and args is not None, r.stderr
    options, _ = split(args)
    assert options[0] == "-f" and options[2:] == ["-n", "2"]


def test_prefers_openmpi_binary_over_slurm_mpiexec(run_launcher: RunLauncher, bin_dir: Path,
                                                   only_stand_ins: dict[str, str]) -> None:
    # slurm-wlm-torque registers mpiexec.slurm as /usr/bin/mpirun (update-alternatives)
    stand_in(bin_dir, "mpirun", SLURM_MPIEXEC)
    stand_in(bin_dir, "mpirun.openmpi", OPENMPI)
    r = run_launcher("mpirun", n=2, env=only_stand_ins)
    assert r.returncode == 0, r.stderr
    assert recorded(bin_dir, "mpirun") is None
    args = recorded(bin_dir, "mpirun.openmpi")
    assert args is not None and "--oversubscribe" in split(args)[0]


def test_unknown_mpirun_without_openmpi_gets_only_the_count(run_launcher: RunLauncher,
                                                            bin_dir: Path,
                                                            only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", SLURM_MPIEXEC)
    r = run_launcher("mpirun", n=2, env=only_stand_ins)
    args = recorded(bin_dir, "mpirun")
    assert r.returncode == 0 and args is not None, r.stderr
    assert split(args)[0] == ["-n", "2"]


def test_hpcjobs_mpirun_set_in_pre_launch_wins(run_launcher: RunLauncher, bin_dir: Path,
                                               workdir: Path,
                                               only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", OPENMPI)
    mine = stand_in(bin_dir, "my mpirun", HYDRA)
    (workdir / "pre.sh").write_text(f"export HPCJOBS_MPIRUN='{mine}'\n")
    r = run_launcher("mpirun", pre="pre.sh", n=2, env=only_stand_ins)
    assert r.returncode == 0, r.stderr
    assert recorded(bin_dir, "mpirun") is None
    args = recorded(bin_dir, "my mpirun")
    assert args is not None and split(args)[0] == ["-n", "2"]


def test_mpirun_exit_code_is_the_job_exit_code(run_launcher: RunLauncher, bin_dir: Path,
                                               only_stand_ins: dict[str, str]) -> None:
    stand_in(bin_dir, "mpirun", OPENMPI, status=9)
    r = run_launcher("mpirun", n=2, env=only_stand_ins)
    assert r.returncode == 9


def test_no_mpirun_is_127_with_a_message(run_launcher: RunLauncher,
                                         only_stand_ins: dict[str, str]) -> None:
    r = run_launcher("mpirun", n=2, env=only_stand_ins)
    assert r.returncode == 127
    assert "'mpirun' not found" in r.stderr
