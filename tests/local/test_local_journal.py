"""The local journal read from hand-written records: what attach concludes in each case.

The records are real files in the documented format (docs/local.md); a "dead" process
is this test's own pid with a start time that is not its own, which is exactly what a
reused pid looks like.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpcjobs import JobState
from hpcjobs.executors.local.journal import Journal
from hpcjobs.executors.local.nanny import start_ticks

TOKEN = "0badcafe"
ME = os.getpid()
ALIVE = f"{ME} {start_ticks(ME)}"
DEAD = f"{ME} 1"  # our pid, someone else's start time


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path)


def write(journal: Journal, nanny: str, submitted: str, records: str) -> None:
    (journal.nannies / TOKEN).write_text(nanny + "\n")
    (journal.nannies / f"{TOKEN}.jobs").write_text(submitted)
    journal.records_file(TOKEN).write_text(records)


def test_exit_record_wins_and_lines_damaged_or_being_written_are_skipped(journal: Journal) -> None:
    write(journal, ALIVE, "1\n2\n3\n",
          f"P {TOKEN}-1 {ALIVE}\nX {TOKEN}-1 3 100.5 0\ngarbage\nX {TOKEN}-3 zz\n"
          f"P {TOKEN}-2 {ALIVE}\nX {TOKEN}-2 0 10")
    first = journal.inspect(f"{TOKEN}-1").status
    assert first is not None and (first.state, first.exit_code, first.time) == (
        JobState.FAILED, 3, 100.5)
    second = journal.inspect(f"{TOKEN}-2")  # its exit line has no newline yet
    assert second.status is None and second.pid == ME
    third = journal.inspect(f"{TOKEN}-3")
    assert third.status is None and third.pending
    assert journal.native_ids() == [f"{TOKEN}-1", f"{TOKEN}-2", f"{TOKEN}-3"]


def test_cancelled_record(journal: Journal) -> None:
    write(journal, ALIVE, "1\n", f"X {TOKEN}-1 -15 5.0 1\n")
    status = journal.inspect(f"{TOKEN}-1").status
    assert status is not None and status.state is JobState.CANCELED
    assert (status.exit_code, status.message) == (-15, "cancelled; killed by signal 15 (SIGTERM)")


def test_what_a_dead_nanny_leaves(journal: Journal) -> None:
    write(journal, DEAD, "1\n2\n3\n", f"P {TOKEN}-1 {DEAD}\nP {TOKEN}-3 {ALIVE}\n")
    lost = journal.inspect(f"{TOKEN}-1").status
    assert lost is not None and lost.state is JobState.FAILED and lost.exit_code is None
    assert lost.message and "exit status is unknown" in lost.message
    never = journal.inspect(f"{TOKEN}-2").status
    assert never is not None and never.message and "not recorded as started" in never.message
    orphan = journal.inspect(f"{TOKEN}-3")  # still running without its nanny
    assert orphan.status is None and orphan.pid == ME
    journal.purge(older_than=-1)  # a job may still run: the nanny's records stay
    assert journal.native_ids() == [f"{TOKEN}-1", f"{TOKEN}-2", f"{TOKEN}-3"]


@pytest.mark.parametrize("native_id", [f"{TOKEN}-4", "0badcafe", "../x-1", f"{TOKEN}-1/.."])
def test_unknown_ids(journal: Journal, native_id: str) -> None:
    write(journal, DEAD, "1\n", "")
    status = journal.inspect(native_id).status
    assert status is not None and status.message == f"no such local job: {native_id!r}"
