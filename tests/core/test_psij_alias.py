"""The ``psij`` alias (hpcjobs.psij_alias): with it installed, every ``psij`` import gives
the hpcjobs module of that name, even with the real psij-python installed (as it is in
the test environment); without it, ``import psij`` is psij-python. Each case runs in a
fresh interpreter: the alias changes how the whole process imports ``psij``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_CHECKS = """
import sys
import hpcjobs, hpcjobs.job_spec, hpcjobs.executors.slurm
from hpcjobs import psij_alias
import psij
import psij.job_spec
from psij.executors.batch.slurm import SlurmJobExecutor
from psij.executors.batch.batch_scheduler_executor import BatchSchedulerExecutor
assert psij_alias.installed()
assert psij is hpcjobs and psij.job_spec is hpcjobs.job_spec
assert SlurmJobExecutor is hpcjobs.executors.slurm.SlurmJobExecutor
assert issubclass(SlurmJobExecutor, BatchSchedulerExecutor)
from psij.launcher import Launcher
assert Launcher is hpcjobs.Launcher
# hpcjobs's modules keep their own identity
assert hpcjobs.job_spec.__spec__.name == "hpcjobs.job_spec", hpcjobs.job_spec.__spec__
assert psij.JobSpec("/bin/true").executable == "/bin/true"
try:
    import psij.executors.batch.lsf
except ModuleNotFoundError as e:
    assert e.name == "psij.executors.batch.lsf", e.name
    assert "hpcjobs has no 'hpcjobs.executors.batch.lsf'" in str(e), e
else:
    raise AssertionError("psij.executors.batch.lsf imported")
print("ok", sys.argv[1:])
"""


def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_a_script_run_through_the_alias_imports_hpcjobs_as_psij(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(_CHECKS)
    p = _python("-m", "hpcjobs.psij_alias", str(tmp_path / "script.py"), "a", "b c",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ok ['a', 'b c']\n"


def test_a_module_run_through_the_alias_imports_hpcjobs_as_psij(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(_CHECKS)
    p = _python("-m", "hpcjobs.psij_alias", "-m", "mod", "x", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "ok ['x']\n"


def test_install_in_code_and_the_exit_status_passes_through(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import sys
        import hpcjobs.psij_alias
        hpcjobs.psij_alias.install()
        hpcjobs.psij_alias.install()  # twice: one hook
        assert sum(type(h).__name__ == "_AliasHook" for h in sys.meta_path) == 1
        from psij import JobExecutor
        import hpcjobs
        assert JobExecutor is hpcjobs.JobExecutor
        sys.exit(3)
    """))
    assert _python(str(tmp_path / "script.py"), cwd=tmp_path).returncode == 3


def test_without_the_alias_psij_is_psij_python(tmp_path: Path) -> None:
    p = _python("-c", "import psij, hpcjobs; assert psij is not hpcjobs; "
                "assert psij.__name__ == 'psij'", cwd=tmp_path)
    assert p.returncode == 0, p.stderr


def test_install_after_psij_python_was_imported_is_refused(tmp_path: Path) -> None:
    p = _python("-c", "import psij\nfrom hpcjobs import psij_alias\npsij_alias.install()",
                cwd=tmp_path)
    assert p.returncode == 1
    assert "RuntimeError: psij-python is already imported" in p.stderr


@pytest.mark.parametrize("args", [[], ["-m"], ["-c", "print(1)"]])
def test_bad_command_lines_print_the_usage(tmp_path: Path, args: list[str]) -> None:
    p = _python("-m", "hpcjobs.psij_alias", *args, cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.startswith("usage: python -m hpcjobs.psij_alias script.py")
