"""The simulator's request/reply loop: ask the decision process, apply its reply, until
SIMULATION_ENDS has been answered (the transport is :mod:`hpcjobs.batsim_protocol`'s);
with batprotocol, the decision process's hello first."""

from __future__ import annotations

import dataclasses
import logging

from ..batsim_protocol.events import Message
from ..batsim_protocol.transports import Channel
from .engine import Engine, Options
from .errors import ProtocolViolation

log = logging.getLogger(__name__)


def serve(engine: Engine, channel: Channel) -> None:
    """Run the request/reply loop until SIMULATION_ENDS has been answered."""
    events = engine.simulation_begins()
    while True:
        reply = channel.exchange(Message(engine.now, events))
        if engine.ended:
            if reply.events:
                log.warning("ignoring %d event(s) in the reply to SIMULATION_ENDS", len(reply.events))
            return
        engine.apply_reply(reply.now, reply.events)
        events = engine.next_events()


def hello(channel: Channel, options: Options) -> Options:
    """batprotocol's opening: an empty message, answered by exactly one EDC_HELLO whose
    requested features (dynamic registration, acknowledgements, profile reuse and
    forwarding) switch on what the command line did not; SIMULATION_BEGINS follows."""
    reply = channel.exchange(Message(0.0, []))
    kinds = [e["type"] for e in reply.events]
    if kinds != ["EDC_HELLO"]:
        raise ProtocolViolation(f"the decision process's first reply must hold exactly one EDCHelloEvent, "
                                f"not {kinds}")
    asked = reply.events[0]["data"]["requested_simulation_features"]
    dynamic = options.dynamic_jobs or asked["dynamic_registration"]
    log.info("EDC hello from %s %s", reply.events[0]["data"]["decision_component_name"],
             reply.events[0]["data"]["decision_component_version"])
    return dataclasses.replace(
        options, dynamic_jobs=dynamic,
        acknowledge_dynamic_jobs=options.acknowledge_dynamic_jobs or asked["acknowledge_dynamic_jobs"],
        profile_reuse=options.profile_reuse or asked["profile_reuse"],
        forward_profiles=options.forward_profiles or asked["forward_profiles_on_job_submission"],
        forward_profiles_on_begins=asked["forward_profiles_on_simulation_begins"], host_details=True)
