"""SimGrid platform files (version 4.1): hosts, clusters, links and routes.

Supported: ``zone`` (routing Full or None, nested), ``host`` (speed in any SimGrid
unit, ``core``, ``prop``), ``router``, ``cluster`` (flat topology: per-host links,
optional backbone and loopback), ``link`` (SHARED / FATPIPE / SPLITDUPLEX), ``route``
and ``zoneRoute`` with ``link_ctn``, ``prop`` on zones. Anything else is refused with
its name (see docs/sim.md). As in Batsim, the host with property ``role="master"`` (or,
failing that, the host named ``master_host``) runs Batsim itself and is not a compute
resource; compute resources are numbered in host-name order, as SimGrid lists hosts.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from . import units
from .errors import InputError

MASTER_HOST_NAME = "master_host"

#: the document type SimGrid 3.32's parser requires before <platform>, with one of these
#: two system ids exactly (any other prolog: "Unexpected character `<' in prolog", "Bad
#: declaration <!DOCTYPE platform SYSTEM "simgrid.dtd">")
_DOCTYPE = re.compile(rb"""<!DOCTYPE\s+platform\s+SYSTEM\s+(["'])(https://simgrid\.org/simgrid\.dtd|"""
                      rb"""http://simgrid\.gforge\.inria\.fr/simgrid/simgrid\.dtd)\1\s*>""")

#: the order SimGrid's DTD imposes on the children of <platform> and of a zone: the
#: element of a lower rank cannot follow one of a higher rank
_PLATFORM_ORDER = ({"config": 0, "zone": 1, "AS": 1}, "<config> first, then the <zone>")
#: a zone holds, after its <prop>s, either hosts, links and routers then routes, or
#: (when its first element is one) zones, clusters and links then zoneRoutes
_HOSTS_ZONE = ({"prop": 0, "host": 1, "link": 1, "router": 1, "route": 2},
               "its <prop>s, then hosts, links and routers, then routes")
_ZONES_ZONE = ({"prop": 0, "zone": 1, "AS": 1, "cluster": 1, "link": 1, "zoneRoute": 2, "ASroute": 2},
               "a zone whose first element is a zone or cluster: its <prop>s, then zones, clusters "
               "and links, then zoneRoutes")
_ZONE_TAGS = {tag for order in (_HOSTS_ZONE, _ZONES_ZONE) for tag in order[0]}

_STOI = re.compile(r"\s*([+-]?\d+)")
_STOD = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")

#: Batsim's host roles ("" or none: a compute node)
_ROLES = ("", "compute_node", "master", "storage")

#: the attributes SimGrid 3.32's DTD (platform version 4.1) allows on the elements read
#: here, required ones first (its parser refuses any other: "Bad attribute `foo' in
#: `host' element start tag", "Required attribute `suffix' not set for `cluster' element")
_ATTRIBUTES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "platform": ((), ("version",)),
    "zone": (("id", "routing"), ()),
    "host": (("id", "speed"), ("core", "pstate", "coordinates", "availability_file", "state_file",
                               "speed_file")),
    "router": (("id",), ("coordinates",)),
    "link": (("id", "bandwidth"), ("latency", "sharing_policy", "bandwidth_file", "latency_file",
                                   "state_file")),
    "route": (("src", "dst"), ("symmetrical",)),
    "zoneRoute": (("src", "dst", "gw_src", "gw_dst"), ("symmetrical",)),
    "link_ctn": (("id",), ("direction",)),
    "cluster": (("id", "prefix", "suffix", "radical", "speed", "bw", "lat"),
                ("core", "sharing_policy", "topology", "topo_parameters", "bb_bw", "bb_lat",
                 "bb_sharing_policy", "loopback_bw", "loopback_lat", "limiter_link", "router_id")),
    "prop": (("id", "value"), ()),
}
_ATTRIBUTES["AS"] = _ATTRIBUTES["zone"]
_ATTRIBUTES["ASroute"] = _ATTRIBUTES["zoneRoute"]
#: the values the DTD enumerates (another is a "Bad attribute" to SimGrid's parser)
_YES_NO = ("YES", "NO", "yes", "no")
_VALUES = {("route", "symmetrical"): _YES_NO, ("zoneRoute", "symmetrical"): _YES_NO,
           ("ASroute", "symmetrical"): _YES_NO, ("link_ctn", "direction"): ("UP", "DOWN", "NONE"),
           ("link", "sharing_policy"): ("SHARED", "SPLITDUPLEX", "FATPIPE", "WIFI"),
           ("cluster", "sharing_policy"): ("SHARED", "SPLITDUPLEX", "FATPIPE"),
           ("cluster", "bb_sharing_policy"): ("SHARED", "FATPIPE"),
           ("cluster", "topology"): ("FLAT", "TORUS", "FAT_TREE", "DRAGONFLY")}


@dataclass(frozen=True)
class Link:
    """A network link; FATPIPE links do not share bandwidth between flows."""

    name: str
    bandwidth: float
    latency: float
    fatpipe: bool = False


@dataclass
class Host:
    """A host of the platform (compute resource unless it is the master)."""

    name: str
    speed: float
    cores: int
    properties: dict[str, str]
    zone_properties: dict[str, str]


@dataclass
class _Zone:
    name: str
    parent: _Zone | None
    routing: str
    properties: dict[str, str] = field(default_factory=dict)
    # explicit routes: (src, dst) -> (gw_src, gw_dst, links); gateways are None for host routes
    routes: dict[tuple[str, str], tuple[str | None, str | None, list[Link]]] = field(default_factory=dict)
    cluster: _Cluster | None = None


@dataclass
class _Cluster:
    host_links: dict[str, tuple[Link, Link]]  # host -> (up, down)
    backbone: Link | None
    loopback: Link | None
    router: str


class Platform:
    """Compute resources (by Batsim id) and the routes between any two hosts."""

    def __init__(self, hosts: list[Host], master: str, where: dict[str, _Zone], path: str = "") -> None:
        self.compute = sorted((h for h in hosts if h.name != master), key=lambda h: h.name)
        self.master = master
        self.path = path
        self._where = where
        self._route_cache: dict[tuple[str, str], list[Link]] = {}

    def route(self, src: str, dst: str) -> list[Link]:
        """Links crossed from host ``src`` to host ``dst`` (cached)."""
        key = (src, dst)
        cached = self._route_cache.get(key)
        if cached is None:
            cached = self._route(src, dst)
            self._route_cache[key] = cached
        return cached

    def message_time(self, src: str) -> float:
        """How long one of Batsim's internal messages (one byte) takes from host ``src``
        to the master host, where Batsim's server runs: the route's latency plus a byte
        at its narrowest bandwidth. From the master to itself, a cluster without a
        loopback sends it up and down the master's own link, as SimGrid does."""
        links = self.route(src, self.master)
        if not links and src == self.master:
            cluster = self._where[src].cluster
            if cluster is not None and src in cluster.host_links:
                links = list(cluster.host_links[src])
        if not links:
            return 0.0
        return sum(link.latency for link in links) + 1.0 / min(link.bandwidth for link in links)

    def _route(self, src: str, dst: str) -> list[Link]:
        zs, zd = self._where[src], self._where[dst]
        if zs is zd:
            return _local_route(zs, src, dst, self.path)
        ancestors_s = _ancestors(zs)
        ancestors_d = _ancestors(zd)
        common = next(z for z in ancestors_s if z in ancestors_d)
        point_s = src if zs is common else _child_towards(zs, common).name
        point_d = dst if zd is common else _child_towards(zd, common).name
        gw_s, gw_d, links = _lookup(common, point_s, point_d, self.path)
        head = self.route(src, gw_s) if gw_s is not None and gw_s != src else []
        tail = self.route(gw_d, dst) if gw_d is not None and gw_d != dst else []
        return head + links + tail


def _ancestors(zone: _Zone) -> list[_Zone]:
    chain: list[_Zone] = []
    cur: _Zone | None = zone
    while cur is not None:
        chain.append(cur)
        cur = cur.parent
    return chain


def _child_towards(zone: _Zone, ancestor: _Zone) -> _Zone:
    while zone.parent is not ancestor:
        assert zone.parent is not None
        zone = zone.parent
    return zone


def _lookup(zone: _Zone, src: str, dst: str, path: str) -> tuple[str | None, str | None, list[Link]]:
    if (src, dst) in zone.routes:
        return zone.routes[(src, dst)]
    raise InputError(f"platform {path}: no route from {src!r} to {dst!r} in zone {zone.name!r}")


def _local_route(zone: _Zone, src: str, dst: str, path: str) -> list[Link]:
    cluster = zone.cluster
    if cluster is None:
        if (src, dst) not in zone.routes and (src == dst or zone.routing == "Full"):
            # no loopback declared: SimGrid would refuse; we treat it as free. Two hosts
            # of a Full zone without a route between them: SimGrid's FullZone finds an
            # empty route (no link), and Batsim runs on such a platform
            return []
        return _lookup(zone, src, dst, path)[2]
    if src == dst:
        return [cluster.loopback] if cluster.loopback is not None else []
    links: list[Link] = []
    if src in cluster.host_links:
        links.append(cluster.host_links[src][0])
    if cluster.backbone is not None:
        links.append(cluster.backbone)
    if dst in cluster.host_links:
        links.append(cluster.host_links[dst][1])
    return links


def _label(elem: ET.Element) -> str:
    """``<host> 'a'`` for messages (the tag alone when the element has no id)."""
    ident = elem.get("id")
    return f"<{elem.tag}>" if ident is None else f"<{elem.tag}> {ident!r}"


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.hosts: list[Host] = []
        self.links: dict[str, Link] = {}
        self.splitduplex: set[str] = set()  # links declared SPLITDUPLEX
        self.where: dict[str, _Zone] = {}

    def fail(self, message: str) -> InputError:
        return InputError(f"platform {self.path}: {message}")

    def attr(self, elem: ET.Element, name: str, default: str | None = None) -> str:
        value = elem.get(name, default)
        if value is None:
            raise self.fail(f"<{elem.tag}> lacks the required attribute {name!r}")
        return value

    def parse(self) -> Platform:
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
            root = ET.fromstring(data)
        except (OSError, ET.ParseError) as exc:
            raise self.fail(f"cannot read: {exc}") from None
        if root.tag != "platform":
            raise self.fail(f"root element is <{root.tag}>, expected <platform>")
        if not _DOCTYPE.search(data, 0, data.find(b"<platform")):
            raise self.fail('SimGrid needs <!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd"> '
                            "(or the older http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd) before <platform>")
        version = root.get("version", "")
        # SimGrid 3.32 reads the version as a number (std::stod: "4.1.1" is 4.1, "4.2"
        # is 4.20) and takes 4.0 to 4.1: "THIS FILE IS TOO OLD", "... COMES FROM THE FUTURE"
        number = _STOD.match(version)
        if number is None or not 4.0 <= float(number.group(1)) <= 4.1:
            raise self.fail(f"platform version {version!r} is not supported (SimGrid 3.32 reads 4.0 to 4.1)")
        zones = [c for c in root if c.tag in ("zone", "AS")]
        for child in root:
            if child.tag not in ("zone", "AS", "config"):
                raise self.fail(f"unsupported element <{child.tag}> at top level")
        self.check_order(root, _PLATFORM_ORDER)
        if len(zones) != 1:
            raise self.fail("expected exactly one top-level <zone>")
        self.check_attributes(root)
        try:
            self.zone(zones[0], None)
        except InputError as exc:
            if str(exc).startswith("platform "):
                raise
            raise self.fail(str(exc)) from None  # a unit's error names the attribute, not the file
        master = self.master()
        for host in self.hosts:
            if host.name != master and host.speed <= 0:
                # Batsim: "host 'a' is a compute node but has an invalid (non-positive)
                # computing speed"
                raise self.fail(f"host {host.name!r} is a compute node with a non-positive speed ({host.speed})")
        return Platform(self.hosts, master, self.where, self.path)

    def check_attributes(self, root: ET.Element) -> None:
        """Attributes as SimGrid's DTD wants them (see _ATTRIBUTES); SimGrid refuses the file."""
        for elem in root.iter():
            required, optional = _ATTRIBUTES.get(str(elem.tag), ((), None))
            if optional is None:
                continue  # another element: accepted or refused by name where it is read
            for name in required:
                if name not in elem.attrib:
                    raise self.fail(f"<{elem.tag}> lacks the required attribute {name!r}")
            for name, value in elem.attrib.items():
                allowed = _VALUES.get((str(elem.tag), name))
                if allowed is not None and value not in allowed:
                    raise self.fail(f"{_label(elem)}: {name}={value!r} is not one of {', '.join(allowed)}")
                if name not in required and name not in optional:
                    raise self.fail(f"{_label(elem)}: unknown attribute {name!r} "
                                    f"(SimGrid allows {', '.join(required + optional)})")

    def check_order(self, elem: ET.Element, order: tuple[dict[str, int], str]) -> None:
        """Children in the order SimGrid's DTD gives (``order``: tag -> rank, and its
        description); SimGrid refuses the file otherwise ("Starting tag <host> is not
        allowed here")."""
        ranks, description = order
        rank, previous = 0, ""
        for child in elem:
            tag = str(child.tag)
            if tag not in ranks and tag not in _ZONE_TAGS and tag != "config":
                continue  # refused by name where it is read
            this = ranks.get(tag, -1)
            if this < rank:
                raise self.fail(f"{_label(elem)}: <{child.tag}> after <{previous}> "
                                f"(SimGrid wants {description})")
            rank, previous = this, str(child.tag)

    def master(self) -> str:
        for host in self.hosts:
            if host.properties["role"] not in _ROLES:
                # Batsim: "Cannot create any role from string description 'bogus'"
                raise self.fail(f"host {host.name!r}: role {host.properties['role']!r} is not one of "
                                f"{', '.join(filter(None, _ROLES))}")
            if host.properties["role"] == "storage":
                raise self.fail(f"host {host.name!r}: role 'storage' (a storage resource) is not supported")
        by_role = [h.name for h in self.hosts
                   if (h.properties["role"] or h.zone_properties.get("role")) == "master"]
        if len(by_role) > 1:
            raise self.fail(f"several hosts have role=master: {by_role}")
        named = next((h for h in self.hosts if h.name == MASTER_HOST_NAME), None)
        if named is not None:
            # Batsim adds the role master to the host named master_host (its -m default):
            # next to a role of its own it makes "master,master", which no role is ("Cannot
            # create any role from string description"); next to another master host,
            # "There are two master hosts"
            if named.properties["role"]:
                raise self.fail(f"host {MASTER_HOST_NAME!r} has a role property "
                                f"({named.properties['role']!r}): Batsim makes that host the master "
                                "itself and cannot add a second role")
            if by_role and by_role[0] != MASTER_HOST_NAME:
                raise self.fail(f"two master hosts: {MASTER_HOST_NAME!r} (by its name) and "
                                f"{by_role[0]!r} (role=master)")
            return MASTER_HOST_NAME
        if by_role:
            return by_role[0]
        raise self.fail("no master host (a host with <prop id=\"role\" value=\"master\"/> "
                        f"or named {MASTER_HOST_NAME!r}) for Batsim's own processes")

    def props(self, elem: ET.Element) -> dict[str, str]:
        return {self.attr(p, "id"): self.attr(p, "value") for p in elem if p.tag == "prop"}

    def link(self, elem: ET.Element, name: str) -> Link:
        policy = elem.get("sharing_policy", "SHARED")
        if policy not in ("SHARED", "FATPIPE", "SPLITDUPLEX"):
            raise self.fail(f"link {name!r}: unsupported sharing_policy {policy!r}")
        if policy == "SPLITDUPLEX":
            self.splitduplex.add(name)
        # (no latency is SimGrid's "cannot parse number": the attribute is needed)
        return Link(name,
                    units.bandwidth(self.attr(elem, "bandwidth"), f"link {name!r} bandwidth"),
                    units.duration(self.attr(elem, "latency"), f"link {name!r} latency"),
                    fatpipe=policy == "FATPIPE")

    def add_host(self, name: str, speed: float, cores: int, props: dict[str, str], zone: _Zone) -> None:
        if name in self.where:
            raise self.fail(f"duplicate host or router name {name!r}")
        merged = {"role": ""}  # Batsim reports an empty role for plain compute hosts
        merged.update(props)
        self.hosts.append(Host(name, speed, cores, merged, dict(zone.properties)))
        self.where[name] = zone

    def route_links(self, elem: ET.Element) -> list[Link]:
        links: list[Link] = []
        for ctn in elem:
            if ctn.tag != "link_ctn":
                raise self.fail(f"unsupported element <{ctn.tag}> in <{elem.tag}>")
            lid = self.attr(ctn, "id")
            direction = ctn.get("direction", "NONE")
            if direction != "NONE":
                lid = f"{lid}_{direction}"
            # as in SimGrid, a SPLITDUPLEX link 'l' is two links 'l_UP' and 'l_DOWN' (named so,
            # or by direction="UP"): 'l' alone, or l_UP of another link, is "Link not found"
            base, _, half = lid.rpartition("_")
            if half in ("UP", "DOWN") and base in self.splitduplex:
                lid = base
            elif lid not in self.links or lid in self.splitduplex:
                raise self.fail(f"<{elem.tag}> uses unknown link {lid!r}" + (
                    f" (the SPLITDUPLEX link {lid!r} is {lid}_UP and {lid}_DOWN)" if lid in self.splitduplex else ""))
            links.append(self.links[lid])
        return links

    def zone(self, elem: ET.Element, parent: _Zone | None) -> None:
        name = self.attr(elem, "id")
        routing = elem.get("routing", "None")
        # SimGrid ignores the case of routing kinds ("full", "NONE")
        routing = {"full": "Full", "none": "None"}.get(routing.lower(), routing)
        if routing not in ("Full", "None"):
            raise self.fail(f"zone {name!r}: routing {routing!r} is not supported (Full, None)")
        zone = _Zone(name, parent, routing, self.props(elem))
        self.where[name] = zone
        first = next((str(c.tag) for c in elem if c.tag != "prop"), "")
        self.check_order(elem, _ZONES_ZONE if first in ("zone", "AS", "cluster") else _HOSTS_ZONE)
        for child in elem:
            tag = child.tag
            if tag == "prop":
                continue
            if tag in ("zone", "AS"):
                self.zone(child, zone)
            elif tag == "cluster":
                self.cluster(child, zone)
            elif tag == "host":
                hname = self.attr(child, "id")
                for sub in child:
                    if sub.tag != "prop":
                        raise self.fail(f"host {hname!r}: unsupported element <{sub.tag}>")
                self.refuse_dynamic(child, hname)
                self.add_host(hname, units.speed(self.attr(child, "speed"), f"host {hname!r} speed",
                                                 self.integer(child, "pstate", "0", hname, 0)),
                              self.integer(child, "core", "1", hname, 1), self.props(child), zone)
            elif tag == "router":
                rname = self.attr(child, "id")
                self.where[rname] = zone
            elif tag == "link":
                lname = self.attr(child, "id")
                self.refuse_dynamic(child, lname)
                self.links[lname] = self.link(child, lname)
            elif tag in ("route", "zoneRoute", "ASroute"):
                self.route(child, zone)
            else:
                raise self.fail(f"zone {name!r}: unsupported element <{tag}>")

    def integer(self, elem: ET.Element, attr: str, default: str, name: str, minimum: int) -> int:
        """An integer as SimGrid reads one (std::stoi): leading blanks, a sign, digits,
        and whatever follows ignored: core="2.9" is 2 cores, "0x2" is 0."""
        text = elem.get(attr, default)
        match = _STOI.match(text)
        if match is None or int(match.group(1)) < minimum:
            raise self.fail(f"{name!r}: {attr}={text!r} is not an integer >= {minimum}")
        return int(match.group(1))

    def refuse_dynamic(self, elem: ET.Element, name: str) -> None:
        """Availability, state and speed traces change the platform over time: not modelled."""
        for attr in elem.attrib:
            if attr.endswith("_file") and elem.get(attr):  # "" is no trace
                raise self.fail(f"<{elem.tag}> {name!r}: attribute {attr!r} (a trace file) is not supported")

    def route(self, elem: ET.Element, zone: _Zone) -> None:
        src, dst = self.attr(elem, "src"), self.attr(elem, "dst")
        gw_src = elem.get("gw_src")
        gw_dst = elem.get("gw_dst")
        for end in ("src", "dst", "gw_src", "gw_dst"):
            point = elem.get(end)
            if point is not None and point not in self.where:
                # SimGrid: "Route dst='zz' does name a node"
                raise self.fail(f"<{elem.tag}> {end}={point!r} names no host, router or zone")
        links = self.route_links(elem)
        zone.routes[(src, dst)] = (gw_src, gw_dst, links)
        if elem.get("symmetrical", "YES").upper() == "YES" and (dst, src) not in zone.routes:
            zone.routes[(dst, src)] = (gw_dst, gw_src, list(reversed(links)))

    def cluster(self, elem: ET.Element, parent: _Zone) -> None:
        cid = self.attr(elem, "id")
        topology = elem.get("topology", "FLAT")
        if topology != "FLAT":
            raise self.fail(f"cluster {cid!r}: topology {topology!r} is not supported (FLAT)")
        for sub in elem:
            if sub.tag != "prop":
                raise self.fail(f"cluster {cid!r}: unsupported element <{sub.tag}>")
        zone = _Zone(cid, parent, "Cluster", self.props(elem))
        self.where[cid] = zone
        prefix, suffix = self.attr(elem, "prefix"), self.attr(elem, "suffix", "")
        speed = units.speed(self.attr(elem, "speed"), f"cluster {cid!r} speed")
        cores = self.integer(elem, "core", "1", cid, 1)
        bw = units.bandwidth(self.attr(elem, "bw"), f"cluster {cid!r} bw")
        lat = units.duration(self.attr(elem, "lat"), f"cluster {cid!r} lat")
        fat = elem.get("sharing_policy", "SPLITDUPLEX") == "FATPIPE"
        host_links: dict[str, tuple[Link, Link]] = {}
        for number in self.radical(elem.get("radical", ""), cid):
            hname = f"{prefix}{number}{suffix}"
            self.add_host(hname, speed, cores, {}, zone)
            if elem.get("sharing_policy", "SPLITDUPLEX") == "SPLITDUPLEX":
                up = Link(f"{cid}_link_{number}_UP", bw, lat)
                host_links[hname] = (up, Link(f"{cid}_link_{number}_DOWN", bw, lat))
            else:
                shared = Link(f"{cid}_link_{number}", bw, lat, fatpipe=fat)
                host_links[hname] = (shared, shared)
        backbone = None
        if elem.get("bb_bw") is not None:
            backbone = Link(f"{cid}_backbone",
                            units.bandwidth(self.attr(elem, "bb_bw"), f"cluster {cid!r} bb_bw"),
                            units.duration(elem.get("bb_lat", "0"), f"cluster {cid!r} bb_lat"),
                            fatpipe=elem.get("bb_sharing_policy", "SHARED") == "FATPIPE")
        loopback = None
        if elem.get("loopback_bw") is not None:
            loopback = Link(f"{cid}_loopback",
                            units.bandwidth(self.attr(elem, "loopback_bw"), f"cluster {cid!r} loopback_bw"),
                            units.duration(elem.get("loopback_lat", "0"), f"cluster {cid!r} loopback_lat"),
                            fatpipe=True)
        router = elem.get("router_id", f"{prefix}{cid}_router{suffix}")
        self.where[router] = zone
        zone.cluster = _Cluster(host_links, backbone, loopback, router)

    def radical(self, text: str, cid: str) -> list[int]:
        numbers: list[int] = []
        for part in text.split(","):
            lo, sep, hi = part.strip().partition("-")
            try:
                first = int(lo)
                last = int(hi) if sep else first
            except ValueError:
                raise self.fail(f"cluster {cid!r}: invalid radical {text!r}") from None
            numbers.extend(range(first, last + 1))
        if not numbers:
            raise self.fail(f"cluster {cid!r}: empty radical")
        return numbers


def parse_platform(path: str) -> Platform:
    """Read a SimGrid platform file; raises InputError naming the offending element."""
    return _Parser(path).parse()
