"""The RFC 27 schedulers as pure logic: known-answer schedules worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from hpcjobs.executors.batsim.schedulers import load
from hpcjobs.executors.batsim.schedulers.base import (ANNOTATE, CANCEL, DENY, REASON_PRIORITY,
                                                      REASON_RESOURCES, SUCCESS, Scheduler,
                                                      idset, merge_annotations, parse_idset,
                                                      ranks_of)
from hpcjobs.executors.batsim.schedulers.easy import EasyBackfillScheduler
from hpcjobs.executors.batsim.schedulers.fcfs import FCFSScheduler


def jobspec(nodes: int, duration: float) -> dict[str, Any]:
    return {"version": 1, "resources": [{"type": "node", "count": nodes}],
            "attributes": {"system": {"duration": duration}}}


def request(job_id: int, nodes: int, duration: float, now: float = 0.0) -> dict[str, Any]:
    return {"id": job_id, "priority": 16, "userid": 1, "t_submit": now,
            "jobspec": jobspec(nodes, duration)}


def alloc(s: Scheduler, job_id: int, nodes: int, duration: float, now: float = 0.0) -> list[dict[str, Any]]:
    """One alloc on its own: the request, then the moment ends (idle)."""
    return s.alloc(request(job_id, nodes, duration, now), now) + s.idle(now)


def free(s: Scheduler, job_id: int, now: float) -> list[dict[str, Any]]:
    """One free on its own: the request, then the moment ends (idle)."""
    return s.free({"id": job_id}, now) + s.idle(now)


def started(responses: list[dict[str, Any]]) -> dict[int, list[int]]:
    return {r["id"]: ranks_of(r["R"]) for r in responses if r.get("type") == SUCCESS}


def platform(s: Scheduler, hosts: int = 4) -> Scheduler:
    s.inventory([{"rank": i, "name": f"node{i}", "cores": 1} for i in range(hosts)])
    assert s.ready() == {"mode": "unlimited"}
    return s


# The workload of both known-answer tests, on 4 nodes, all submitted at t=0:
#   j1: 2 nodes, 100 s    j2: 4 nodes, 10 s (wide)    j3: 2 nodes, 50 s    j4: 1 node, 200 s
# FCFS: j1@0; j2 waits for j1 (t=100); j3 and j4 wait behind j2 (t=110).
# EASY: j2's reservation is t=100 with no extra node; j3 fits now and ends at 50 <= 100,
#       so it is backfilled at 0; j4 (ends at 200 > 100, no extra node) is not.
def submit_workload(s: Scheduler) -> list[dict[str, Any]]:
    out = []
    for job_id, nodes, duration in ((1, 2, 100), (2, 4, 10), (3, 2, 50), (4, 1, 200)):
        out += s.alloc(request(job_id, nodes, duration), 0.0)
    assert started(out) == {}  # decided once the moment's requests are all in
    return out + s.idle(0.0)


def test_fcfs_known_answer() -> None:
    s = platform(FCFSScheduler())
    assert started(submit_workload(s)) == {1: [0, 1]}
    assert started(free(s, 1, 100.0)) == {2: [0, 1, 2, 3]}
    assert started(free(s, 2, 110.0)) == {3: [0, 1], 4: [2]}


def test_easy_backfills_without_delaying_the_head() -> None:
    s = platform(EasyBackfillScheduler())
    out = submit_workload(s)
    assert started(out) == {1: [0, 1], 3: [2, 3]}
    head = [r for r in out if r["id"] == 2 and r["type"] == ANNOTATE][-1]
    assert head["annotations"]["sched"] == {"reason_pending": REASON_RESOURCES, "t_estimate": 100.0}
    assert started(free(s, 3, 50.0)) == {}  # j4 would delay j2: not backfilled
    assert started(free(s, 1, 100.0)) == {2: [0, 1, 2, 3]}
    assert started(free(s, 2, 110.0)) == {4: [0]}


def test_easy_backfills_on_extra_nodes_past_the_shadow_time() -> None:
    s = platform(EasyBackfillScheduler())
    alloc(s, 1, 3, 100)
    alloc(s, 2, 2, 10)  # head: at t=100, 4 free, needs 2 -> 2 extra nodes
    assert started(alloc(s, 3, 1, 500)) == {3: [3]}  # runs past t=100 on an extra node


def test_a_burst_of_requests_is_scheduled_once_when_idle() -> None:
    passes = []

    class Counting(FCFSScheduler):
        def schedule(self, now: float) -> None:
            passes.append(now)
            super().schedule(now)

    s = platform(Counting())
    out = []
    for job_id in range(1, 101):
        out += s.alloc(request(job_id, 1, 10), 0.0)
    assert out == [] and passes == []  # nothing decided before the moment ends
    out = s.idle(0.0)
    assert passes == [0.0] and sorted(started(out)) == [1, 2, 3, 4]
    assert len([r for r in out if r["type"] == ANNOTATE]) == 96  # every queued job, once
    # frees are answered at once; the jobs they let start, at the next idle
    assert s.free({"id": 1}, 10.0) + s.free({"id": 2}, 10.0) == [{"id": 1}, {"id": 2}]
    assert sorted(started(s.idle(10.0))) == [5, 6] and passes == [0.0, 10.0]
    assert s.idle(10.0) == [] and passes == [0.0, 10.0]  # nothing changed: no pass


def test_deny_wider_than_platform() -> None:
    s = platform(FCFSScheduler())
    [r] = alloc(s, 1, 5, 10)
    assert r["type"] == DENY and "5 node(s)" in r["note"] and "has 4" in r["note"]


def test_annotations_removed_on_success_and_queue_reasons() -> None:
    s = platform(FCFSScheduler(), hosts=1)
    alloc(s, 1, 1, 30)
    out = alloc(s, 2, 1, 10) + alloc(s, 3, 1, 10)
    notes = {r["id"]: r["annotations"]["sched"] for r in out if r["type"] == ANNOTATE}
    assert notes == {2: {"reason_pending": REASON_RESOURCES, "t_estimate": 30.0},
                     3: {"reason_pending": REASON_PRIORITY}}
    out = free(s, 1, 30.0)
    success = [r for r in out if r.get("type") == SUCCESS]
    assert success[0]["id"] == 2
    # RFC 27: null deletes the volatile annotations once the job has its resources
    assert success[0]["annotations"] == {"sched": {"reason_pending": None, "t_estimate": None}}
    # job 3 is now the head: its reason and estimate change
    assert {r["id"]: r["annotations"]["sched"] for r in out if r.get("type") == ANNOTATE} == {
        3: {"reason_pending": REASON_RESOURCES, "t_estimate": 40.0}}
    assert {"id": 1} in out


def test_estimates_skip_jobs_freed_before_their_walltime() -> None:
    """A freed job's expected end is dropped lazily (in bulk, once they are half of
    them): no estimate may count it, before or after the clean-up."""
    s = platform(FCFSScheduler(), hosts=4)
    for job_id, walltime in ((1, 10), (2, 20), (3, 30), (4, 40)):
        alloc(s, job_id, 1, walltime)
    assert free(s, 1, 5.0) == [{"id": 1}]  # early: its end (10) no longer frees a node
    [r] = alloc(s, 5, 3, 10, now=6.0)
    assert r["annotations"]["sched"] == {"reason_pending": REASON_RESOURCES, "t_estimate": 30.0}
    assert free(s, 2, 7.0) == [{"id": 2}]  # the estimate is unchanged: nothing sent
    assert started(free(s, 3, 8.0)) == {5: [0, 1, 2]}
    [r] = alloc(s, 6, 2, 10, now=9.0)
    assert r["annotations"]["sched"] == {"reason_pending": REASON_RESOURCES, "t_estimate": 18.0}


def test_cancel_answers_the_pending_alloc() -> None:
    s = platform(FCFSScheduler(), hosts=1)
    alloc(s, 1, 1, 30)
    alloc(s, 2, 1, 10)
    assert s.cancel({"id": 2}, 1.0) == [{"id": 2, "type": CANCEL}]
    assert s.cancel({"id": 99}, 1.0) == []  # no pending alloc: ignored
    assert started(free(s, 1, 30.0)) == {}


def test_prioritize_reorders_the_queue() -> None:
    s = platform(FCFSScheduler(), hosts=1)
    alloc(s, 1, 1, 30)
    alloc(s, 2, 1, 10)
    alloc(s, 3, 1, 10)
    s.prioritize({"jobs": [[3, 100]]}, 1.0)
    assert started(free(s, 1, 30.0)) == {3: [0]}


def test_unlimited_walltime_never_estimated() -> None:
    s = platform(FCFSScheduler(), hosts=1)
    alloc(s, 1, 1, 0)  # duration 0: unlimited
    [r] = alloc(s, 2, 1, 10)
    assert r["annotations"]["sched"] == {"reason_pending": REASON_RESOURCES}


def test_merge_annotations_rfc27_rules() -> None:
    current = {"sched": {"reason_pending": "x", "t_estimate": 5.0}, "user": {"a": 1}}
    update = {"sched": {"t_estimate": None, "reason_pending": "y"}, "user": None, "new": [1]}
    assert merge_annotations(current, update) == {"sched": {"reason_pending": "y"}, "new": [1]}
    assert current["sched"]["t_estimate"] == 5.0  # not modified


def test_idsets() -> None:
    assert idset([5, 0, 1, 2]) == "0-2,5"
    assert idset([5, 0, 1, 2], " ") == "0-2 5"
    assert parse_idset("0-2,5") == parse_idset("0-2 5") == [0, 1, 2, 5]


def test_entry_points_and_bad_depth() -> None:
    assert isinstance(load("FCFS"), FCFSScheduler)
    assert isinstance(load("easy"), EasyBackfillScheduler)
    with pytest.raises(ValueError, match="depth"):
        EasyBackfillScheduler(depth=0)


def test_hello_marks_resources_of_running_jobs() -> None:
    s = FCFSScheduler()
    s.inventory([{"rank": i, "name": f"node{i}", "cores": 1} for i in range(2)])
    from hpcjobs.executors.batsim.schedulers.base import make_R
    s.hello({"id": 7, "priority": 16, "userid": 1, "t_submit": 0.0, "R": make_R([0], 0.0, 50.0)})
    assert s.ready() == {"mode": "unlimited"}
    assert started(alloc(s, 1, 1, 10)) == {1: [1]}  # rank 0 is taken by job 7
    [r] = alloc(s, 2, 2, 10)
    assert r["annotations"]["sched"]["t_estimate"] == 50.0  # needs rank 0: job 7's expiration


def test_a_third_party_scheduler_needs_no_hello_or_prioritize() -> None:
    from hpcjobs.executors.batsim.schedulers.base import Scheduler, make_R

    class Minimal(Scheduler):  # what the executor calls, and nothing more
        def inventory(self, resources: list[dict[str, Any]]) -> None: ...
        def ready(self) -> dict[str, Any]: return {"mode": "unlimited"}
        def alloc(self, request: dict[str, Any], now: float) -> list[dict[str, Any]]: return []
        def free(self, request: dict[str, Any], now: float) -> list[dict[str, Any]]: return []
        def cancel(self, request: dict[str, Any], now: float) -> list[dict[str, Any]]: return []

    s = Minimal()
    assert s.prioritize({"jobs": [[1, 5]]}, 0.0) == [] and s.idle(0.0) == []
    with pytest.raises(NotImplementedError, match="Minimal cannot take over job 7"):
        s.hello({"id": 7, "R": make_R([0], 0.0, 0.0)})


def test_the_queue_a_policy_reads_after_starts_cancels_and_late_arrivals() -> None:
    # 1 host: each free starts the head, so the queue's head offset moves and is compacted
    s = platform(FCFSScheduler(), hosts=1)
    for job_id in range(1, 11):
        alloc(s, job_id, 1, 10)
    for job_id in range(1, 4):
        free(s, job_id, 10.0 * job_id)  # jobs 2, 3, 4 start in turn
    s.cancel({"id": 6}, 30.0)
    s.alloc({**request(11, 1, 10), "t_submit": -1.0}, 30.0)  # submitted earliest: before job 5
    queue = s.queue
    ids = [j.id for j in queue]
    assert ids == [11, 5, 7, 8, 9, 10] and len(queue) == 6
    assert queue[0].id == 11 and queue[-1].id == 10 and queue[-6].id == 11
    assert [j.id for j in queue[1:3]] == [5, 7] and [j.id for j in queue[::-2]] == [10, 8, 5]
    for index in (6, -7):
        with pytest.raises(IndexError):
            queue[index]
