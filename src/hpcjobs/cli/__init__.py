"""The ``hpcjobs`` command: run, submit, watch and cancel jobs from a shell.

A thin layer over the API: options become a ``JobSpec`` (or ``--file`` loads one
written by :mod:`hpcjobs.serialize`), the executor comes from ``get_instance``, and
``status``/``cancel`` attach to native ids, so they work from any later process.
Errors are one line on stderr (``--debug`` adds the traceback and debug logging);
exit codes are listed in :mod:`hpcjobs.cli.commands` and docs/cli.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import traceback
from typing import NoReturn, Optional, Sequence

from .. import __version__
from ..errors import CommandError, PSIJError
from . import commands, options

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (the full usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def _seconds(text: str) -> float:
    """``--timeout``: seconds (``30``, ``0.5``) or a duration (``2m``, ``01:00:00``)."""
    try:
        return float(text)
    except ValueError:
        return options.duration(text).total_seconds()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``hpcjobs`` (exposed for docs and tests)."""
    common = _Parser(add_help=False)
    g = common.add_argument_group("executor")
    g.add_argument("-x", "--executor", default="local", metavar="NAME",
                   help="executor to use (default: local)")
    g.add_argument("--url", metavar="URL",
                   help="where the executor runs its jobs (ssh://[user@]host[:port]; see "
                        "docs/remote.md); an executor that cannot serve it refuses it")
    g.add_argument("--config", action="append", type=options.key_value, default=[],
                   metavar="KEY=VALUE", help="executor setting, e.g. work_directory=/tmp/w")
    g.add_argument("--json", action="store_true",
                   help="print hpcjobs.job JSON documents, one per line")
    g.add_argument("--debug", action="store_true",
                   help="debug logging, and tracebacks on errors")

    job = _Parser(add_help=False)
    g = job.add_argument_group("job")
    g.add_argument("--file", metavar="JOB.json",
                   help="start from a saved JobSpec or Job document ('-' = stdin); "
                        "other options override its fields")
    g.add_argument("--count", type=_positive, default=1, metavar="N",
                   help="submit N copies (default 1)")
    g.add_argument("--name")
    g.add_argument("--cwd", metavar="DIR", help="job directory (default: the current one)")
    g.add_argument("--env", action="append", type=options.key_value, default=[],
                   metavar="K=V", help="set a variable (${NAME} is substituted)")
    g.add_argument("--no-inherit-env", action="store_true",
                   help="start from an empty environment")
    g.add_argument("--stdin", metavar="PATH")
    g.add_argument("--stdout", metavar="PATH")
    g.add_argument("--stderr", metavar="PATH")
    g.add_argument("--pre-launch", metavar="SCRIPT", help="sourced before the job")
    g.add_argument("--post-launch", metavar="SCRIPT", help="sourced after the job")
    g.add_argument("--launcher", metavar="NAME", help="single (default), multiple, mpirun, srun")
    g.add_argument("--batch-script", action="store_true",
                   help="EXECUTABLE is a batch script of yours: its #SBATCH/#PBS lines are "
                        "kept, the options here only add what they leave unset")
    g = job.add_argument_group("resources")
    g.add_argument("-N", "--nodes", type=int, metavar="N")
    g.add_argument("-n", "--processes", type=int, metavar="N")
    g.add_argument("--processes-per-node", type=int, metavar="N")
    g.add_argument("-c", "--cores-per-process", type=int, metavar="N")
    g.add_argument("--gpus-per-process", type=int, metavar="N")
    g.add_argument("--memory", type=options.memory, metavar="SIZE",
                   help="per node: bytes, or 512M, 4G (powers of 1024)")
    g.add_argument("--exclusive", action="store_true", help="whole nodes")
    g = job.add_argument_group("attributes")
    g.add_argument("-t", "--time", "--duration", dest="time", type=options.duration,
                   metavar="DURATION",
                   help="walltime: 90s, 10m, 1h30m, 2d, HH:MM:SS or D-HH[:MM[:SS]]")
    g.add_argument("-q", "--queue")
    g.add_argument("-A", "--account", help="who pays (Slurm --account, PBS -A, Flux bank)")
    g.add_argument("-P", "--project", help="the project (PBS -P, Flux project)")
    g.add_argument("--reservation")
    g.add_argument("--attr", action="append", type=options.key_value, default=[],
                   metavar="KEY=VALUE",
                   help="custom attribute (a string), e.g. slurm.constraint=gpu")
    g.add_argument("--attr-json", action="append", type=options.key_json, default=[],
                   metavar="KEY=JSON", help="custom attribute given as JSON")

    parser = _Parser(
        prog="hpcjobs", description="Run and manage jobs through the PSI/J API.",
        epilog="Exit codes: 0 ok; run: the job's exit code (128+N for signal N), 1 failed "
               "without one; 2 usage; 124 timeout; 125 hpcjobs error; 130 interrupted; "
               "141 output closed.")
    parser.add_argument("--version", action="version", version=f"hpcjobs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for name, func, help_text in (
            ("run", commands.run, "submit, wait, exit with the job's exit code"),
            ("submit", commands.submit, "submit and print the native id")):
        p = sub.add_parser(name, parents=[common, job], help=help_text, description=help_text)
        p.add_argument("executable", nargs="?", help="program to run")
        p.add_argument("arguments", nargs=argparse.REMAINDER, help="its arguments")
        p.set_defaults(func=func, parser=p)
        if name == "run":
            p.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                           help="stop waiting after this long (jobs keep running)")
        else:
            p.add_argument("--hold", action="store_true",
                           help="queue the jobs held: they start after 'hpcjobs release'")
    for name, func, help_text in (
            ("status", commands.status, "print the status of jobs by native id"),
            ("cancel", commands.cancel, "cancel jobs by native id and wait for their end"),
            ("hold", commands.hold, "hold queued jobs by native id"),
            ("release", commands.release, "release held jobs by native id")):
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.add_argument("ids", nargs="+", metavar="ID", help="native id")
        p.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                       help="how long to wait for the backend (default 30)")
        p.set_defaults(func=func, parser=p)
    p = sub.add_parser("list", parents=[common], help="print the native ids of known jobs",
                       description="print the native ids of the jobs the executor knows")
    p.set_defaults(func=commands.list_jobs, parser=p)
    p = sub.add_parser("gantt", help="draw a simulated schedule as a PNG (needs hpcjobs[gantt])",
                       description="draw the schedule in a Batsim _jobs.csv as a Gantt chart")
    p.add_argument("jobs_csv", metavar="JOBS.csv", help="the simulation's <prefix>_jobs.csv")
    p.add_argument("png", metavar="OUT.png")
    p.add_argument("--title")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=commands.gantt, parser=p)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


# errors whose message is made for the user (ExecutorNotFoundError and SerializationError
# are ValueErrors; the model's TypeErrors name the field); anything else is a bug
_EXPECTED = (PSIJError, CommandError, OSError, TypeError, ValueError)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``hpcjobs`` console script; returns the exit code."""
    ns = build_parser().parse_args(argv)
    if ns.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                            format="%(asctime)s %(threadName)s %(name)s: %(message)s")
    try:
        code: int = ns.func(ns)
        return code
    except argparse.ArgumentTypeError as e:
        parser: _Parser = ns.parser
        parser.error(str(e))  # exit 2, like any bad option
    except KeyboardInterrupt:
        commands.err("interrupted")
        return commands.EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`hpcjobs list | head -1`): stop quietly, as cat does;
        # stdout is pointed at /dev/null so the interpreter's final flush cannot fail too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception as e:
        if ns.debug:
            traceback.print_exc()
        if isinstance(e, _EXPECTED):
            commands.err(str(e))
        else:
            commands.err(f"internal error: {type(e).__name__}: {e} (--debug shows the traceback)")
        return commands.EXIT_ERROR
