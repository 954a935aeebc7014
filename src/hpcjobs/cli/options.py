"""Turning command-line text into the model: durations, sizes, KEY=VALUE pairs, the
``JobSpec`` of ``run``/``submit`` and the executor's configuration.

Each parser raises ``argparse.ArgumentTypeError`` so that argparse reports the option
by name (exit code 2) before anything is submitted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import types
import typing
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from .. import plugins, serialize
from ..attributes import JobAttributes
from ..job import Job
from ..spec import JobSpec

__all__ = ["duration", "memory", "key_value", "key_json", "build_spec", "executor_config"]

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION_UNITS = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
# Slurm's walltime spellings (sbatch --time): MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_CLOCK = re.compile(r"(?:(\d+)-)?(\d+(?::\d+){0,2})\Z")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:i?B)?\Z", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


def duration(text: str) -> timedelta:
    """``90s``, ``10m``, ``1h30m``, ``2d``, or Slurm's ``MM:SS``, ``HH:MM:SS``,
    ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``.

    A bare number is refused: Slurm reads it as minutes, other tools as seconds, so we
    make the user say which.
    """
    t = text.strip()
    clock = _CLOCK.match(t)
    if clock and (clock.group(1) is not None or ":" in t):
        fields = [int(f) for f in clock.group(2).split(":")]
        if clock.group(1) is None:  # MM:SS or HH:MM:SS
            fields = [0] * (3 - len(fields)) + fields
        else:  # after "D-" the fields are HH[:MM[:SS]]
            fields = fields + [0] * (3 - len(fields))
        hours, minutes, seconds = fields
        return timedelta(days=int(clock.group(1) or 0), hours=hours, minutes=minutes,
                         seconds=seconds)
    parts = _DURATION_UNITS.findall(t)
    if parts and "".join(n + u for n, u in parts) == t:
        return timedelta(seconds=float(sum(Decimal(n) * _UNIT_SECONDS[u] for n, u in parts)))
    hint = " (add a unit: 10s, 10m or 10h)" if t.replace(".", "", 1).isdigit() else ""
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a duration{hint}; use e.g. 90s, 10m, 1h30m, 2d, 01:30:00 or 1-00:00:00")


def memory(text: str) -> int:
    """Bytes from ``1048576``, ``512M``, ``2G``, ``1.5GiB`` (binary units: K = 1024)."""
    m = _SIZE.match(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; use bytes or a number with K, M, G, T (powers of 1024)")
    return int(Decimal(m.group(1)) * _SIZE_FACTORS[m.group(2).upper()])


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (KEY, VALUE); the value may contain ``=`` and be empty."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def key_json(text: str) -> tuple[str, Any]:
    """``KEY=JSON`` -> (KEY, the decoded value)."""
    key, value = key_value(text)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"{key}: {value!r} is not JSON ({e})") from None


def _path(text: str) -> Path:
    # relative to where the user typed the command, as every shell tool does;
    # "~/..." is left for the executor to expand on the machine that runs the job
    p = Path(text)
    return p if p.is_absolute() or text.startswith("~") else Path.cwd() / p


def _read_spec(source: str) -> JobSpec:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    try:
        obj = serialize.loads(text)
    except serialize.SerializationError as e:
        raise serialize.SerializationError(f"{source}: {e}") from None
    if isinstance(obj, Job):  # a saved job: submit its spec again
        if obj.spec is None:
            raise serialize.SerializationError(f"{source}: the job document has no spec")
        return obj.spec
    if not isinstance(obj, JobSpec):  # a status, or attributes or resources on their own
        raise serialize.SerializationError(
            f"{source}: a {type(obj).__name__} document, not a job spec or a job")
    return obj


_RESOURCE_OPTIONS = {"nodes": "node_count", "processes": "process_count",
                     "processes_per_node": "processes_per_node",
                     "cores_per_process": "cpu_cores_per_process",
                     "gpus_per_process": "gpu_cores_per_process", "memory": "memory"}
_ATTRIBUTE_OPTIONS = {"time": "duration", "queue": "queue_name", "account": "account",
                      "project": "project_name",
                      "reservation": "reservation_id"}
_PATH_OPTIONS = {"cwd": "directory", "stdin": "stdin_path", "stdout": "stdout_path",
                 "stderr": "stderr_path", "pre_launch": "pre_launch",
                 "post_launch": "post_launch"}


def build_spec(ns: argparse.Namespace) -> JobSpec:
    """The spec of ``run``/``submit``: ``--file`` (if given), then every option given.

    Without ``--file`` the job runs in the current directory, as a shell command would;
    with ``--url`` it runs on another machine, where this directory means nothing: it
    runs where that host's login puts it (the home directory), and relative paths are
    left relative (to the job's directory there).
    """
    remote = getattr(ns, "url", None) is not None
    if ns.file is not None:
        spec = _read_spec(ns.file)
    else:
        if ns.executable is None:
            raise argparse.ArgumentTypeError("no command to run (give one, or --file)")
        spec = JobSpec(directory=None if remote else Path.cwd())
    if ns.executable is not None:
        spec.executable = ns.executable
        spec.arguments = ns.arguments
    for option, field in _PATH_OPTIONS.items():
        if getattr(ns, option) is not None:
            text = getattr(ns, option)
            setattr(spec, field, Path(text) if remote else _path(text))
    if ns.name is not None:
        spec.name = ns.name
    if ns.launcher is not None:
        spec.launcher = ns.launcher
    if ns.no_inherit_env:
        spec.inherit_environment = False
    if ns.env:
        spec.environment = {**(spec.environment or {}), **dict(ns.env)}
    given = {f: getattr(ns, o) for o, f in _RESOURCE_OPTIONS.items() if getattr(ns, o) is not None}
    if given or ns.exclusive:
        resources = spec.resources_v1
        for field, value in given.items():
            setattr(resources, field, value)
        if ns.exclusive:
            resources.exclusive_node_use = True
        spec.resources = resources
    attributes: JobAttributes = spec.attributes
    for option, field in _ATTRIBUTE_OPTIONS.items():
        if getattr(ns, option) is not None:
            setattr(attributes, field, getattr(ns, option))
    for key, value in [*ns.attr, *ns.attr_json]:
        attributes.set_custom_attribute(key, value)
    if ns.batch_script:
        from ..executors.batch.user_script import SCRIPT_ATTRIBUTE  # (the batch machinery)
        if spec.executable is not None:  # read at submit, maybe elsewhere: made absolute
            spec.executable = str(_path(spec.executable))
        attributes.set_custom_attribute(SCRIPT_ATTRIBUTE, True)
    return spec


def executor_config(executor: str, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``--config KEY=VALUE`` pairs typed after the executor's config dataclass."""
    if not pairs:
        return {}
    cls = plugins.load("hpcjobs.executors", executor).config_class
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    config: dict[str, Any] = {}
    for key, text in pairs:
        if key not in names:
            raise argparse.ArgumentTypeError(
                f"--config: the {executor} executor has no setting {key!r} "
                f"(known: {', '.join(sorted(names))})")
        config[key] = _typed(f"--config {key}", hints.get(key, str), text)
    return config


def _typed(what: str, hint: Any, text: str) -> Any:
    # Optional[X] -> X: an empty value means None only when None is allowed
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if text == "" and len(args) < len(typing.get_args(hint)):
            return None
        hint = args[0] if len(args) == 1 else str
    try:
        if hint is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if hint in (int, float, str):
            return hint(text)
        if isinstance(hint, type) and issubclass(hint, Path):
            return _path(text)
        if hint is timedelta:
            return duration(text)
        return json.loads(text)
    except (ValueError, argparse.ArgumentTypeError) as e:
        raise argparse.ArgumentTypeError(f"{what}: {text!r}: {e}") from None

