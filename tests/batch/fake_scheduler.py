"""The fake scheduler's backend: written from docs/writing-a-backend.md alone.

Its scheduler is ``Ledger``, an in-memory test double (job states by id, every status
command recorded, failures on demand), so that the tests of tests/batch can move jobs
by the scheduler's word and count what the base asks. Its ids are numbers; an array
task's ``<array>_<index>``. Submits go through a real process (``echo <id>``), as a real
backend's submit command would; cancel and list too.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from hpcjobs.errors import CommandError
from hpcjobs.final_status import Cause
from hpcjobs.executors.batch import (ArrayDir, BatchSchedulerExecutor, JobDir, NativeStatus,
                                     Scheduler, safe_job_name)
from hpcjobs.spec import JobSpec
from hpcjobs.state import JobState

__all__ = ["Ledger", "Fake", "FakeExecutor"]


class Ledger:
    """The double: job states by id, every status query recorded, failures on demand."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[str, JobState] = {}
        # every status command: when, and the ids it named ([]: a listing of live jobs)
        self.queries: list[tuple[float, list[str]]] = []
        self.failing = False
        self.accounting_asked = 0
        self.next_id = 100
        # what a cancelled job becomes (Torque's C, say, is every end: FAILED here)
        self.cancelled_state = JobState.CANCELED

    def new_id(self) -> str:
        with self.lock:
            self.next_id += 1
            self.states[str(self.next_id)] = JobState.QUEUED
            return str(self.next_id)

    def new_array(self, count: int) -> str:
        array_id = self.new_id()
        with self.lock:
            del self.states[array_id]
            for i in range(count):
                self.states[f"{array_id}_{i}"] = JobState.QUEUED
        return array_id


class Fake(Scheduler):
    """The fake scheduler (see the module docstring). ``ledger`` is set by the tests."""

    name = "fake"
    template = Path(__file__).with_name("fake.mustache")
    native_id_pattern = re.compile(r"[0-9]+(_[0-9]+)?")
    transient_errors = ("Server Busy",)
    ended_errors = ("has ended",)
    retention_time = 0.5
    array_variables = ("FAKE_ARRAY_ID", "FAKE_ARRAY_INDEX")
    per_job_directives = ("name",)
    ledger: Ledger

    # -- the job script
    def directives(self, spec: JobSpec, job_dir: JobDir) -> dict[str, Any]:
        return {"name": safe_job_name(spec, 64)}

    # -- commands
    def submit_command(self, job_dir: JobDir) -> list[str]:
        return ["echo", self.ledger.new_id()]

    def cancel_command(self, native_id: str) -> list[str]:
        with self.ledger.lock:
            state = self.ledger.states.get(native_id)
            if state is not None and state.final:
                return ["sh", "-c", "echo 'job has ended' >&2; exit 1"]
            self.ledger.states[native_id] = self.ledger.cancelled_state
        return ["true"]

    def list_ids(self) -> list[str]:
        with self.ledger.lock:
            ids = [i for i, s in self.ledger.states.items() if not s.final]
        return self.run(["printf", r"%s\n", *ids]).stdout.split()

    # -- status
    def records(self, native_ids: Sequence[str]) -> dict[str, Any]:
        with self.ledger.lock:
            self.ledger.queries.append((time.monotonic(), list(native_ids)))
            if self.ledger.failing:
                raise CommandError(["fake-stat"], 1, "", "server down")
            if not native_ids:  # a listing: the live jobs only
                return {i: s for i, s in self.ledger.states.items() if not s.final}
            # (an array's id names its tasks too)
            return {i: s for i, s in self.ledger.states.items()
                    if i in native_ids or i.split("_")[0] in native_ids}

    def native(self, native_id: str, record: JobState) -> NativeStatus:
        cause = Cause.CANCELED if record is JobState.CANCELED else None
        return NativeStatus(native_id, record.name, record, cause=cause)

    def accounting(self, native_ids: Sequence[str]) -> Optional[dict[str, NativeStatus]]:
        self.ledger.accounting_asked += 1
        return None  # this scheduler keeps no accounting

    # -- job arrays
    def array_submit_command(self, array: ArrayDir, count: int) -> list[str]:
        return ["echo", self.ledger.new_array(count)]

    def array_task_id(self, array_id: str, index: int) -> str:
        return f"{array_id}_{index}"

    def array_parts(self, native_id: str) -> Optional[tuple[str, int]]:
        array, _, index = native_id.partition("_")
        return (array, int(index)) if index else None

    def max_array_size(self) -> int:
        return 4


class FakeExecutor(BatchSchedulerExecutor):
    """``get_instance('fake')``, were it registered as an entry point."""

    scheduler_class = Fake
    scheduler: Fake
