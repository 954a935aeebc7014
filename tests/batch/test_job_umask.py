"""The batch scripts' reading of the job's umask (batch/job_umask.mustache), which
they give back to the job after making their private files: read without a fork, it
must be exactly what ``umask`` says."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hpcjobs.executors.batch.script import render


@pytest.mark.parametrize("mask", ["0022", "0027", "0002", "0077", "0000"])
def test_the_scripts_read_the_umask_the_job_started_with(tmp_path: Path, mask: str) -> None:
    template = tmp_path / "probe.mustache"
    template.write_text('{{> job_umask}}\nprintf "%s %s\\n" "$_hj_umask" "$(builtin umask)"\n')
    script = render(template, {})
    # (a umask that answers "forked" when asked: the value must come from /proc)
    forked = 'umask() { if [ $# = 0 ]; then echo forked; else builtin umask "$@"; fi; }'
    out = subprocess.run(["bash", "-c", f"{forked}; umask {mask}; eval \"$1\"", "probe", script],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [mask, mask]
