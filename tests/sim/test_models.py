"""In-process tests of the pure parts: interval sets, SimGrid units, platform routes and
the parallel-task model on a platform with real latencies and bandwidths."""

from __future__ import annotations

from pathlib import Path

import pytest
from simharness import INPUTS

from hpcjobs.batsim_protocol import intervals, units
from hpcjobs.batsim_protocol.errors import InputError, ProtocolError
from hpcjobs.batsim_protocol.platform import parse_platform
from hpcjobs.sim.profiles import Execution
from hpcjobs.sim.workload import check_composed, make_profile


@pytest.mark.parametrize("text, ids, canonical", [
    ("0", [0], "0"), ("1 2 4-8", [1, 2, 4, 5, 6, 7, 8], "1-2 4-8"), ("5 0-2 1", [0, 1, 2, 5], "0-2 5"),
])
def test_interval_sets(text: str, ids: list[int], canonical: str) -> None:
    assert intervals.parse(text) == ids
    assert intervals.format_ids(ids) == canonical


@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "1-x", "+2", "\u0663", "1-", "1--2"])
def test_bad_interval_sets(text: str) -> None:
    with pytest.raises(ProtocolError):
        intervals.parse(text)


def test_simgrid_units() -> None:
    assert units.speed("98.095Mf", "s") == pytest.approx(98.095e6)
    assert units.speed("1Gf,500Mf", "s") == 1e9
    assert units.bandwidth("41.279125MBps", "b") == pytest.approx(41.279125e6)
    assert units.bandwidth("10Gbps", "b") == pytest.approx(1.25e9)
    assert units.bandwidth("1KiBps", "b") == 1024
    assert units.duration("59.904us", "l") == pytest.approx(59.904e-6)
    assert units.duration("1.461517ms", "l") == pytest.approx(1.461517e-3)
    with pytest.raises(InputError, match="unknown unit 'furlongs'"):
        units.speed("3furlongs", "host 'x' speed")


def test_small_platform_routes_and_master() -> None:
    platform = parse_platform(str(INPUTS / "small_platform.xml"))
    assert platform.master == "master_host"
    assert [h.name for h in platform.compute] == ["Bourassa", "Fafard", "Ginette", "Jupiter"]
    route = platform.route("Fafard", "Bourassa")
    assert [link.name for link in route] == ["8", "6", "7"]
    # symmetrical by default
    assert [link.name for link in platform.route("Bourassa", "Fafard")] == ["7", "6", "8"]


def test_cluster_zone_routes() -> None:
    platform = parse_platform(str(INPUTS / "zero_latency_platform.xml"))
    assert platform.master == "master_host0"  # role=master on its cluster
    assert [link.name for link in platform.route("node1", "master_host0")] == [
        "C_link_1_UP", "backbone", "M_link_0_DOWN"]


def test_parallel_task_on_links_with_latency() -> None:
    """Jupiter -> Ginette crosses links 9, 4, 3, 5: 10 MB over the slowest (7.20975 MBps)
    plus the route latency; computation 1 Gflop on Ginette (48.492 Mflop/s) dominates."""
    platform = parse_platform(str(INPUTS / "small_platform.xml"))
    hosts = {h.name: h for h in platform.compute}
    comm = make_profile("c", {"type": "parallel", "cpu": [0, 0], "com": [0, 1e7, 0, 0]}, InputError, "t")
    run = Execution(platform, [hosts["Jupiter"], hosts["Ginette"]], lambda n: comm)
    latency = 1461.517e-6 + 479.78e-6 + 514.433e-6 + 278.066e-6
    duration, ret = run.run(comm)
    assert ret == 0 and duration == pytest.approx(latency + 1e7 / 7.20975e6)
    both = make_profile("b", {"type": "parallel", "cpu": [0, 1e9], "com": [0, 1e7, 0, 0]}, InputError, "t")
    assert run.run(both)[0] == pytest.approx(latency + 1e9 / 48.492e6)


#: SimGrid refuses a platform file without it
DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'


def test_host_pstate_and_trace_files(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text(DOCTYPE + '<platform version="4.1"><zone id="z" routing="Full">'
                    '<host id="master_host" speed="1Gf"/><host id="h" speed="2Gf,1Gf" pstate="1" core="4"/>'
                    '</zone></platform>')
    host = parse_platform(str(path)).compute[0]
    assert (host.name, host.speed, host.cores) == ("h", 1e9, 4)
    # SimGrid reads every pstate, not only the one used: real Batsim aborts with "Parse
    # error at p.xml:1: cannot parse number:fast"
    for speeds in ('speed="1Gf,fast"', 'speed="fast,1Gf" pstate="1"'):
        path.write_text(DOCTYPE + '<platform version="4.1"><zone id="z" routing="Full">'
                        f'<host id="master_host" speed="1Gf"/><host id="h" {speeds}/></zone></platform>')
        with pytest.raises(InputError, match="'fast'"):
            parse_platform(str(path))
    path.write_text(DOCTYPE + '<platform version="4.1"><zone id="z" routing="Full">'
                    '<host id="master_host" speed="1Gf" availability_file="a.txt"/></zone></platform>')
    with pytest.raises(InputError, match="'availability_file'"):
        parse_platform(str(path))


def test_platform_refuses_unsupported_routing(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text(DOCTYPE + '<platform version="4.1"><zone id="z" routing="Floyd"/></platform>')
    with pytest.raises(InputError, match="routing 'Floyd' is not supported"):
        parse_platform(str(path))


def test_composed_profiles_without_loops() -> None:
    """A huge ``repeat`` costs nothing; a kill inside a later repetition reports the
    unrolled step index; a profile containing itself is refused."""
    platform = parse_platform(str(INPUTS / "zero_latency_platform.xml"))
    profiles = {"d1": make_profile("d1", {"type": "delay", "delay": 1}, InputError, "t"),
                "d2": make_profile("d2", {"type": "delay", "delay": 2}, InputError, "t")}
    profiles["s"] = make_profile("s", {"type": "composed", "repeat": 2**31 - 1, "seq": ["d1", "d2"]}, InputError, "t")
    run = Execution(platform, platform.compute[:1], profiles.__getitem__)
    assert run.run(profiles["s"]) == (3.0 * (2**31 - 1), 0)
    assert run.progress(profiles["s"], 7.5) == {
        "profile_name": "s", "current_task_index": 5, "current_task": {"profile_name": "d2", "progress": 0.25}}
    loop = {"a": make_profile("a", {"type": "composed", "seq": ["b"]}, InputError, "t"),
            "b": make_profile("b", {"type": "composed", "seq": ["d", "a"]}, InputError, "t"),
            "d": profiles["d1"]}
    with pytest.raises(InputError, match=r"contains itself \(a -> b -> a\)"):
        check_composed(loop, InputError, "t")


def test_platform_refuses_storage_hosts(tmp_path: Path) -> None:
    """Batsim makes a host of role storage a storage resource; hpcjobs.sim has none and
    refuses it by name rather than count it as a compute resource."""
    path = tmp_path / "p.xml"
    path.write_text(DOCTYPE + '<platform version="4.1"><zone id="z" routing="Full"><host id="master_host" '
                    'speed="1Gf"/><host id="s" speed="1Gf"><prop id="role" value="storage"/></host></zone></platform>')
    with pytest.raises(InputError, match="host 's': role 'storage' .* is not supported"):
        parse_platform(str(path))


def test_platform_refuses_a_link_without_bandwidth(tmp_path: Path) -> None:
    """SimGrid takes a link of bandwidth 0 but never completes a transfer over it (Batsim
    deadlocks mid-run); hpcjobs.sim refuses the platform (it divided by zero)."""
    path = tmp_path / "p.xml"
    path.write_text(DOCTYPE + '<platform version="4.1"><zone id="z" routing="Full"><host id="master_host" '
                    'speed="1Gf"/><link id="l" bandwidth="0Bps" latency="0"/></zone></platform>')
    with pytest.raises(InputError, match="link 'l' bandwidth: '0Bps' is not a positive bandwidth"):
        parse_platform(str(path))
