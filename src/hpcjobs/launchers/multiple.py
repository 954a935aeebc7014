"""``multiple``: ``process_count`` copies of the job's command on the launching node.

Each process gets ``PSIJ_RANK`` (0 to n-1) and ``PSIJ_SIZE`` (n), plus psij-python's
``_PSI_J_PROCESS_INDEX_`` (1 to n) and ``_PSI_J_PROCESS_COUNT_``; the job's exit code
is the lowest rank's non-zero exit code (see ``scripts/multiple.sh``).
"""

from __future__ import annotations

from .base import ScriptLauncher

__all__ = ["MultipleLauncher"]


class MultipleLauncher(ScriptLauncher):
    """Starts the job's processes as plain local processes, without MPI."""

    name = "multiple"
    script = "multiple.sh"
