"""Run the benchmarks in bench/ and write docs/performance.md from what they print.

Each benchmark prints one JSON line (some one per variant); this script runs them one
after the other, each in its own interpreter and process group, and writes every figure
they print into one generated page, with the date, the machine (CPU count and model,
Python, the load average before the run) and each benchmark's command line and wall
time. No figure is copied by hand into the documentation: the other pages link to the
generated one.

A benchmark whose real system is missing (Slurm, OpenPBS, Flux) or that runs longer than
``--timeout`` is listed as "not run", with the reason.

    .venv/bin/python bench/report.py                      # everything, full sizes
    .venv/bin/python bench/report.py --only local_latency memory
    .venv/bin/python bench/report.py --small              # every benchmark, small sizes
    .venv/bin/python bench/report.py --small slurm_submit pbs_submit   # these small
    .venv/bin/python bench/report.py --output /tmp/perf.md --timeout 300
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _pbs_server() -> str | None:
    conf = Path(os.environ.get("PBS_CONF_FILE", "/etc/pbs.conf"))
    return None if conf.is_file() else f"no PBS configuration file ({conf.name})"


def _program(name: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(name) else f"`{name}` is not on PATH"


def _flux() -> str | None:
    if shutil.which("flux") is None:
        return "`flux` is not on PATH"
    probe = subprocess.run([sys.executable, "-c", "import flux"], capture_output=True)
    return None if probe.returncode == 0 else "flux-core's Python bindings are not importable"


def _flux_over_ssh() -> str | None:
    if os.geteuid() != 0:
        return "needs root (it starts a Flux instance as the test login node's user)"
    if not {"HPCJOBS_TEST_SSH_HOST", "HPCJOBS_TEST_SSH_CONFIG"} <= set(os.environ):
        return "no test login node (scripts/sshd.sh up)"
    return _flux()


def _login_node() -> str | None:
    if not {"HPCJOBS_TEST_SSH_HOST", "HPCJOBS_TEST_SSH_CONFIG"} <= set(os.environ):
        return "no test login node (scripts/sshd.sh up)"
    return None


def _slurm_over_ssh() -> str | None:
    return _login_node() or _program("sbatch")()


@dataclass(frozen=True)
class Bench:
    """One benchmark: its script, its arguments at full and at small size, and what it
    needs (a check returning why it cannot run, or None)."""

    name: str
    full: list[str] = field(default_factory=list)
    small: list[str] = field(default_factory=list)
    needs: Callable[[], str | None] = lambda: None

    @property
    def script(self) -> Path:
        return BENCH / f"{self.name}.py"

    def summary(self) -> str:
        """The first paragraph of the script's docstring: what it measures, against what."""
        doc = ast.get_docstring(ast.parse(self.script.read_text(encoding="utf-8"))) or ""
        return " ".join(doc.split("\n\n")[0].split())


BENCHES = [
    Bench("import_time", [], ["7"]),
    Bench("memory", [], ["5000"]),
    Bench("local_latency", [], ["50"]),
    Bench("local_throughput", [], ["300", "2"]),
    Bench("sim_throughput", [], ["--jobs", "10000"]),
    Bench("batsim_executor", [], ["2000", "200", "1"]),
    Bench("inprocess_throughput", ["--rounds", "2"], ["--jobs", "2000", "--rounds", "1"], _program("batsim")),
    Bench("slurm_latency", [], ["--jobs", "10", "--in-flight", "20", "--warmup", "15", "--window", "45"],
          _program("sbatch")),
    Bench("slurm_submit", [], ["--jobs", "200", "--rounds", "1", "--burst", "200", "--lone", "50"],
          _program("sbatch")),
    Bench("pbs_latency", [], ["--jobs", "10", "--in-flight", "20", "--warmup", "15", "--window", "45"],
          _pbs_server),
    Bench("pbs_submit", [], ["--jobs", "50", "--rounds", "1"], _pbs_server),
    Bench("flux_throughput", [], ["--jobs", "200"], _flux),
    Bench("flux_ssh", [], ["--jobs", "50", "--rounds", "1"], _flux_over_ssh),
    Bench("remote_submit", [], ["--burst", "200", "--distinct", "50", "--follow", "10",
                                "--rounds", "1"], _slurm_over_ssh),
    Bench("remote_staging", [], ["--files", "200", "--megabytes", "20", "--rounds", "1"],
          _login_node),
    Bench("pilot", [], ["--jobs", "200", "--sbatch-jobs", "20"],
          lambda: _flux() or _program("sbatch")()),
    Bench("pilot_ssh", ["--node", "hpcjobs-test-node"],
          ["--jobs", "50", "--rounds", "1", "--burst", "20", "--after", "1"],
          lambda: _flux_over_ssh() or _program("sbatch")()),
    Bench("ssh_round_trips", [], ["100"], _login_node),
    Bench("external_run", [], ["--rounds", "3", "--calls", "10"], _program("sbatch")),
]
BY_NAME = {b.name: b for b in BENCHES}


@dataclass
class Outcome:
    bench: Bench
    args: list[str]
    lines: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    not_run: str | None = None


def run(bench: Bench, args: list[str], timeout: float) -> Outcome:
    """Run one benchmark; its JSON lines, or why there are none."""
    outcome = Outcome(bench, args)
    missing = bench.needs()
    if missing:
        outcome.not_run = missing
        return outcome
    start = time.monotonic()
    # a process group of its own: a benchmark starts simulators, Flux instances, jobs
    proc = subprocess.Popen([sys.executable, str(bench.script), *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        outcome.seconds = time.monotonic() - start
        outcome.not_run = f"took longer than {timeout:.0f} s (stopped)"
        return outcome
    outcome.seconds = time.monotonic() - start
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                outcome.lines.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if proc.returncode != 0 or not outcome.lines:
        last = (err.strip().splitlines() or ["(no output)"])[-1][:200]
        outcome.not_run = f"failed (exit code {proc.returncode}): {last}"
    return outcome


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return {"CPUs": str(os.cpu_count()), "CPU model": model,
            "Python": f"{platform.python_implementation()} {platform.python_version()}",
            "system": platform.platform(), "load average before the run (1, 5, 15 min)": load,
            "note": "other processes may share the machine: compare a figure with its baseline "
                    "from the same run, not with another run's"}


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`" if not isinstance(value, (int, float)) \
        else str(value)


def _flat(line: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """A JSON line's figures as (name, value) rows, nested objects as ``outer.inner``."""
    rows: list[tuple[str, Any]] = []
    for key, value in line.items():
        if isinstance(value, dict) and value:
            rows += _flat(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value, 1):  # per round: raw[1].jobs_per_s, ...
                rows += _flat(item, f"{prefix}{key}[{i}].")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def render(outcomes: list[Outcome], started: datetime.datetime, seconds: float,
           about: dict[str, str]) -> str:
    out = ["# Performance", "",
           "<!-- generated by bench/report.py: do not edit, run the script again -->", "",
           "Every figure on this page was printed by a script in `bench/` in one run of",
           "`bench/report.py`, which wrote this page. Each benchmark measures its baseline "
           "(a raw `Popen`, a raw `sbatch` or `qsub` loop, the bare bindings, a minimal "
           "decision process) in the same run and prints the ratio, so a figure is read "
           "against the line beside it rather than against another machine. Run it again "
           "to measure yours:", "",
           "    .venv/bin/python bench/report.py            # --small, --only NAME ..., --help",
           "", "## The run", "",
           "| | |", "| --- | --- |",
           f"| date | {started:%Y-%m-%d %H:%M} UTC |",
           *(f"| {k} | {v} |" for k, v in about.items()),
           f"| wall time of the whole run | {seconds / 60:.1f} min |", "",
           "## Summary", "", "| benchmark | arguments | wall time | result |",
           "| --- | --- | --- | --- |"]
    for o in outcomes:
        args = " ".join(o.args) or "(defaults)"
        took = f"{o.seconds:.0f} s" if o.seconds else ""
        result = f"not run: {o.not_run}" if o.not_run else f"{len(o.lines)} line(s), below"
        out.append(f"| [{o.bench.name}](#{o.bench.name}) | `{args}` | {took} | {result} |")
    for o in outcomes:
        out += ["", f"## {o.bench.name}", "", o.bench.summary(), "",
                f"Command: `{' '.join(['python', f'bench/{o.bench.name}.py', *o.args])}`", ""]
        if o.not_run:
            out += [f"**Not run**: {o.not_run}."]
            continue
        for i, line in enumerate(o.lines):
            if len(o.lines) > 1:
                label = next((str(line[k]) for k in ("simulator", "protocol") if k in line), str(i + 1))
                out += [f"### {o.bench.name}: {label}", ""]
            out += ["| figure | value |", "| --- | --- |"]
            out += [f"| {k} | {_value(v)} |" for k, v in _flat(line)
                    if k not in ("bench", "benchmark")]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(BY_NAME), metavar="NAME",
                        help=f"run only these ({', '.join(BY_NAME)})")
    parser.add_argument("--skip", nargs="+", choices=sorted(BY_NAME), metavar="NAME", default=[],
                        help="leave these out (listed as not run)")
    parser.add_argument("--small", nargs="*", metavar="NAME",
                        help="small sizes: for the benchmarks named, or for all without a name")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds one benchmark may take before it is stopped (default 900)")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "performance.md")
    options = parser.parse_args()
    small = set(BY_NAME) if options.small == [] else set(options.small or ())
    chosen = [BY_NAME[n] for n in options.only] if options.only else BENCHES
    about = machine()
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    outcomes = []
    for bench in chosen:
        args = bench.small if bench.name in small else bench.full
        if bench.name in options.skip:
            outcomes.append(Outcome(bench, args, not_run="left out of this run (--skip)"))
            continue
        print(f"report: {bench.name} {' '.join(args)}", file=sys.stderr, flush=True)
        outcome = run(bench, args, options.timeout)
        print(f"report: {bench.name}: {outcome.not_run or 'done'} ({outcome.seconds:.0f} s)",
              file=sys.stderr, flush=True)
        outcomes.append(outcome)
    about["load average after the run (1, 5, 15 min)"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    options.output.write_text(render(outcomes, started, time.monotonic() - t0, about),
                              encoding="utf-8")
    print(f"report: wrote {options.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
