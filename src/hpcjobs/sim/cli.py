"""Command line: Batsim 4.2.1's flags for what hpcjobs.sim supports (docs/sim.md)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import time
from typing import NoReturn

from ..batsim_protocol.codecs import NAMES, get_codec
from ..batsim_protocol.errors import ProtocolError
from ..batsim_protocol.events import Message, simulation_error
from ..batsim_protocol.platform import parse_platform
from . import BATSIM_VERSION
from .engine import Engine, Options
from .errors import Deadlock, InputError, SimError
from .output import write_outputs
from .server import hello, open_channel, serve
from .workload import parse_workload

log = logging.getLogger(__name__)

# Batsim options this simulator does not implement: refused by name rather than ignored
UNSUPPORTED = ("-E", "--energy", "-m", "--master-host", "-r", "--redis-hostname", "--redis-port",
               "--redis-prefix", "--enable-redis", "-W", "--workflow", "--WS", "--workflow-start",
               "--events", "--disable-schedule-tracing", "--disable-machine-state-tracing",
               "--enable-compute-sharing", "--disable-storage-sharing", "--mmax", "--mmax-workload",
               "--energy-host", "--simgrid-version", "--unittest", "--no-sched",
               "--forward-unknown-events", "--add-role-to-hosts", "--sim-log", "--verbosity")


class _Parser(argparse.ArgumentParser):
    """Usage errors become InputError: one message format and exit code for bad input."""

    def error(self, message: str) -> NoReturn:
        raise InputError(message)


class _Once(argparse.Action):
    """A Batsim option that may be given once: Batsim's docopt refuses a second
    ``-e`` (or ``--enable-dynamic-jobs``, ...) with "Unexpected argument" where argparse
    would keep the last. ``nargs=0``: a flag."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        given: set[str] = namespace.__dict__.setdefault("_given", set())
        if self.dest in given:
            raise InputError(f"option {'/'.join(self.option_strings)} given more than once (Batsim accepts "
                             "it once)")
        given.add(self.dest)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hpcjobs-sim", allow_abbrev=False,
        description="A Batsim-compatible job-scheduling simulator (JSON or batprotocol over ZeroMQ).")
    parser.add_argument("-p", "--platform", required=True, action=_Once,
                        help="SimGrid platform file (XML, version 4.1)")
    parser.add_argument("-w", "--workload", action="append", default=[], help="Batsim workload (JSON); repeatable")
    parser.add_argument("-s", "--socket-endpoint", default="tcp://localhost:28000", action=_Once,
                        help="decision process endpoint (tcp:// or ipc://), default %(default)s")
    parser.add_argument("-e", "--export", default="out", action=_Once, help="output prefix, default %(default)s")
    for flag in ("--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse",
                 "--forward-profiles-on-submission"):
        parser.add_argument(flag, action=_Once, nargs=0, default=False)
    parser.add_argument("--sched-cfg", default="", action=_Once, help="string forwarded as config.sched-config")
    parser.add_argument("-q", "--quiet", action=_Once, nargs=0, default=False, help="only report errors")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="(not in Batsim) give up when a reply takes longer than this many "
                             "wall-clock seconds; 0 waits forever. Default %(default)s")
    parser.add_argument("--protocol", choices=NAMES, default="json",
                        help="(not in Batsim) the protocol generation: json (Batsim 3-4, default), "
                             "batprotocol (Batsim 5, binary FlatBuffers), batprotocol_json (Batsim 5, "
                             "the same messages as FlatBuffers JSON) or legacy (Batsim < 1.0: -s is "
                             "a Unix socket path, job data go to Redis, see --redis-url)")
    parser.add_argument("--redis-url", help="(not in Batsim) with --protocol legacy: the Redis that "
                                            "receives the job data, e.g. unix:///run/redis.sock")
    parser.add_argument("--version", action="version", version=f"{BATSIM_VERSION} (hpcjobs.sim)")
    return parser


def check_args(args: argparse.Namespace, unknown: list[str]) -> None:
    """``InputError`` for flags hpcjobs.sim refuses (``unknown``: what the parser left)
    and for flags that contradict each other or the file system."""
    if unknown:
        names = [u for u in unknown if u.split("=")[0] in UNSUPPORTED]
        if names:
            raise InputError(f"unsupported Batsim option(s) {' '.join(names)}: hpcjobs.sim does not "
                             "implement them (see docs/sim.md)")
        raise InputError(f"unknown option(s) or argument(s): {' '.join(unknown)}")
    # (--acknowledge-dynamic-jobs alone is accepted, as Batsim does: it only shows as
    # dynamic-jobs-acknowledged in SIMULATION_BEGINS, registrations stay refused)
    if args.enable_profile_reuse and not args.enable_dynamic_jobs:
        raise InputError("--enable-profile-reuse needs --enable-dynamic-jobs")
    if args.protocol == "legacy":
        if args.socket_endpoint.startswith(("tcp://", "ipc://")):
            raise InputError(f"--socket-endpoint {args.socket_endpoint!r}: the legacy protocol "
                             "serves a Unix socket: give its path")
        if not args.redis_url:
            raise InputError("--protocol legacy needs --redis-url (its job data live in Redis)")
    elif not args.socket_endpoint.startswith(("tcp://", "ipc://")):
        raise InputError(f"--socket-endpoint {args.socket_endpoint!r}: only tcp:// and ipc:// are supported")
    folder = os.path.dirname(args.export) or "."
    if not os.path.isdir(folder):
        raise InputError(f"--export {args.export!r}: folder {folder!r} does not exist")


def options_of(args: argparse.Namespace) -> Options:
    """The behaviour switches of Batsim's flags in ``args`` (from :func:`build_parser`)."""
    return Options(args.enable_dynamic_jobs, args.acknowledge_dynamic_jobs, args.enable_profile_reuse,
                   args.forward_profiles_on_submission, args.sched_cfg)


def run(argv: list[str]) -> int:
    """Parse ``argv``, simulate, write outputs; returns the exit code."""
    try:
        args, unknown = build_parser().parse_known_args(argv)
    except InputError as exc:
        print(f"hpcjobs.sim: error: {exc}", file=sys.stderr)
        return exc.exit_code
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="hpcjobs.sim: %(levelname)s: %(message)s", stream=sys.stderr)
    try:
        check_args(args, unknown)
        started = time.monotonic()
        platform = parse_platform(args.platform)
        workloads = [parse_workload(path, f"w{i}") for i, path in enumerate(args.workload)]
        options = options_of(args)
        channel = open_channel(args.protocol, args.socket_endpoint, args.timeout, args.redis_url)
        if args.protocol != "json":
            # Batsim 4.2.1's rule on allocation sizes (Options) stays with its protocol
            options = dataclasses.replace(options, executors_match_res=False)
        if args.protocol == "legacy":
            options = dataclasses.replace(options, forward_profiles=True)  # profile_<id> in Redis
        if args.protocol.startswith("batprotocol"):
            # "Batsim's command-line arguments as received by Batsim": argv, program first
            options = dataclasses.replace(options, arguments=(sys.argv[0], *argv))
        engine = None
        hello_first = get_codec(args.protocol).hello  # Batsim 5: the decision process says hello
        try:
            if hello_first:
                options = hello(channel, options, get_codec(args.protocol).name)
            engine = Engine(platform, workloads, options)
            serve(engine, channel, get_codec(args.protocol).name, 1 if hello_first else 0)
        except ProtocolError as exc:
            if hello_first:
                # Batsim 5 tells the decision process why it stops
                now = 0.0 if engine is None else engine.now
                channel.farewell(Message(now, [simulation_error(now, str(exc))]))
            raise
        except Deadlock:
            # Batsim still writes its outputs after SimGrid's deadlock (fixtures: nofinish)
            assert engine is not None
            write_outputs(args.export, engine, channel.waited, time.monotonic() - started)
            raise
        finally:
            channel.close()
        write_outputs(args.export, engine, channel.waited, time.monotonic() - started)
        log.info("simulation ended at %f: %d jobs finished, %d rejected", engine.now,
                 len(engine.finished), engine.nb_rejected)
        return 0
    except SimError as exc:
        print(f"hpcjobs.sim: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"hpcjobs.sim: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hpcjobs.sim: error: interrupted", file=sys.stderr)
        return 130
