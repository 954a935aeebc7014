"""A standalone decision process: our RFC 27 job manager and schedulers (FCFS, EASY,
third-party ones) deciding for a Batsim that runs a static workload, as pybatsim's
users run their schedulers.

    python -m hpcjobs.executors.batsim.decide -s ipc:///tmp/dp.sock --scheduler easy
    hpcjobs-schedule -s tcp://127.0.0.1:28000 --protocol batprotocol

Start it, then start Batsim (any generation the protocol stack speaks: real Batsim or
``hpcjobs.sim``) with the same endpoint and the workload; Batsim writes its outputs as
usual. Every job of the workload goes to the scheduler as it is submitted; its
decisions go back as EXECUTE_JOB / REJECT_JOB. Exit codes: 0 after SIMULATION_ENDS,
1 bad command line, 3 protocol error (or Batsim's SimulationError), 4 Batsim gone
(``--timeout``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Optional

from ...batsim_protocol import events as protocol
from ...batsim_protocol.codecs import NAMES, get_codec
from ...batsim_protocol.errors import BatsimError, PeerGone, ProtocolError
from ...batsim_protocol.events import Message
from ...batsim_protocol.transports import Endpoint
from ...batsim_protocol.transports.unix import UnixClientEndpoint
from ...batsim_protocol.transports.zeromq import RepEndpoint
from ...job import Job
from ...state import JobStatus
from . import schedulers
from .jobmanager import JobManager
from .schedulers.base import Scheduler

__all__ = ["decide", "main"]

log = logging.getLogger(__name__)


def _no_report(job: Job, status: JobStatus, ran: bool) -> None:
    """Static jobs have no PSI/J job to report to."""


def decide(endpoint: Endpoint, scheduler: Scheduler, hello: bool, timeout: float = 0.0) -> None:
    """Answer Batsim's messages on ``endpoint`` until SIMULATION_ENDS (with ``hello``:
    batprotocol's opening first); ``timeout`` > 0: ``PeerGone`` after that many
    seconds without a message."""
    jm = JobManager(scheduler, _no_report, adopt_static=True)
    last = time.monotonic()

    def alive() -> None:
        if timeout and time.monotonic() - last > timeout:
            raise PeerGone(f"no message from Batsim within {timeout:g} s")

    msg = endpoint.receive(alive)
    if hello:
        # a static workload needs no simulation feature
        endpoint.send(Message(msg.now, [protocol.edc_hello(msg.now)]))
        msg = endpoint.receive(alive)
    begins = [e for e in msg.events if e["type"] == "SIMULATION_BEGINS"]
    if not begins:
        raise ProtocolError(f"Batsim's first message has no SIMULATION_BEGINS: {msg.events!r}"[:300])
    resources = begins[0]["data"].get("compute_resources", [])
    jm.begin(begins[0]["data"], min((r.get("core_count", 1) for r in resources), default=1))
    while True:
        last = time.monotonic()
        for event in msg.events:
            if event["type"] == "SIMULATION_ERROR":
                raise ProtocolError(f"Batsim stopped: {event['data'].get('error')}")
        decisions = jm.handle(msg.events, msg.now)
        if any(e["type"] == "SIMULATION_ENDS" for e in msg.events):
            endpoint.send(Message(msg.now, []))
            return
        endpoint.send(Message(msg.now, decisions))
        msg = endpoint.receive(alive)


def open_endpoint(protocol: str, where: str, redis_url: Optional[str], connect_timeout: float) -> Endpoint:
    """The decision process's end of a connection speaking ``protocol``: a ZeroMQ REP
    socket bound at ``where``, or (legacy) a client of Batsim's Unix socket ``where``
    reading job data from the Redis at ``redis_url``."""
    codec = get_codec(protocol)
    if protocol != "legacy":
        return RepEndpoint(where, codec)
    if not redis_url:
        raise ValueError("--protocol legacy needs --redis-url (Batsim writes the job data there)")
    # imported here: the redis client takes 0.2 s to import, which only this protocol needs
    from ...batsim_protocol import redis_store
    client = redis_store.connect(redis_url)
    return redis_store.ReadingEndpoint(UnixClientEndpoint(where, codec, connect_timeout), client,
                                       redis_store.prefix_for(where))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hpcjobs-schedule", description=__doc__.split("\n\n")[0])
    parser.add_argument("-s", "--socket-endpoint", default="tcp://*:28000",
                        help="where Batsim connects: tcp://... or ipc://... (default %(default)s)")
    parser.add_argument("--protocol", choices=NAMES, default="json",
                        help="json (Batsim 3-4, default), batprotocol (Batsim 5; batprotocol_json: its JSON "
                             "form) or legacy (Batsim < 1.0: "
                             "-s is Batsim's Unix socket path; job data come from --redis-url)")
    parser.add_argument("--redis-url", help="with --protocol legacy: the Redis Batsim writes job data to")
    parser.add_argument("--scheduler", default="fcfs",
                        help="fcfs, easy or a third-party name (entry points %s)" % schedulers.GROUP)
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="give up after this many seconds without a message (0: never)")
    parser.add_argument("-q", "--quiet", action="store_true")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Console-script entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="hpcjobs-schedule: %(levelname)s: %(message)s", stream=sys.stderr)
    endpoint: Optional[Endpoint] = None
    try:
        scheduler = schedulers.load(args.scheduler)
        endpoint = open_endpoint(args.protocol, args.socket_endpoint, args.redis_url, args.timeout or 30.0)
        decide(endpoint, scheduler, get_codec(args.protocol).hello, args.timeout)
        return 0
    except BatsimError as exc:
        log.error("%s", exc)
        return exc.exit_code
    except (LookupError, TypeError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        log.error("interrupted")
        return 130
    finally:
        if endpoint is not None:
            endpoint.close()


if __name__ == "__main__":
    sys.exit(main())
