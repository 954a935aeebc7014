"""A real MPI program (Open MPI, mpi_hello.c) through the Flux executor on the real
two-node instance: its ranks are Flux tasks and wire up through Flux's PMI.

Known answers: ranks 0..N-1 once each, MPI_COMM_WORLD of size N, the MPI_Allreduce of
rank+1 over all ranks is N(N+1)/2, and the ranks run on both brokers (nodes) as the
resources say. ``multiple`` and ``mpirun`` run ``process_count`` ranks; ``single`` runs
one process, an MPI job of size 1 (docs/flux.md, "Where the processes run").
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import real_flux

from hpcjobs import Job, JobExecutor, JobSpec, JobState, ResourceSpecV1

WAIT = 240.0  # generous bound (jobs of their own instances, several starting at once)
SOURCE = Path(__file__).with_name("mpi_hello.c")


@pytest.fixture(scope="session")
def mpi_hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mpi_hello.c compiled with Open MPI's mpicc (libopenmpi-dev,
    scripts/install-test-deps.sh); skips without it, fails under CI=true."""
    mpicc = shutil.which("mpicc")
    built = tmp_path_factory.mktemp("mpi") / "mpi_hello"
    done = None if mpicc is None else subprocess.run(
        [mpicc, "-o", str(built), str(SOURCE)], capture_output=True, text=True, timeout=120)
    if done is None or done.returncode != 0:
        why = ("mpicc cannot build an MPI program here "
               f"({'not on PATH' if done is None else done.stderr.strip()}); "
               "bash scripts/install-test-deps.sh installs libopenmpi-dev")
        if real_flux.IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    return built


#: the module's MPI jobs: name -> (launcher, resources)
CASES = {
    **{f"{launcher}-{per_node}": (launcher, ResourceSpecV1(
        node_count=len(real_flux.NODES), processes_per_node=per_node))
       for launcher in ("multiple", "mpirun") for per_node in (1, 2)},
    "single-over-two-nodes": ("single", ResourceSpecV1(node_count=2, processes_per_node=1)),
    "single-bare-task": ("single", ResourceSpecV1(process_count=1)),
}


@pytest.fixture(scope="module")
def mpi_jobs(flux_instance: real_flux.FluxInstance, mpi_hello: Path,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Job, Path]]]:
    """Every MPI job of the module, submitted at once, so that their Flux instances
    start side by side (seconds each); each test checks its own. name -> (job, its
    directory, with the ranks' stdout in ``out``)."""
    ex = JobExecutor.get_instance("flux", url=flux_instance.uri)
    jobs = {}
    for name, (launcher, resources) in CASES.items():
        scratch = tmp_path_factory.mktemp(name)
        job = Job(JobSpec(str(mpi_hello), launcher=launcher, directory=scratch,
                          stdout_path=scratch / "out", stderr_path=scratch / "err",
                          resources=resources))
        ex.submit(job)
        jobs[name] = (job, scratch)
    yield jobs
    for job, _scratch in jobs.values():  # those of deselected tests
        job.cancel()
    ex.close()


def ranks_of(mpi_jobs: dict[str, tuple[Job, Path]],
             name: str) -> list[tuple[int, int, int, str]]:
    """The job's ranks' lines, once it ended: (rank, size, allreduce sum, broker)."""
    job, scratch = mpi_jobs[name]
    status = job.wait(timeout=WAIT)
    assert status is not None, f"job {job.native_id} did not end"
    # the job's stderr first: pytest cuts a long message, and the status's repr is long
    assert status.state is JobState.COMPLETED, \
        f"{(scratch / 'err').read_text()[-1500:]!r} -- {status.state}, {status.message}"
    lines = [line.split() for line in (scratch / "out").read_text().splitlines()]
    return sorted((int(r), int(n), int(s), broker) for r, n, s, broker in lines)


@pytest.mark.parametrize("per_node", [1, 2])
@pytest.mark.parametrize("launcher", ["multiple", "mpirun"])
def test_mpi_ranks_over_two_nodes(mpi_jobs: dict[str, tuple[Job, Path]], launcher: str,
                                  per_node: int) -> None:
    nodes = len(real_flux.NODES)
    ranks = ranks_of(mpi_jobs, f"{launcher}-{per_node}")
    size = nodes * per_node
    assert [r[0] for r in ranks] == list(range(size))  # each rank once
    assert {r[1:3] for r in ranks} == {(size, size * (size + 1) // 2)}  # one world, wired up
    # per_node ranks on each broker
    assert Counter(r[3] for r in ranks) == {str(b): per_node for b in range(nodes)}


def test_mpi_under_single_is_one_process(mpi_jobs: dict[str, tuple[Job, Path]]) -> None:
    """``single`` starts one copy of the program, on the first node of the two the
    job holds: an MPI world of one (Flux's PMI says so), as in a batch script."""
    assert ranks_of(mpi_jobs, "single-over-two-nodes") == [(0, 1, 1, "0")]


def test_mpi_as_the_jobs_only_task(mpi_jobs: dict[str, tuple[Job, Path]]) -> None:
    """One process on one node: the program is the job's bare Flux task (no instance
    of its own), and still gets Flux's PMI."""
    ranks = ranks_of(mpi_jobs, "single-bare-task")
    assert len(ranks) == 1 and ranks[0][:3] == (0, 1, 1)
