"""Where PBS's commands are (``bin_directory``, PBS's own configuration file, PATH):
docs/pbs.md, "Finding PBS's commands" (which flavour they are is torque.py's)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

__all__ = ["pbs_exec_bin"]


def pbs_exec_bin() -> Optional[Path]:
    """``$PBS_EXEC/bin`` from the PBS configuration file, if it holds qstat."""
    conf = Path(os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf"))
    try:
        text = conf.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"^\s*PBS_EXEC\s*=\s*(\S+)", text, re.MULTILINE)
    if m is None or not (Path(m.group(1)) / "bin" / "qstat").exists():
        return None
    return Path(m.group(1)) / "bin"

