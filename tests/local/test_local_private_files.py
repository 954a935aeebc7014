"""Every file and folder the local executor makes for itself is private (0600/0700),
whatever the user's umask; a path the user names for the job keeps that umask."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpcjobs import Job, JobExecutor, JobSpec, JobState
from hpcjobs.executor import JobExecutorConfig

TIMEOUT = 60.0


def readable_by_others(root: Path) -> dict[str, str]:
    """Path (relative to ``root``) -> mode, of what under ``root`` (itself included)
    group or others may use."""
    entries = [root, *root.rglob("*")]
    return {str(p.relative_to(root.parent)): oct(p.lstat().st_mode & 0o777)
            for p in entries if not p.is_symlink() and p.lstat().st_mode & 0o077}


def test_the_default_work_directory_and_its_records_are_private(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # (read once, when hpcjobs is imported: ~/.hpcjobs/work)
    monkeypatch.setattr(JobExecutorConfig, "DEFAULT_WORK_DIRECTORY", home / ".hpcjobs" / "work")
    out = tmp_path / "out.txt"
    old = os.umask(0o022)  # what most users have: files 0644, folders 0755
    try:
        ex = JobExecutor.get_instance("local")  # work directory ~/.hpcjobs/work/local
        try:
            done = Job(JobSpec("/bin/sh", ["-c", "echo hi"], stdout_path=out, launcher="multiple"))
            ex.submit(done)
            cancelled = Job(JobSpec("/bin/sleep", ["600"]))
            ex.submit(cancelled)
            cancelled.wait(timeout=TIMEOUT, target_states=JobState.ACTIVE)
            cancelled.cancel()
            for job in (done, cancelled):
                assert job.wait(timeout=TIMEOUT) is not None and job.status.state.final
        finally:
            ex.close()
    finally:
        os.umask(old)
    work = home / ".hpcjobs" / "work" / "local"
    made = {p.name for p in work.rglob("*")}
    # the records this test means to cover are there
    assert {"journal.lock", "nannies", "jobs"} <= made, made
    assert any(n.endswith(".log") for n in made) and any((work / "jobs").iterdir())
    assert readable_by_others(home / ".hpcjobs") == {}
    assert out.read_text() == "hi\n" and out.stat().st_mode & 0o777 == 0o644
