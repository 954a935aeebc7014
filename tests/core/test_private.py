"""hpcjobs.private: files only their owner can read, written whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcjobs.private import create, fill


def test_create_makes_private_files_and_replaces_their_whole_text(tmp_path: Path) -> None:
    path = tmp_path / "record"
    create(path, b"a longer first text\n")
    create(path, b"short\n")
    assert path.read_bytes() == b"short\n"
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        create(path, b"again\n", exclusive=True)


@pytest.mark.parametrize("before", [b"", b"a text longer than the new one\n"])
def test_fill_leaves_exactly_the_new_text_and_keeps_the_mode(tmp_path: Path, before: bytes) -> None:
    # (the submit path fills a spare directory's empty script; one found not empty,
    # which nothing of ours makes, must still end up holding the new text alone)
    path = tmp_path / "job.sh"
    create(path, before, mode=0o700)
    fill(path, b"#!/bin/sh\n" + b"x" * 70000)  # past a single write's usual size
    assert path.read_bytes() == b"#!/bin/sh\n" + b"x" * 70000
    assert path.stat().st_mode & 0o777 == 0o700


def test_fill_makes_the_file_again_if_it_has_gone(tmp_path: Path) -> None:
    # (a spare's script removed by someone else: the submit still writes a whole script)
    fill(tmp_path / "job.sh", b"#!/bin/sh\n", mode=0o700)
    assert (tmp_path / "job.sh").read_bytes() == b"#!/bin/sh\n"
    assert (tmp_path / "job.sh").stat().st_mode & 0o777 == 0o700
