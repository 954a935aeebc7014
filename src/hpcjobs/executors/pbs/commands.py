"""Where PBS's commands are (``bin_directory``, PBS's own configuration file, PATH) and
which flavour they are (OpenPBS or Torque): docs/pbs.md, "Finding PBS's commands"."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ... import external
from ...errors import CommandError

if TYPE_CHECKING:
    from .executor import PBSConfig

__all__ = ["FLAVOURS", "flavour_of", "pbs_exec_bin"]

FLAVOURS = ("openpbs", "torque")
# what `qstat --version` prints from Torque ("Version: 6.1.2") and from Slurm's Perl
# Torque-style wrapper (Getopt::Long's "Unknown option: version"); OpenPBS prints
# "pbs_version = 23.06.06"
_TORQUE_VERSION = re.compile(r"^(Version: |Unknown option: version$)", re.MULTILINE)


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


def flavour_of(config: "PBSConfig") -> str:
    """The configured flavour, else OpenPBS when its configuration file names its
    commands (no command run), else Torque only when ``qstat --version`` says so
    (Torque's ``Version: ...``, or Slurm's wrapper refusing the option): anything else,
    a failing qstat included, keeps OpenPBS (docs/pbs.md, "Finding PBS's commands")."""
    if config.flavour is not None:
        if config.flavour not in FLAVOURS:
            raise ValueError(f"PBSConfig.flavour: {config.flavour!r} is not one of {FLAVOURS}")
        return config.flavour
    if config.bin_directory is None and pbs_exec_bin() is not None:
        return "openpbs"
    qstat = str(Path(config.bin_directory, "qstat")) if config.bin_directory else "qstat"
    try:
        result = external.run([qstat, "--version"], timeout=config.command_timeout, check=False)
    except CommandError:
        return "openpbs"  # no qstat to ask: the first command will say so
    return "torque" if _TORQUE_VERSION.search(result.stdout + result.stderr) else "openpbs"
