"""Build a Flux jobspec (RFC 14/25, through ``flux.job.JobspecV1``) from a PSI/J job.

Everything the spec describes goes in: the launcher's command line (the launcher
starts the job's processes, sourcing pre/post-launch), the working directory, exactly
the job's environment, stdio paths, resources, duration, queue, bank (the account), project and name, plus
the ``flux.<key>`` custom attributes (see docs/flux.md). What Flux cannot express is
refused with ``InvalidJobException`` naming the field, before anything is submitted.
What depends on the machine the jobs run on (the environment they inherit, the home
and default directory, where ``flux`` and this package's shell files are) comes from a
:class:`FluxSite`: this machine's, or a remote one's (remote.py).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ...environment import expand, job_environment
from ...errors import InvalidJobException
from ...launchers.base import SCRIPTS, Launcher, job_argv
from ...spec import JobSpec

__all__ = ["FluxSite", "FluxSubmission", "build_jobspec", "local_site", "release_urgency",
           "SHIPPED", "shipped_name"]

#: flux-core's urgency range (flux-submit(1) --urgency): 0 holds, 31 expedites
_URGENCY = range(32)
_DEFAULT_URGENCY = 16
#: the launchers whose processes Flux starts as its own tasks (ranks.sh)
_PLACED_BY_FLUX = ("single", "multiple", "mpirun")
_RANKS = Path(__file__).with_name("ranks.sh")
#: the shell initrc that fails a job whose directory its shell cannot enter (cwd.lua)
_CWD_CHECK = Path(__file__).with_name("cwd.lua")
#: the package's directory, and the files in it that the jobs' processes read (the
#: launchers' scripts source lib.sh and ranks.sh finds it by its relative path)
_PACKAGE = Path(__file__).parents[2]
SHIPPED = (_RANKS, _CWD_CHECK, *sorted(SCRIPTS.glob("*.sh")))


def shipped_name(path: Path) -> str:
    """The name of a :data:`SHIPPED` file relative to the package's directory."""
    return path.relative_to(_PACKAGE).as_posix()


@dataclass(frozen=True)
class FluxSite:
    """The machine the jobs run on, as the jobspec names it: ``environ`` (what a job
    that inherits the environment gets), ``home`` (what ``~`` means; None: on this
    machine, as ``os.path.expanduser`` reads it, ``~user`` too), ``cwd`` (the
    directory of a job that names none), ``flux`` (the command a nested instance's
    brokers run) and ``package``, the directory there that holds the
    :data:`SHIPPED` files where this package has them (None: this package itself)."""

    environ: Mapping[str, str]
    home: str | None
    cwd: str
    flux: str
    package: str | None = None

    def file(self, path: Path | str) -> str:
        """Where the site has ``path``, one of the :data:`SHIPPED` files; any other
        word is given back as it is (so a launcher's command line can be mapped)."""
        if self.package is None or Path(path) not in SHIPPED:
            return str(path)
        return f"{self.package}/{shipped_name(Path(path))}"

    def expanduser(self, path: str | os.PathLike[str]) -> str:
        """``path`` with a leading ``~`` (alone or ``~/``) read as ``home``."""
        text = os.fspath(path)
        if self.home is None:
            return os.path.expanduser(text)
        if text == "~" or text.startswith("~/"):
            return self.home + text[1:]
        return text


def local_site() -> FluxSite:
    """This machine, now (its environment and directory as they are at the call)."""
    return FluxSite(os.environ, None, os.getcwd(),
                    shutil.which("flux") or "flux")


class FluxSubmission(NamedTuple):
    """What ``flux.job.submit`` needs: the jobspec object and the urgency."""

    jobspec: Any
    urgency: int


class _Shape(NamedTuple):
    """The allocation a job asks for, and the ``from_command`` arguments every
    jobspec of it gets (``environment``, ``cwd``, ``name``)."""

    processes: int
    cores: int
    gpus: int | None
    nodes: int | None
    exclusive: bool
    common: dict[str, Any]


def build_jobspec(flux_job: Any, spec: JobSpec, launcher: Launcher,
                  site: FluxSite | None = None) -> FluxSubmission:
    """The jobspec for ``spec`` to run on ``site`` (this machine by default);
    ``flux_job`` is the ``flux.job`` module."""
    site = site or local_site()
    res = spec.resources_v1
    attrs = spec.attributes
    if res.memory is not None:
        raise InvalidJobException("ResourceSpecV1.memory: a Flux V1 jobspec cannot "
                                  "request memory; leave it unset for Flux")
    if attrs.reservation_id is not None:
        raise InvalidJobException("JobAttributes.reservation_id: Flux has no reservations")
    nodes = res.requested_node_count
    if res.exclusive_node_use and nodes is None:
        raise InvalidJobException("ResourceSpecV1.exclusive_node_use: Flux allocates "
                                  "whole nodes only for a node count; set node_count")
    env = job_environment(spec.inherit_environment, spec.environment, site.environ)
    argv = job_argv(spec)
    argv[1:] = [expand(a, env) for a in argv[1:]]
    cwd = site.expanduser(spec.directory) if spec.directory else site.cwd
    assert spec.executable is not None  # JobSpec.validate() checked it
    shape = _Shape(res.computed_process_count, res.cpu_cores_per_process or 1,
                   res.gpu_cores_per_process or None, nodes, res.exclusive_node_use,
                   {"environment": env, "cwd": cwd,
                    "name": spec.name or Path(spec.executable).name})
    try:
        if _runs_directly(spec, launcher):
            js = _direct(flux_job, argv, shape)
        else:
            js = _nested(flux_job, spec, launcher, argv, shape, site)
    except (ValueError, TypeError) as e:
        raise InvalidJobException(f"ResourceSpecV1: Flux refuses the request: {e}") from None
    _set_stdio(js, spec, cwd, site)
    # (before the custom attributes: a 'userrc' of the user's own replaces this check)
    js.setattr_shell_option("userrc", site.file(_CWD_CHECK))
    js.duration = attrs.duration.total_seconds()  # 0 means no limit to Flux
    if attrs.queue_name is not None:
        js.setattr("system.queue", attrs.queue_name)
    # flux-accounting's names: the bank is charged, the project is recorded
    if attrs.account is not None:
        js.setattr("system.bank", attrs.account)
    if attrs.project_name is not None:
        js.setattr("system.project", attrs.project_name)
    return FluxSubmission(js, _apply_custom(js, attrs.custom_for("flux")))


def _runs_directly(spec: JobSpec, launcher: Launcher) -> bool:
    """One process, nothing sourced around it, and an allocation that is sure to be on
    one node (one slot, or one node asked for): Flux runs the executable itself as the
    job's one task. (A Flux shell with no task on a node of its allocation fails the
    job: "terminated before first barrier".)"""
    res = spec.resources_v1
    one_node = res.requested_node_count == 1 or (
        res.computed_process_count == 1 and res.requested_node_count is None)
    return (launcher.name == "single" and spec.pre_launch is None
            and spec.post_launch is None and one_node)


def _direct(flux_job: Any, argv: list[str], shape: _Shape) -> Any:
    """The executable as the one task, in an allocation sized for all the processes
    (``single`` runs one process whatever the process count, as on every backend)."""
    js = flux_job.JobspecV1.from_command(
        argv, num_tasks=shape.processes, cores_per_task=shape.cores,
        gpus_per_task=shape.gpus, num_nodes=shape.nodes, exclusive=shape.exclusive,
        **shape.common)
    # RFC 14 "total": one task, whatever the number of slots
    js.jobspec["tasks"][0]["count"] = {"total": 1}
    return js


def _nested(flux_job: Any, spec: JobSpec, launcher: Launcher, argv: list[str],
            shape: _Shape, site: FluxSite) -> Any:
    """A Flux instance of the job's own over its allocation, one broker per node, as
    ``flux batch`` makes, whose initial program is the launcher: ``ranks.sh`` for the
    launchers Flux can place (the ranks become Flux tasks of ``flux run``), else the
    launcher's own command, run once like a batch script."""
    if launcher.name in _PLACED_BY_FLUX:
        res = spec.resources_v1
        program = ["/bin/sh", site.file(_RANKS), launcher.name, str(shape.cores),
                   str(shape.gpus or 0), str(spec.pre_launch or ""),
                   str(spec.post_launch or ""), str(shape.processes),
                   str(res.computed_processes_per_node), "--", *argv]
    else:
        # (its script, where the site has it)
        program = [site.file(word) for word in launcher.get_launch_command(spec, argv)]
    js = flux_job.JobspecV1.from_nest_command(
        program, num_slots=shape.processes, cores_per_slot=shape.cores,
        gpus_per_slot=shape.gpus, num_nodes=shape.nodes, exclusive=shape.exclusive,
        **shape.common)
    # the bindings name the broker "flux", to be found on the job's PATH, which an
    # environment without PATH (inherit_environment=False) lacks: name it exactly
    js.jobspec["tasks"][0]["command"][0] = site.flux
    return js


def _set_stdio(js: Any, spec: JobSpec, cwd: str, site: FluxSite) -> None:
    for field in ("stdin_path", "stdout_path", "stderr_path"):
        path: Path | None = getattr(spec, field)
        if path is None:
            continue
        if field != "stdin_path" and "{{" in str(path):
            # the Flux shell expands mustache templates ({{id}}, ...) in output paths
            raise InvalidJobException(f"JobSpec.{field}: '{{{{' would be expanded by the "
                                      f"Flux shell as a template, got {str(path)!r}")
        # relative to the job's directory, as the job sees them
        full = os.path.join(cwd, site.expanduser(path))
        setattr(js, field.split("_")[0], full)
    if spec.stdout_path is not None and spec.stderr_path is None:
        # the shell copies stderr into the stdout file unless told otherwise
        # (flux.job.JobspecV1.from_command docs); PSI/J keeps the streams apart
        js.setattr_shell_option("output.stderr.type", "kvs")


def release_urgency(spec: JobSpec | None) -> int:
    """The urgency a released job gets: the spec's ``flux.urgency`` unless that is
    the hold itself (0), else Flux's default."""
    value = None if spec is None else spec.attributes.get_custom_attribute("flux.urgency")
    return value if type(value) is int and value in _URGENCY and value else _DEFAULT_URGENCY


def _apply_custom(js: Any, custom: dict[str, Any]) -> int:
    """``flux.urgency``, ``flux.shell_options`` (a dict) and ``flux.<key>`` (set with
    ``Jobspec.setattr``: ``attributes.system.<key>`` unless it starts with ``user.``,
    ``system.`` or ``attributes.``). Returns the urgency."""
    urgency = _DEFAULT_URGENCY
    for key, value in custom.items():
        field = f"JobAttributes.custom_attributes['flux.{key}']"
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidJobException(f"{field}: not representable in a jobspec: {e}") from None
        if key == "urgency":
            if type(value) is not int or value not in _URGENCY:
                raise InvalidJobException(f"{field}: an int from 0 to 31, got {value!r}")
            urgency = value
        elif key == "shell_options":
            if not isinstance(value, dict):
                raise InvalidJobException(f"{field}: a dict of shell options, got {value!r}")
            for option, setting in value.items():
                js.setattr_shell_option(option, setting)
        elif not key or key.startswith(".") or key.endswith(".") or ".." in key:
            raise InvalidJobException(f"{field}: not a dotted attribute name")
        else:
            js.setattr(key, value)
    return urgency
