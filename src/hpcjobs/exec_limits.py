"""What Linux can start a program with, checked before a submit: strings of bytes, each
of a limited length.

execve(2) ("Limits on size of arguments and environment") refuses with E2BIG any single
argument or ``NAME=value`` environment entry longer than ``MAX_ARG_STRLEN``, 32 pages,
counting the terminating NUL: 131072 bytes with 4 KiB pages, so 131071 bytes of text.
A job with such a value was accepted and then failed where it was to start, in words
that did not say why (the local nanny's E2BIG, a batch script's exit code 126). Every
backend that starts the job's program checks it here, before anything is submitted
(``JobExecutor.execs_programs``); docs/errors.md has the rule, docs/decisions.md why
the total (ARG_MAX) is not checked. A string no bytes stand for (a lone surrogate other
than Python's stand-ins for undecodable bytes) is refused here too: it cannot be given to
a program at all.
"""

from __future__ import annotations

import os

from .environment import references
from .errors import InvalidJobException
from .spec import JobSpec

__all__ = ["MAX_ARG_STRLEN", "check_exec_strings"]

#: execve(2): the most bytes one argument or environment entry may have, NUL included
#: (the kernel's MAX_ARG_STRLEN, PAGE_SIZE * 32)
MAX_ARG_STRLEN = 32 * os.sysconf("SC_PAGESIZE")
# UTF-8 takes at most 4 bytes a character: a shorter string fits, whatever it holds, and
# its bytes are never counted (the common case costs one len() a string)
_ALWAYS_FITS = MAX_ARG_STRLEN // 4


def check_exec_strings(spec: JobSpec) -> None:
    """Raise ``InvalidJobException`` naming the executable, argument or environment
    variable if one of ``spec``'s strings is longer than execve(2) takes, or is not
    bytes at all (a lone surrogate).

    Only what is sure to fail is refused: a ``${NAME}`` reference counts as nothing,
    since a batch job's shell expands it on the compute node, where the submitter cannot
    see what it holds; a value without one is checked exactly.
    """
    if spec.executable is not None and not spec.executable.isascii():
        _check_bytes("JobSpec.executable", spec.executable)
    for i, arg in enumerate(spec.arguments or ()):
        if not arg.isascii():
            _check_bytes(f"JobSpec.arguments[{i}]", arg)
        if len(arg) >= _ALWAYS_FITS:
            _check(f"JobSpec.arguments[{i}] is", "one argument", arg)
    for name, value in (spec.environment or {}).items():
        if not value.isascii():
            _check_bytes(f"JobSpec.environment[{name!r}]", value)
        if len(name) + 1 + len(value) >= _ALWAYS_FITS:
            # the entry is NAME=value; names are ASCII (JobSpec.validate checked them)
            _check(f"JobSpec.environment[{name!r}]: {name}=... is",
                   "one NAME=value environment entry", value, len(name) + 1)


def _check_bytes(what: str, value: str) -> None:
    """Refuse ``value`` if no bytes stand for it: a surrogate that is not one Python
    makes of an undecodable byte (os.fsencode's surrogateescape takes U+DC80-U+DCFF
    back to bytes 0x80-0xFF, and nothing else). Such a job killed the process that was
    to start it (the local nanny: "state unknown")."""
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise InvalidJobException(
            f"{what} holds U+{ord(value[e.start]):04X} at index {e.start}, a lone surrogate "
            "no bytes stand for: a program can be given bytes only (a surrogate of an "
            "undecodable byte, U+DC80-U+DCFF, is that byte)") from None


def _check(what: str, where: str, value: str, prefix: int = 0) -> None:
    """Refuse ``value`` (after ``prefix`` bytes) if its text alone, without its
    ``${NAME}`` references, is too long for execve(2)."""
    literal = references(value)[::2] if "${" in value else [value]
    # Bytes as the job gets them: UTF-8, with the surrogates Python makes of undecodable
    # bytes back as those single bytes (os.fsencode; any other surrogate was refused)
    size = prefix + sum(len(part.encode("utf-8", "surrogateescape")) for part in literal)
    if size >= MAX_ARG_STRLEN:  # the NUL makes it one byte more than the limit
        counted = " without its ${NAME} references" if len(literal) > 1 else ""
        raise InvalidJobException(
            f"{what} {size} bytes{counted}, longer than Linux starts a program with: at "
            f"most {MAX_ARG_STRLEN - 1} bytes in {where} (MAX_ARG_STRLEN, "
            f"{MAX_ARG_STRLEN} with the terminating NUL; execve(2))")
