"""Linux's limit on one argument or environment entry (exec_limits.py): exact in bytes,
and refusing only what is sure to fail. The conformance suite runs the same limit on
every backend that starts programs (tests/conformance/test_conformance_input.py)."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from hpcjobs import InvalidJobException, JobSpec
from hpcjobs.exec_limits import MAX_ARG_STRLEN, check_exec_strings

#: execve(2): 32 pages, NUL included (stated from the man page, not taken from hpcjobs)
LIMIT = 32 * os.sysconf("SC_PAGESIZE")


def test_the_limit_is_the_one_execve_keeps_here() -> None:
    assert MAX_ARG_STRLEN == LIMIT
    subprocess.run(["/bin/true", "a" * (LIMIT - 1)], check=True)
    with pytest.raises(OSError) as e:
        subprocess.run(["/bin/true", "a" * LIMIT])
    assert e.value.errno == errno.E2BIG
    subprocess.run(["/bin/true"], env={"V": "b" * (LIMIT - 3)}, check=True)
    with pytest.raises(OSError) as e:
        subprocess.run(["/bin/true"], env={"V": "b" * (LIMIT - 2)})
    assert e.value.errno == errno.E2BIG


def test_an_argument_of_the_limit_less_its_nul_is_accepted_and_one_byte_more_refused() -> None:
    check_exec_strings(JobSpec("/bin/true", ["x", "a" * (LIMIT - 1)]))
    with pytest.raises(InvalidJobException) as e:
        check_exec_strings(JobSpec("/bin/true", ["x", "a" * LIMIT]))
    assert str(e.value).startswith(f"JobSpec.arguments[1] is {LIMIT} bytes, ")
    assert f"at most {LIMIT - 1} bytes in one argument" in str(e.value)
    assert "execve(2)" in str(e.value)


def test_bytes_are_counted_not_characters() -> None:
    # two bytes a character in UTF-8: half as many characters reach the limit
    check_exec_strings(JobSpec("/bin/true", ["é" * (LIMIT // 2 - 1) + "a"]))
    with pytest.raises(InvalidJobException, match=rf"arguments\[0\] is {LIMIT} bytes"):
        check_exec_strings(JobSpec("/bin/true", ["é" * (LIMIT // 2)]))
    with pytest.raises(InvalidJobException, match=rf"arguments\[0\] is {LIMIT + 2} bytes"):
        check_exec_strings(JobSpec("/bin/true", ["🚀" * (LIMIT // 4) + "é"]))


def test_an_undecodable_byte_counts_as_the_one_byte_the_job_gets() -> None:
    # os.fsdecode keeps a byte that is not UTF-8 as a lone surrogate; the job gets the byte
    undecodable = os.fsdecode(b"\xff")
    check_exec_strings(JobSpec("/bin/true", [undecodable * (LIMIT - 1)]))
    with pytest.raises(InvalidJobException, match=rf"is {LIMIT} bytes"):
        check_exec_strings(JobSpec("/bin/true", [undecodable * LIMIT]))


@pytest.mark.parametrize("spec, what", [
    (JobSpec("/bin/true", ["ok", "a\ud800b"]), r"JobSpec\.arguments\[1\] holds U\+D800 at index 1"),
    (JobSpec("/bin/true", ["\ud800" * (LIMIT // 4)]), r"JobSpec\.arguments\[0\] holds U\+D800 at index 0"),
    (JobSpec("/bin/true", environment={"V": "\udfff"}), r"JobSpec\.environment\['V'\] holds U\+DFFF at index 0"),
    (JobSpec("/tmp/x\udbff"), r"JobSpec\.executable holds U\+DBFF at index 6"),
])
def test_a_string_no_bytes_stand_for_is_refused(spec: JobSpec, what: str) -> None:
    # a lone surrogate other than os.fsdecode's for an undecodable byte cannot be given
    # to a program; it killed the local executor's nanny
    with pytest.raises(InvalidJobException, match=what + ", a lone surrogate no bytes stand for"):
        check_exec_strings(spec)


def test_an_environment_entry_counts_name_equals_value() -> None:
    name = "LONG_ONE"
    fits = "v" * (LIMIT - 1 - len(name) - 1)
    check_exec_strings(JobSpec("/bin/true", environment={"A": "1", name: fits}))
    with pytest.raises(InvalidJobException) as e:
        check_exec_strings(JobSpec("/bin/true", environment={"A": "1", name: fits + "v"}))
    assert str(e.value).startswith(f"JobSpec.environment['{name}']: {name}=... is {LIMIT} bytes")
    assert "one NAME=value environment entry" in str(e.value)


def test_a_reference_counts_as_nothing_since_it_may_expand_to_nothing() -> None:
    # ${NAME} is expanded where the job starts (a batch job's shell, on the compute
    # node): only its text around the references is sure to be there
    check_exec_strings(JobSpec("/bin/true", ["a" * (LIMIT - 1) + "${HOME}"],
                               environment={"X": "${HOME}" + "b" * (LIMIT - 3)}))
    with pytest.raises(InvalidJobException) as e:
        check_exec_strings(JobSpec("/bin/true", ["${HOME}" + "a" * LIMIT + "${USER}"]))
    assert f"is {LIMIT} bytes without its ${{NAME}} references" in str(e.value)
    # what is not a reference is passed as it is, so it counts
    with pytest.raises(InvalidJobException, match=rf"is {LIMIT} bytes, "):
        check_exec_strings(JobSpec("/bin/true", ["${not a name}" + "a" * (LIMIT - 13)]))


def test_each_string_is_checked_not_their_total() -> None:
    # the total (ARG_MAX) is not known before the job starts: docs/decisions.md
    check_exec_strings(JobSpec("/bin/true", ["a" * (LIMIT - 1)] * 3,
                               environment={f"V{i}": "b" * (LIMIT - 4) for i in range(3)}))
