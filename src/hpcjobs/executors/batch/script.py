"""Batch scripts: mustache templates rendered with ONE escape function that shell-quotes.

Every ``{{value}}`` in a template goes through :func:`shell_quote`; templates never add
quotes of their own, and nothing is HTML-escaped. A value may be marked
:class:`Expandable`: then the spec's ``${NAME}`` references in it (and nothing else) are
left for the job's shell to expand, each inside double quotes, the rest single-quoted.

The quoting is also what the schedulers' directive parsers understand (sbatch's
``#SBATCH`` and qsub's ``#PBS`` lines: single and double quotes group, an unquoted ``#``
starts a comment; both tested against the real commands), except for backslashes and
newlines, which they treat differently: values bound for scheduler directives are
checked with :func:`directive_value` before rendering.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from ...environment import references
from ...errors import InvalidJobException
from ...spec import JobSpec

__all__ = ["Expandable", "shell_quote", "render", "directive_value", "custom_attributes",
           "one_account", "safe_job_name", "walltime", "SHARED_TEMPLATES"]

#: where the templates every batch backend shares live (beside this module); a backend's
#: own template lives in its package and names these as partials (``{{> batch_body}}``)
SHARED_TEMPLATES = Path(__file__).resolve().parent

# characters that need no quoting in a shell word (a conservative set, as shlex's)
_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+\Z")


class Expandable(str):
    """A string whose ``${NAME}`` references the job's shell expands (spec semantics)."""

    __slots__ = ()


def _quote_literal(text: str) -> str:
    if _SAFE.match(text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def shell_quote(value: str) -> str:
    """The renderer's only escape: ``value`` as one shell word, read back byte for byte
    (``${NAME}`` expanded by the shell when ``value`` is :class:`Expandable`)."""
    if not isinstance(value, Expandable):
        return _quote_literal(value) if value else "''"
    parts = references(value)  # literal, name, literal, name, ..., literal
    words = [f'"${{{p}}}"' if i % 2 else _quote_literal(p)
             for i, p in enumerate(parts) if i % 2 or p]
    return "".join(words) or "''"


def directive_value(field: str, value: str) -> str:
    """``value`` checked for a scheduler directive line (``#SBATCH``, ``#PBS``).

    The directive parsers read quotes like the shell but take a backslash as an escape
    even inside single quotes, and a newline ends the directive: refuse both rather than
    let the scheduler read something other than what was given.
    """
    for bad, what in (("\n", "a newline"), ("\r", "a carriage return"),
                      ("\\", "a backslash"), ("\0", "a NUL character")):
        if bad in value:
            raise InvalidJobException(f"{field} contains {what}, which the batch "
                                      f"scheduler's directive parser cannot carry: {value!r}")
    return value


def custom_attributes(spec: JobSpec, prefix: str, names: "re.Pattern[str]", what: str,
                      reserved: Mapping[str, str]) -> Iterator[tuple[str, Any, str]]:
    """The spec's ``<prefix>.<name>`` custom attributes as (name, value, field name),
    each name checked: InvalidJobException naming the field when it does not match
    ``names`` (``what`` a name must be) or is ``reserved`` (name -> why)."""
    for name, value in spec.attributes.custom_for(prefix).items():
        field = f"JobAttributes.custom_attributes['{prefix}.{name}']"
        if not names.match(name):
            raise InvalidJobException(f"{field}: {name!r} is not {what}")
        if name in reserved:
            raise InvalidJobException(f"{field}: {reserved[name]}")
        yield name, value, field


def one_account(spec: JobSpec, scheduler: str) -> Optional[str]:
    """The account for a scheduler that has one accounting field and no project
    (Slurm, Torque): ``account``, else ``project_name`` (sites that file jobs under
    projects make them accounts there); both, different, is refused rather than one
    dropped. Checked for a directive line."""
    attrs = spec.attributes
    account, project = attrs.account, attrs.project_name
    if account is not None and project is not None and account != project:
        raise InvalidJobException(
            f"JobAttributes.account ({account!r}) and project_name ({project!r}): {scheduler} "
            "has one accounting field and no project; set one of them")
    value = account if account is not None else project
    if value is None:
        return None
    field = "account" if account is not None else "project_name"
    return directive_value(f"JobAttributes.{field}", value)


def safe_job_name(spec: JobSpec, limit: int) -> str:
    """The spec's name (or the executable's base name) in the characters every batch
    scheduler takes in a job name (letters, digits, '.', '_', '-'; sbatch and qsub refuse
    or mangle others, qsub refuses '@:%=,' and non-ASCII), others as '_', at most
    ``limit`` characters, and never starting with '-' (it would read as an option)."""
    name = spec.name or (spec.executable or "job").rsplit("/", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:limit] or "job"
    return "_" + name[1:] if name.startswith("-") else name


def walltime(duration: timedelta) -> str:
    """``H:MM:SS`` (whole seconds, rounded up, at least 1), as sbatch --time and PBS's
    walltime resource take it."""
    seconds = max(1, math.ceil(duration.total_seconds()))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@functools.lru_cache(maxsize=None)
def _renderer(folder: Path) -> Any:
    """A pystache renderer for the templates of ``folder``: every value through
    :func:`shell_quote`, a missing key an error, partials looked up beside the template
    first, then among the shared ones."""
    import pystache  # imported on first use: importing hpcjobs stays cheap
    return pystache.Renderer(escape=shell_quote, missing_tags="strict", file_extension="mustache",
                             search_dirs=[str(folder), str(SHARED_TEMPLATES)])


@functools.lru_cache(maxsize=None)
def _parsed(path: Path) -> Any:
    import pystache
    return pystache.parse(_inlined(path))


# a partial's tag alone on its line (mustache's "standalone" tag), with its indentation
_STANDALONE_PARTIAL = re.compile(r"^([ \t]*)\{\{>\s*([^}\s]+)\s*\}\}[ \t]*(?:\r?\n|\Z)", re.M)


def _inlined(path: Path) -> str:
    """The text of ``path`` with each standalone partial tag replaced by the partial's
    text, indented as the tag (what the renderer would do with it on every render: it
    parses a partial each time it meets one, 3/4 of a burst's time). Partials are found
    as the renderer finds them: beside ``path``, then among the shared templates. One
    that changes the delimiters (``{{=``, whose change ends with the partial) is left
    to the renderer."""
    def partial(match: "re.Match[str]") -> str:
        indent, name = match.groups()
        for folder in (path.parent, SHARED_TEMPLATES):
            found = folder / f"{name}.mustache"
            if found.exists():
                text = _inlined(found)
                if "{{=" in text:
                    return match.group()
                return "".join(indent + line if line.strip("\r\n") else line
                               for line in text.splitlines(keepends=True))
        raise FileNotFoundError(f"{path}: no partial {name!r}")

    return _STANDALONE_PARTIAL.sub(partial, path.read_text(encoding="utf-8"))


def render(template: Path, context: Mapping[str, Any]) -> str:
    """Render the mustache file ``template`` (its ``{{> name}}`` lines are templates
    of its own folder or, failing that, the shared ones beside this module).

    Missing keys are errors, so a template and its context cannot drift apart silently.
    """
    return str(_renderer(template.parent).render(_parsed(template), context))
