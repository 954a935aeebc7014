"""``FluxConfig``: the Flux executor's settings (the ones for ``url='ssh://...'``)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ...executor import JobExecutorConfig

__all__ = ["FluxConfig"]


@dataclasses.dataclass
class FluxConfig(JobExecutorConfig):
    """Settings of the Flux executor; all are for an ``ssh://`` URL (docs/flux.md),
    as is the ``ssh_options`` setting every executor has.
    ``flux_command``: the ``flux`` command on the remote host (default:
    ``$FLUX_SSH_RCMD`` if set, else the ``bin/flux`` beside the instance's socket,
    else ``flux`` on the remote PATH). ``connect_timeout``: seconds a login may take.
    """

    flux_command: Optional[str] = None
    connect_timeout: float = 15.0

    def __post_init__(self) -> None:
        super().__post_init__()  # (ssh_options)
        if self.flux_command is not None and (not isinstance(self.flux_command, str)
                                              or not self.flux_command):
            raise TypeError(f"FluxConfig.flux_command: a non-empty str, got "
                            f"{self.flux_command!r}")
        if not isinstance(self.connect_timeout, (int, float)) or not self.connect_timeout > 0:
            raise ValueError(f"FluxConfig.connect_timeout: seconds > 0, got "
                             f"{self.connect_timeout!r}")
