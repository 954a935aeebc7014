"""The suite's own care of the test machine (machine_hygiene.py): pyenv's rehash lock is
removed only when it is stale."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from machine_hygiene import clear_stale_pyenv_lock


def test_a_stale_pyenv_lock_is_removed_and_a_fresh_one_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    lock = tmp_path / "shims" / ".pyenv-shim"
    lock.parent.mkdir()
    lock.touch()
    clear_stale_pyenv_lock()
    assert lock.exists()  # a rehash may hold it right now
    old = time.time() - 100
    os.utime(lock, (old, old))
    with pytest.warns(UserWarning, match="stale rehash lock"):
        clear_stale_pyenv_lock()
    assert not lock.exists()
    clear_stale_pyenv_lock()  # no lock: nothing to do, no error
