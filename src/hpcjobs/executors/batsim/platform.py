"""SimGrid platforms for the Batsim executor: write one from a host count, read the
few facts the executor needs (cores per host) from a given one with the protocol
stack's platform reader (the one the simulator uses: the same master-host rule).

The written platform has the shape of the recorded Batsim runs'
``zero_latency_platform.xml`` (fixtures/batsim-4.2.1/inputs): clusters of compute hosts
and a one-host master cluster, joined by a backbone, all with zero latency. A delay
profile of N seconds then lasts exactly N simulated seconds, so simulated times are
round numbers a user can reason about. Batsim numbers compute resources in host-name
order, so names are zero-padded (``node007``) to keep resource ``i`` on host
``node<i>``: a cluster's radical cannot pad, so there is one cluster per number of
digits (``node00``-``node09`` has prefix ``node0``, ``node10``-``node63`` prefix ``node``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from ...batsim_protocol.errors import InputError
from ...batsim_protocol.platform import MASTER_HOST_NAME as MASTER_HOST
from ...batsim_protocol.platform import parse_platform
from ...private import create

__all__ = ["write_platform", "cores_per_host"]


def _speed(speed: Union[str, float]) -> str:
    # SimGrid reads a bare number as flop/s; strings carry their unit ("1Gf")
    return speed if isinstance(speed, str) else f"{float(speed)!r}f"


def _attribute(value: str) -> str:
    """``value`` as a double-quoted XML attribute (xml.sax.saxutils.quoteattr would do,
    but importing it imports urllib, a fifth of this executor's import time)."""
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), ('"', "&quot;"), ("\n", "&#10;"),
                         ("\r", "&#13;"), ("\t", "&#9;")):
        value = value.replace(char, entity)
    return f'"{value}"'


def write_platform(path: Path, hosts: int, cores: int, speed: Union[str, float]) -> Path:
    """Write a platform of ``hosts`` compute hosts (``cores`` cores of ``speed``
    each) plus the master host to ``path``; return ``path``."""
    width = len(str(hosts - 1))
    clusters = []
    for digits in range(1, width + 1):
        first = 0 if digits == 1 else 10 ** (digits - 1)
        last = min(10 ** digits, hosts) - 1
        if first <= last:
            clusters.append((f"C{digits}", "node" + "0" * (width - digits), first, last))
    lines = []
    for cid, prefix, first, last in clusters:
        radical = str(first) if first == last else f"{first}-{last}"
        lines.append(f'    <cluster id="{cid}" prefix="{prefix}" suffix="" radical="{radical}" '
                     f'speed={_attribute(_speed(speed))} core="{cores}" bw="10GBps" lat="0us"/>\n')
    lines.append(f'    <cluster id="M" prefix="{MASTER_HOST}" suffix="" radical="0-0" speed="1Gf" '
                 'bw="10GBps" lat="0us">\n      <prop id="role" value="master"/>\n    </cluster>\n')
    lines.append('    <link id="backbone" bandwidth="10GBps" latency="0us"/>\n')
    zones = [(cid, f"{prefix}{cid}_router") for cid, prefix, _, _ in clusters]
    zones.append(("M", f"{MASTER_HOST}M_router"))
    # routing="Full" needs a route between every two zones (SimGrid makes them symmetric)
    for i, (src, gw_src) in enumerate(zones):
        for dst, gw_dst in zones[i + 1:]:
            lines.append(f'    <zoneRoute src="{src}" dst="{dst}" gw_src="{gw_src}" gw_dst="{gw_dst}">'
                         '<link_ctn id="backbone"/></zoneRoute>\n')
    text = ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            '  <zone id="AS0" routing="Full">\n' + "".join(lines) + "  </zone>\n</platform>\n")
    create(path, text.encode("utf-8"))
    return path


def cores_per_host(path: Path) -> int:
    """The smallest core count of the compute hosts of platform file ``path`` (so a
    job sized by processes fits on any host); ``ValueError`` if the file is unusable."""
    try:
        compute = parse_platform(str(path)).compute
    except InputError as e:
        raise ValueError(f"batsim config 'platform': {e}") from None
    return min((host.cores for host in compute), default=1)
