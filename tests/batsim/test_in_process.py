"""hpcjobs.sim in the executor's process (the default) against hpcjobs.sim as a process
over real ZeroMQ: the same workload gives the same output files, byte for byte (but
_schedule.csv's two wall-clock columns); and what goes wrong in the simulator ends
the jobs with a clear error.

The workload is drawn from a fresh seed each run (printed; HPCJOBS_INPROC_SEED replays
one): delay jobs of random lengths and widths, failing profiles, walltime kills,
parallel profiles, jobs wider than the platform, cancels of queued and running jobs,
submitted in batches at the simulated times the waits between them reach.
"""

from __future__ import annotations

import os
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hpcjobs import Job, JobAttributes, JobExecutor, JobSpec, JobState, ResourceSpecV1
from hpcjobs.errors import SubmitException
from hpcjobs.executors.batsim import BatsimJobExecutor
from hpcjobs.sim.output import SCHEDULE_COLUMNS

WAIT = 120.0
HOSTS = 24
#: _schedule.csv's columns measured on the wall clock (differ from run to run)
WALL_CLOCK = {SCHEDULE_COLUMNS.split(",").index(c) for c in ("scheduling_time", "simulation_time")}


def _job(rng: random.Random) -> Job:
    kind = rng.random()
    nodes = rng.choice([1, 1, 1, 2, 3, 4, 8, HOSTS + 1 if rng.random() < 0.03 else 2])
    delay = round(rng.uniform(0.5, 120.0), rng.choice([0, 1, 3, 6]))
    walltime = delay * 2
    custom: dict[str, Any] = {}
    if kind < 0.1:
        walltime = max(delay / 2, 0.5)  # killed at its walltime
    elif kind < 0.2:
        custom = {"batsim.profile": {"type": "delay", "delay": delay, "ret": rng.randint(1, 3)}}
    elif kind < 0.3:
        custom = {"batsim.profile": {"type": "parallel_homogeneous", "cpu": rng.choice([1e9, 5e9, 2e10]),
                                     "com": 0}}
        walltime = 1000.0
    attrs = JobAttributes(duration=timedelta(seconds=walltime), custom_attributes=custom or None)
    return Job(JobSpec("sleep", [str(delay)], attributes=attrs, resources=ResourceSpecV1(node_count=nodes)))


def _run(simulator: str, work: Path, seed: int, scheduler: str) -> tuple[bytes, list[str], list[Any]]:
    rng = random.Random(seed)
    ex = JobExecutor.get_instance("batsim", config={
        "work_directory": work, "hosts": HOSTS, "virtual_time": True, "virtual_idle_grace": None,
        "simulator": simulator, "scheduler": scheduler})
    assert isinstance(ex, BatsimJobExecutor)
    jobs: list[Job] = []
    try:
        for _ in range(rng.randint(3, 8)):  # batches, each at the time the last wait reached
            batch = [_job(rng) for _ in range(rng.randint(5, 40))]
            for job in batch:
                ex.submit(job)
            jobs += batch
            for job in rng.sample(batch, k=min(len(batch), rng.randint(0, 2))):
                ex.cancel(job)  # queued or running, as the simulation stands
            waited = rng.choice(jobs)
            assert waited.wait(timeout=WAIT, target_states=[rng.choice([JobState.ACTIVE, JobState.COMPLETED])]
                               ) is not None or waited.status.state.final
    finally:
        ex.close()
    # the workload is named after the run (date, pid, executor number): the one
    # difference between two runs of one script, put aside here
    assert jobs[0].native_id is not None
    workload = jobs[0].native_id.split("!")[0]
    statuses = [(j.status.state, j.status.time, j.status.exit_code,
                 (j.status.message or "").replace(workload, "WORKLOAD")) for j in jobs]
    prefix = ex.export_prefix
    assert prefix is not None
    schedule = Path(f"{prefix}_schedule.csv").read_text().splitlines()
    row = schedule[1].split(",")
    kept = [schedule[0], ",".join(v for i, v in enumerate(row) if i not in WALL_CLOCK)]
    return Path(f"{prefix}_jobs.csv").read_bytes().replace(workload.encode(), b"WORKLOAD"), kept, statuses


@pytest.mark.parametrize("scheduler", ["fcfs", "easy"])
def test_in_process_and_process_give_the_same_files(tmp_path: Path, scheduler: str) -> None:
    seed = int(os.environ.get("HPCJOBS_INPROC_SEED") or random.SystemRandom().randrange(2**32))
    print(f"seed {seed} (HPCJOBS_INPROC_SEED={seed} replays it)")
    inproc = _run("in-process", tmp_path / "in", seed, scheduler)
    process = _run("hpcjobs.sim", tmp_path / "process", seed, scheduler)
    assert inproc[0].count(b"\n") > 10  # (the workload ran)
    assert inproc[0] == process[0], f"_jobs.csv differs (seed {seed})"
    assert inproc[1] == process[1], f"_schedule.csv differs (seed {seed})"
    assert inproc[2] == process[2], f"job statuses differ (seed {seed})"


def test_a_simulator_bug_fails_the_jobs_with_its_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # nothing real makes hpcjobs.sim fail with a bug: a test double of one engine call
    # (the first reply carrying a job) stands for it
    from hpcjobs.sim.engine import Engine

    real = Engine.apply_reply

    def broken(self: Engine, now: float, events: list[dict[str, Any]]) -> None:
        if any(e["type"] == "EXECUTE_JOB" for e in events):
            raise RuntimeError("a bug in the engine")
        real(self, now, events)

    monkeypatch.setattr(Engine, "apply_reply", broken)
    ex = JobExecutor.get_instance("batsim", config={"work_directory": tmp_path, "virtual_time": True})
    job = Job(JobSpec("sleep", ["10"]))
    ex.submit(job)
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state is JobState.FAILED
    assert status.message == "the simulator failed: RuntimeError('a bug in the engine')"
    ex.close()


def test_the_default_runs_in_process_and_the_process_stays_selectable(tmp_path: Path) -> None:
    from hpcjobs.executors.batsim.inprocess import InProcessSimulator
    from hpcjobs.executors.batsim.process import SimulatorProcess

    kinds = {}
    for name, config in {"default": {}, "hpcjobs.sim": {"simulator": "hpcjobs.sim"},
                         "endpoint": {"endpoint": f"ipc://{tmp_path}/d.sock", "simulator": None},
                         "batprotocol": {"protocol": "batprotocol"}}.items():
        ex = JobExecutor.get_instance("batsim", config={"work_directory": tmp_path / name, "virtual_time": True,
                                                        **config})
        assert isinstance(ex, BatsimJobExecutor)
        job = Job(JobSpec("sleep", ["3"]))
        ex.submit(job)
        assert job.wait(timeout=WAIT) is not None and job.status.state is JobState.COMPLETED
        assert ex._session is not None
        kinds[name] = type(ex._session.simulator)
        ex.close()
    assert kinds["default"] is InProcessSimulator
    assert kinds["hpcjobs.sim"] is kinds["endpoint"] is kinds["batprotocol"] is SimulatorProcess
    with pytest.raises(ValueError, match="endpoint"):
        JobExecutor.get_instance("batsim", config={"simulator": "in-process", "endpoint": "ipc:///tmp/x.sock"})


@pytest.mark.parametrize("simulator", ["in-process", "hpcjobs.sim"])
def test_a_simulator_error_reads_the_same_in_process_and_as_a_process(tmp_path: Path, simulator: str) -> None:
    # hpcjobs.sim refuses an export folder that does not exist: in this process as its
    # process does, with its error line and exit code
    ex = JobExecutor.get_instance("batsim", config={
        "work_directory": tmp_path, "virtual_time": True, "simulator": simulator,
        "export_prefix": tmp_path / "missing" / "out"})
    job = Job(JobSpec("sleep", ["1"]))
    error = (f"the simulator ended (exited with code 1): hpcjobs.sim: error: --export "
             f"'{tmp_path}/missing/out': folder '{tmp_path}/missing' does not exist")
    try:
        ex.submit(job)
    except SubmitException as e:  # the simulator failed before the submit got in
        assert str(e) == f"the simulation is gone: {error}"
        assert job.status.state is JobState.NEW
    else:
        status = job.wait(timeout=WAIT)
        assert status is not None and status.state is JobState.FAILED
        assert status.message == error
    ex.close()


def test_a_forgotten_executor_ends_its_in_process_simulation(tmp_path: Path) -> None:
    import gc

    from hpcjobs.executors.batsim.session import Session

    def run() -> Session:
        ex = JobExecutor.get_instance("batsim", config={"work_directory": tmp_path})  # real time
        assert isinstance(ex, BatsimJobExecutor)
        ex.submit(Job(JobSpec("sleep", ["1000"])))
        assert ex._session is not None
        return ex._session

    session = run()
    gc.collect()
    session._thread.join(WAIT)  # the finalizer stopped the simulation: the decision loop ends
    assert not session._thread.is_alive()
    assert session.error == "the simulator was stopped"  # (not run to its end)


def test_in_process_messages_are_what_the_json_decoder_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no codec in between: each message either way must be, to its types (a tuple is
    # not a list, 1 is not 1.0), what encoding and decoding it would give
    from hpcjobs.batsim_protocol.codecs.json import Codec
    from hpcjobs.batsim_protocol.events import Message
    from hpcjobs.batsim_protocol.transports.direct import DirectEndpoint

    codec = Codec()
    seen: list[Message] = []
    receive, send = DirectEndpoint.receive, DirectEndpoint.send

    def spy_receive(self: DirectEndpoint, alive: Any) -> Message:
        seen.append(receive(self, alive))
        return seen[-1]

    def spy_send(self: DirectEndpoint, message: Message) -> None:
        seen.append(message)
        send(self, message)

    monkeypatch.setattr(DirectEndpoint, "receive", spy_receive)
    monkeypatch.setattr(DirectEndpoint, "send", spy_send)
    seed = random.SystemRandom().randrange(2**32)
    print(f"seed {seed}")
    _run("in-process", tmp_path, seed, "easy")
    assert len(seen) > 20
    for message in seen:
        assert repr(message) == repr(codec.decode(codec.encode(message))), f"seed {seed}"
