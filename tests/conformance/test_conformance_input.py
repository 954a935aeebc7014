"""Conformance: hostile values pass through byte for byte (or are refused), bad input is
refused precisely with nothing submitted, and importing hpcjobs has no side effects."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from hpcjobs import (InvalidJobException, InvalidJobStateError, Job, JobExecutor, JobSpec,
                     JobState, JobStatus, ResourceSpecV1)

WaitFinal = Callable[[Job], JobStatus]

#: values a shell would interpret; ${...} with a non-name passes through the spec's rule
HOSTILE = [
    "with space", "  lead and trail  ", "tab\there", "single'quote", 'double"quote',
    "$(touch pwned-dollar)", "`touch pwned-backtick`", "$HOME", "${not a name}",
    "new\nline", "non-ASCII é ü 漢字 🚀", "back\\slash", "semi;colon && | > < &",
    "*", "-n", "", "%s %d %%", "!event", "#hash",
]


def _submit_or_refused(executor: JobExecutor, job: Job) -> bool:
    """Submit; True if the backend refused the job as invalid (allowed for hostile values)."""
    try:
        executor.submit(job)
    except InvalidJobException:
        assert job.status.state is JobState.NEW and job.native_id is None
        return True
    return False


def _no_command_ran(*dirs: Path) -> None:
    for d in dirs:
        assert not list(d.rglob("pwned*")), "a hostile value was interpreted by a shell"


@pytest.mark.requires("executes")
def test_hostile_arguments_are_passed_byte_for_byte(executor: JobExecutor, launcher: str,
                                                   scratch: Path, wait_final: WaitFinal) -> None:
    out = scratch / "args.bin"
    job = Job(JobSpec("/usr/bin/printf", ["%s\\0", *HOSTILE], directory=scratch,
                      stdout_path=out, launcher=launcher))
    if not _submit_or_refused(executor, job):
        assert wait_final(job).state is JobState.COMPLETED, job.status
        assert out.read_bytes().split(b"\0")[:-1] == [a.encode() for a in HOSTILE]
    _no_command_ran(scratch)


@pytest.mark.requires("executes")
def test_hostile_environment_values_are_passed_byte_for_byte(
        executor: JobExecutor, launcher: str, scratch: Path, wait_final: WaitFinal) -> None:
    values = {f"HPCJOBS_HOSTILE_{i}": v for i, v in enumerate(HOSTILE) if "${" not in v}
    out = scratch / "env.bin"
    job = Job(JobSpec("/usr/bin/env", ["-0"], environment=values, directory=scratch,
                      stdout_path=out, launcher=launcher))
    if not _submit_or_refused(executor, job):
        assert wait_final(job).state is JobState.COMPLETED, job.status
        seen = dict(e.split("=", 1) for e in out.read_bytes().decode().split("\0") if e)
        assert {k: seen.get(k) for k in values} == values
    _no_command_ran(scratch)


@pytest.mark.requires("executes")
def test_hostile_names_and_paths(executor: JobExecutor, launcher: str, scratch: Path,
                                 wait_final: WaitFinal) -> None:
    nasty = "d ir 'q' \"dq\" $(touch pwned-dir) `touch pwned-tick` é\nnl"
    work = scratch / nasty
    work.mkdir()
    (work / "in put").write_text("stdin data\n")
    job = Job(JobSpec("/bin/cat", name=f"job {nasty}", directory=work,
                      stdin_path=work / "in put", stdout_path=work / f"out {nasty}",
                      stderr_path=work / "err 'x'", launcher=launcher))
    if not _submit_or_refused(executor, job):
        assert wait_final(job).state is JobState.COMPLETED, job.status
        assert (work / f"out {nasty}").read_text() == "stdin data\n"
    _no_command_ran(scratch)


# -- bad input: precise exceptions, nothing submitted --------------------------------------
def _assert_nothing_submitted(executor: JobExecutor, job: Job, listed_before: list[str]) -> None:
    assert job.status.state is JobState.NEW
    assert job.native_id is None and job.executor is None
    # no new id (a job of an earlier test may have left the scheduler's list meanwhile)
    assert set(executor.list()) <= set(listed_before)


def _assert_refused(executor: JobExecutor, spec: JobSpec, match: str) -> None:
    """Submitting a job of ``spec`` raises InvalidJobException matching ``match``, and
    nothing is submitted."""
    before = executor.list()
    job = Job(spec)
    with pytest.raises(InvalidJobException, match=match):
        executor.submit(job)
    _assert_nothing_submitted(executor, job, before)


#: Linux's limit on one string a program is started with, an argument or a NAME=value
#: environment entry: 32 pages, counted in bytes with the terminating NUL (MAX_ARG_STRLEN;
#: execve(2), "Limits on size of arguments and environment"). Stated here from the man
#: page, not taken from hpcjobs, so that the suite checks the implementation's number.
EXEC_STRING_LIMIT = 32 * os.sysconf("SC_PAGESIZE")


def _utf8_of_size(size: int) -> str:
    """A non-ASCII string of ``size`` bytes in UTF-8 (half as many characters): the
    limit counts bytes, not characters."""
    return "é" * (size // 2) + "a" * (size % 2)


@pytest.mark.requires("executes")
def test_an_argument_as_long_as_linux_takes_runs_and_one_byte_more_is_refused(
        executor: JobExecutor, launcher: str, scratch: Path, wait_final: WaitFinal) -> None:
    # refused first: an ended job may still be listed for a moment
    too_long = JobSpec("/usr/bin/printf", ["%s", _utf8_of_size(EXEC_STRING_LIMIT)],
                       launcher=launcher)
    _assert_refused(executor, too_long,
                    rf"JobSpec\.arguments\[1\] is {EXEC_STRING_LIMIT} bytes.*"
                    rf"at most {EXEC_STRING_LIMIT - 1}")

    longest = _utf8_of_size(EXEC_STRING_LIMIT - 1)  # and its NUL: exactly the limit
    if launcher == "mpirun":
        # Open MPI's mpirun also gives each rank its arguments, joined by spaces, as the
        # environment entry OMPI_ARGV=...: the longer string of the two (docs/launchers.md)
        longest = _utf8_of_size(EXEC_STRING_LIMIT - 1 - len("OMPI_ARGV="))
    out = scratch / "arg.bin"
    # (printf's format, printed as it is: no '%' or backslash in it)
    job = Job(JobSpec("/usr/bin/printf", [longest], stdout_path=out, launcher=launcher))
    executor.submit(job)
    assert wait_final(job).state is JobState.COMPLETED, job.status
    assert out.read_bytes() == longest.encode()


@pytest.mark.requires("executes")
def test_an_environment_entry_as_long_as_linux_takes_runs_and_one_byte_more_is_refused(
        executor: JobExecutor, launcher: str, scratch: Path, wait_final: WaitFinal) -> None:
    name = "HPCJOBS_LONG"
    # the limit counts the whole NAME=value entry
    longest = _utf8_of_size(EXEC_STRING_LIMIT - 1 - len(name) - 1)
    too_long = JobSpec("/usr/bin/printenv", [name], environment={name: longest + "a"},
                       launcher=launcher)
    _assert_refused(executor, too_long,
                    rf"JobSpec\.environment\['{name}'\]: {name}=\.\.\. is "
                    rf"{EXEC_STRING_LIMIT} bytes.*at most {EXEC_STRING_LIMIT - 1}")

    out = scratch / "env.bin"
    job = Job(JobSpec("/usr/bin/printenv", [name], environment={name: longest},
                      stdout_path=out, launcher=launcher))
    executor.submit(job)
    assert wait_final(job).state is JobState.COMPLETED, job.status
    assert out.read_bytes() == longest.encode() + b"\n"


def _changed_resources(**counts: int) -> ResourceSpecV1:
    """Resources made invalid after construction (the constructor refuses them, as
    psij-python's does), so that the check at submit is what is tested."""
    res = ResourceSpecV1()
    for name, value in counts.items():
        setattr(res, name, value)
    return res


def test_submit_many_with_an_invalid_job_submits_none(executor: JobExecutor) -> None:
    """An invalid job among valid ones: InvalidJobException, and not one of them is
    submitted (the one-by-one default submitted those before it)."""
    before = executor.list()
    jobs = [Job(JobSpec("/bin/true")), Job(JobSpec("/bin/true", launcher="no-such-launcher")),
            Job(JobSpec("/bin/true"))]
    with pytest.raises(InvalidJobException, match="launcher"):
        executor.submit_many(jobs)
    for job in jobs:
        _assert_nothing_submitted(executor, job, before)


@pytest.mark.requires("executes")
def test_a_string_no_bytes_stand_for_is_refused(executor: JobExecutor) -> None:
    """A lone surrogate (not os.fsdecode's stand-in for an undecodable byte, which is
    passed as that byte) cannot be given to a program: refused, nothing submitted."""
    _assert_refused(executor, JobSpec("/bin/echo", ["a\ud800b"]), r"JobSpec\.arguments\[0\] holds U\+D800")
    _assert_refused(executor, JobSpec("/bin/echo", environment={"V": "\udfff"}),
                    r"JobSpec\.environment\['V'\] holds U\+DFFF")


@pytest.mark.parametrize("spec, field", [
    (JobSpec("/bin/true", directory="relative/dir"), "directory"),
    (JobSpec(None), "executable"),
    (JobSpec("/bin/true", launcher="no-such-launcher"), "launcher"),
    (JobSpec("/bin/true", environment={"1BAD": "x"}), "environment"),
    (JobSpec("/bin/true", arguments=["nul\0byte"]), "arguments"),
    (JobSpec("/bin/true", resources=_changed_resources(node_count=2, processes_per_node=2,
                                                        process_count=3)), "ResourceSpecV1"),
    (JobSpec("/bin/true", resources=_changed_resources(process_count=0)), "process_count"),
], ids=["relative-directory", "no-executable", "unknown-launcher", "bad-env-name",
        "nul-in-argument", "inconsistent-resources", "zero-processes"])
def test_invalid_job_is_refused_naming_the_field(executor: JobExecutor, spec: JobSpec,
                                                 field: str) -> None:
    _assert_refused(executor, spec, field)


def test_a_refused_job_can_be_fixed_and_submitted(executor: JobExecutor,
                                                  wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/true", directory="relative"))
    with pytest.raises(InvalidJobException):
        executor.submit(job)
    assert job.spec is not None
    job.spec.directory = None
    executor.submit(job)
    assert wait_final(job).state is JobState.COMPLETED


def test_double_submit_is_refused(executor: JobExecutor, wait_final: WaitFinal) -> None:
    job = Job(JobSpec("/bin/true"))
    executor.submit(job)
    native_id = job.native_id
    with pytest.raises(InvalidJobStateError):
        executor.submit(job)
    assert job.native_id == native_id
    assert wait_final(job).state is JobState.COMPLETED


def test_wrong_types_are_refused(executor: JobExecutor) -> None:
    with pytest.raises(TypeError, match="executable"):
        JobSpec(executable=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="arguments"):
        JobSpec("/bin/true", arguments="not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="environment"):
        JobSpec("/bin/true", environment={"A": object()})
    with pytest.raises(TypeError):
        executor.submit(JobSpec("/bin/true"))  # type: ignore[arg-type]


# -- import ---------------------------------------------------------------------------------
_IMPORT_CHECK = textwrap.dedent("""
    import signal, sys, threading
    sigs = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    before = {s: signal.getsignal(s) for s in sigs}
    import hpcjobs
    changed = [signal.Signals(s).name for s in sigs if signal.getsignal(s) != before[s]]
    plugins = sorted(m for m in sys.modules if m.startswith("hpcjobs.executors."))
    print(threading.active_count(), changed, plugins)
""")


def test_importing_hpcjobs_has_no_side_effects() -> None:
    p = subprocess.run([sys.executable, "-c", _IMPORT_CHECK], capture_output=True, text=True,
                       timeout=60, check=True)
    assert p.stdout.split(None, 1) == ["1", "[] []\n"], p.stdout
