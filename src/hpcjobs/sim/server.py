"""The simulator's request/reply loop: ask the decision process, apply its reply, until
SIMULATION_ENDS has been answered (the transport is :mod:`hpcjobs.batsim_protocol`'s)."""

from __future__ import annotations

import logging

from ..batsim_protocol.events import Message
from ..batsim_protocol.transports import Channel
from .engine import Engine

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
