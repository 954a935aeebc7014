"""``FluxConfig``: the Flux executor's settings (the ones for ``url='ssh://...'``)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ...executor import JobExecutorConfig
from ...remote.url import parse_ssh_url

__all__ = ["FluxConfig"]


@dataclasses.dataclass
class FluxConfig(JobExecutorConfig):
    """Settings of the Flux executor; all are for an ``ssh://`` URL (docs/flux.md),
    as is the ``ssh_options`` setting every executor has.
    ``flux_command``: the ``flux`` command on the remote host (default:
    ``$FLUX_SSH_RCMD`` if set, else the ``bin/flux`` beside the instance's socket,
    else ``flux`` on the remote PATH). ``connect_timeout``: seconds a login may take.
    ``node``: ``[user@]host[:port]`` of a node behind the ssh host on which the instance
    runs (the URL's path is its socket there), as the ssh host names it: reached from
    the ssh host over its own ssh, as flux-core's ssh connector does (None: the instance
    runs on the ssh host).
    """

    flux_command: Optional[str] = None
    connect_timeout: float = 15.0
    node: Optional[str] = None

    def __post_init__(self) -> None:
        super().__post_init__()  # (ssh_options)
        if self.flux_command is not None and (not isinstance(self.flux_command, str)
                                              or not self.flux_command):
            raise TypeError(f"FluxConfig.flux_command: a non-empty str, got "
                            f"{self.flux_command!r}")
        if self.node is not None:
            if not isinstance(self.node, str) or not self.node:
                raise TypeError(f"FluxConfig.node: a non-empty str or None, got {self.node!r}")
            try:  # (a name ssh would read as an option is refused there)
                parse_ssh_url(f"ssh://{self.node}")
            except ValueError as e:
                raise ValueError(f"FluxConfig.node: {self.node!r} is not [user@]host[:port] "
                                 f"({e})") from None
        if not isinstance(self.connect_timeout, (int, float)) or not self.connect_timeout > 0:
            raise ValueError(f"FluxConfig.connect_timeout: seconds > 0, got "
                             f"{self.connect_timeout!r}")
