"""The rendered batch scripts (Slurm, PBS, PBS's Torque flavour) of representative specs, pinned by golden
files (golden/<backend>/<case>.sh) and checked by ``sh -n`` and ``bash -n`` (the script runs
under /bin/sh: dash here, bash elsewhere). Regenerate after an intended change with
HPCJOBS_UPDATE_GOLDEN=1 and review the diff."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import InvalidJobException, JobAttributes, JobExecutor, JobSpec, ResourceSpecV1
from hpcjobs.launchers.base import SCRIPTS

HERE = Path(__file__).parent
JOB_DIR = Path("/home/user/.hpcjobs/work/batch/job-1")
HOSTILE = "it's \"$HOME\" `id` $(id) \\ ; & | * ~ %j é\nline2"

SPECS = {
    "minimal": JobSpec("/bin/hostname"),
    "resources_and_attributes": JobSpec(
        "/usr/bin/env", ["A=${A}"], directory="/scratch/run 1",
        environment={"A": "x", "B": "${A}/y"},
        stdin_path="/data/in", stdout_path="out.txt", stderr_path="/logs/err.txt",
        resources=ResourceSpecV1(node_count=2, processes_per_node=4, cpu_cores_per_process=2,
                                 gpu_cores_per_process=1, memory=3 * 1024**3 + 1,
                                 exclusive_node_use=True),
        attributes=JobAttributes(duration=timedelta(hours=1, minutes=30, seconds=1),
                                 queue_name="debug", account="acct-1",
                                 custom_attributes={"slurm.constraint": "haswell&ib",
                                                    "slurm.hold": True, "slurm.requeue": False,
                                                    "slurm.comment": "it's a test",
                                                    "pbs.umask": "022", "pbs.release_nodes_on_stageout": False,
                                                    "pbs.depend": None})),
    "mpirun_with_pre_post_no_inherit": JobSpec(
        "/opt/app", ["--n", "3"], launcher="mpirun", pre_launch="/etc/pre.sh",
        post_launch="post.sh", inherit_environment=False,
        resources=ResourceSpecV1(process_count=4)),
    "srun": JobSpec("/opt/app", launcher="srun", resources=ResourceSpecV1(process_count=3)),
    "reservation": JobSpec("/bin/true", attributes=JobAttributes(reservation_id="R12.server")),
    # PBS: -A and -P; Slurm and Torque have one accounting field and refuse two values
    "account_and_project": JobSpec("/bin/true", attributes=JobAttributes(
        account="acct-1", project_name="proj 1")),
    # Slurm and Torque: a project alone is the account
    "project": JobSpec("/bin/true", attributes=JobAttributes(project_name="proj-1")),
    "hostile": JobSpec(f"/opt/{HOSTILE}", [HOSTILE, "${HOME}", "$HOME", ""], name=HOSTILE,
                       directory=f"/tmp/{HOSTILE}", environment={"V": HOSTILE},
                       stdout_path=f"/tmp/{HOSTILE}/out"),
}


BACKENDS = ["slurm", "pbs", "torque"]
#: cases a backend refuses or that are another's own
NOT_FOR = {"srun": {"pbs", "torque"}, "reservation": {"torque"},
           "account_and_project": {"slurm", "torque"}}


def executor(backend: str) -> JobExecutor:
    """The backend's executor, never a detected flavour: ``pbs`` on a machine whose qstat
    is Torque's (Slurm's Torque wrappers, say) would otherwise render Torque scripts."""
    config = {"flavour": "openpbs"} if backend == "pbs" else None
    return JobExecutor.get_instance(backend, config=config)


@pytest.fixture(scope="module")
def slurm() -> JobExecutor:
    return JobExecutor.get_instance("slurm")


def rendered(executor: JobExecutor, spec: JobSpec) -> str:
    text: str = executor.render_script(spec, JOB_DIR)  # type: ignore[attr-defined]
    # the launcher scripts live wherever hpcjobs is installed
    return text.replace(str(SCRIPTS), "<hpcjobs launchers>")


@pytest.mark.parametrize("backend, case", [(b, c) for b in BACKENDS for c in sorted(SPECS)
                                            if b not in NOT_FOR.get(c, ())])
def test_rendered_script_matches_its_golden_file(backend: str, case: str) -> None:
    spec = SPECS[case]
    text = rendered(executor(backend), spec)
    golden = HERE / backend / f"{case}.sh"
    if os.environ.get("HPCJOBS_UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/sh\n")
    for shell in ("sh", "bash"):
        check = subprocess.run([shell, "-n"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, (shell, check.stderr)


def test_directive_values_sbatch_cannot_carry_are_refused(slurm: JobExecutor) -> None:
    for attributes, field in [
        (JobAttributes(queue_name="a\nb"), "queue_name"),
        (JobAttributes(custom_attributes={"slurm.comment": "a\\b"}), "slurm.comment"),
        (JobAttributes(custom_attributes={"slurm.Bad Option": 1}), "slurm.Bad Option"),
        (JobAttributes(custom_attributes={"slurm.output": "/x"}), "slurm.output"),
    ]:
        with pytest.raises(InvalidJobException, match=field.replace(".", r"\.")):
            slurm.render_script(JobSpec("/bin/true", attributes=attributes), JOB_DIR)  # type: ignore[attr-defined]


def test_torque_refuses_a_reservation_and_a_shell_unsafe_work_directory(tmp_path: Path) -> None:
    torque = JobExecutor.get_instance("torque")
    with pytest.raises(InvalidJobException, match="reservation_id"):
        torque.render_script(SPECS["reservation"], JOB_DIR)  # type: ignore[attr-defined]
    unsafe = JobExecutor.get_instance("torque", config={"work_directory": tmp_path / "a b"})
    with pytest.raises(InvalidJobException, match="through a shell"):
        unsafe.render_script(SPECS["minimal"], JOB_DIR)  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["slurm", "torque"])
def test_one_accounting_field_refuses_account_and_a_different_project(backend: str) -> None:
    with pytest.raises(InvalidJobException, match="account .* and project_name .* one accounting"):
        executor(backend).render_script(SPECS["account_and_project"], JOB_DIR)  # type: ignore[attr-defined]
    same = JobSpec("/bin/true", attributes=JobAttributes(account="a", project_name="a"))
    assert "a\n" in rendered(executor(backend), same)
