"""Profiles derived from job specs, and the platform the executor writes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Union

import pytest

from hpcjobs import InvalidJobException, JobAttributes, JobSpec
from hpcjobs.executors.batsim.platform import cores_per_host, write_platform
from hpcjobs.executors.batsim.profiles import MIN_DELAY, profile_for
from hpcjobs.batsim_protocol.platform import parse_platform


@pytest.mark.parametrize("exe, args, profile", [
    ("sleep", ["10"], {"type": "delay", "delay": 10.0}),
    ("/bin/sleep", ["1.5m"], {"type": "delay", "delay": 90.0}),
    ("sleep", ["0"], {"type": "delay", "delay": MIN_DELAY}),  # Batsim needs delay > 0
    ("/usr/bin/true", [], {"type": "delay", "delay": MIN_DELAY}),
    ("false", [], {"type": "delay", "delay": MIN_DELAY, "ret": 1}),
])
def test_derived_profiles(exe: str, args: list[str], profile: dict[str, object]) -> None:
    assert profile_for(JobSpec(exe, args)) == profile


def test_environment_substitution_in_sleep_argument() -> None:
    spec = JobSpec("sleep", ["${T}"], environment={"T": "7"}, inherit_environment=False)
    assert profile_for(spec) == {"type": "delay", "delay": 7.0}


def test_explicit_profile_wins_and_is_sent_as_given() -> None:
    prof = {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}
    spec = JobSpec("sleep", ["5"], attributes=JobAttributes(custom_attributes={"batsim.profile": prof}))
    sent = profile_for(spec)
    assert sent == prof
    # the job's own copy, taken at submit: the in-process simulator keeps what it is
    # given, and a client may reuse its dict for the next job
    prof["cpu"] = 2e9
    assert sent["cpu"] == 1e9


@pytest.mark.parametrize("spec, match", [
    (JobSpec("hostname"), "batsim.profile"),
    (JobSpec("sleep", []), "exactly one"),
    (JobSpec("sleep", ["-1"]), ">= 0"),
    (JobSpec("sleep", ["inf"]), ">= 0"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {"type": "delay", "delay": -2}})),
     "delay"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {"type": "delay",
                                                                                  "delay": float("nan")}})),
     "not JSON"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {"type": "delay",
                                                                                  "delay": 1, "x": {1, 2}}})),
     "not JSON"),
    # what Batsim 4.2.1 aborts the whole simulation on (every job FAILED with it):
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {"type": "no-such-type"}})),
     "unsupported type 'no-such-type'"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "parallel_homogeneous", "cpu": 1e9}})), "'com'"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "parallel", "cpu": [1e9, 1e9], "com": [0]}})), "'com'"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "delay", "delay": 1, "ret": 2.0}})), "'ret'"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "delay", "delay": 1, "ret": 2**31}})), "'ret'"),
    # Batsim reads a return code of -1 as a walltime kill, -2 as a kill (and never
    # reports the job), and aborts on the others
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "delay", "delay": 1, "ret": -1}})), "'ret' must be >= 0"),
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "delay", "delay": 1, "ret": -3}})), "'ret' must be >= 0"),
    # its steps are profiles named in the same workload: names the executor chooses
    (JobSpec("x", attributes=JobAttributes(custom_attributes={"batsim.profile": {
        "type": "composed", "seq": ["p1"]}})), "composed"),
])
def test_bad_profiles(spec: JobSpec, match: str) -> None:
    with pytest.raises(InvalidJobException, match=match):
        profile_for(spec)


@pytest.mark.parametrize("hosts", [1, 7, 16, 100])
def test_written_platform_numbers_hosts_in_order(tmp_path: Path, hosts: int) -> None:
    path = write_platform(tmp_path / "p.xml", hosts, 4, "2Gf")
    platform = parse_platform(str(path))  # the embedded simulator's reader
    names = [h.name for h in platform.compute]
    width = len(str(hosts - 1))
    assert names == [f"node{i:0{width}d}" for i in range(hosts)]
    assert {h.cores for h in platform.compute} == {4} and cores_per_host(path) == 4
    assert platform.route(names[0], names[-1]) is not None


@pytest.mark.parametrize("speed", ["1Gf,500Mf", 'x"&<>\n\ty', 2.5e9])
def test_written_platform_carries_the_speed_as_given(tmp_path: Path, speed: Union[str, float]) -> None:
    path = write_platform(tmp_path / "p.xml", 3, 1, speed)
    clusters = [c for c in ET.parse(path).getroot().iter("cluster") if c.get("id") != "M"]
    assert [c.get("speed") for c in clusters] == [speed if isinstance(speed, str) else "2500000000.0f"]


def test_cores_of_a_given_platform() -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "batsim-4.2.1" / "inputs/small_platform.xml"
    if not fixture.is_file():
        pytest.skip("fixture not present")
    assert cores_per_host(fixture) == 1


@pytest.mark.parametrize("stderr, message", [
    # Batsim 4.2.1's failed assertion, then SimGrid's backtrace
    ("[0.000000] [batsim/INFO] Batsim version: 4.2.1\n"
     "[0.000000] ./src/server.cpp:12: [root/CRITICAL] Invalid JSON profile received\nBacktrace:\n  0# x\n",
     "Invalid JSON profile received"),
    # SimGrid refusing the platform
    ("[0.000000] [xbt_cfg/INFO] Switching to the L07 model to handle parallel tasks.\n"
     "[0.000000] ./src/xbt/exception.cpp:95: [xbt_exception/ERROR] Parse error at p.xml:5: cannot parse number:x\n"
     "[0.000000] ./src/xbt/exception.cpp:96: [xbt_exception/ERROR] Exiting now.\n",
     "Parse error at p.xml:5: cannot parse number:x"),
    # a C assertion after the start-up log
    ("[0.000000] [batsim/INFO] Batsim version: 4.2.1\n"
     "batsim: document.h:1645: int GetInt() const: Assertion `flags & kIntFlag' failed.\n",
     "batsim: document.h:1645: int GetInt() const: Assertion `flags & kIntFlag' failed."),
    ("hpcjobs.sim: error: platform p.xml: bad\n", "hpcjobs.sim: error: platform p.xml: bad"),
    # Batsim's start-up log alone explains nothing (killed by a signal)
    ("[0.000000] [batsim/INFO] Batsim version: 4.2.1\n"
     "[0.000000] [batsim/INFO] The process 'server' has been created.\n", ""),
])
def test_the_simulators_own_error_is_found_in_its_stderr(tmp_path: Path, stderr: str, message: str) -> None:
    from hpcjobs.executors.batsim.process import explain

    path = tmp_path / "simulator.stderr"
    path.write_text(stderr)
    assert explain(path) == message


def test_the_embedded_simulator_runs_this_very_hpcjobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the simulator starts in its run directory: with hpcjobs imported through a
    # relative PYTHONPATH entry (a checkout's 'src') or none, 'python -m hpcjobs.sim'
    # imported whatever hpcjobs the interpreter found there, maybe another version
    import sys

    import hpcjobs
    from hpcjobs.executors.batsim.process import spawn

    monkeypatch.setenv("PYTHONPATH", "src")
    stderr = tmp_path / "stderr"
    process = spawn([sys.executable, "-c", "import sys, hpcjobs; sys.stderr.write(hpcjobs.__file__)"],
                    tmp_path, stderr)
    assert process.wait(60) == 0
    assert stderr.read_text() == hpcjobs.__file__
