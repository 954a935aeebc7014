"""The launcher scripts run for real: every launcher, real processes, real mpirun.

What all launchers share (lib.sh): pre-launch environment reaching every rank,
post-launch after all ranks, node file, byte-exact arguments, exit code semantics.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_helpers import (PROBE, SCRIPTS_DIR, TIMEOUT, RunLauncher, launch_command,
                              need_openmpi)

HOSTILE = ["", " ", "a b", "'", '"', "it's \"quoted\"", "$(touch pwned)", "`touch pwned`",
           "$HOME", "${PATH}", "a\nb", "tab\there", "*", "?", "-n", "--", "-e", "a\\nb",
           "é漢字🙂", "; exit 7", "&& false", "|", ">out", "%s%n", "\\"]

LAUNCHERS = ["single", "multiple", "mpirun"]


@pytest.fixture(params=LAUNCHERS)
def launcher(request: pytest.FixtureRequest) -> str:
    if request.param == "mpirun":
        need_openmpi()
    name: str = request.param
    return name


def ranks(launcher: str) -> int:
    """How many processes the job runs (``single`` runs one whatever the count)."""
    return 1 if launcher == "single" else 3


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS_DIR.glob("*.sh")))
@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_script_syntax(script: str, shell: str) -> None:
    p = subprocess.run([shell, "-n", str(SCRIPTS_DIR / script)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_every_launcher_script_exists() -> None:
    names = {p.name for p in SCRIPTS_DIR.glob("*.sh")}
    assert {"lib.sh", "single.sh", "multiple.sh", "mpirun.sh"} <= names


def test_arguments_pass_byte_exact(run_launcher: RunLauncher, launcher: str,
                                   workdir: Path) -> None:
    pre = write(workdir / "pre.sh", ":\n")  # forces single through its script
    r = run_launcher(launcher, HOSTILE, pre=pre, n=3)
    assert r.returncode == 0, r.stderr
    assert sorted(r.records) == list(range(ranks(launcher)))
    for rank in r.records:
        assert r.argv(rank) == [a.encode() for a in HOSTILE]
    assert not (workdir / "pwned").exists()
    assert not (workdir / "out").exists()


def test_pre_launch_environment_reaches_every_rank(run_launcher: RunLauncher, launcher: str,
                                                   workdir: Path) -> None:
    seed = "x y\n'q' \"d\" $(no) `no` é"
    # `set --` in a sourced script must not replace the job's own command
    pre = write(workdir / "pre.sh", 'export PROBE_FROM_PRE="$PROBE_SEED/pre"\nset -- clobbered\n')
    r = run_launcher(launcher, ["arg"], pre=pre, n=3, env={"PROBE_SEED": seed})
    assert r.returncode == 0, r.stderr
    assert sorted(r.records) == list(range(ranks(launcher)))
    for rank, rec in r.records.items():
        assert rec["env"]["PROBE_FROM_PRE"] == seed + "/pre"
        assert r.argv(rank) == [b"arg"]


def test_post_launch_runs_after_every_rank(run_launcher: RunLauncher, launcher: str,
                                           workdir: Path) -> None:
    pre = write(workdir / "pre.sh", "echo pre >> order\n")
    post = write(workdir / "post.sh",
                 'set -- "$PROBE_DIR"/*.json\necho "post saw $#" >> order\n')
    # rank 0 is slow, so a post-launch that did not wait would see fewer records
    r = run_launcher(launcher, pre=pre, post=post, n=3, env={"PROBE_SLOW": "0"})
    assert r.returncode == 0, r.stderr
    assert (workdir / "order").read_text() == f"pre\npost saw {ranks(launcher)}\n"


def test_node_file_has_one_line_per_process(run_launcher: RunLauncher, launcher: str,
                                            workdir: Path) -> None:
    pre = write(workdir / "pre.sh", 'wc -l < "$PSIJ_NODEFILE" > pre_saw\n')
    r = run_launcher(launcher, pre=pre, n=3)
    assert r.returncode == 0, r.stderr
    assert (workdir / "pre_saw").read_text().strip() == "3"
    for rec in r.records.values():
        assert rec["nodes"] == [os.uname().nodename] * 3


def test_pre_launch_failure_ends_job_without_ranks(run_launcher: RunLauncher, launcher: str,
                                                   workdir: Path) -> None:
    pre = write(workdir / "pre.sh", "echo before\n(exit 4)\n")
    post = write(workdir / "post.sh", "touch post_ran\n")
    r = run_launcher(launcher, pre=pre, post=post, n=3)
    assert r.returncode == 4
    assert r.records == {}
    assert not (workdir / "post_ran").exists()
    assert "pre-launch script" in r.stderr and "status 4" in r.stderr


@pytest.mark.parametrize("body,status", [("exit 6\n", 6), ("set -e\nfalse\necho no\n", 1),
                                         ("return 9\n", 9)])
def test_pre_launch_exit_return_and_set_e(run_launcher: RunLauncher, workdir: Path,
                                          body: str, status: int) -> None:
    r = run_launcher("multiple", pre=write(workdir / "pre.sh", body), n=2)
    assert r.returncode == status
    assert r.records == {}
    assert f"status {status}" in r.stderr


def test_pre_launch_exit_0_still_starts_no_rank(run_launcher: RunLauncher,
                                                workdir: Path) -> None:
    r = run_launcher("multiple", pre=write(workdir / "pre.sh", "exit 0\n"), n=2)
    assert r.returncode == 0
    assert r.records == {}
    assert "called exit 0; the job's processes were not started" in r.stderr


def test_ifs_left_by_pre_launch_does_not_break_the_launcher(run_launcher: RunLauncher,
                                                            launcher: str,
                                                            workdir: Path) -> None:
    pre = write(workdir / "pre.sh", "IFS=:\nexport PROBE_X=1\n")
    post = write(workdir / "post.sh", "touch post_ran\n")
    r = run_launcher(launcher, ["a b"], pre=pre, post=post, n=3, codes={0: 3})
    assert r.returncode == 3, r.stderr
    if launcher == "mpirun":
        # OpenMPI aborts the other ranks once one exits non-zero, so under load a
        # sibling may be killed before it records anything: only rank 0 is certain
        assert 0 in r.records
    else:
        assert sorted(r.records) == list(range(ranks(launcher)))
    assert r.argv(0) == [b"a b"]
    assert (workdir / "post_ran").exists()


def test_pre_launch_path_under_home(run_launcher: RunLauncher, tmp_path: Path) -> None:
    home = tmp_path / "home dir"
    home.mkdir()
    write(home / "pre.sh", "export PROBE_HOME=yes\n")
    r = run_launcher("multiple", pre="~/pre.sh", n=1, env={"HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert r.records[0]["env"]["PROBE_HOME"] == "yes"


def test_missing_pre_launch_script_fails(run_launcher: RunLauncher, workdir: Path) -> None:
    r = run_launcher("multiple", pre=str(workdir / "no such file"), n=2)
    assert r.returncode != 0
    assert r.records == {}
    assert "pre-launch script" in r.stderr


def test_job_exit_code(run_launcher: RunLauncher, launcher: str, workdir: Path) -> None:
    post = write(workdir / "post.sh", "touch post_ran\n")
    r = run_launcher(launcher, post=post, n=3, codes={0: 3})
    assert r.returncode == 3
    assert (workdir / "post_ran").exists()


def test_post_launch_failure_keeps_job_exit_code(run_launcher: RunLauncher, launcher: str,
                                                 workdir: Path) -> None:
    post = write(workdir / "post.sh", "(exit 7)\n")
    r = run_launcher(launcher, post=post, n=3, codes={0: 3})
    assert r.returncode == 3
    assert "post-launch script" in r.stderr and "keeping the job's exit code 3" in r.stderr


@pytest.mark.parametrize("body", ["(exit 7)\n", "exit 7\n"])
def test_post_launch_failure_fails_successful_job(run_launcher: RunLauncher, launcher: str,
                                                  workdir: Path, body: str) -> None:
    r = run_launcher(launcher, post=write(workdir / "post.sh", body), n=3)
    assert r.returncode == 7
    assert "post-launch script" in r.stderr and "status 7" in r.stderr


def test_post_launch_exit_0_does_not_hide_failure(run_launcher: RunLauncher,
                                                  workdir: Path) -> None:
    r = run_launcher("multiple", post=write(workdir / "post.sh", "exit 0\n"), n=2,
                     codes={1: 5})
    assert r.returncode == 5


def test_set_e_left_by_pre_launch_does_not_skip_post_launch(run_launcher: RunLauncher,
                                                            launcher: str,
                                                            workdir: Path) -> None:
    pre = write(workdir / "pre.sh", "set -e\n")
    post = write(workdir / "post.sh", "touch post_ran\n")
    r = run_launcher(launcher, pre=pre, post=post, n=3, codes={0: 3})
    assert r.returncode == 3
    assert (workdir / "post_ran").exists()


def test_relative_pre_launch_name_is_not_searched_in_path(run_launcher: RunLauncher,
                                                          workdir: Path,
                                                          bin_dir: Path) -> None:
    # `. name` searches PATH for a name without '/'; the launcher must use ./name
    (bin_dir / "pre.sh").write_text("export PROBE_WHICH=path\n")
    write(workdir / "pre.sh", "export PROBE_WHICH=workdir\n")
    r = run_launcher("multiple", pre="pre.sh", n=1)
    assert r.returncode == 0, r.stderr
    assert r.records[0]["env"]["PROBE_WHICH"] == "workdir"


def test_launcher_arguments_are_checked(workdir: Path) -> None:
    script = str(SCRIPTS_DIR / "multiple.sh")
    cases = [[script, "", "", "2", "1", "true"],             # no --
             [script, "", "", "2", "1", "--"],               # no executable
             [script, "", "", "0", "1", "--", "true"],
             [script, "", "", "two", "1", "--", "true"],
             [script, "", "", "2", "-1", "--", "true"]]
    for argv in cases:
        p = subprocess.run(["/bin/sh", *argv], cwd=workdir, capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 2, argv
        assert "multiple.sh:" in p.stderr, argv


@pytest.mark.parametrize("launcher_name", ["single", "multiple"])
def test_scripts_also_work_under_bash(launcher_name: str, workdir: Path, probe_dir: Path) -> None:
    # /bin/sh is bash on RHEL-like clusters: the same behaviour there
    pre = write(workdir / "pre.sh", 'export PROBE_FROM_PRE="x y"\nset -- clobbered\n')
    post = write(workdir / "post.sh", 'set -- "$PROBE_DIR"/*.json\necho "$#" > post_saw\n')
    job = [sys.executable, str(PROBE), "1=4", *HOSTILE]
    cmd = launch_command(launcher_name, job, pre=pre, post=post, n=2)
    assert cmd[0] == "/bin/sh"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PBS_"))}
    p = subprocess.run(["bash", *cmd[1:]], cwd=workdir, capture_output=True, timeout=TIMEOUT,
                       env={**env, "PROBE_DIR": str(probe_dir)})
    n = 1 if launcher_name == "single" else 2
    assert p.returncode == (4 if n == 2 else 0), p.stderr
    assert (workdir / "post_saw").read_text() == f"{n}\n"
    for f in probe_dir.glob("*.json"):
        rec = json.loads(f.read_text())
        assert rec["env"]["PROBE_FROM_PRE"] == "x y"
        assert [bytes.fromhex(a) for a in rec["argv"]] == [a.encode() for a in HOSTILE]


# -- pre/post-launch scripts are sourced by bash when bash exists (as in psij-python) ------
def test_pre_launch_export_f_reaches_every_rank(run_launcher: RunLauncher, launcher: str,
                                               workdir: Path, probe_dir: Path) -> None:
    """psij-python's user-guide example: a function exported with ``export -f`` in
    pre-launch is callable by each rank's bash (dash has no ``export -f``)."""
    pre = write(workdir / "pre.sh",
                'greet() { echo "hello $1" >> "$PROBE_DIR/greetings"; }\nexport -f greet\n')
    r = run_launcher(launcher, pre=pre, n=3, argv=["/bin/bash", "-c", "greet rank"])
    assert r.returncode == 0, r.stderr
    greetings = (probe_dir / "greetings").read_text().splitlines()
    assert greetings == ["hello rank"] * ranks(launcher)


def test_module_init_style_pre_and_post_launch(run_launcher: RunLauncher, launcher: str,
                                              workdir: Path) -> None:
    """What module/Lmod init scripts do: ``source`` a bash file found through
    ``BASH_SOURCE``, ``[[ ]]``, arrays, a ``module`` shell function."""
    (workdir / "modules").mkdir()
    write(workdir / "modules" / "init.bash", '''
module() {
    local -a words=("$@")
    [[ ${words[0]} == load ]] || return 3
    export LOADEDMODULES="${LOADEDMODULES:+$LOADEDMODULES:}${words[1]}"
}
''')
    pre = write(workdir / "pre.sh",
                'source "$(dirname "${BASH_SOURCE[0]}")/modules/init.bash"\n'
                'module load openmpi/4.1\nexport PROBE_FROM_PRE="$LOADEDMODULES"\n')
    post = write(workdir / "post.sh", 'module load after\necho "$LOADEDMODULES" > post_saw\n')
    r = run_launcher(launcher, pre=pre, post=post, n=2)
    assert r.returncode == 0, r.stderr
    assert sorted(r.records) == list(range(min(2, ranks(launcher))))
    for rec in r.records.values():
        assert rec["env"]["PROBE_FROM_PRE"] == "openmpi/4.1"
    assert (workdir / "post_saw").read_text() == "openmpi/4.1:after\n"


def test_without_bash_scripts_are_sourced_by_sh(run_launcher: RunLauncher, workdir: Path,
                                                tmp_path: Path) -> None:
    """On a node without bash the launcher stays in /bin/sh (the scripts are POSIX)."""
    no_bash = tmp_path / "no-bash"
    no_bash.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(d).iterdir():
            if tool.name != "bash" and not (no_bash / tool.name).exists():
                (no_bash / tool.name).symlink_to(tool)
    pre = write(workdir / "pre.sh", 'echo "${BASH_VERSION:-no bash}" > shell_used\n')
    r = run_launcher("multiple", pre=pre, n=2, env={"PATH": str(no_bash)})
    assert r.returncode == 0, r.stderr
    assert (workdir / "shell_used").read_text() == "no bash\n"
    assert len(r.records) == 2
    r = run_launcher("multiple", pre=pre, n=2)  # and with bash on PATH: bash
    assert r.returncode == 0, r.stderr
    assert (workdir / "shell_used").read_text() not in ("no bash\n", "\n")
