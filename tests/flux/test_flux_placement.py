"""Multi-node jobs on the real two-node instance: processes placed by Flux.

Known answers: the ranks of a job over both nodes see broker ranks 0 and 1, the node
file lists both nodes, exclusive node use allocates the nodes whole, and the exit code
is the lowest failing rank's. Every launcher Flux can place is run: ``single`` (one
process), ``multiple`` and ``mpirun`` (one Flux task per process).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import real_flux

from hpcjobs import JobExecutor, JobSpec, JobState, JobStatus, ResourceSpecV1

WAIT = 120.0  # generous bound (a job of its own instance starts one broker per node)

# each rank writes "<PSIJ_RANK or -> <broker rank> <host from the node file, one a line>"
REPORT = ('f=$(mktemp "$0/rank.XXXXXX") && '
          'echo "${PSIJ_RANK:--} $(flux getattr rank) $(tr "\\n" " " < "$PSIJ_NODEFILE")" > "$f"')

TWO_NODES = ResourceSpecV1(node_count=2, processes_per_node=1)


def run(ex: JobExecutor, spec: JobSpec) -> JobStatus:
    return real_flux.run(ex, spec, WAIT)


def reports(scratch: Path) -> list[list[str]]:
    return sorted(p.read_text().split() for p in scratch.glob("rank.*"))


def spec(scratch: Path, launcher: str, script: str = REPORT,
         resources: ResourceSpecV1 = TWO_NODES) -> JobSpec:
    return JobSpec("/bin/sh", ["-c", script, str(scratch)], launcher=launcher,
                   directory=scratch, stdout_path=scratch / "out", stderr_path=scratch / "err",
                   resources=resources)


@pytest.mark.parametrize("launcher", ["multiple", "mpirun"])
def test_one_rank_per_node(executor: JobExecutor, tmp_path: Path, launcher: str) -> None:
    status = run(executor, spec(tmp_path, launcher))
    assert status.state is JobState.COMPLETED, (status, (tmp_path / "err").read_text())
    nodes = " ".join(real_flux.NODES).split()
    ranks = reports(tmp_path)
    # broker ranks 0 and 1: one process on each node; the node file names both nodes
    assert [r[1] for r in ranks] == ["0", "1"]
    assert all(r[2:] == nodes for r in ranks)
    if launcher == "multiple":
        assert [r[0] for r in ranks] == ["0", "1"]  # PSIJ_RANK


def test_single_is_one_process_on_the_first_node(executor: JobExecutor,
                                                 tmp_path: Path) -> None:
    """``single`` runs one process whatever the counts (as on every backend), on the
    first node of the allocation; the job holds both nodes."""
    status = run(executor, spec(tmp_path, "single"))
    assert status.state is JobState.COMPLETED, (status, (tmp_path / "err").read_text())
    assert reports(tmp_path) == [["-", "0", *real_flux.NODES]]
    assert (status.metadata or {})["nodes"] == real_flux.NODES


def test_processes_spread_as_the_resources_say(executor: JobExecutor,
                                               tmp_path: Path) -> None:
    status = run(executor, spec(tmp_path, "multiple", resources=ResourceSpecV1(
        node_count=2, processes_per_node=2)))
    assert status.state is JobState.COMPLETED, (status, (tmp_path / "err").read_text())
    ranks = reports(tmp_path)
    assert [r[0] for r in ranks] == ["0", "1", "2", "3"]
    assert sorted(r[1] for r in ranks) == ["0", "0", "1", "1"]  # two on each node


def test_exit_code_is_the_lowest_failing_ranks(executor: JobExecutor,
                                               tmp_path: Path) -> None:
    # rank 0 succeeds, ranks 1, 2, 3 exit 3, 5, 7: Flux alone would say 7 (the largest)
    script = REPORT + '; [ "$PSIJ_RANK" = 0 ] || exit $((PSIJ_RANK * 2 + 1))'
    status = run(executor, spec(tmp_path, "multiple", script, ResourceSpecV1(
        node_count=2, process_count=4)))
    assert (status.state, status.exit_code) == (JobState.FAILED, 3), status
    assert len(reports(tmp_path)) == 4  # every rank ran


def test_exclusive_node_use_takes_whole_nodes(executor: JobExecutor, tmp_path: Path) -> None:
    status = run(executor, spec(tmp_path, "multiple", resources=ResourceSpecV1(
        node_count=2, processes_per_node=1, exclusive_node_use=True)))
    assert status.state is JobState.COMPLETED, (status, (tmp_path / "err").read_text())
    cores = real_flux.CORES_PER_NODE
    assert (status.metadata or {})["resource_summary"] == f"rank[0-1]/core[0-{cores - 1}]"


def test_pre_and_post_launch_once_per_job(executor: JobExecutor, tmp_path: Path) -> None:
    pre, post = tmp_path / "pre.sh", tmp_path / "post.sh"
    pre.write_text('echo pre >> log; export FROM_PRE="set by pre"\n')
    post.write_text("echo post >> log\n")
    job_spec = spec(tmp_path, "multiple", 'echo "rank $FROM_PRE" >> "$0/log"')
    job_spec.pre_launch, job_spec.post_launch = pre, post
    status = run(executor, job_spec)
    assert status.state is JobState.COMPLETED, (status, (tmp_path / "err").read_text())
    lines = (tmp_path / "log").read_text().splitlines()
    assert lines == ["pre", "rank set by pre", "rank set by pre", "post"]


def test_single_over_slots_flux_may_spread(executor: JobExecutor, tmp_path: Path) -> None:
    """More slots than one node has, no node count: Flux spreads them over both nodes,
    and the one process of ``single`` still runs (a task-less node would fail it)."""
    status = run(executor, spec(tmp_path, "single", resources=ResourceSpecV1(
        process_count=real_flux.CORES_PER_NODE + 1)))
    assert status.state is JobState.COMPLETED, (status, (tmp_path / "err").read_text())
    assert len(reports(tmp_path)) == 1
    assert (status.metadata or {})["nodes"] == real_flux.NODES
