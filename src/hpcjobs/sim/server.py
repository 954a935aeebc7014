"""The simulator's request/reply loop: ask the decision process, apply its reply, until
SIMULATION_ENDS has been answered (the transport is :mod:`hpcjobs.batsim_protocol`'s);
with batprotocol, the decision process's hello first."""

from __future__ import annotations

import dataclasses
import logging
import re

from typing import Optional

from ..batsim_protocol.codecs import get_codec
from ..batsim_protocol.events import Message
from ..batsim_protocol.transports import Channel
from ..batsim_protocol.transports.direct import Conversation
from ..batsim_protocol.transports.unix import UnixServerChannel
from ..batsim_protocol.transports.zeromq import ReqChannel
from .engine import Engine, Options
from ..batsim_protocol.errors import ProtocolError
from .errors import ProtocolViolation

log = logging.getLogger(__name__)


#: a released batprotocol version ("0.1.0"), as EDCHelloEvent.batprotocol_version expects
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


def open_channel(protocol: str, endpoint: str, timeout: float, redis_url: Optional[str]) -> Channel:
    """Batsim's end of a connection speaking ``protocol``: ZeroMQ REQ for json and
    batprotocol; for legacy a Unix socket served at ``endpoint`` (a path), with the job
    data published in the Redis at ``redis_url``."""
    codec = get_codec(protocol)
    if protocol != "legacy":
        return ReqChannel(endpoint, codec, timeout)
    assert redis_url is not None
    # imported here: the redis client takes 0.2 s to import, which only this protocol needs
    from ..batsim_protocol import redis_store
    client = redis_store.connect(redis_url)
    return redis_store.PublishingChannel(UnixServerChannel(endpoint, codec, timeout), client,
                                         redis_store.prefix_for(endpoint))


def conversation(engine: Engine, protocol: str = "", received: int = 0) -> Conversation:
    """The request/reply loop as the Batsim end of a conversation: yields each request,
    is sent its reply, returns once SIMULATION_ENDS has been answered. A reply the
    engine refuses is named by ``protocol`` and its number (``received`` replies came
    before), as the codecs name the replies they cannot read."""
    events = engine.simulation_begins()
    while True:
        reply = yield Message(engine.shown_now, events)
        received += 1
        if engine.ended:
            ignored = [e for e in reply.events if e["type"] != "NOP"]  # legacy: "nothing to say"
            if ignored:
                log.warning("ignoring %d event(s) in the reply to SIMULATION_ENDS", len(ignored))
            return
        try:
            engine.apply_reply(reply.now, reply.events)
        except ProtocolError as exc:
            raise exc.at(protocol, received) if protocol else exc
        events = engine.next_events()


def serve(engine: Engine, channel: Channel, protocol: str = "", received: int = 0) -> None:
    """Run :func:`conversation` over ``channel`` until SIMULATION_ENDS has been answered."""
    talk = conversation(engine, protocol, received)
    request = next(talk)
    while True:
        try:
            request = talk.send(channel.exchange(request))
        except StopIteration:
            return


def hello(channel: Channel, options: Options, protocol: str = "") -> Options:
    """batprotocol's opening (:func:`_hello`); a refusal names ``protocol`` and message 1."""
    try:
        return _hello(channel, options)
    except ProtocolError as exc:
        raise exc.at(protocol, 1) if protocol else exc


def _hello(channel: Channel, options: Options) -> Options:
    """batprotocol's opening: an empty message, answered by exactly one EDC_HELLO whose
    requested features (dynamic registration, acknowledgements, profile reuse and
    forwarding) switch on what the command line did not; SIMULATION_BEGINS follows."""
    reply = channel.exchange(Message(0.0, []))
    kinds = [e["type"] for e in reply.events]
    if kinds != ["EDC_HELLO"]:
        raise ProtocolViolation(f"the decision process's first reply must hold exactly one EDCHelloEvent, "
                                f"not {kinds}")
    data = reply.events[0]["data"]
    # the schema's rules on the hello's strings: a released batprotocol version, and no
    # comma or double quote in the decision component's name, version and commit
    if not _VERSION.fullmatch(str(data.get("batprotocol_version", ""))):
        raise ProtocolViolation(f"EDCHelloEvent: batprotocol_version {data.get('batprotocol_version')!r} is not a "
                                "released version (such as '0.1.0')")
    for field in ("decision_component_name", "decision_component_version", "decision_component_commit"):
        value = data.get(field)
        if value is not None and ("," in value or '"' in value):
            raise ProtocolViolation(f"EDCHelloEvent: {field} {value!r} contains a comma or a double quote, "
                                    "which batprotocol forbids")
    asked = data["requested_simulation_features"]
    dynamic = options.dynamic_jobs or asked["dynamic_registration"]
    log.info("EDC hello from %s %s", reply.events[0]["data"]["decision_component_name"],
             reply.events[0]["data"]["decision_component_version"])
    return dataclasses.replace(
        options, dynamic_jobs=dynamic,
        acknowledge_dynamic_jobs=options.acknowledge_dynamic_jobs or asked["acknowledge_dynamic_jobs"],
        profile_reuse=options.profile_reuse or asked["profile_reuse"],
        forward_profiles=options.forward_profiles or asked["forward_profiles_on_job_submission"],
        forward_profiles_on_begins=asked["forward_profiles_on_simulation_begins"], host_details=True)
