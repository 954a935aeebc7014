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
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

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


# a standalone partial tag, "{{> name}}" alone on its line
_PARTIAL = re.compile(r"^\{\{>\s*([A-Za-z0-9_]+)\s*\}\}\n", re.MULTILINE)


def _partial(folder: Path, name: str) -> Path:
    """A partial is looked up beside the template that names it, then among the
    shared ones."""
    own = folder / f"{name}.mustache"
    return own if own.exists() else SHARED_TEMPLATES / f"{name}.mustache"


def _source(path: Path) -> str:
    """The template's text with its (standalone, unindented) partials inlined."""
    text = path.read_text(encoding="utf-8")
    return _PARTIAL.sub(lambda m: _source(_partial(path.parent, m.group(1))), text)


@functools.lru_cache(maxsize=None)
def _compiled(path: Path) -> Callable[[Mapping[str, Any]], str]:
    """The template, parsed once per process by pystache (its mustache grammar: sections,
    standalone lines, comments) and turned into one Python function (_compile_nodes):
    rendering a job's script then costs what its values do, not pystache's generic
    context stack (most of what a submit paid to render, issue 17). A node it does not
    know (delimiter changes apart) leaves the template to pystache's own renderer, as
    does a parse tree whose shape has changed (it is pystache's internals:
    tests/golden/test_compiled_render.py holds the two renderers to the same bytes)."""
    import pystache  # imported on first use: importing hpcjobs stays cheap
    parsed = pystache.parse(_source(path))
    try:
        return _compile_nodes(parsed._parse_tree, str(path))
    except (_Unsupported, AttributeError):  # (pystache's parse tree is not public API)
        renderer = pystache.Renderer(escape=shell_quote, missing_tags="strict")
        return lambda context: str(renderer.render(parsed, context))


class _Unsupported(Exception):
    """A template node the compiled renderer leaves to pystache."""


_MISSING = object()


def _compile_nodes(nodes: Sequence[Any], name: str) -> Callable[[Mapping[str, Any]], str]:
    """The parse tree ``nodes`` as the source of one function, straight-line code with a
    loop per section, compiled: a submit renders its script right after the previous
    submit command ran, with the CPU's caches cold, where one function costs less than a
    closure per node (docs/decisions.md, pystache). What it does is what mustache does: the context stack
    (innermost last; a section pushes each of its items), :func:`_lookup` on it, every
    escaped value through :func:`shell_quote`."""
    code = ["def render(context):",
            "    c = dict(context)",
            "    stack = [c]",  # (the template's context, then the sections' items)
            "    out = []",
            "    a = out.append"]
    _emit(nodes, code, 1, 0, iter(range(1 << 30)))
    code.append("    return ''.join(out)")
    namespace: dict[str, Any] = {"M": _MISSING, "lookup": _lookup, "quote": shell_quote}
    exec(compile("\n".join(code), f"<template {name}>", "exec"), namespace)
    render: Callable[[Mapping[str, Any]], str] = namespace["render"]
    return render


def _emit(nodes: Sequence[Any], code: list[str], indent: int, depth: int,
          counter: Iterator[int]) -> None:
    """Append the code of ``nodes`` to ``code``; ``depth``: the sections around them."""
    pad = "    " * indent
    text = ""  # (the text between two tags may come in pieces: written as one)
    for node in nodes:
        if isinstance(node, str):
            text += node
            continue
        if text:
            code.append(f"{pad}a({text!r})")
            text = ""
        kind = type(node).__name__
        if kind in ("_CommentNode", "_ChangeNode"):  # (a delimiter change acts when parsing)
            continue
        if kind not in ("_EscapeNode", "_LiteralNode", "_SectionNode", "_InvertedNode"):
            raise _Unsupported(kind)
        key = node.key
        if depth or key == ".":
            code.append(f"{pad}v = lookup(stack, {key!r})")
        else:  # outside every section the stack is the context alone: look there first
            code += [f"{pad}v = c.get({key!r}, M)",
                     f"{pad}if v is M or callable(v):",
                     f"{pad}    v = lookup(stack, {key!r})"]  # (which raises the error)
        if kind == "_EscapeNode":
            code.append(f"{pad}a(quote(v if isinstance(v, str) else str(v)))")
        elif kind == "_LiteralNode":
            code.append(f"{pad}a(str(v))")
        elif kind == "_SectionNode":
            item = f"i{next(counter)}"
            code += [f"{pad}if v:",
                     f"{pad}    for {item} in ([v] if isinstance(v, (str, bytes, dict))",
                     f"{pad}            or not hasattr(v, '__iter__') else v):",
                     f"{pad}        stack.append({item})"]
            _emit(node.parsed._parse_tree, code, indent + 2, depth + 1, counter)
            code.append(f"{pad}        stack.pop()")
        else:
            code += [f"{pad}if not v:", f"{pad}    pass"]
            _emit(node.parsed_section._parse_tree, code, indent + 1, depth, counter)
    if text:
        code.append(f"{pad}a({text!r})")


def _lookup(stack: Sequence[Any], key: str) -> Any:
    """``key`` in the innermost context that has it (``.``: the innermost itself), as
    mustache looks names up; a missing one is an error (a template and its context
    must not drift apart silently). Contexts are plain data: dicts, lists, strings."""
    if key == ".":
        return stack[-1]
    for context in reversed(stack):
        if isinstance(context, dict):
            value = context.get(key, _MISSING)
            if value is not _MISSING:
                if callable(value):
                    raise TypeError(f"template value {key!r} is callable (not plain data)")
                return value
    raise KeyError(f"template key {key!r} is missing from the context")


def render(template: Path, context: Mapping[str, Any]) -> str:
    """Render the mustache file ``template`` (its ``{{> name}}`` lines are templates
    of its own folder or, failing that, the shared ones beside this module).

    Missing keys are errors, so a template and its context cannot drift apart silently.
    """
    return _compiled(template)(context)
