"""events.JobEvents fed with the main eventlogs recorded from a real flux-core 0.88.

No double involved: these are the recorded events themselves (fixtures/flux-0.88).
"""

from __future__ import annotations

from typing import Any

import pytest
from flux_transcripts import Event, cli_eventlogs, main_eventlogs

from hpcjobs.executors.flux.events import JobEvents, task_signal
from hpcjobs.final_status import decode_wait_status
from hpcjobs.state import JobState, JobStatus


def replay(events: list[Event]) -> list[JobStatus]:
    """Statuses reported for the events (timestamps made up, increasing)."""
    folded = JobEvents("ƒtest")
    statuses = []
    for i, (name, context) in enumerate(events):
        update = folded.apply(name, 1000.0 + i, context)
        if update.status is not None:
            statuses.append(update.status)
    return statuses


def final(events: list[Event]) -> JobStatus:
    statuses = replay(events)
    assert statuses[-1].final and all(not s.final for s in statuses[:-1])
    return statuses[-1]


@pytest.mark.parametrize("name, index, state, exit_code, message", [
    ("true", 0, JobState.COMPLETED, 0, None),
    ("exit3", 0, JobState.FAILED, 3, "exited with code 3"),
    ("selfkill", 0, JobState.FAILED, 137, "exited with code 137; a task killed by signal "
                                          "9 (SIGKILL)?"),
    ("kill-signal", 0, JobState.FAILED, 137, None),
    ("cancel-running", 0, JobState.CANCELED, 143, "cancelled: probe cancel reason; exited with code 143"),
    ("cancel-pending", 0, JobState.CANCELED, None, "cancelled: cancel while pending"),
    ("timeout", 0, JobState.FAILED, 142, "walltime exceeded: the job's time limit expired "
                                         "(Flux: resource allocation expired); exited "
                                         "with code 142"),
    ("nonexistent", 0, JobState.FAILED, 127, "could not be started: task 0 (host vm): "
                                             "start failed: /nonexistent/cmd: No such file "
                                             "or directory; exited with code 127"),
    ("badcwd", 0, JobState.COMPLETED, 0, None),
    ("infeasible", 0, JobState.FAILED, None, "Flux cannot allocate the resources: "
                                             "unsatisfiable request: need 64 slot(s) of 1 "
                                             "core(s), only 2 such slot(s) available "
                                             "(total cores: 2)"),
    ("infeasible", 1, JobState.COMPLETED, 0, None),
    ("misc", 0, JobState.COMPLETED, 0, None),  # a non-fatal exception changes nothing
    ("misc", 1, JobState.CANCELED, None, "cancelled: immediate"),
    ("misc", 2, JobState.CANCELED, -15, "cancelled: right after start; killed by signal 15 (SIGTERM)"),  # raw status 15
    ("depend-urgency", 0, JobState.COMPLETED, 0, None),
    ("depend-urgency", 1, JobState.COMPLETED, 0, None),
    ("depend-urgency", 2, JobState.FAILED, None, "dependency failed: dependency "
                                                 "after-success=164634820608 can never be "
                                                 "satisfied"),
])
def test_recorded_eventlogs(name: str, index: int, state: JobState,
                            exit_code: int | None, message: str | None) -> None:
    status = final(main_eventlogs(name)[index])
    assert (status.state, status.exit_code) == (state, exit_code)
    if message is not None:
        assert status.message == message


def test_cli_eventlogs() -> None:
    """cli.txt: jobs submitted with the flux command, as attach would replay them."""
    finals = [final(log) for log in cli_eventlogs().values()]
    assert [(s.state, s.exit_code) for s in finals] == [
        (JobState.COMPLETED, 0), (JobState.CANCELED, 143), (JobState.FAILED, 3),
        (JobState.FAILED, 142), (JobState.FAILED, 127)]
    assert finals[1].message == "cancelled; exited with code 143"  # flux cancel gives no reason


def test_states_in_order_and_ran_flag() -> None:
    folded = JobEvents("ƒx")
    updates = [folded.apply(n, 1.0 + i, c) for i, (n, c) in
               enumerate(main_eventlogs("true")[0])]
    assert [u.status.state for u in updates if u.status] == [
        JobState.QUEUED, JobState.ACTIVE, JobState.COMPLETED]
    assert [u.ran for u in updates if u.status] == [False, True, True]
    never_ran = JobEvents("ƒy")
    last = [never_ran.apply(n, 1.0 + i, c) for i, (n, c) in
            enumerate(main_eventlogs("cancel-pending")[0])][-1]
    assert last.status is not None and not last.ran


def test_repeats_and_unknown_events_change_nothing() -> None:
    folded = JobEvents("ƒx")
    assert folded.apply("submit", 1.0, {}).status is not None
    assert folded.apply("submit", 1.0, {}) == (None, False, None)  # a replayed repeat
    assert folded.apply("memo", 2.0, {"x": 1}) == (None, False, None)
    assert folded.apply("validate", 3.0, {}).metadata == {"native_state": "DEPEND"}


def test_annotations_are_snapshots_merged_by_the_job_manager() -> None:
    """journal.txt: each ``annotations`` event carries the whole dictionary (RFC 27
    merging already applied by the job manager), null once cleared."""
    folded = JobEvents("ƒx")
    folded.apply("submit", 1.0, {})
    first = folded.apply("annotations", 2.0, {"annotations": {"sched": {
        "t_estimate": 5.0, "reason_pending": "insufficient resources", "jobs_ahead": 1}}})
    assert first.metadata is not None and (first.metadata["t_estimate"],
                                           first.metadata["jobs_ahead"]) == (5.0, 1)
    second = folded.apply("annotations", 3.0, {"annotations": {"sched": {
        "reason_pending": "insufficient resources", "jobs_ahead": 0}}})
    assert second.metadata is not None and "t_estimate" not in second.metadata
    cleared = folded.apply("annotations", 4.0, {"annotations": None})
    assert cleared.metadata == {"native_state": "NEW"}
    alloc = folded.apply("alloc", 5.0, {"annotations": {"sched": {
        "resource_summary": "rank0/core[0-1]"}}})
    assert alloc.status is not None and alloc.status.metadata is not None
    assert alloc.status.metadata["resource_summary"] == "rank0/core[0-1]"


@pytest.mark.parametrize("status, code", [(0, 0), (768, 3), (35072, 137), (15, -15),
                                          (9, -9), (32512, 127)])
def test_decode_wait_status(status: int, code: int) -> None:
    assert decode_wait_status(status) == code


def test_task_signal_from_exec_eventlog() -> None:
    """cancel-running.txt's exec eventlog: SIGTERM reported as exit code 143."""
    log = ('{"timestamp": 1.0, "name": "shell.task-exit", "context": {"localid": 0, '
           '"rank": 0, "state": "Exited", "pid": 1, "wait_status": 15, "signaled": 15, '
           '"exitcode": 143}}\n')
    assert task_signal(log, 143) == 15
    assert task_signal(log.replace('"signaled": 15', '"signaled": 0'), 143) is None
    folded = JobEvents("ƒx")
    statuses = [folded.apply(name, 1.0 + i, ctx).status
                for i, (name, ctx) in enumerate(main_eventlogs("selfkill")[0])]
    last: Any = [s for s in statuses if s is not None][-1]
    restated = folded.killed_by(9, last).status
    assert restated is not None
    assert (restated.state, restated.exit_code, restated.message) == (
        JobState.FAILED, -9, "killed by signal 9 (SIGKILL)")


def test_a_lost_node_is_never_a_success() -> None:
    """A two-node job whose node1 broker died (flux-core 0.88, observed): Flux raises a
    non-fatal ``node-failure`` and the job goes on, ending with node0's status 0. The
    tasks on node1 never reported: FAILED, no exit code, saying which node."""
    status = final([
        ("submit", {"urgency": 16, "userid": 1000, "flags": 0, "version": 1}),
        ("alloc", {}), ("start", {}),
        ("exception", {"type": "node-failure", "severity": 2, "userid": 1000,
                       "note": "node failure on node1 (shell rank 1)"}),
        ("finish", {"status": 0}), ("release", {"ranks": "all", "final": True}),
        ("free", {}), ("clean", {})])
    assert (status.state, status.exit_code, status.message) == (
        JobState.FAILED, None, "a node of the job was lost (Flux: node failure on node1 "
        "(shell rank 1)): the tasks there never reported their end; the other tasks exited "
        "with code 0")
