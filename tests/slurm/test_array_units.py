"""The parts of the job-array machinery that need no cluster: how a burst of submits is
cut into rounds (executors/batch/arrays.py) and how Slurm's pending-array records map
to their tasks. The scheduler call of the collector tests is a stand-in that records the
rounds it was given (the real sbatch is in test_slurm_arrays.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hpcjobs import Job, JobSpec
from hpcjobs.errors import SubmitException
from hpcjobs.executors.batch.arrays import BurstCollector, Staged, chunks, shape
from hpcjobs.executors.batch.jobdir import JobDir
from hpcjobs.executors.slurm.executor import SlurmJobExecutor, _squeue_records, _task_ids


def test_pending_array_records_stand_for_each_of_their_tasks() -> None:
    assert _task_ids("12_[0-3,7%2]") == ["12_0", "12_1", "12_2", "12_3", "12_7"]
    assert _task_ids("12_[5]") == ["12_5"]
    assert _task_ids("12_5") == ["12_5"]
    assert _task_ids("12") == ["12"]


def test_a_listing_finds_each_task_of_a_pending_array_and_no_other() -> None:
    ex = SlurmJobExecutor()
    listing = ("12_3|RUNNING|None|0|2026-11-22T05:03:46|n1|\n"
               "12_[4-9,12%2]|PENDING|JobArrayTaskLimit|0|N/A||\n"
               "13|PENDING|Priority|0|N/A||\n"
               "14|RUNNING|None|0|2026-11-22T0")  # (cut short: left out)
    records = _squeue_records(listing)
    for task in ("12_4", "12_9", "12_12"):
        ns = ex.scheduler.native(task, ex.scheduler.record_of(task, records))
        assert (ns.native_id, ns.native_state, ns.metadata["reason_pending"]) == (
            task, "PENDING", "JobArrayTaskLimit")
    assert ex.scheduler.native("12_3", ex.scheduler.record_of("12_3", records)).native_state == "RUNNING"
    for unknown in ("12_10", "12_13", "12_x", "14", "15", "13_1"):
        assert ex.scheduler.record_of(unknown, records) is None, unknown
    ex.close()


def test_the_shape_ignores_per_job_directives_only() -> None:
    a = {"job_name": "a", "time": "0:10:00", "custom": [{"option": "hold", "value": None}]}
    assert shape(a, ("job_name",)) == shape({**a, "job_name": "b"}, ("job_name",))
    assert shape(a, ("job_name",)) != shape({**a, "time": "0:11:00"}, ("job_name",))
    assert shape(a, ("job_name",)) != shape({**a, "custom": []}, ("job_name",))


def staged(tmp_path: Path) -> Staged:
    return Staged(Job(JobSpec("/bin/true")), JobDir(tmp_path), "#!/bin/sh\n", {}, ("job_name",))


def test_chunks_respect_the_limit(tmp_path: Path) -> None:
    items = [staged(tmp_path) for _ in range(7)]
    assert [len(c) for c in chunks(items, 3)] == [3, 3, 1]


class RecordingSend:
    """Stands in for the scheduler call: records each round, takes ``delay`` seconds."""

    def __init__(self, delay: float, fail: bool = False) -> None:
        self.rounds: list[int] = []
        self.delay = delay
        self.fail = fail

    def __call__(self, batch: list[Staged]) -> None:
        self.rounds.append(len(batch))
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("scheduler stand-in broke")
        for i, item in enumerate(batch):
            item.native_id = f"{len(self.rounds)}_{i}"
            item.done = True


def run_threads(n: int, collector: BurstCollector, tmp_path: Path) -> list[Staged]:
    items = [staged(tmp_path) for _ in range(n)]
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def caller(item: Staged) -> None:
        start.wait()
        try:
            collector.submit([item])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(item,)) for item in items]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)  # deadline guard
        assert not th.is_alive()
    return items


def test_a_lone_submit_is_its_own_round_without_waiting_for_the_window(tmp_path: Path) -> None:
    send = RecordingSend(0.0)
    collector = BurstCollector(3600.0, send)  # a window no lone submit could survive
    item = staged(tmp_path)
    done = threading.Thread(target=collector.submit, args=([item],))
    done.start()
    done.join(30)  # deadline guard
    assert not done.is_alive() and item.done and item.native_id == "1_0"
    assert send.rounds == [1]


def test_concurrent_callers_are_grouped_and_each_gets_its_own_result(tmp_path: Path) -> None:
    send = RecordingSend(0.05)
    items = run_threads(20, BurstCollector(0.01, send), tmp_path)
    assert sum(send.rounds) == 20 and len(send.rounds) < 20, send.rounds
    assert all(item.done and item.error is None for item in items)
    assert len({item.native_id for item in items}) == 20


def test_submit_many_is_one_round(tmp_path: Path) -> None:
    send = RecordingSend(0.0)
    items = [staged(tmp_path) for _ in range(50)]
    BurstCollector(0.005, send).submit(items)
    assert send.rounds == [50] and all(item.done for item in items)


def test_a_broken_round_answers_every_caller(tmp_path: Path) -> None:
    send = RecordingSend(0.02, fail=True)
    items = run_threads(8, BurstCollector(0.01, send), tmp_path)
    assert all(item.done and isinstance(item.error, SubmitException) for item in items)
    assert all("scheduler stand-in broke" in str(item.error) for item in items)


def test_an_interrupted_caller_takes_back_its_queued_jobs(tmp_path: Path) -> None:
    """A caller interrupted while another's round is in progress withdraws its job
    (the executor then releases it: never submitted)."""
    gate = threading.Event()

    def slow_send(batch: list[Staged]) -> None:
        gate.wait(30)
        for item in batch:
            item.native_id, item.done = "1_0", True

    collector = BurstCollector(0.001, slow_send)
    first = staged(tmp_path)
    leader = threading.Thread(target=collector.submit, args=([first],))
    leader.start()
    while not first.taken:
        time.sleep(0.001)
    second = staged(tmp_path)
    interrupt = threading.Timer(0.05, lambda: gate.set())

    class Interrupted(Exception):
        pass

    # the second caller's wait is interrupted (as by a KeyboardInterrupt) while queued
    original = collector._cond.wait

    def interrupted_wait(timeout: float | None = None) -> bool:
        raise Interrupted()

    collector._cond.wait = interrupted_wait  # type: ignore[method-assign]
    with pytest.raises(Interrupted):
        collector.submit([second])
    collector._cond.wait = original  # type: ignore[method-assign]
    assert second.withdrawn and not second.taken and second.native_id is None
    interrupt.start()
    leader.join(30)
    assert first.native_id == "1_0" and not first.withdrawn
