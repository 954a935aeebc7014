"""What the ``*_ssh`` providers share: the test login node (scripts/sshd.sh, found
through the ``HPCJOBS_TEST_SSH_*`` variables its ``up`` prints) and an executor of a
batch backend reaching the scheduler through it, as user ``hpcjobs-remote``.

The job files live in that user's home, where the test's own (root-owned, private)
``tmp_path`` is out of reach: these providers leave out ``executes``, whose tests read
the job's output from ``tmp_path``. tests/remote checks output over ssh instead.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

from hpcjobs import JobExecutor


def unavailable() -> Optional[str]:
    """None if the test login node lets us in."""
    host, config = os.environ.get("HPCJOBS_TEST_SSH_HOST"), os.environ.get("HPCJOBS_TEST_SSH_CONFIG")
    if not host or not config:
        return "no test login node: eval \"$(scripts/sshd.sh up)\" (as root) starts one"
    p = subprocess.run(["ssh", "-F", config, "-o", "BatchMode=yes", host, "true"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return None if p.returncode == 0 else f"the test login node refuses us: {p.stderr.strip()}"


def make_executor(name: str, work_dir: Path) -> JobExecutor:
    """A ``name`` executor over ssh to the test login node, its files under a directory
    of the remote home named after ``work_dir`` (one per test)."""
    return JobExecutor.get_instance(name, url=f"ssh://{os.environ['HPCJOBS_TEST_SSH_HOST']}", config={
        "ssh_options": ["-F", os.environ["HPCJOBS_TEST_SSH_CONFIG"]],
        "work_directory": f"~/.hpcjobs/tests/{work_dir.parent.name}"})
