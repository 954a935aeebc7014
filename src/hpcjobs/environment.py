"""The job's environment: inheritance and the spec's ``${NAME}`` substitution.

The spec asks for "simple variable substitution using the Bash brace syntax" in
environment values and arguments. We do exactly that and nothing more: ``${NAME}``
(NAME a shell identifier) is replaced by the variable's value in the job's environment
(empty if unset, as in bash); ``$NAME``, ``$(...)``, backticks and every other
character pass through byte for byte, so no value is ever interpreted by a shell.
Variables are set in the order given, so a value may use one set before it. A backend
whose job shell does the expansion (the batch scripts) splits values with
:func:`references` and quotes each part.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Optional

__all__ = ["expand", "references", "job_environment", "VALID_NAME"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # a shell identifier
_BRACED = re.compile(rf"\$\{{({_NAME})\}}")
VALID_NAME = re.compile(rf"{_NAME}\Z")


def expand(value: str, env: Mapping[str, str]) -> str:
    """Replace each ``${NAME}`` in ``value`` with ``env[NAME]`` (or nothing)."""
    if "${" not in value:
        return value
    return _BRACED.sub(lambda m: env.get(m.group(1), ""), value)


def references(value: str) -> list[str]:
    """``value`` split at its ``${NAME}`` references: ``[literal, name, literal, ...,
    literal]`` (odd positions are names; literals may be empty)."""
    return _BRACED.split(value)


def job_environment(
    inherit: bool,
    overrides: Optional[Mapping[str, str]],
    base: Optional[Mapping[str, str]] = None,
) -> dict[str, str]:
    """The environment a job starts with: the base (``os.environ`` by default) when
    ``inherit`` is true, then each override in order, expanded against what is set."""
    env: dict[str, str] = dict(os.environ if base is None else base) if inherit else {}
    for name, value in (overrides or {}).items():
        env[name] = expand(value, env)
    return env
