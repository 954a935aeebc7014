"""TEST DOUBLE of ``flux.job.Jobspec`` (flux-core 0.88): RFC 14 jobspec building.

Behaviour kept from the real bindings because executors depend on it:

* ``from_command(environment=None)`` copies ``os.environ`` into the jobspec
  (fixtures/flux-0.88/README.md section 1; basics.txt shows "<49 vars = os.environ>").
* the constructor validates, and the job-ingest validator runs the same checks, so the
  messages are the real ones ("command array cannot have length of zero",
  "Missing key (resources)": infeasible.txt).
* ``stdin``/``stdout``/``stderr`` are shell options ``input.stdin`` / ``output.stdout`` /
  ``output.stderr`` of type ``file``; ``setattr("x")`` means ``attributes.system.x``.
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import os
from collections import abc
from collections.abc import Mapping, Sequence
from typing import Any


def _validate_keys(expected: Sequence[str], given: Any, optional: bool = False) -> None:
    if not optional:
        for key in sorted(set(expected) - set(given)):
            raise ValueError(f"Missing key ({key})")
    for key in sorted(set(given) - set(expected)):
        raise ValueError(f"Extraneous key ({key})")


def validate_jobspec(obj: Mapping[str, Any]) -> JobspecV1:
    """What job-ingest's ``jobspec`` validator plugin does: build a JobspecV1."""
    _validate_keys(["resources", "tasks", "version", "attributes"], obj.keys())
    return JobspecV1(**obj)


def _set_treedict(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
        if not isinstance(tree, dict):
            raise TypeError(f"{part} is not a dictionary")
    tree[leaf] = value


def _attr_key(key: str) -> str:
    if not key.startswith("attributes."):
        if not key.startswith(("user.", "system.")):
            key = "system." + key
        key = "attributes." + key
    return key


class Jobspec:
    """RFC 14 jobspec with the real class's checks (a subset of them)."""

    def __init__(self, resources: Any, tasks: Any, attributes: Any, version: Any) -> None:
        if not isinstance(resources, abc.Sequence):
            raise TypeError("resources must be a sequence")
        if not isinstance(tasks, abc.Sequence):
            raise TypeError("tasks must be a sequence")
        if not isinstance(attributes, abc.Mapping):
            raise TypeError("attributes must be a mapping")
        if not isinstance(version, int):
            raise TypeError("version must be an integer")
        self.jobspec: dict[str, Any] = {
            "resources": resources,
            "tasks": tasks,
            "attributes": attributes,
            "version": version,
        }
        for res in resources:
            self._validate_resource(res)
        for task in tasks:
            self._validate_task(task)
        _validate_keys(["system", "user"], attributes.keys(), optional=True)

    @staticmethod
    def _validate_resource(res: Any) -> None:
        if not isinstance(res, abc.Mapping):
            raise TypeError("resource must be a mapping")
        if "type" not in res:
            raise ValueError("type is a required key for resources")
        if "count" not in res:
            raise ValueError("count is a required key for resources")
        if not isinstance(res["count"], int):
            raise TypeError("count must be an int or mapping")
        if res["type"] in ("node", "slot", "core") and res["count"] < 1:
            raise ValueError("node, slot, or core count must be > 0")
        if res["type"] == "slot" and "label" not in res:
            raise ValueError("slots must have labels")
        for child in res.get("with", []):
            Jobspec._validate_resource(child)

    @staticmethod
    def _validate_task(task: Any) -> None:
        if not isinstance(task, abc.Mapping):
            raise TypeError("task must be a mapping")
        for key in ("command", "slot", "count"):
            if key not in task:
                raise ValueError(f"Missing key ({key})")
        command = task["command"]
        if len(command) == 0:
            raise TypeError("command array cannot have length of zero")
        if isinstance(command, str) or not all(isinstance(x, str) for x in command):
            raise TypeError("command must be a list of strings")
        if not isinstance(task["count"], abc.Mapping) or len(task["count"]) != 1:
            raise ValueError("count must have exactly one key set")

    # --- properties and setters used by executors ---------------------------------
    @property
    def resources(self) -> Any:
        return self.jobspec["resources"]

    @property
    def tasks(self) -> Any:
        return self.jobspec["tasks"]

    @property
    def attributes(self) -> Any:
        return self.jobspec["attributes"]

    def _system(self, key: str) -> Any:
        return self.jobspec["attributes"].get("system", {}).get(key)

    @property
    def duration(self) -> Any:
        return self._system("duration")

    @duration.setter
    def duration(self, duration: Any) -> None:
        if isinstance(duration, datetime.timedelta):
            seconds = duration.total_seconds()
        elif isinstance(duration, (int, float)):
            seconds = float(duration)
        else:
            raise TypeError("duration must be an int, float, string, or timedelta")
        if seconds < 0:
            raise ValueError("duration must not be negative")
        if math.isnan(seconds) or math.isinf(seconds):
            raise ValueError("duration must be a normal, finite value")
        self.setattr("system.duration", seconds)

    @property
    def cwd(self) -> Any:
        return self._system("cwd")

    @cwd.setter
    def cwd(self, cwd: Any) -> None:
        if isinstance(cwd, os.PathLike):
            cwd = os.fspath(cwd)
        if not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        self.setattr("system.cwd", cwd)

    @property
    def environment(self) -> Any:
        return self._system("environment")

    @environment.setter
    def environment(self, environ: Any) -> None:
        if not isinstance(environ, abc.Mapping):
            raise ValueError("environment must be a mapping")
        self.setattr("system.environment", environ)

    @property
    def queue(self) -> Any:
        return self._system("queue")

    @queue.setter
    def queue(self, queue: Any) -> None:
        if not isinstance(queue, str):
            raise TypeError("queue must be a string")
        self.setattr("system.queue", queue)

    def _io(self, iotype: str, stream: str) -> str | None:
        try:
            path: str = self.getattr(f"shell.options.{iotype}.{stream}.path")
            return path
        except KeyError:
            return None

    def _set_io(self, iotype: str, stream: str, path: Any) -> None:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise TypeError(
                f"The path must be a string or pathlib object, got {type(path).__name__}"
            )
        self.setattr_shell_option(f"{iotype}.{stream}.type", "file")
        self.setattr_shell_option(f"{iotype}.{stream}.path", path)

    stdin = input = property(
        lambda self: self._io("input", "stdin"),
        lambda self, p: self._set_io("input", "stdin", p),
    )
    stdout = output = property(
        lambda self: self._io("output", "stdout"),
        lambda self, p: self._set_io("output", "stdout", p),
    )
    stderr = error = property(
        lambda self: self._io("output", "stderr"),
        lambda self, p: self._set_io("output", "stderr", p),
    )

    def getattr(self, key: str) -> Any:
        value: Any = self.jobspec
        for part in _attr_key(key).split("."):
            value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                raise KeyError(key)
        return value

    def setattr(self, key: str, val: Any) -> None:
        key = _attr_key(key)
        try:
            _set_treedict(self.jobspec, key, val)
        except TypeError as exc:
            raise TypeError(f"failed to set {key} to {val}: {exc}") from None

    def setattr_shell_option(self, key: str, val: Any) -> None:
        self.setattr("system.shell.options." + key, val)

    def dumps(self, **kwargs: Any) -> str:
        return json.dumps(self.jobspec, ensure_ascii=False, **kwargs)


class JobspecV1(Jobspec):
    """Version 1 jobspec: ``attributes.system.duration`` (a number) is required."""

    def __init__(self, resources: Any, tasks: Any, attributes: Any, version: Any = 1) -> None:
        if version != 1:
            raise ValueError("version must be 1")
        super().__init__(resources, tasks, attributes, version)
        if "system" not in attributes:
            raise ValueError("attributes.system is a required key")
        system = attributes["system"]
        if "duration" not in system:
            raise ValueError("attributes.system.duration is a required key")
        if not isinstance(system["duration"], numbers.Number):
            raise ValueError("attributes.system.duration must be a number")

    @classmethod
    def from_command(
        cls,
        command: list[str],
        num_tasks: int = 1,
        cores_per_task: int = 1,
        gpus_per_task: int | None = None,
        num_nodes: int | None = None,
        exclusive: bool = False,
        duration: Any = None,
        environment: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        input: str | None = None,
        output: str | None = None,
        error: str | None = None,
    ) -> JobspecV1:
        """Minimal legal V1 jobspec, as the real factory builds it."""
        if not isinstance(num_tasks, int) or num_tasks < 1:
            raise ValueError("task count must be a integer >= 1")
        if not isinstance(cores_per_task, int) or cores_per_task < 1:
            raise ValueError("cores per task must be an integer >= 1")
        children: list[dict[str, Any]] = [{"type": "core", "count": cores_per_task}]
        if gpus_per_task:
            children.append({"type": "gpu", "count": gpus_per_task})
        count: dict[str, int] = {"per_slot": 1}
        if num_nodes is not None:
            if not isinstance(num_nodes, int) or num_nodes < 1:
                raise ValueError("node count must be an integer >= 1 (if set)")
            if num_nodes > num_tasks:
                raise ValueError("node count must not be greater than task count")
            if num_tasks % num_nodes:
                count = {"total": num_tasks}
            slot = {"type": "slot", "count": math.ceil(num_tasks / num_nodes),
                    "with": children, "label": "task"}
            node: dict[str, Any] = {"type": "node", "count": num_nodes}
            if exclusive:
                node["exclusive"] = True
            node["with"] = [slot]
            resource = node
        elif exclusive:
            raise ValueError("exclusive can only be set with a node count")
        else:
            resource = {"type": "slot", "count": num_tasks, "with": children, "label": "task"}
        tasks = [{"command": command, "slot": "task", "count": count}]
        self = cls([resource], tasks, attributes={"system": {"duration": 0}})
        if duration is not None:
            self.duration = duration
        # The real quirk: no environment given means "a copy of the caller's".
        self.environment = dict(os.environ) if environment is None else environment
        if cwd is not None:
            self.cwd = cwd
        if name is not None:
            self.setattr("job.name", name)
        if input is not None:
            self.stdin = input
        if output is not None and output not in ("none", "kvs"):
            self.stdout = output
        if error is not None and error not in ("none", "kvs"):
            self.stderr = error
        return self
