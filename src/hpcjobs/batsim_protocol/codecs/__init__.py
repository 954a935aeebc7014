"""Wire formats of the Batsim protocol: one module per generation.

A codec module defines ``Codec``, a class whose instances turn a :class:`..events.Message`
into bytes and back; :func:`get_codec` finds it by the module's name, so adding a
fourth wire format is adding one module here. Decoding validates the envelope
(a finite ``now``; events with a finite ``timestamp``, a string ``type`` and a ``data``
object) and raises :class:`..errors.ProtocolError` naming the offending field; the
transport adds the protocol's name and the message's number. What the two ends do
differently per generation is asked of the codec (``Codec.hello``), never of the
protocol's name; only the legacy protocol's transport (a Unix socket, job data in
Redis) is chosen by name.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from ..errors import InputError
from ..events import Message

__all__ = ["Codec", "get_codec", "NAMES"]

#: the codecs that exist (module names); the first is the default
NAMES = ("json", "batprotocol", "batprotocol_json", "legacy")


class Codec(Protocol):
    """A wire format of the Batsim protocol."""

    #: the protocol's name in error messages
    name: str
    #: Batsim 5's opening: the decision process answers Batsim's first (empty) message
    #: with an EDC hello, and Batsim says why it stops (SIMULATION_ERROR)
    hello: bool

    def encode(self, message: Message) -> bytes:
        """The bytes of ``message``."""

    def decode(self, raw: bytes) -> Message:
        """The message in ``raw``; ``ProtocolError`` if it is not one."""


def get_codec(name: str) -> Codec:
    """A new codec of protocol ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise InputError(f"unknown Batsim protocol {name!r} (known: {', '.join(NAMES)})")
    module = importlib.import_module(f"{__name__}.{name}")
    codec: Codec = module.Codec()
    return codec
