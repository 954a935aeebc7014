"""Linux's limit on one string a program is started with, checked before a submit.

execve(2) ("Limits on size of arguments and environment") refuses with E2BIG any single
argument or ``NAME=value`` environment entry longer than ``MAX_ARG_STRLEN``, 32 pages,
counting the terminating NUL: 131072 bytes with 4 KiB pages, so 131071 bytes of text.
A job with such a value was accepted and then failed where it was to start, in words
that did not say why (the local nanny's E2BIG, a batch script's exit code 126). Every
backend that starts the job's program checks it here, before anything is submitted
(``JobExecutor.execs_programs``); docs/errors.md has the rule, docs/decisions.md why
the total (ARG_MAX) is not checked.
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
    """Raise ``InvalidJobException`` naming the argument or environment variable if one
    of ``spec``'s strings is longer than execve(2) takes.

    Only what is sure to fail is refused: a ``${NAME}`` reference counts as nothing,
    since a batch job's shell expands it on the compute node, where the submitter cannot
    see what it holds; a value without one is checked exactly.
    """
    for i, arg in enumerate(spec.arguments or ()):
        if len(arg) >= _ALWAYS_FITS:
            _check(f"JobSpec.arguments[{i}] is", "one argument", arg)
    for name, value in (spec.environment or {}).items():
        if len(name) + 1 + len(value) >= _ALWAYS_FITS:
            # the entry is NAME=value; names are ASCII (JobSpec.validate checked them)
            _check(f"JobSpec.environment[{name!r}]: {name}=... is",
                   "one NAME=value environment entry", value, len(name) + 1)


def _check(what: str, where: str, value: str, prefix: int = 0) -> None:
    """Refuse ``value`` (after ``prefix`` bytes) if its text alone, without its
    ``${NAME}`` references, is too long for execve(2)."""
    literal = references(value)[::2] if "${" in value else [value]
    # Bytes as the job gets them: UTF-8, with the surrogates Python makes of undecodable
    # bytes back as those single bytes (os.fsencode). "replace" counts each as one byte
    # too, and does not raise for a lone surrogate that no byte gives.
    size = prefix + sum(len(part.encode("utf-8", "replace")) for part in literal)
    if size >= MAX_ARG_STRLEN:  # the NUL makes it one byte more than the limit
        counted = " without its ${NAME} references" if len(literal) > 1 else ""
        raise InvalidJobException(
            f"{what} {size} bytes{counted}, longer than Linux starts a program with: at "
            f"most {MAX_ARG_STRLEN - 1} bytes in {where} (MAX_ARG_STRLEN, "
            f"{MAX_ARG_STRLEN} with the terminating NUL; execve(2))")
