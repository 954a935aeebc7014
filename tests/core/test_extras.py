"""``pip install hpcjobs`` without the ``batsim`` extra: local, Slurm, PBS and Flux work,
and asking for anything of the extra (``get_instance('batsim')``, the ``hpcjobs``
command, ``hpcjobs-sim``, ``hpcjobs-schedule``) fails with one message that names the
install command.

Each check runs in a fresh interpreter whose import system answers for zmq,
flatbuffers and redis (what the extra brought before batprotocol stopped needing the
flatbuffers runtime) exactly as when they are not installed (``ModuleNotFoundError``,
from a meta-path finder put first): a test double, because a real environment without
them would have to be made by pip from a package index at every run, which a test
cannot count on; the import machinery's answer is the same either way.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hpcjobs.cli.commands import EXIT_ERROR

#: the test double: zmq, flatbuffers and redis are not installed
NOT_INSTALLED = textwrap.dedent('''
    import sys

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("zmq", "flatbuffers", "redis"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
''')
INSTALL = "pip install 'hpcjobs[batsim]'"


def _run(code: str, blocked: bool = True) -> subprocess.CompletedProcess[str]:
    source = (NOT_INSTALLED if blocked else "") + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120)


def test_the_double_makes_the_modules_missing() -> None:
    done = _run("import zmq")
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'zmq'" in done.stderr
    assert _run("import zmq, flatbuffers, redis", blocked=False).returncode == 0


def test_local_slurm_pbs_and_flux_load_without_the_extra() -> None:
    done = _run('''
        import hpcjobs
        from hpcjobs import plugins
        for name in ("local", "slurm", "pbs", "torque", "flux"):
            plugins.load("hpcjobs.executors", name)
        ex = hpcjobs.JobExecutor.get_instance("local")
        job = hpcjobs.Job(hpcjobs.JobSpec("/bin/true"))
        ex.submit(job)
        print(job.wait(timeout=60).exit_code)
        ex.close()
        print(sorted(m for m in sys.modules if m.partition(".")[0] in ("zmq", "flatbuffers", "redis")))
    ''')
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["0", "[]"]


def test_get_instance_batsim_names_the_extra() -> None:
    done = _run('''
        import hpcjobs
        from hpcjobs.errors import ExecutorNotFoundError, MissingExtraError
        try:
            hpcjobs.JobExecutor.get_instance("batsim")
        except MissingExtraError as e:
            assert isinstance(e, ExecutorNotFoundError) and isinstance(e, ImportError) and e.extra == "batsim"
            print(e)
    ''')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("the Batsim executor, simulator and protocols need the batsim extra: "
                                   f"{INSTALL} (missing: pyzmq, redis)")


@pytest.mark.parametrize("code, prog, exit_code", [
    ("from hpcjobs.cli import main; sys.exit(main(['run', '-x', 'batsim', '/bin/true']))", "hpcjobs",
     EXIT_ERROR),
    ("from hpcjobs.extras import sim_main; sys.exit(sim_main())", "hpcjobs-sim", 1),
    ("from hpcjobs.extras import schedule_main; sys.exit(schedule_main())", "hpcjobs-schedule", 1),
])
def test_the_commands_say_which_extra_in_one_line(code: str, prog: str, exit_code: int) -> None:
    done = _run(code)
    assert done.returncode == exit_code
    assert done.stderr.startswith(f"{prog}: ") and INSTALL in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback


def test_with_the_extra_the_commands_start() -> None:
    done = _run("import sys; from hpcjobs.extras import sim_main; sys.argv[1:] = ['--help']; sys.exit(sim_main())",
                blocked=False)
    assert done.returncode == 0 and "usage" in done.stdout
