"""``single``: one process; the executable itself, with no shell in between, unless a
pre- or post-launch script has to be sourced around it."""

from __future__ import annotations

from typing import Optional, Sequence

from ..spec import JobSpec
from .base import ScriptLauncher, job_argv


class SingleLauncher(ScriptLauncher):
    """Runs one process of the job's executable."""

    name = "single"
    script = "single.sh"

    def get_launch_command(self, spec: JobSpec, argv: Optional[Sequence[str]] = None) -> list[str]:
        if spec.pre_launch is None and spec.post_launch is None:
            return list(argv) if argv is not None else job_argv(spec)
        return super().get_launch_command(spec, argv)
