"""A user's own batch script (an ``#SBATCH``/``#PBS`` file) run as a PSI/J job.

The spec names the script as its ``executable`` and carries the custom attribute
``batch.script: True`` (:func:`batch_script_spec` makes such a spec). At submit the file
is read once, as ``sbatch``/``qsub`` copy a script when it is submitted; the job script
hpcjobs writes then starts with the user's directive lines, verbatim and in their
order, adds its own only for options those lines leave unset, and runs a byte-exact
copy of the user's file as the job's program, so the job reports its start and exit
code like any other. No line of the user's is changed.

The directives are the lines, after the first, that start with the scheduler's prefix
before the first line that is neither blank nor a comment: where ``sbatch`` and ``qsub``
stop reading them.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path
from typing import Any, Mapping, Optional

from ...attributes import DEFAULT_DURATION
from ...errors import InvalidJobException
from ...spec import JobSpec

__all__ = ["SCRIPT_ATTRIBUTE", "UserScript", "batch_script_spec", "is_user_script",
           "read_user_script", "silent_only", "words"]

#: the custom attribute that marks a spec whose executable is a batch script
SCRIPT_ATTRIBUTE = "batch.script"


def batch_script_spec(script: "str | os.PathLike[str]", arguments: Optional[list[str]] = None,
                      **fields: Any) -> JobSpec:
    """A spec that runs the batch script ``script`` (with ``arguments``) as a job; other
    ``JobSpec`` fields as keywords. Its directives are kept, see the module docstring."""
    spec = JobSpec(os.fspath(script), arguments, **fields)
    spec.attributes.set_custom_attribute(SCRIPT_ATTRIBUTE, True)
    return spec


@dataclasses.dataclass(frozen=True)
class UserScript:
    """The user's file as read at submit: its text and its directive lines."""

    path: str
    text: str
    directives: tuple[str, ...]


def is_user_script(spec: JobSpec) -> bool:
    """Whether ``spec`` runs a user's batch script."""
    return spec.attributes.get_custom_attribute(SCRIPT_ATTRIBUTE) is True


def read_user_script(spec: JobSpec, prefix: str) -> Optional[UserScript]:
    """The user's script of ``spec`` (None for any other spec), its directives those
    starting with ``prefix``; InvalidJobException naming the field if it cannot be
    used."""
    if not is_user_script(spec):
        return None
    path = os.path.expanduser(str(spec.executable))
    field = "JobSpec.executable (a batch script)"
    if not os.path.isabs(path):
        raise InvalidJobException(f"{field}: {path!r} is not an absolute path")
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InvalidJobException(f"{field}: cannot read {path!r}: {e.strerror}") from None
    if b"\0" in data:
        raise InvalidJobException(f"{field}: {path!r} contains a NUL byte (not a script)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidJobException(f"{field}: {path!r} is not UTF-8 text: {e}") from None
    return UserScript(path, text, tuple(directive_lines(text, prefix)))


def directive_lines(text: str, prefix: str) -> list[str]:
    """The lines of ``text`` that the scheduler reads as directives (``prefix`` and a
    blank or the end of the line), up to the first line that is neither blank nor a
    comment; the first line (``#!``) is never one."""
    found = []
    for line in text.splitlines()[1:]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        rest = stripped[len(prefix):]
        if stripped.startswith(prefix) and (not rest or rest[0].isspace()):
            found.append(line.rstrip("\r"))
    return found


def words(directive: str, prefix: str) -> list[str]:
    """The words of a directive line after its prefix, read as the scheduler does
    (shell-like quoting; a line shlex cannot read is split on blanks), up to a comment."""
    rest = directive.strip()[len(prefix):]
    try:
        return shlex.split(rest, comments=True)
    except ValueError:
        return rest.split()


def silent_only(ours: dict[str, Any], script: Optional[UserScript], spec: JobSpec,
                set_by_user: set[str], options_of: Mapping[str, tuple[str, ...]],
                resources: frozenset[str], time: str) -> dict[str, Any]:
    """The template context of ``ours`` (a backend's directives, by template key) for a
    user's script: the user's lines (``user_directives``) and ours only where they are
    silent. ``options_of``: the scheduler options each key sets; a key whose option the
    user sets is left out, so are all of ``resources`` when the user asks for any (theirs
    and ours could contradict), and what the spec does not give itself (no
    ``resources``, the default duration for ``time``): a script keeps the scheduler's
    defaults, as under plain sbatch or qsub. Without a script: ``ours`` as it is."""
    if script is None:
        return {**ours, "user_directives": None}
    out = {**ours, "user_directives": list(script.directives)}
    theirs = any(o in set_by_user for key in resources for o in options_of[key])
    for key, options in options_of.items():
        if any(o in set_by_user for o in options) \
                or key in resources and (theirs or spec.resources is None) \
                or key == time and spec.attributes.duration == DEFAULT_DURATION:
            out[key] = None
    return out
