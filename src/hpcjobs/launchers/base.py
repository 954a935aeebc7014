"""``Launcher``: how the ranks of a job are started, and its plugin lookup.

A launcher turns a job into the argument list that runs it: for ``single`` with no
pre/post-launch script that is just the executable and its arguments (no shell in
between); otherwise a small POSIX shell script from ``launchers/scripts`` that sources
pre-launch, starts the ranks, waits for all of them, sources post-launch and exits with
the job's exit code. Every executor uses the same launchers (argument lists; a batch
executor shell-quotes them into its script).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence, Set

from .. import plugins
from ..resources import ResourceSpecV1
from ..spec import JobSpec

if TYPE_CHECKING:
    from ..descriptor import Descriptor
    from ..executor import JobExecutorConfig

__all__ = ["Launcher", "ScriptLauncher", "SCRIPTS"]

#: where the launcher shell scripts live (installed with the package)
SCRIPTS = Path(__file__).with_name("scripts")


class Launcher(ABC):
    """Builds the command that starts a job's processes."""

    name: ClassVar[str] = ""
    #: psij-python's name for the launcher used when a spec names none
    DEFAULT_LAUNCHER_NAME: ClassVar[str] = "single"

    def __init__(self, config: Optional["JobExecutorConfig"] = None) -> None:
        from ..executor import JobExecutorConfig
        self.config = config if config is not None else JobExecutorConfig.DEFAULT

    @staticmethod
    def get_instance(name: str, version_constraint: Optional[str] = None,
                     config: Optional["JobExecutorConfig"] = None) -> "Launcher":
        """The launcher registered as ``name`` (entry-point group ``hpcjobs.launchers``).
        Launchers have one version, the package's, so ``version_constraint`` is
        checked against that."""
        from .. import __version__

        cls = plugins.load("hpcjobs.launchers", name)
        plugins.check_version("launcher", name, __version__, version_constraint)
        launcher: Launcher = cls(config)
        return launcher

    @staticmethod
    def get_launcher_names() -> Set[str]:
        """The names :meth:`get_instance` accepts (installed and registered launchers)."""
        return plugins.names("hpcjobs.launchers")

    @staticmethod
    def register_launcher(desc: "Descriptor", root: Optional[str] = None) -> None:
        """As :meth:`JobExecutor.register_executor`, for a launcher."""
        plugins.register("hpcjobs.launchers", desc)

    @abstractmethod
    def get_launch_command(self, spec: JobSpec, argv: Optional[Sequence[str]] = None) -> list[str]:
        """The argument list that runs the job described by ``spec``.

        ``argv`` is the job's own command (executable and arguments) when the caller
        has already processed it (e.g. substituted ``${NAME}``); by default it is taken
        from the spec.
        """


def job_argv(spec: JobSpec) -> list[str]:
    """The job's own command: executable then arguments."""
    assert spec.executable is not None
    return [spec.executable, *(spec.arguments or ())]


class ScriptLauncher(Launcher):
    """A launcher backed by ``scripts/<script>``, called as::

        /bin/sh <script> <pre_launch|""> <post_launch|""> <process_count> \\
                <processes_per_node> -- <executable> <arguments...>

    Subclasses set ``script`` (and ``name``); the script does the rest.
    """

    script: ClassVar[str] = ""
    #: the directory the scripts are in where the job runs: the package's own, unless
    #: the executor's host is another machine (batch/host.py puts a copy there)
    scripts_directory: str = str(SCRIPTS)

    def get_launch_command(self, spec: JobSpec, argv: Optional[Sequence[str]] = None) -> list[str]:
        res = spec.resources_v1
        return ["/bin/sh", f"{self.scripts_directory}/{self.script}",
                str(spec.pre_launch or ""), str(spec.post_launch or ""),
                str(res.computed_process_count), str(_nodefile_processes_per_node(res)),
                "--", *(argv if argv is not None else job_argv(spec))]


def _nodefile_processes_per_node(res: ResourceSpecV1) -> int:
    """How many consecutive node-file lines name the same host: as given or implied by
    node_count; with neither, 1, so the processes go round the allocation's hosts
    (psij-python's computed_processes_per_node would put them all on the first)."""
    if res.processes_per_node is None and res.node_count is None:
        return 1
    return res.computed_processes_per_node
