"""The launchers inside a pilot of two Flux nodes, on the real Slurm and flux-core.

What it exercises: one Slurm job, and one OpenPBS job, on this machine's single node
running ``flux start --test-size=2`` (``PilotConfig.flux_test_size``): two Flux brokers on one host, which
Flux takes for two nodes (ranks 0 and 1). A real MPI program (Open MPI, the Flux
tests' mpi_hello.c) runs under each launcher: ``multiple`` and ``mpirun`` start its
ranks as Flux tasks on both brokers, wired up through Flux's PMI (one world, the
``MPI_Allreduce`` over all ranks); ``single`` starts one process, an MPI world of one.
Not exercised: brokers on separate hosts (the network between them, a node lost).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pilot_support import IN_CI, WAIT, pilot_config

from hpcjobs import InvalidJobException, Job, JobExecutor, JobSpec, JobState, ResourceSpecV1

BROKERS = 2
#: bound on the pilot's wait in the shared queue (whole-node jobs of others go first)
QUEUE_WAIT = 3600.0
SOURCE = Path(__file__).resolve().parents[1] / "flux" / "mpi_hello.c"
#: name -> (launcher, resources) of the module's jobs
CASES = {
    "single": ("single", ResourceSpecV1(node_count=BROKERS, processes_per_node=1)),
    "multiple": ("multiple", ResourceSpecV1(node_count=BROKERS, processes_per_node=2)),
    "mpirun": ("mpirun", ResourceSpecV1(node_count=BROKERS, processes_per_node=2)),
}


def _skip_or_fail(why: str) -> None:
    if IN_CI:
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def mpi_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mpi_hello.c built with Open MPI's mpicc (skips without it; fails under CI)."""
    program = tmp_path_factory.mktemp("mpi") / "mpi_hello"
    mpicc = shutil.which("mpicc")
    built = mpicc is not None and subprocess.run(
        [mpicc, "-o", str(program), str(SOURCE)], capture_output=True, timeout=120
    ).returncode == 0
    if not built:
        _skip_or_fail("mpicc (Open MPI, libopenmpi-dev) cannot build mpi_hello.c here")
    return program


@pytest.fixture(scope="module", params=[pytest.param("slurm", marks=pytest.mark.slurm),
                                        pytest.param("pbs", marks=pytest.mark.pbs)])
def pilot(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[JobExecutor]:
    """One pilot of two test brokers per batch system, for the module (a pilot waits
    its turn in the machine's shared queue)."""
    backend = request.param
    request.getfixturevalue("slurm_cluster" if backend == "slurm" else "pbs_server")
    tmp = tmp_path_factory.mktemp(f"pilot-{backend}")
    ex = JobExecutor.get_instance("pilot", config=pilot_config(
        tmp, backend=backend, backend_config={"work_directory": tmp / backend},
        flux_test_size=BROKERS))
    deadline = time.monotonic() + QUEUE_WAIT
    while ex.pilot_status.state is not JobState.ACTIVE and not ex.pilot_status.state.final:
        assert time.monotonic() < deadline, f"the pilot still waits: {ex.pilot_status}"
        time.sleep(1)
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def mpi_jobs(pilot: JobExecutor, mpi_program: Path,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Job, Path]]:
    """Every case submitted at once (before the pilot runs: they wait for it); name ->
    (job, its directory, the ranks' lines in ``out``)."""
    jobs = {}
    for name, (launcher, resources) in CASES.items():
        scratch = tmp_path_factory.mktemp(name)
        job = Job(JobSpec(str(mpi_program), launcher=launcher, directory=scratch,
                          stdout_path=scratch / "out", stderr_path=scratch / "err",
                          resources=resources))
        pilot.submit(job)
        jobs[name] = (job, scratch)
    return jobs


def ranks(mpi_jobs: dict[str, tuple[Job, Path]], name: str) -> list[tuple[int, int, int, str]]:
    """The job's lines once it ended: (rank, world size, allreduce sum, broker rank)."""
    job, scratch = mpi_jobs[name]
    status = job.wait(timeout=WAIT)
    assert status is not None, f"job {job.native_id} did not end"
    err = scratch / "err"
    assert status.state is JobState.COMPLETED, (status, err.exists() and err.read_text())
    lines = [line.split() for line in (scratch / "out").read_text().splitlines()]
    return sorted((int(r), int(n), int(s), broker) for r, n, s, broker in lines)


@pytest.mark.parametrize("launcher", ["multiple", "mpirun"])
def test_mpi_ranks_on_both_brokers(mpi_jobs: dict[str, tuple[Job, Path]], launcher: str) -> None:
    found = ranks(mpi_jobs, launcher)
    size = 2 * BROKERS
    assert [r[0] for r in found] == list(range(size))  # each rank once
    assert {r[1:3] for r in found} == {(size, size * (size + 1) // 2)}  # one world
    assert Counter(r[3] for r in found) == {"0": 2, "1": 2}  # two on each broker


def test_single_is_one_process(mpi_jobs: dict[str, tuple[Job, Path]]) -> None:
    assert ranks(mpi_jobs, "single") == [(0, 1, 1, "0")]


def test_a_job_wider_than_the_test_brokers_is_refused(pilot: JobExecutor) -> None:
    job = Job(JobSpec("/bin/true", resources=ResourceSpecV1(node_count=BROKERS + 1)))
    with pytest.raises(InvalidJobException, match="pilot has 2 .*flux_test_size"):
        pilot.submit(job)
    assert job.status.state is JobState.NEW
