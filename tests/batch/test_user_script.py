"""A user's own batch script (batch/user_script.py): which lines are directives, and
the rendered job script: the user's lines first and verbatim, ours only where they are
silent. Rendering needs no scheduler; the real runs are in tests/slurm and tests/pbs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hpcjobs import InvalidJobException, JobAttributes, JobExecutor, ResourceSpecV1
from hpcjobs.executors.batch.user_script import batch_script_spec, directive_lines

JOB_DIR = Path("/home/user/.hpcjobs/work/batch/job-1")
SLURM_SCRIPT = """#!/bin/bash
# a comment
#SBATCH -J mine --time=5   # five minutes
#SBATCH  --output=out-%j.txt

#SBATCHX not one
#sbatch not one either
   #SBATCH --mem=1G
echo 'it'"'"'s $HOME' \\\\ é
#SBATCH --partition=never-read
"""


def test_directives_are_read_where_the_scheduler_reads_them() -> None:
    assert directive_lines(SLURM_SCRIPT, "#SBATCH") == [
        "#SBATCH -J mine --time=5   # five minutes", "#SBATCH  --output=out-%j.txt",
        "   #SBATCH --mem=1G"]
    assert directive_lines("#SBATCH --first-line-is-the-shebang\n", "#SBATCH") == []


def script(tmp_path: Path, text: str, name: str = "job.sh") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def render(backend: str, spec: object) -> str:
    config = {"flavour": "openpbs"} if backend == "pbs" else None
    ex = JobExecutor.get_instance(backend, config=config)
    return str(ex.render_script(spec, JOB_DIR))  # type: ignore[attr-defined]


def test_slurm_keeps_the_users_lines_and_adds_only_what_they_leave_unset(
        tmp_path: Path) -> None:
    spec = batch_script_spec(script(tmp_path, SLURM_SCRIPT), ["a b"], attributes=JobAttributes(
        duration=timedelta(hours=1), queue_name="debug", account="acct",
        custom_attributes={"slurm.mem": "2G", "slurm.constraint": "x"}),
                             resources=ResourceSpecV1(node_count=2))
    text = render("slurm", spec)
    head = text.split("\n# ")[0].splitlines()
    assert head == ["#!/bin/sh",
                    "#SBATCH -J mine --time=5   # five minutes",
                    "#SBATCH  --output=out-%j.txt",
                    "   #SBATCH --mem=1G",
                    # theirs set name, time, output, mem (a resource: none of ours then)
                    "#SBATCH --partition=debug", "#SBATCH --account=acct",
                    "#SBATCH --constraint=x"]
    # the user's file, byte for byte, is the job's program, with its arguments
    assert f"printf '%s' '#!/bin/bash\n# a comment\n" in text
    assert f"{JOB_DIR}/user-script 'a b'" in text


def test_slurm_script_without_lines_gets_only_what_the_spec_gives(tmp_path: Path) -> None:
    spec = batch_script_spec(script(tmp_path, "#!/bin/sh\necho hi\n"))
    head = render("slurm", spec).split("\n# ")[0].splitlines()
    # no --ntasks, no --time: the scheduler's defaults, as under plain sbatch
    assert head == ["#!/bin/sh", "#SBATCH --job-name=job.sh"]


def test_pbs_keeps_the_users_lines_and_adds_only_what_they_leave_unset(tmp_path: Path) -> None:
    text = render("pbs", batch_script_spec(script(tmp_path, """#!/bin/sh
#PBS -N mine
#PBS -l walltime=1:00:00 -lselect=1:ncpus=2
#PBS -W depend=afterok:1,umask=022
true
"""), attributes=JobAttributes(duration=timedelta(hours=2), project_name="p",
                               custom_attributes={"pbs.umask": "077"}),
        resources=ResourceSpecV1(process_count=4)))
    head = [line for line in text.split("\n# ")[0].splitlines()]
    assert head == ["#!/bin/sh", "#PBS -N mine",
                    "#PBS -l walltime=1:00:00 -lselect=1:ncpus=2",
                    "#PBS -W depend=afterok:1,umask=022",
                    "#PBS -S /bin/sh", "#PBS -P p",
                    "#PBS -o /home/user/.hpcjobs/work/batch/job-1/batch.out", "#PBS -j oe",
                    "#PBS -k oed"]


@pytest.mark.parametrize("text, message", [
    (None, "cannot read"),
    ("#!/bin/sh\n\0", "NUL byte"),
    (b"#!/bin/sh\n\xff\n", "not UTF-8"),
])
def test_a_script_that_cannot_be_used_is_refused_naming_the_field(
        tmp_path: Path, text: object, message: str) -> None:
    path = tmp_path / "job.sh"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif isinstance(text, str):
        path.write_text(text)
    with pytest.raises(InvalidJobException, match=rf"JobSpec.executable \(a batch script\).*"
                                                  f"{message}"):
        render("slurm", batch_script_spec(path))
    with pytest.raises(InvalidJobException, match="not an absolute path"):
        render("slurm", batch_script_spec("job.sh"))


@pytest.mark.parametrize("backend, line", [("slurm", "#SBATCH -a 0-3"), ("pbs", "#PBS -J 0-3")])
def test_an_array_script_is_refused(tmp_path: Path, backend: str, line: str) -> None:
    with pytest.raises(InvalidJobException, match="makes many jobs"):
        render(backend, batch_script_spec(script(tmp_path, f"#!/bin/sh\n{line}\ntrue\n")))


def test_torque_refuses_a_users_script(tmp_path: Path) -> None:
    with pytest.raises(InvalidJobException, match="Torque-style qsub"):
        render("torque", batch_script_spec(script(tmp_path, "#!/bin/sh\ntrue\n")))
