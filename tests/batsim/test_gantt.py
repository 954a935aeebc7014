"""The Gantt chart of a simulated schedule (Batsim's _jobs.csv -> PNG)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hpcjobs.executors.batsim import gantt

# a real Batsim 4.2.1 output: delay, parallel, walltime kill, failed jobs
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1" / "zl/out_jobs.csv"


@pytest.fixture
def jobs_csv(tmp_path: Path) -> Path:
    if FIXTURE.is_file():
        return FIXTURE
    path = tmp_path / "out_jobs.csv"
    path.write_text("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
                    "requested_time,success,final_state,starting_time,execution_time,finish_time,"
                    "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata\n"
                    "hg2,w0,hg_1e9,1,2,-1,1,COMPLETED_SUCCESSFULLY,1,1,2,0,1,1,2-3,-1,\"\"\n"
                    "d10,w0,delay10,0,1,100,1,COMPLETED_SUCCESSFULLY,0,10,10,0,10,1,0,-1,\"\"\n")
    return path


def test_read_jobs(jobs_csv: Path) -> None:
    bars = {b.job_id: b for b in gantt.read_jobs(jobs_csv)}
    assert bars["w0!hg2"].resources == [2, 3] and (bars["w0!hg2"].start, bars["w0!hg2"].finish) == (1.0, 2.0)
    assert bars["w0!d10"].resources == [0]


def test_draw_png(jobs_csv: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = gantt.draw(jobs_csv, tmp_path / "schedule.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_and_legend_outside_the_bars(jobs_csv: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Bars carry the workflow's names where given (the job's number elsewhere), and the
    legend lies right of the plotting area, where it can cover no bar."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)  # keep the real figure to look at it
    bars = gantt.read_jobs(jobs_csv)
    named, unnamed = bars[0], bars[1]
    gantt.draw(jobs_csv, tmp_path / "schedule.png", labels={named.job_id: "my-prepare-step"})
    (fig,) = kept
    ax = fig.axes[0]
    texts = {t.get_text() for t in ax.texts}
    assert "my-prepare-step" in texts and named.job_id.split("!")[-1] not in texts
    assert unnamed.job_id.split("!")[-1] in texts
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.x0 >= ax.get_window_extent(renderer).x1
    fig.clf()


def test_command_line(jobs_csv: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "cli.png"
    p = subprocess.run([sys.executable, "-m", "hpcjobs", "gantt", str(jobs_csv), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert out.is_file() and p.stdout.strip() == str(out)


def test_clear_message_without_matplotlib(jobs_csv: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(gantt.GanttUnavailable, match=r"pip install 'hpcjobs\[gantt\]'"):
        gantt.draw(jobs_csv, tmp_path / "x.png")
    from hpcjobs.cli import main
    assert main(["gantt", str(jobs_csv), str(tmp_path / "x.png")]) == 125
    assert "hpcjobs[gantt]" in capsys.readouterr().err
