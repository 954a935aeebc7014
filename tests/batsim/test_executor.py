"""The Batsim executor against the embedded simulator as a separate process.

Times asserted here are simulated seconds (the default platform has zero latency, so
a delay of N s lasts exactly N s); nothing here measures wall-clock time.
"""

from __future__ import annotations

import csv
import threading
from datetime import timedelta
from pathlib import Path
from typing import Callable, Optional

import pytest

from hpcjobs import (InvalidJobException, Job, SubmitException, JobAttributes, JobSpec, JobState, JobStatus,
                     ResourceSpecV1)
from hpcjobs.exec_limits import MAX_ARG_STRLEN
from hpcjobs.executors.batsim import BatsimJobExecutor

MakeExecutor = Callable[..., BatsimJobExecutor]

WAIT = 60.0  # generous bound for any wait (never a timing assertion)


def sleep_job(seconds: float, nodes: int = 1, walltime: Optional[float] = None,
              name: Optional[str] = None) -> Job:
    attrs = JobAttributes(duration=timedelta(seconds=walltime or max(seconds, 1) * 2))
    return Job(JobSpec("sleep", [str(seconds)], name=name, attributes=attrs,
                       resources=ResourceSpecV1(node_count=nodes)))


class Starts:
    """Records each job's ACTIVE time (simulated) through a callback."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.states: dict[str, list[JobState]] = {}
        self._lock = threading.Lock()

    def __call__(self, job: Job, status: JobStatus) -> None:
        with self._lock:
            self.states.setdefault(job.id, []).append(status.state)
            if status.state is JobState.ACTIVE:
                self.times[job.id] = status.time


def finish(job: Job) -> JobStatus:
    status = job.wait(timeout=WAIT)
    assert status is not None, f"job {job.native_id} did not finish: {job.status}"
    return status


def jobs_csv(ex: BatsimJobExecutor) -> dict[str, dict[str, str]]:
    assert ex.export_prefix is not None
    with open(f"{ex.export_prefix}_jobs.csv", newline="") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def test_simple_job_completes_at_its_simulated_time(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    starts = Starts()
    ex.set_job_status_callback(starts)
    job = sleep_job(10)
    ex.submit(job)
    assert job.native_id is not None and job.native_id.startswith("hpcjobs-")
    assert job.native_id.endswith("!1") and job.status.state is JobState.QUEUED
    status = finish(job)
    assert status.state is JobState.COMPLETED and status.exit_code == 0
    assert status.time == 10.0 and starts.times[job.id] == 0.0
    assert status.metadata is not None and status.metadata["native_state"] == "COMPLETED_SUCCESSFULLY"
    assert len(status.metadata["nodes"]) == 1
    assert ex.list() == [job.native_id]
    ex.close()
    assert starts.states[job.id] == [JobState.QUEUED, JobState.STAGE_IN, JobState.ACTIVE,
                                     JobState.STAGE_OUT, JobState.CLEANUP, JobState.COMPLETED]
    row = jobs_csv(ex)["1"]  # Batsim's own output is complete after close()
    assert row["final_state"] == "COMPLETED_SUCCESSFULLY" and float(row["finish_time"]) == 10.0


def test_true_and_false(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    ok, bad = Job(JobSpec("/bin/true")), Job(JobSpec("false"))
    ex.submit(ok)
    ex.submit(bad)
    assert finish(ok).state is JobState.COMPLETED
    status = finish(bad)
    assert status.state is JobState.FAILED and status.exit_code == 1
    assert status.message is not None and "code 1" in status.message


def test_explicit_profile_with_return_code(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    job = Job(JobSpec("my-solver", attributes=JobAttributes(
        custom_attributes={"batsim.profile": {"type": "delay", "delay": 3, "ret": 2}})))
    ex.submit(job)
    status = finish(job)
    assert (status.state, status.exit_code, status.time) == (JobState.FAILED, 2, 3.0)


def test_a_simulated_job_is_not_held_to_the_limits_of_exec(make_executor: MakeExecutor) -> None:
    # nothing is started: an argument longer than execve(2) takes is only a name
    ex = make_executor()
    longer = "a" * MAX_ARG_STRLEN
    job = Job(JobSpec("my-solver", [longer], environment={"LONG": longer},
                      attributes=JobAttributes(custom_attributes={
                          "batsim.profile": {"type": "delay", "delay": 3}})))
    ex.submit(job)
    assert finish(job).state is JobState.COMPLETED


def test_a_profile_is_run_as_batsim_reads_it(make_executor: MakeExecutor) -> None:
    # real Batsim reads a registered profile with its floats rounded to six decimals:
    # this delay is 1.0, and reaches the walltime (hpcjobs.sim once ran 0.9999996 s and
    # reported the job COMPLETED)
    ex = make_executor()
    job = Job(JobSpec("x", attributes=JobAttributes(duration=timedelta(seconds=1), custom_attributes={
        "batsim.profile": {"type": "delay", "delay": 0.9999996}})))
    ex.submit(job)
    status = finish(job)
    assert (status.state, status.time) == (JobState.FAILED, 1.0)
    assert status.message is not None and "walltime exceeded" in status.message


def test_parallel_profile_with_lists(make_executor: MakeExecutor) -> None:
    # a profile with list values (a parallel task's cpu vector and com matrix) once
    # ended the decision loop with "unhashable type: 'list'", failing every job
    ex = make_executor(hosts=2)
    parallel = {"type": "parallel", "cpu": [1e9, 2e9], "com": [0, 0, 0, 0]}
    jobs = [Job(JobSpec("solver", attributes=JobAttributes(custom_attributes={"batsim.profile": dict(parallel)}),
                        resources=ResourceSpecV1(node_count=2))) for _ in range(2)]
    for job in jobs:
        ex.submit(job)
    assert [(finish(j).state, j.status.time) for j in jobs] == [(JobState.COMPLETED, 2.0),
                                                                 (JobState.COMPLETED, 4.0)]


@pytest.mark.parametrize("spec, field", [
    (JobSpec("hostname"), "batsim.profile"),
    (JobSpec("sleep", ["ten"]), "JobSpec.arguments"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {"type": "delay", "delay": 0}})),
     "delay"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": "delay"})), "batsim.profile"),
    # profiles the simulator would abort the whole simulation on (see test_inputs.py)
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {"type": "no-such-type"}})),
     "unsupported type"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "delay", "delay": 3, "ret": -5}})), "'ret' must be >= 0"),
    # a delay Batsim reads as 0 (floats of a registered profile to six decimals)
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "delay", "delay": 4e-7}})), r"non-strictly-positive 'delay' field \(0.0\)"),
    # one executor per cpu entry, and Batsim wants one per node of the job
    (JobSpec("x", resources=ResourceSpecV1(node_count=3), attributes=JobAttributes(custom_attributes={
        "batsim.profile": {"type": "parallel", "cpu": [1e9, 1e9], "com": [0, 0, 0, 0]}})),
     r"3 node\(s\) \(ResourceSpecV1\): 'res' \(3\) does not match the number of executors of its "
     r"'parallel' profile 'batsim.profile' \(2\)"),
])
def test_bad_input_refused_before_anything_is_submitted(make_executor: MakeExecutor, spec: JobSpec,
                                                       field: str) -> None:
    ex = make_executor()
    job = Job(spec)
    with pytest.raises(InvalidJobException, match=field):
        ex.submit(job)
    assert job.status.state is JobState.NEW and ex.list() == [] and ex.run_directory is None


def test_walltime_reached_fails_with_the_reason(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    job = sleep_job(100, walltime=10)
    ex.submit(job)
    status = finish(job)
    assert status.state is JobState.FAILED and status.time == 10.0
    assert status.message is not None and "walltime exceeded" in status.message


def test_deny_for_a_job_wider_than_the_platform(make_executor: MakeExecutor) -> None:
    ex = make_executor(hosts=4)
    job = sleep_job(1, nodes=5)
    ex.submit(job)
    status = finish(job)
    assert status.state is JobState.FAILED
    assert status.message is not None and "denied" in status.message and "5 node(s)" in status.message


def test_a_burst_of_denied_jobs_is_denied_one_by_one(make_executor: MakeExecutor) -> None:
    # each DENY lets the next alloc go: once, that recursed per job and a burst of
    # 2,000 ended the decision loop with a RecursionError (every job FAILED with it)
    ex = make_executor(hosts=2)
    jobs = [sleep_job(1, nodes=3) for _ in range(2000)]
    for job in jobs:
        ex.submit(job)
    messages = {finish(job).message for job in jobs}
    assert messages == {"denied: requested 3 node(s), but the platform has 2"}


def test_default_platform_has_16_hosts(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    fits, too_wide = sleep_job(1, nodes=16), sleep_job(1, nodes=17)
    ex.submit(fits)
    ex.submit(too_wide)
    assert finish(fits).state is JobState.COMPLETED
    assert finish(too_wide).state is JobState.FAILED


def test_processes_over_cores_per_host(make_executor: MakeExecutor) -> None:
    ex = make_executor(hosts=4, cores=8)
    job = Job(JobSpec("sleep", ["1"], resources=ResourceSpecV1(process_count=20)))
    ex.submit(job)
    status = finish(job)
    assert status.metadata is not None and len(status.metadata["nodes"]) == 3  # ceil(20 / 8)


# The known-answer workload of tests/batsim/test_schedulers.py, through the executor:
# 4 hosts; j1: 2 nodes 100 s, j2: 4 nodes 10 s, j3: 2 nodes 50 s, j4: 1 node 200 s.
# Walltimes are a second longer: Batsim kills a job that reaches its walltime, even
# exactly (COMPLETED_WALLTIME_REACHED).
WORKLOAD = [(2, 100), (4, 10), (2, 50), (1, 200)]


def run_workload(ex: BatsimJobExecutor) -> tuple[list[Job], Starts]:
    starts = Starts()
    ex.set_job_status_callback(starts)
    jobs = [sleep_job(seconds, nodes=nodes, walltime=seconds + 1) for nodes, seconds in WORKLOAD]
    for job in jobs:
        ex.submit(job)
    for job in jobs:
        assert finish(job).state is JobState.COMPLETED
    return jobs, starts


def test_fcfs_known_answer_schedule(make_executor: MakeExecutor) -> None:
    jobs, starts = run_workload(make_executor(hosts=4, scheduler="fcfs"))
    assert [starts.times[j.id] for j in jobs] == [0.0, 100.0, 110.0, 110.0]


def test_easy_backfilling_known_answer_schedule(make_executor: MakeExecutor) -> None:
    ex = make_executor(hosts=4, scheduler="easy")
    jobs, starts = run_workload(ex)
    # j3 overtakes the wide j2 without delaying it (j2 still starts at 100)
    assert [starts.times[j.id] for j in jobs] == [0.0, 100.0, 0.0, 110.0]
    ex.close()
    rows = jobs_csv(ex)
    assert [float(rows[str(i)]["starting_time"]) for i in range(1, 5)] == [0.0, 100.0, 0.0, 110.0]


def test_annotations_while_queued_removed_after_start(make_executor: MakeExecutor) -> None:
    ex = make_executor(hosts=4, scheduler="easy")
    jobs = [sleep_job(seconds, nodes=nodes, walltime=seconds + 1) for nodes, seconds in WORKLOAD]
    for job in jobs:
        ex.submit(job)
    # at t=50 (j3, backfilled at 0, ends) j2 still waits for j1: the annotations the
    # scheduler gave it at 0 are in its status (by then, every change of t=0 is)
    assert finish(jobs[2]).time == 50.0
    queued = jobs[1].status
    assert queued.state is JobState.QUEUED and queued.metadata is not None
    assert queued.metadata["reason_pending"] == "insufficient resources"
    assert queued.metadata["t_estimate"] == 101.0  # j1's walltime
    assert queued.metadata["annotations"]["sched"]["t_estimate"] == 101.0
    assert jobs[1].wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    active = jobs[1].status.metadata
    assert active is not None and "reason_pending" not in active and "t_estimate" not in active
    assert "sched" not in active.get("annotations", {}) or not any(
        k in active["annotations"]["sched"] for k in ("reason_pending", "t_estimate"))


def test_cancel_queued_and_running(make_executor: MakeExecutor) -> None:
    ex = make_executor(hosts=1)
    running, queued = sleep_job(100), sleep_job(100)
    ex.submit(running)
    ex.submit(queued)
    assert running.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    queued.cancel()
    status = finish(queued)
    assert status.state is JobState.CANCELED
    running.cancel()
    status = finish(running)
    assert status.state is JobState.CANCELED and status.time == 0.0
    ex.close()
    assert jobs_csv(ex)["1"]["final_state"] == "COMPLETED_KILLED"


def test_attach_and_list(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    job = sleep_job(5)
    ex.submit(job)
    assert job.native_id is not None
    other = Job()
    ex.attach(other, job.native_id)
    assert finish(other).state is JobState.COMPLETED and other.status.time == 5.0
    assert job.native_id in ex.list()
    missing = Job()
    ex.attach(missing, "hpcjobs!999")
    assert missing.status.state is JobState.FAILED


def test_attach_to_an_unknown_id_fails_at_the_simulated_time(make_executor: MakeExecutor) -> None:
    # the FAILED status once carried the POSIX time (1.8e9), where every other status
    # time is simulated seconds
    ex = make_executor()
    before = Job()
    ex.attach(before, "hpcjobs!1")  # no simulation yet: its clock stands at 0
    assert before.status.state is JobState.FAILED and before.status.time == 0.0
    job = sleep_job(5)
    ex.submit(job)
    assert finish(job).time == 5.0
    missing = Job()
    ex.attach(missing, "hpcjobs!999")
    assert missing.status.state is JobState.FAILED and missing.status.time == 5.0
    assert missing.status.message is not None and "no job 'hpcjobs!999'" in missing.status.message


def test_attach_to_a_job_of_another_executor_fails(make_executor: MakeExecutor) -> None:
    # every simulation numbered its jobs hpcjobs!1, hpcjobs!2, ...: attaching to
    # another executor's job silently followed this executor's job of the same number
    one, two = make_executor(), make_executor()
    theirs, ours = sleep_job(5), sleep_job(7)
    one.submit(theirs)
    two.submit(ours)
    assert theirs.native_id is not None and theirs.native_id != ours.native_id
    follower = Job()
    two.attach(follower, theirs.native_id)
    status = finish(follower)
    assert status.state is JobState.FAILED
    assert status.message is not None and "no job" in status.message
    assert finish(theirs).time == 5.0 and finish(ours).time == 7.0


def test_a_wait_before_submit_does_not_stop_virtual_time(make_executor: MakeExecutor) -> None:
    # Job.wait() on the NEW job made the job's condition without an executor, and the
    # job kept it: virtual time never saw the later waits (only Job.wait advances it
    # with virtual_idle_grace=None), and the wait hung
    ex = make_executor(virtual_idle_grace=None)
    job = sleep_job(5)
    assert job.wait(timeout=0.01) is None  # (NEW: times out)
    ex.submit(job)
    assert finish(job).time == 5.0
    attached = Job()
    assert attached.wait(timeout=0.01) is None
    assert job.native_id is not None
    other = sleep_job(3)
    ex.submit(other)
    ex.attach(attached, other.native_id)
    assert finish(attached).time == 8.0


@pytest.mark.simulator_process
def test_an_endpoint_in_use_is_refused(make_executor: MakeExecutor, tmp_path: Path) -> None:
    # ZeroMQ binds an ipc:// path that another socket listens on (it replaces the
    # file): the second executor took over the first one's endpoint, the simulators
    # reached the wrong decision process, and the jobs stayed QUEUED forever
    endpoint = f"ipc://{tmp_path}/decision.sock"
    first, second = make_executor(endpoint=endpoint), make_executor(endpoint=endpoint)
    job, late = sleep_job(2), sleep_job(3)
    first.submit(job)
    with pytest.raises(SubmitException, match="in use"):
        second.submit(late)
    assert late.status.state is JobState.NEW
    assert finish(job).state is JobState.COMPLETED


@pytest.mark.simulator_process
def test_an_endpoint_that_cannot_be_bound_is_a_submit_exception(make_executor: MakeExecutor) -> None:
    ex = make_executor(endpoint="tcp://256.0.0.1:5555")  # (not an address)
    job = sleep_job(1)
    with pytest.raises(SubmitException, match="256.0.0.1"):
        ex.submit(job)
    assert job.status.state is JobState.NEW


def test_virtual_time_is_deterministic(make_executor: MakeExecutor) -> None:
    def script(ex: BatsimJobExecutor) -> list[tuple[float, float]]:
        starts = Starts()
        ex.set_job_status_callback(starts)
        first = [sleep_job(s, nodes=n) for n, s in ((2, 7), (3, 3), (1, 11))]
        for job in first:
            ex.submit(job)
        first[1].wait(timeout=WAIT)
        second = [sleep_job(s, nodes=n) for n, s in ((4, 5), (1, 2))]
        for job in second:
            ex.submit(job)
        for job in first + second:
            finish(job)
        return [(starts.times[j.id], j.status.time) for j in first + second]

    one = script(make_executor(hosts=4))
    two = script(make_executor(hosts=4))
    assert one == two
    assert one[3][0] >= 3.0  # submitted after the wait: not before the simulated time it ended


def test_time_scale_100(make_executor: MakeExecutor) -> None:
    ex = make_executor(virtual_time=False, time_scale=100.0)
    starts = Starts()
    job = sleep_job(100)
    job.set_job_status_callback(starts)
    ex.submit(job)
    status = finish(job)
    assert status.state is JobState.COMPLETED
    assert status.time - starts.times[job.id] == pytest.approx(100.0)


def test_a_slow_time_scale_runs_on_both_simulators(make_executor: MakeExecutor) -> None:
    # at 1e-5 simulated seconds per wall second the keep-alive CALL_ME_LATER is due
    # 5e-7 s later: real Batsim calls back 1e-5 s later (its shortest wait), hpcjobs.sim
    # called back at once, and soon after refused a call at its current time ("You
    # asked to be awaken in the past!"), every job FAILED
    ex = make_executor(virtual_time=False, time_scale=1e-5)
    for _ in range(2):
        job = Job(JobSpec("x", attributes=JobAttributes(
            custom_attributes={"batsim.profile": {"type": "delay", "delay": 2e-6}})))
        ex.submit(job)
        status = finish(job)
        assert status.state is JobState.COMPLETED, status.message
        threading.Event().wait(0.5)  # idle: only the keep-alive calls go on


@pytest.mark.simulator_process  # (in-process the simulation begins within the first submit)
def test_jobs_submitted_while_the_simulator_starts_are_submitted_at_time_0(
        make_executor: MakeExecutor) -> None:
    # submit() does not wait for the simulator's first message: these are registered
    # in the reply to SIMULATION_BEGINS, at Batsim's time 0, even in real time (where a
    # submit once the simulation runs gets the simulated time of the wall clock)
    ex = make_executor(hosts=2, virtual_time=False, time_scale=1000.0)
    fits, too_wide = sleep_job(5), sleep_job(1, nodes=3)
    ex.submit(fits)
    ex.submit(too_wide)
    assert fits.status.state is JobState.QUEUED and fits.status.time == 0.0
    assert too_wide.status.time == 0.0
    assert finish(fits).state is JobState.COMPLETED
    # the platform's width is known only once the simulation began: checked then
    status = finish(too_wide)
    assert status.state is JobState.FAILED
    assert status.message is not None and "3 node(s)" in status.message


def test_a_failing_scheduler_fails_the_jobs_with_its_error(make_executor: MakeExecutor) -> None:
    from hpcjobs.executors.batsim.schedulers.fcfs import FCFSScheduler

    class Broken(FCFSScheduler):
        def idle(self, now: float) -> list[dict[str, object]]:
            if self.queue:
                raise RuntimeError("scheduler bug")
            return super().idle(now)

    ex = make_executor(hosts=2, scheduler=Broken())
    job = sleep_job(5)
    ex.submit(job)
    status = finish(job)  # not left hanging
    assert status.state is JobState.FAILED
    assert status.message is not None and "scheduler bug" in status.message


def test_simulator_death_fails_live_jobs_with_its_error(make_executor: MakeExecutor) -> None:
    from hpcjobs.executors.batsim.schedulers.base import SUCCESS, Scheduler, make_R

    class RankZero(Scheduler):
        """A broken scheduler: grants host 0 to every job, busy or not."""

        def inventory(self, resources: list[dict[str, object]]) -> None:
            pass

        def ready(self) -> dict[str, object]:
            return {"mode": "unlimited"}

        def alloc(self, request: dict[str, object], now: float) -> list[dict[str, object]]:
            return [{"id": request["id"], "type": SUCCESS, "R": make_R([0], now, 0)}]

        def free(self, request: dict[str, object], now: float) -> list[dict[str, object]]:
            return [{"id": request["id"]}]

        def cancel(self, request: dict[str, object], now: float) -> list[dict[str, object]]:
            return []

    ex = make_executor(scheduler=RankZero())
    victim = sleep_job(50)
    ex.submit(victim)
    assert victim.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    # the second job goes to the busy host: the simulator stops with an error
    poison = sleep_job(50)
    ex.submit(poison)
    for job in (victim, poison):
        status = finish(job)
        assert status.state is JobState.FAILED
        # the simulator's own explanation, not its log or a backtrace (real Batsim
        # aborts with SIGABRT)
        assert status.message is not None and status.message.startswith("the simulator ended (")
        assert f"'{poison.native_id}'" in status.message and str(victim.native_id) in status.message
        assert "Backtrace" not in status.message
    with pytest.raises(SubmitException, match=str(poison.native_id)):
        ex.submit(sleep_job(1))


def test_many_jobs(make_executor: MakeExecutor) -> None:
    ex = make_executor(hosts=8)
    jobs = [sleep_job(1 + i % 5) for i in range(200)]
    for job in jobs:
        ex.submit(job)
    assert all(finish(j).state is JobState.COMPLETED for j in jobs)
    assert len(set(ex.list())) == 200


def test_close_completes_outputs_of_unfinished_jobs(make_executor: MakeExecutor, tmp_path: Path) -> None:
    prefix = tmp_path / "exported"
    ex = make_executor(hosts=2, export_prefix=prefix)
    jobs = [sleep_job(30) for _ in range(4)]
    for job in jobs:
        ex.submit(job)
    ex.close()  # registration finished: the simulation runs to its end
    assert all(j.status.state is JobState.COMPLETED for j in jobs)
    rows = jobs_csv(ex)
    assert sorted(float(r["finish_time"]) for r in rows.values()) == [30.0, 30.0, 60.0, 60.0]
    assert Path(f"{prefix}_schedule.csv").is_file()


def test_bad_config_is_refused_at_creation(make_executor: MakeExecutor) -> None:
    with pytest.raises(ValueError, match="hosts"):
        make_executor(hosts=0)
    with pytest.raises(ValueError, match="time_scale"):
        make_executor(time_scale=-1)
    with pytest.raises(ValueError, match="simulator"):
        make_executor(simulator="no-such-batsim-program")
    with pytest.raises(TypeError, match="unknown setting"):
        make_executor(nodes=3)
    from hpcjobs.errors import ExecutorNotFoundError
    with pytest.raises(ExecutorNotFoundError, match="no-such"):
        make_executor(scheduler="no-such")


@pytest.mark.parametrize("setting", [{"speed": "fast"}, {"speed": "1Gf,fast"}, {"speed": "0Gf"},
                                     {"speed": float("inf")},
                                     {"platform": "garbage"}, {"platform": "no master host"},
                                     {"platform": "a pstate SimGrid cannot read"}])
def test_a_platform_the_simulator_cannot_read_is_refused_at_creation(
        make_executor: MakeExecutor, tmp_path: Path, setting: dict[str, object]) -> None:
    # these were accepted, then the first submit raised a ValueError (a platform file)
    # or every job FAILED with the simulator's parse error (a speed; an infinite one,
    # written 'inff', only on hpcjobs.sim: SimGrid reads it, as strtod does)
    if "platform" in setting:
        path = tmp_path / "platform.xml"
        hosts = {"no master host": '<host id="a" speed="1Gf"/>',
                 "a pstate SimGrid cannot read": ('<host id="master_host" speed="1Gf"/>'
                                                  '<host id="a" speed="1Gf,fast"/>')}
        path.write_text("not XML" if setting["platform"] == "garbage" else
                        "<?xml version='1.0'?>\n"
                        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                        '<platform version="4.1"><zone id="AS0" routing="Full">'
                        f'{hosts[str(setting["platform"])]}</zone></platform>\n')
        config: dict[str, object] = {"platform": path}
    else:
        config = dict(setting)
    with pytest.raises(ValueError, match="platform" if "platform" in setting else "speed"):
        make_executor(**config)


def test_explicit_platform_file(make_executor: MakeExecutor) -> None:
    platform = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1" / "inputs/zero_latency_platform.xml"
    if not platform.is_file():
        pytest.skip("fixture platform not present")
    ex = make_executor(platform=platform)
    job = sleep_job(4, nodes=4)
    ex.submit(job)
    status = finish(job)
    assert status.state is JobState.COMPLETED and status.time == 4.0
    assert status.metadata is not None and sorted(status.metadata["nodes"]) == [
        "node0", "node1", "node2", "node3"]




def test_cancel_right_after_submit(make_executor: MakeExecutor) -> None:
    ex = make_executor()
    job = sleep_job(10)
    ex.submit(job)
    job.cancel()  # before Batsim even acknowledged the registration
    status = finish(job)
    assert status.state is JobState.CANCELED


def test_limited_mode_scheduler(make_executor: MakeExecutor) -> None:
    from hpcjobs.executors.batsim.schedulers.fcfs import FCFSScheduler

    class OneAtATime(FCFSScheduler):
        """RFC 27 limited mode: at most one outstanding alloc."""

        def ready(self) -> dict[str, object]:
            return {"mode": "limited", "limit": 1}

    ex = make_executor(hosts=2, scheduler=OneAtATime())
    starts = Starts()
    ex.set_job_status_callback(starts)
    jobs = [sleep_job(10) for _ in range(3)]
    for job in jobs:
        ex.submit(job)
    assert all(finish(j).state is JobState.COMPLETED for j in jobs)
    # the manager sends the next alloc only once the previous one is answered
    assert sorted(starts.times[j.id] for j in jobs) == [0.0, 0.0, 10.0]


def test_forgotten_executor_stops_its_simulation(tmp_path: Path) -> None:
    import gc
    import subprocess

    from hpcjobs import JobExecutor

    def run() -> "tuple[subprocess.Popen[bytes], threading.Thread]":
        ex = JobExecutor.get_instance("batsim", config={"work_directory": tmp_path, "simulator": "hpcjobs.sim"})
        assert isinstance(ex, BatsimJobExecutor)
        ex.submit(sleep_job(100))
        assert ex._session is not None
        return ex._session.simulator.process, ex._session._thread  # type: ignore[attr-defined]

    process, thread = run()
    gc.collect()
    assert process.wait(timeout=WAIT) is not None  # killed by the executor's finalizer
    thread.join(WAIT)  # the decision loop notices and ends
    assert not thread.is_alive()


def test_a_woken_waiter_no_longer_counts_as_blocked() -> None:
    # the session drops a condition from its set of blocked ones when told it is no
    # longer blocked: a notify must say so, or the set keeps every job ever waited on
    from hpcjobs.executors.batsim.pacing import WaitTracker

    seen: list[tuple[int, bool]] = []
    job = sleep_job(1)
    lock = job._lock
    tracker = WaitTracker(lock, job, lambda t, delta: seen.append((delta, t.blocked)))
    ended: list[Optional[JobStatus]] = []
    waiter = threading.Thread(target=lambda: ended.append(job.wait(timeout=WAIT)))
    with lock:
        job._cond = tracker  # what Job.wait() would get from the Batsim executor
    waiter.start()
    while not seen:
        threading.Event().wait(0.01)
    with lock:
        job._status = JobStatus(JobState.COMPLETED)
        tracker.notify_all()
    waiter.join(WAIT)
    assert ended and ended[0] is not None and ended[0].state is JobState.COMPLETED
    assert seen == [(1, True), (-1, False)]


@pytest.mark.simulator_process
def test_a_submit_after_the_simulator_died_is_refused(make_executor: MakeExecutor) -> None:
    # the simulator dies while the decision loop holds Batsim's message (virtual time,
    # a client making no call): a later submit once joined that dead message's reply
    # and its job stayed QUEUED forever
    import signal
    import time

    ex = make_executor(virtual_idle_grace=None)
    victim = sleep_job(50)
    ex.submit(victim)
    assert victim.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    assert ex._session is not None
    process = ex._session.simulator.process  # type: ignore[attr-defined]
    process.send_signal(signal.SIGKILL)
    process.wait(WAIT)
    deadline = time.monotonic() + WAIT  # (not Job.wait: a waiting client lets the reply go)
    while not victim.status.state.final and time.monotonic() < deadline:
        time.sleep(0.05)
    assert victim.status.state is JobState.FAILED
    # the same on both simulators: Batsim's start-up log says nothing about its death
    assert victim.status.message == "the simulator ended (killed by signal 9 (SIGKILL)) (no error output)"
    late = sleep_job(1)
    with pytest.raises(SubmitException, match="SIGKILL"):
        ex.submit(late)
    assert late.status.state is JobState.NEW


def test_the_alloc_jobspec_carries_the_command_as_a_fresh_list() -> None:
    # the request keeps its command as a tuple (untracked by the garbage collector);
    # a scheduler gets RFC 14's array, its own to keep or change
    from hpcjobs.executors.batsim.jobmanager import JobRequest

    request = JobRequest(2, 60.0, {"type": "delay", "delay": 1.0}, ("sleep", "1"), "name", cores=4)
    spec = request.jobspec()
    assert spec["tasks"][0]["command"] == ["sleep", "1"]
    assert spec["resources"][0]["count"] == 2 and spec["attributes"]["system"]["duration"] == 60.0
    spec["tasks"][0]["command"].append("changed")
    assert request.jobspec()["tasks"][0]["command"] == ["sleep", "1"]


def test_jobs_annotated_in_one_pass_each_get_a_status_of_their_own() -> None:
    # a scheduling pass annotates every job behind the head with one shared object;
    # each job still gets its own status and metadata dict, with its own reason, and
    # loses the reason when it starts
    from hpcjobs.executors.batsim.jobmanager import JobManager, JobRequest
    from hpcjobs.executors.batsim.schedulers.base import REASON_PRIORITY, REASON_RESOURCES
    from hpcjobs.executors.batsim.schedulers.fcfs import FCFSScheduler

    def report(job: Job, status: JobStatus, ran: bool) -> None:
        job._status = status

    jm = JobManager(FCFSScheduler(), report)
    jm.begin({"compute_resources": [{"id": 0, "name": "h0"}]}, 1)
    jobs = [Job() for _ in range(4)]
    for job in jobs:
        jm.register(0.0, JobRequest(1, 10.0, {"type": "delay", "delay": 1.0}, ("sleep", "1")), job,
                    lambda native_id: None)
    jm.flush(0.0)
    ids = list(jm.records)
    jm.handle([{"timestamp": 0.0, "type": "JOB_SUBMITTED", "data": {"job_id": i}} for i in ids], 0.0)
    jm.deliver()
    assert jobs[0].status.state is JobState.ACTIVE
    assert [j.status.metadata["reason_pending"] for j in jobs[1:]] == [  # type: ignore[index]
        REASON_RESOURCES, REASON_PRIORITY, REASON_PRIORITY]
    assert jobs[2].status.metadata is not jobs[3].status.metadata
    jm.handle([{"timestamp": 1.0, "type": "JOB_COMPLETED",
                "data": {"job_id": ids[0], "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0}}], 1.0)
    jm.deliver()
    active = jobs[1].status
    assert active.state is JobState.ACTIVE and active.metadata is not None
    assert "reason_pending" not in active.metadata and "annotations" not in active.metadata
    assert jobs[2].status.metadata["reason_pending"] == REASON_RESOURCES  # type: ignore[index]
    assert jobs[3].status.metadata["reason_pending"] == REASON_PRIORITY  # type: ignore[index]
    assert jobs[2].status.time == 0.0  # a refreshed reason keeps the time the job was queued
