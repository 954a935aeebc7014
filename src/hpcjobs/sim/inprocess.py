"""hpcjobs.sim in the caller's process: the Batsim end of a direct transport
(:mod:`hpcjobs.batsim_protocol.transports.direct`), speaking the JSON protocol's
events with no socket and no encoding.

:func:`open_simulation` takes the command-line flags the simulator process gets
(without ``-s``: there is no socket) and gives the decision process's endpoint; the
simulation is the one ``python -m hpcjobs.sim`` runs with those flags (the same
parser, engine, request/reply loop and output files), stepped by the thread that
replies. A failure raises :class:`SimError` (or whatever went wrong) at the decision
end's next receive, as a simulator process would die with its ``error:`` line.
"""

from __future__ import annotations

import time

from ..batsim_protocol.codecs import json as json_codec
from ..batsim_protocol.platform import parse_platform
from ..batsim_protocol.transports.direct import Conversation, DirectEndpoint
from .cli import build_parser, check_args, options_of
from .engine import Engine
from .errors import Deadlock, InputError, SimError
from .output import write_outputs
from .server import conversation
from .workload import parse_workload

__all__ = ["open_simulation", "SimError"]


def open_simulation(argv: list[str]) -> DirectEndpoint:
    """The decision end of hpcjobs.sim run with Batsim's flags ``argv`` in this process
    (nothing runs before the endpoint's first receive)."""
    return DirectEndpoint(_simulate(argv), json_codec.check, json_codec.Codec.name)


def _simulate(argv: list[str]) -> Conversation:
    started = time.monotonic()
    args, unknown = build_parser().parse_known_args(argv)
    check_args(args, unknown)  # (the default -s passes: no socket is opened)
    if args.protocol != "json":
        raise InputError("in this process hpcjobs.sim speaks the JSON protocol's events only")
    platform = parse_platform(args.platform)
    workloads = [parse_workload(path, f"w{i}") for i, path in enumerate(args.workload)]
    engine = Engine(platform, workloads, options_of(args))
    talk = conversation(engine, json_codec.Codec.name)
    waited = 0.0  # wall time the decision process took (Batsim's scheduling_time)
    request = next(talk)
    try:
        while True:
            asked = time.monotonic()
            reply = yield request
            waited += time.monotonic() - asked
            try:
                request = talk.send(reply)
            except StopIteration:
                break
    except Deadlock:
        # Batsim still writes its outputs after SimGrid's deadlock (as the process does)
        write_outputs(args.export, engine, waited, time.monotonic() - started)
        raise
    write_outputs(args.export, engine, waited, time.monotonic() - started)
