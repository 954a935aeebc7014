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
from pathlib import Path

import pytest
import real_flux

from hpcjobs import JobExecutor, JobSpec, JobState, ResourceSpecV1

WAIT = 120.0  # generous bound (a job of its own instance starts one broker per node)
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


def run_mpi(ex: JobExecutor, program: Path, scratch: Path, launcher: str,
            resources: ResourceSpecV1) -> list[tuple[int, int, int, str]]:
    """Run the program, return its ranks' lines (rank, size, allreduce sum, broker)."""
    out, err = scratch / "out", scratch / "err"
    status = real_flux.run(ex, JobSpec(str(program), launcher=launcher, directory=scratch,
                                       stdout_path=out, stderr_path=err,
                                       resources=resources), WAIT)
    assert status.state is JobState.COMPLETED, (status, err.read_text())
    lines = [line.split() for line in out.read_text().splitlines()]
    return sorted((int(r), int(n), int(s), broker) for r, n, s, broker in lines)


@pytest.mark.parametrize("per_node", [1, 2])
@pytest.mark.parametrize("launcher", ["multiple", "mpirun"])
def test_mpi_ranks_over_two_nodes(executor: JobExecutor, mpi_hello: Path, tmp_path: Path,
                                  launcher: str, per_node: int) -> None:
    nodes = len(real_flux.NODES)
    ranks = run_mpi(executor, mpi_hello, tmp_path, launcher,
                    ResourceSpecV1(node_count=nodes, processes_per_node=per_node))
    size = nodes * per_node
    assert [r[0] for r in ranks] == list(range(size))  # each rank once
    assert {r[1:3] for r in ranks} == {(size, size * (size + 1) // 2)}  # one world, wired up
    # per_node ranks on each broker
    assert Counter(r[3] for r in ranks) == {str(b): per_node for b in range(nodes)}


def test_mpi_under_single_is_one_process(executor: JobExecutor, mpi_hello: Path,
                                         tmp_path: Path) -> None:
    """``single`` starts one copy of the program, on the first node of the two the
    job holds: an MPI world of one (Flux's PMI says so), as in a batch script."""
    ranks = run_mpi(executor, mpi_hello, tmp_path, "single",
                    ResourceSpecV1(node_count=2, processes_per_node=1))
    assert ranks == [(0, 1, 1, "0")]


def test_mpi_as_the_jobs_only_task(executor: JobExecutor, mpi_hello: Path,
                                   tmp_path: Path) -> None:
    """One process on one node: the program is the job's bare Flux task (no instance
    of its own), and still gets Flux's PMI."""
    ranks = run_mpi(executor, mpi_hello, tmp_path, "single", ResourceSpecV1(process_count=1))
    assert len(ranks) == 1 and ranks[0][:3] == (0, 1, 1)
