"""Job status updates through the executor base: order, synthesis, callbacks, wait."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from hpcjobs import (InvalidJobException, InvalidJobStateError, Job, JobExecutor, JobSpec,
                     JobState, JobStatus, WaitFromCallbackError, plugins)

from recording import RecordingExecutor

S = JobState
#: the states a job that ran passes through before its final one
RAN = [S.QUEUED, S.STAGE_IN, S.ACTIVE, S.STAGE_OUT, S.CLEANUP]


@pytest.fixture
def ex() -> Iterator[RecordingExecutor]:
    e = RecordingExecutor()
    yield e
    e.close()


def test_callbacks_see_each_state_once_in_order(ex: RecordingExecutor) -> None:
    seen: list[tuple[str, S]] = []
    ex.set_job_status_callback(lambda j, s: seen.append(("ex", s.state)))
    job = Job(JobSpec("/bin/true"))
    job.set_job_status_callback(lambda j, s: seen.append(("job", s.state)))
    ex.submit(job)
    ex._set_job_status(job, JobStatus(S.COMPLETED, exit_code=0))  # ACTIVE was skipped
    ex._set_job_status(job, JobStatus(S.ACTIVE))                  # late: ignored
    ex._set_job_status(job, JobStatus(S.FAILED, exit_code=1))     # after final: ignored
    ex.close()
    assert seen == [(who, state) for state in RAN + [S.COMPLETED] for who in ("job", "ex")]
    assert job.status.state is S.COMPLETED and job.status.exit_code == 0


def test_failing_callback_is_logged_not_fatal(ex: RecordingExecutor,
                                              caplog: pytest.LogCaptureFixture) -> None:
    seen: list[S] = []

    def bad(job: Job, st: JobStatus) -> None:
        seen.append(st.state)
        raise RuntimeError("boom")

    ex.set_job_status_callback(bad)
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)
    ex._set_job_status(job, JobStatus(S.COMPLETED))
    ex.close()
    assert seen == RAN + [S.COMPLETED]
    assert "boom" in caplog.text


def test_wait_target_states_timeout_and_greater_than(ex: RecordingExecutor) -> None:
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)
    assert job.wait(timeout=0.05) is None
    threading.Timer(0.1, ex._set_job_status, (job, JobStatus(S.COMPLETED))).start()
    st = job.wait(target_states=[S.ACTIVE])  # satisfied by COMPLETED > ACTIVE
    assert st is not None and st.state in (S.ACTIVE, S.COMPLETED)
    assert job.wait().state is S.COMPLETED  # type: ignore[union-attr]


def test_wait_from_callback_raises_instead_of_deadlocking(ex: RecordingExecutor) -> None:
    outcome: list[object] = []
    tried = threading.Event()

    def cb(job: Job, st: JobStatus) -> None:
        if st.state is S.QUEUED:
            try:
                job.wait()
            except WaitFromCallbackError as e:
                outcome.append(e)
            tried.set()
        if st.final:  # already satisfied: no blocking needed, so it returns
            outcome.append(job.wait())

    job = Job(JobSpec("/bin/true"))
    job.set_job_status_callback(cb)
    ex.submit(job)
    assert tried.wait(10)
    ex._set_job_status(job, JobStatus(S.FAILED, exit_code=2))
    ex.close()
    assert isinstance(outcome[0], WaitFromCallbackError)
    assert isinstance(outcome[1], JobStatus) and outcome[1].state is S.FAILED


def test_bad_submissions_submit_nothing(ex: RecordingExecutor) -> None:
    job = Job(JobSpec("/bin/true", launcher="no-such-launcher"))
    with pytest.raises(InvalidJobException, match="launcher"):
        ex.submit(job)
    assert job.status.state is S.NEW and job.executor is None and job.native_id is None
    with pytest.raises(InvalidJobException, match="spec"):
        ex.submit(Job())
    with pytest.raises(TypeError):
        ex.submit("job")  # type: ignore[arg-type]
    ok = Job(JobSpec("/bin/true"))
    ex.submit(ok)
    with pytest.raises(InvalidJobStateError, match="already submitted"):
        ex.submit(ok)
    with pytest.raises(InvalidJobStateError):
        Job(JobSpec("/bin/true")).cancel()


def test_attach_needs_a_new_job(ex: RecordingExecutor) -> None:
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)
    with pytest.raises(InvalidJobException, match="NEW"):
        ex.attach(job, "123")
    fresh = Job()
    ex.attach(fresh, "123")
    assert fresh.native_id == "123" and fresh.executor is ex


def test_get_instance_resolves_names_and_versions(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no executor named 'nope'"):
        JobExecutor.get_instance("nope")
    # (the flavour pinned: where qstat is Torque's, "pbs" would be detected as Torque)
    ex = JobExecutor.get_instance("PBSPro", config={"work_directory": tmp_path,
                                                    "flavour": "openpbs"})
    assert ex.name == "pbs"  # an alias, in any case
    ex.close()
    # an alias of something not installed names both
    monkeypatch.setitem(plugins.ALIASES["hpcjobs.executors"], "gone", "not-installed")
    with pytest.raises(ValueError, match=r"'Gone' \(not-installed\)"):
        JobExecutor.get_instance("Gone")


def test_closed_executor_refuses_work_and_threads_end() -> None:
    ex = RecordingExecutor()
    ex.set_job_status_callback(lambda j, s: None)
    job = Job(JobSpec("/bin/true"))
    ex.submit(job)
    names = [t.name for t in threading.enumerate()]
    assert any("hpcjobs-recording" in n for n in names)
    ex.close()
    deadline = time.monotonic() + 5
    while any("hpcjobs-recording-%d" % ex._instance in t.name for t in threading.enumerate()):
        assert time.monotonic() < deadline, "dispatcher thread did not end"
        time.sleep(0.01)
    with pytest.raises(InvalidJobStateError, match="closed"):
        ex.submit(Job(JobSpec("/bin/true")))


def test_concurrent_reports_keep_callback_order() -> None:
    """Two threads reporting on one job (a submitter and a watcher, say) must not
    interleave their callback hand-offs: while the QUEUED hand-off is in flight, a
    FAILED report from another thread must not overtake it."""
    ex = RecordingExecutor()
    seen: list[S] = []
    ex.set_job_status_callback(lambda j, s: seen.append(s.state))
    job = Job(JobSpec("/bin/true"))
    with ex._submission(job):
        job.bind(ex, "n1")
    in_flight = threading.Event()
    deliver = ex._dispatcher.deliver

    def slow_deliver(j: Job, statuses: Sequence[JobStatus], cbs: Sequence[Any]) -> None:
        if statuses[0].state is S.QUEUED:
            in_flight.set()
            time.sleep(0.2)  # widen the window between the state change and the hand-off
        deliver(j, statuses, cbs)

    ex._dispatcher.deliver = slow_deliver  # type: ignore[method-assign]
    submitter = threading.Thread(target=ex._set_job_status, args=(job, JobStatus(S.QUEUED)))
    submitter.start()
    assert in_flight.wait(10)
    ex._set_job_status(job, JobStatus(S.FAILED, exit_code=1))
    submitter.join()
    ex.close()
    assert seen == RAN + [S.FAILED]


def test_same_state_report_refreshes_metadata_without_callback(ex: RecordingExecutor) -> None:
    calls: list[S] = []
    job = Job(JobSpec("/bin/true"))
    job.set_job_status_callback(lambda j, s: calls.append(s.state))
    ex.submit(job)
    entered = job.status.time
    ex._set_job_status(job, JobStatus(S.QUEUED, time=entered + 50,
                                      metadata={"reason_pending": "Priority"}))
    assert job.status.metadata == {"reason_pending": "Priority"}
    assert job.status.time == entered  # still the time the job entered QUEUED
    ex._set_job_status(job, JobStatus(S.QUEUED))  # no metadata, no message: no news
    assert job.status.metadata == {"reason_pending": "Priority"}
    ex._set_job_status(job, JobStatus(S.COMPLETED, exit_code=0))
    ex._set_job_status(job, JobStatus(S.COMPLETED, metadata={"late": True}))
    assert job.status.metadata is None  # a final status is never rewritten
    ex.close()
    assert calls == RAN + [S.COMPLETED]
