"""The simulated schedule as a Gantt chart: Batsim's ``<prefix>_jobs.csv`` -> PNG.

One bar per job and contiguous range of resources it held, from its start to its
finish (simulated seconds), coloured by how it ended, labelled with the job's name when
the caller gives one (``labels``: native id -> name, e.g. each PSI/J job's
``spec.name``), else with its Batsim job number; the legend sits outside the bars. Needs matplotlib, the optional
extra ``hpcjobs[gantt]``; without it :func:`draw` raises :class:`GanttUnavailable` with
the install command. Command line::

    hpcjobs gantt out_jobs.csv schedule.png
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from ...batsim_protocol import events as protocol
from .schedulers.base import parse_idset

__all__ = ["draw", "read_jobs", "JobBar", "GanttUnavailable"]

_COLOURS = {protocol.COMPLETED_SUCCESSFULLY: "#4c9a2a", protocol.COMPLETED_FAILED: "#c0392b",
            protocol.COMPLETED_WALLTIME_REACHED: "#e67e22", protocol.COMPLETED_KILLED: "#7f8c8d"}

_LEGEND = {"COMPLETED_SUCCESSFULLY": "completed", "COMPLETED_FAILED": "failed",
           "COMPLETED_WALLTIME_REACHED": "walltime reached", "COMPLETED_KILLED": "killed"}


class GanttUnavailable(ImportError):
    """matplotlib (the ``gantt`` extra) is not installed."""


@dataclass(frozen=True)
class JobBar:
    """A job of the schedule: where and when it ran."""

    job_id: str
    start: float
    finish: float
    resources: list[int]
    state: str


def read_jobs(jobs_csv: Union[str, Path]) -> list[JobBar]:
    """The jobs that ran, from Batsim's ``_jobs.csv`` (rejected jobs are not in it)."""
    bars = []
    with open(jobs_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if not row.get("allocated_resources"):
                continue  # never ran (killed while queued)
            bars.append(JobBar(f"{row['workload_name']}!{row['job_id']}", float(row["starting_time"]),
                               float(row["finish_time"]), parse_idset(row["allocated_resources"]),
                               row["final_state"]))
    return bars


def _ranges(ids: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _fit_labels(fig: Any, ax: Any, texts: list[tuple[Any, Any]]) -> None:
    """A label wider than its bar is turned upright if the bar is tall enough, else
    left out: text spilling over the neighbouring bars would be unreadable. ``texts``:
    (the bar's corners in data coordinates, its label)."""
    renderer = fig.canvas.get_renderer()
    for corners, text in texts:
        (x0, y0), (x1, y1) = ax.transData.transform(corners)
        width, height = abs(x1 - x0), abs(y1 - y0)
        size = text.get_window_extent(renderer)
        if size.width <= width and size.height <= height:
            continue
        if size.width <= height and size.height <= width:
            text.set_rotation(90)
        else:
            text.set_visible(False)


def draw(jobs_csv: Union[str, Path], out_png: Union[str, Path], title: Optional[str] = None,
         labels: Optional[Mapping[str, str]] = None) -> Path:
    """Draw the schedule in ``jobs_csv`` to the PNG file ``out_png``; return its path.

    ``labels`` maps a job's id as Batsim writes it (``<workload>!<number>``, the Batsim
    executor's ``native_id``) to the text on its bars; a job not in it shows its number.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as e:
        raise GanttUnavailable("drawing a Gantt chart needs matplotlib: "
                               "pip install 'hpcjobs[gantt]'") from e
    bars = read_jobs(jobs_csv)
    fig, ax = plt.subplots(figsize=(10, 5))
    try:
        texts = []
        for bar in bars:
            colour = _COLOURS.get(bar.state, "#2c3e50")
            for lo, hi in _ranges(bar.resources):
                ax.broken_barh([(bar.start, bar.finish - bar.start)], (lo, hi - lo + 1),
                               facecolors=colour, edgecolors="white", linewidth=0.5)
                if len(bars) <= 50:
                    corners = ((bar.start, lo), (bar.finish, hi + 1))
                    texts.append((corners, ax.text(
                        bar.start + (bar.finish - bar.start) / 2, lo + (hi - lo + 1) / 2,
                        (labels or {}).get(bar.job_id, bar.job_id.split("!")[-1]),
                        ha="center", va="center", fontsize=7, color="white", clip_on=True)))
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("resource")
        ax.set_title(title or f"Schedule: {Path(jobs_csv).name}")
        # outside the axes, on the right: inside, it would hide a bar whatever the corner
        ax.legend(handles=[Patch(color=c, label=_LEGEND[s])
                           for s, c in _COLOURS.items()], loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7, title="final state",
                  title_fontsize=7)
        if bars:
            ax.set_ylim(0, max(max(b.resources) for b in bars) + 1)
            ax.set_xlim(min(b.start for b in bars), max(b.finish for b in bars))
        fig.tight_layout()
        _fit_labels(fig, ax, texts)
        fig.savefig(out_png, format="png", bbox_inches="tight")
    finally:
        plt.close(fig)
    return Path(out_png)
