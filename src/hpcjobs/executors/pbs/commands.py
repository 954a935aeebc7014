"""Where PBS's commands are (``bin_directory``, PBS's own configuration file, PATH):
docs/pbs.md, "Finding PBS's commands" (which flavour they are is torque.py's)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from ..batch.host import LOCAL, Host

__all__ = ["pbs_exec_bin"]


def pbs_exec_bin(host: Host = LOCAL) -> Optional[Path]:
    """``$PBS_EXEC/bin`` from the PBS configuration file on ``host``, if it holds qstat."""
    conf, = host.read_files([host.environ().get("PBS_CONF_FILE", "/etc/pbs.conf")])
    text = conf.data.decode("utf-8", errors="replace") if conf else ""
    m = re.search(r"^\s*PBS_EXEC\s*=\s*(\S+)", text, re.MULTILINE)
    if m is None or host.read_files([os.path.join(m.group(1), "bin", "qstat")], limit=0)[0] is None:
        return None
    return Path(m.group(1)) / "bin"

