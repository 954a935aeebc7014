"""SimGrid value-with-unit strings: speeds ("98.095Mf"), bandwidths ("1GBps"), times ("15us").

SimGrid accepts SI prefixes (k, M, G, ...) and, for bandwidth, binary ones (Ki, Mi, ...);
a bare number uses the base unit (flop/s, byte/s, second).
"""

from __future__ import annotations

import re

from .errors import InputError

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
       "Z": 1e21, "Y": 1e24}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_TIME = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0,
         "h": 3600.0, "d": 86400.0, "w": 604800.0}
# no space between the number and its unit: SimGrid's "unknown unit:  Gf" for "1 Gf"
_NUMBER = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(\S*)\s*$")


def _split(text: str, what: str) -> tuple[float, str]:
    match = _NUMBER.match(text)
    if match is None:
        raise InputError(f"{what}: {text!r} is not a number with an optional unit")
    return float(match.group(1)), match.group(2)


def _prefixed(text: str, what: str, bases: dict[str, float], binary: bool) -> float:
    value, unit = _split(text, what)
    if unit == "":
        return value
    for base, factor in bases.items():
        if unit.endswith(base):
            prefix = unit[: -len(base)]
            if prefix in _SI:
                return value * _SI[prefix] * factor
            if binary and prefix in _BIN:
                return value * _BIN[prefix] * factor
    raise InputError(f"{what}: unknown unit {unit!r} in {text!r}")


def speed(text: str, what: str, pstate: int = 0) -> float:
    """Flop/s; of a multi-pstate list ("100Mf,50Mf") the speed of ``pstate``, every
    one of them read (SimGrid refuses the platform for any it cannot read)."""
    speeds = [_prefixed(one, what, {"flops": 1.0, "f": 1.0}, binary=False) for one in text.split(",")]
    if not 0 <= pstate < len(speeds):
        raise InputError(f"{what}: pstate {pstate} does not exist in {text!r}")
    return speeds[pstate]


def bandwidth(text: str, what: str) -> float:
    """Bytes per second ("Bps" bytes, "bps" bits); > 0 (SimGrid takes 0 or less but never
    completes a transfer over such a link: Batsim's run ends in a deadlock)."""
    value = _prefixed(text, what, {"Bps": 1.0, "bps": 0.125}, binary=True)
    if value <= 0:
        raise InputError(f"{what}: {text!r} is not a positive bandwidth")
    return value


def duration(text: str, what: str) -> float:
    """Seconds."""
    value, unit = _split(text, what)
    if unit not in _TIME:
        raise InputError(f"{what}: unknown time unit {unit!r} in {text!r}")
    return value * _TIME[unit]
