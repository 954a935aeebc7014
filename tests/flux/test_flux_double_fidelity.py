"""The flux-core bindings TEST DOUBLE against the recorded real transcripts.

One test per transcript in tests/fixtures/flux-0.88: the same scenario is run
against the double and the main eventlog (names, order, context payloads, wait status)
and the exceptions the bindings raise are compared with the recording.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flux
import flux.constants
import flux.double
import flux.job
import pytest
from flux_transcripts import FIXTURES, Event, cli_eventlogs, main_eventlogs, names

JobspecV1 = flux.job.JobspecV1


def spec(command: list[str], **kwargs: Any) -> JobspecV1:
    kwargs.setdefault("environment", {"PATH": os.environ["PATH"]})
    return JobspecV1.from_command(command, **kwargs)


def eventlog(h: flux.Flux, jobid: int) -> list[Event]:
    """The whole main eventlog (event_watch ends by itself after clean)."""
    return [(ev.name, ev.context) for ev in flux.job.event_watch(h, jobid)]


def wait_tasks_started(h: flux.Flux, jobid: int) -> None:
    flux.job.event_wait(h, jobid, "shell.start", eventlog="guest.exec.eventlog")


@pytest.fixture
def slow_shell() -> Iterator[flux.Flux]:
    """An instance whose shell takes 2 s to start the tasks after ``start``."""
    uri = flux.double.start_instance(cores=2, hostname="vm", shell_start_delay=2.0)
    yield flux.Flux(uri)
    flux.double.stop_instance(uri)


def test_basics_constants_and_from_command() -> None:
    text = (FIXTURES / "basics.txt").read_text()
    for prefix in ("state constants: ", "result constants: "):
        line = next(x for x in text.splitlines() if x.startswith(prefix))
        for name, value in json.loads(line[len(prefix):].replace("'", '"')).items():
            assert getattr(flux.constants, name) == value
    start = text.index("(environment elided):\n") + len("(environment elided):\n")
    recorded = json.loads(text[start:text.rindex("}") + 1])
    js = JobspecV1.from_command(["/bin/true"], cwd="/tmp").jobspec
    # the quirk: environment=None copies the caller's environment
    assert js["attributes"]["system"].pop("environment") == dict(os.environ)
    del recorded["attributes"]["system"]["environment"]
    assert js == recorded


@pytest.mark.parametrize("name, command, jobname", [
    ("true", ["/bin/true"], None),
    ("exit3", ["sh", "-c", "exit 3"], None),
    ("selfkill", ["sh", "-c", "kill -9 $$"], None),
    ("nonexistent", ["/nonexistent/cmd"], None),
])
def test_simple_jobs(handle: flux.Flux, name: str, command: list[str],
                     jobname: Any) -> None:
    jobid = flux.job.submit(handle, spec(command))
    assert eventlog(handle, jobid) == main_eventlogs(name)[0]


def test_true_jobid_and_exec_eventlog(handle: flux.Flux) -> None:
    jobid = flux.job.submit(handle, spec(["/bin/true"]))
    assert isinstance(jobid, int) and str(jobid) == jobid.f58 and jobid.f58[0] == "ƒ"
    assert flux.job.JobID(jobid.f58) == jobid == flux.job.JobID(jobid.hex)
    assert flux.job.JobID(8086618112).f58 == "ƒDKb2qD"  # true.txt
    assert flux.job.JobID(8086618112).kvs == "job.0000.0001.e200.0000"
    eventlog(handle, jobid)
    exec_names = [ev.name for ev in flux.job.event_watch(handle, jobid,
                                                          "guest.exec.eventlog")]
    assert exec_names == ["init", "starting", "shell.init", "shell.start",
                          "shell.task-exit", "shell-exit", "complete", "done"]


def test_timeout(handle: flux.Flux) -> None:
    jobid = flux.job.submit(handle, spec(["sleep", "100"], duration=1))
    recorded = main_eventlogs("timeout")[0]
    seen = eventlog(handle, jobid)
    assert seen == recorded
    assert list(seen[6][1]) == list(recorded[6][1])  # even the key order
    info = flux.job.result(handle, jobid)
    assert (info.result, info.returncode, info.waitstatus) == ("TIMEOUT", 142, 36352)


def test_cancel_running(handle: flux.Flux) -> None:
    jobid = flux.job.submit(handle, spec(["sleep", "300"], name="sleeper"))
    wait_tasks_started(handle, jobid)
    flux.job.cancel(handle, jobid, "probe cancel reason")
    assert eventlog(handle, jobid) == main_eventlogs("cancel-running")[0]
    record = flux.job.get_job(handle, jobid)
    assert (record["result"], record["returncode"], record["name"]) == (
        "CANCELED", 143, "sleeper")


def test_kill_signal(handle: flux.Flux) -> None:
    jobid = flux.job.submit(handle, spec(["sleep", "300"]))
    wait_tasks_started(handle, jobid)
    flux.job.kill(handle, jobid, signal.SIGKILL)
    assert eventlog(handle, jobid) == main_eventlogs("kill-signal")[0]  # no exception
    assert flux.job.result(handle, jobid).returncode == 137


def test_cancel_pending(handle: flux.Flux) -> None:
    blocker = flux.job.submit(handle, spec(["sleep", "300"], num_tasks=2, duration=60))
    flux.job.event_wait(handle, blocker, "start")
    jobid = flux.job.submit(handle, spec(["sleep", "5"], duration=5))
    flux.job.event_wait(handle, jobid, "priority")
    [pending] = flux.job.JobList(handle, ids=[jobid]).jobs()
    expiration = flux.job.get_job(handle, blocker)["expiration"]
    assert pending.state == "SCHED"
    assert pending.annotations == {"sched": {"t_estimate": expiration}}
    flux.job.cancel(handle, jobid, "cancel while pending")
    assert eventlog(handle, jobid) == main_eventlogs("cancel-pending")[0]
    record = flux.job.get_job(handle, jobid)
    assert (record["result"], record["returncode"], record["waitstatus"],
            record["annotations"]) == ("CANCELED", -128, "", {})
    flux.job.cancel(handle, blocker)


def test_badcwd(handle: flux.Flux, tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    jobid = flux.job.submit(handle, spec(["pwd"], cwd="/nonexistent-dir", output=str(out),
                                         error=str(err)))
    assert eventlog(handle, jobid) == main_eventlogs("badcwd")[0]
    assert out.read_text() == "/tmp\n"
    assert "Could not change dir to /nonexistent-dir: No such file or directory. " \
           "Going to /tmp instead" in err.read_text()


def test_infeasible(handle: flux.Flux) -> None:
    unsat, exclusive = main_eventlogs("infeasible")
    jobid = flux.job.submit(handle, spec(["true"], num_tasks=64))
    with pytest.raises(flux.job.JobException) as info:
        flux.job.event_wait(handle, jobid, "clean")
    assert str(info.value) == ("job.exception: type=alloc: unsatisfiable request: need 64 "
                               "slot(s) of 1 core(s), only 2 such slot(s) available "
                               "(total cores: 2)")
    assert eventlog(handle, jobid) == unsat
    assert flux.job.get_job(handle, jobid)["returncode"] == 1
    jobid = flux.job.submit(handle, spec(["true"], num_nodes=1, exclusive=True))
    assert eventlog(handle, jobid) == exclusive
    negative = spec(["true"])
    negative.setattr("system.duration", -5)
    assert names(eventlog(handle, flux.job.submit(handle, negative))) == names(exclusive)
    bad = negative.jobspec
    bad["tasks"][0]["command"] = []
    for jobspec, message in ((json.dumps(bad), "command array cannot have length of zero"),
                             ('{"tasks": [], "attributes": {}, "version": 1}',
                              "Missing key (resources)")):
        with pytest.raises(PermissionError) as raised:
            flux.job.submit(handle, jobspec)
        assert raised.value.args == (1, message)


def test_misc(handle: flux.Flux, slow_shell: flux.Flux, tmp_path: Path) -> None:
    nonfatal, immediate, after_start = main_eventlogs("misc")
    jobid = flux.job.submit(handle, spec(["sleep", "1"]))
    wait_tasks_started(handle, jobid)
    flux.job.job_raise(handle, jobid, "probe-warning", 1, "non-fatal exception")
    assert eventlog(handle, jobid) == nonfatal
    info = flux.job.JobList(handle, ids=[jobid]).jobs()[0]
    assert (info.result, info.exception.occurred, info.exception.severity) == (
        "COMPLETED", True, 1)

    blocker = flux.job.submit(handle, spec(["sleep", "300"], num_tasks=2))
    jobid = flux.job.submit(handle, spec(["sleep", "1"]))
    flux.job.cancel(handle, jobid, "immediate")
    assert eventlog(handle, jobid) == immediate
    assert flux.job.result(handle, jobid).returncode == -128
    flux.job.cancel(handle, blocker)

    jobid = flux.job.submit(slow_shell, spec(["sleep", "300"]))
    flux.job.event_wait(slow_shell, jobid, "start")
    flux.job.cancel(slow_shell, jobid, "right after start")
    assert eventlog(slow_shell, jobid) == after_start  # raw signal status 15
    assert flux.job.result(slow_shell, jobid).returncode == -15

    with pytest.raises(FileNotFoundError) as raised:
        flux.job.cancel(slow_shell, jobid)
    assert raised.value.args == (2, "job is inactive")
    with pytest.raises(FileNotFoundError) as raised:
        flux.job.cancel(handle, 123456)
    assert raised.value.args == (2, "unknown job id")
    with pytest.raises(FileNotFoundError) as raised:
        list(flux.job.event_watch(handle, 123456))
    assert raised.value.args == (2, "ENOENT: No such file or directory")

    jobid = flux.job.submit(handle, spec(["echo", "out-line"],
                                         output=str(tmp_path / "job-{{id}}.out")))
    eventlog(handle, jobid)
    assert (tmp_path / f"job-{jobid.f58}.out").read_text() == "out-line\n"


def test_async(handle: flux.Flux) -> None:
    seen: list[Any] = []

    def event_cb(future: Any, jobid: Any) -> None:
        event = future.get_event()
        seen.append((jobid, event.name if event else None))

    def submit_cb(future: Any) -> None:
        flux.job.event_watch_async(handle, future.get_id()).then(event_cb, future.get_id())

    for command in (["true"], ["sh", "-c", "exit 2"]):
        flux.job.submit_async(handle, spec(command)).then(submit_cb)
    handle.reactor_run()
    jobids = sorted({jobid for jobid, _ in seen})
    for jobid, status in zip(jobids, (0, 512)):
        assert [name for j, name in seen if j == jobid] == names(
            main_eventlogs("true")[0]) + [None]
        assert flux.job.result(handle, jobid).waitstatus == status  # async.txt


def test_journal(handle: flux.Flux) -> None:
    consumer = flux.job.JournalConsumer(handle, full=False).start()
    first = flux.job.submit(handle, spec(["/bin/true"], cwd="/tmp", name="journal-true"))
    flux.job.event_wait(handle, first, "clean")
    second = flux.job.submit(handle, spec(["sleep", "60"], name="journal-cancel"))
    flux.job.event_wait(handle, second, "start")
    flux.job.cancel(handle, second, "journal cancel")
    events: dict[int, list[Any]] = {first: [], second: []}
    while len(events[second]) == 0 or events[second][-1].name != "clean":
        event = consumer.poll(5.0)
        events[event.jobid].append(event)
    one = events[first]
    assert [e.name for e in one] == ["submit", "validate", "depend", "priority",
                                     "annotations", "alloc", "start", "finish", "release",
                                     "free", "clean"]
    assert one[4].context == one[5].context == {
        "annotations": {"sched": {"resource_summary": "rank0/core0"}}}
    assert sorted(one[0].jobspec["attributes"]["system"]) == ["cwd", "duration", "job"]
    assert one[5].R["execution"]["R_lite"] == [{"rank": "0", "children": {"core": "0"}}]
    assert "exception" in [e.name for e in events[second]]
    consumer.stop()
    assert consumer.poll(1.0) is None

    history = flux.job.JournalConsumer(handle, full=True, include_sentinel=True).start()
    replayed = []
    while not (event := history.poll(5.0)).is_empty():
        replayed.append((event.jobid, event.name))
    assert replayed[:6] == [(first, name) for name in names(main_eventlogs("true")[0])[:6]]
    assert len(replayed) == 21  # 10 + 11 events, no annotations pseudo-events
    with pytest.raises(TimeoutError):
        history.poll(0.1)


def test_joblist(handle: flux.Flux) -> None:
    done = flux.job.submit(handle, spec(["sh", "-c", "exit 2"]))
    flux.job.event_wait(handle, done, "clean")
    running = flux.job.submit(handle, spec(["sleep", "60"]))
    flux.job.event_wait(handle, running, "start")
    active = flux.job.JobList(handle, filters=["pending", "running"]).jobs()
    assert [(j.id, j.state) for j in active] == [(running, "RUN")]
    [inactive] = flux.job.JobList(handle, filters=["inactive"]).jobs()
    assert (inactive.result, inactive.returncode, inactive.waitstatus) == ("FAILED", 2, 512)
    raw = {r["id"]: r for r in flux.job.job_list(handle).get_jobs()}
    assert (raw[done]["state"], raw[done]["result"], raw[running]["state"]) == (64, 2, 16)
    with pytest.raises(ValueError):
        flux.job.JobList(handle, filters=["bogus"])
    flux.job.cancel(handle, running)


@pytest.mark.parametrize("debug_bit", [False, True])
def test_annotations(debug_bit: bool) -> None:
    h = flux.Flux(flux.double.start_instance(cores=2, annotate_reason_pending=debug_bit))
    try:
        blocker = flux.job.submit(h, spec(["sleep", "300"], num_tasks=2, duration=30))
        flux.job.event_wait(h, blocker, "start")
        p1 = flux.job.submit(h, spec(["true"], num_tasks=2, duration=5, name="p1"))
        p2 = flux.job.submit(h, spec(["true"], duration=5, name="p2"))
        p3 = flux.job.submit(h, spec(["true"], name="p3-nolimit"))
        p4 = flux.job.submit(h, spec(["true"], name="p4"))
        flux.job.event_wait(h, p4, "priority")
        sched = {j.id: j.annotations.get("sched", {}) for j in
                 flux.job.JobList(h, filters=["pending"]).jobs()}
        expiration = flux.job.get_job(h, blocker)["expiration"]
        # annotations.txt: p1 at the blocker's expiration, p2 = p3 = p1 + 5 s, p4 none
        assert sched[p1]["t_estimate"] == expiration
        assert sched[p2]["t_estimate"] == sched[p3]["t_estimate"] == expiration + 5
        assert "t_estimate" not in sched[p4]
        if debug_bit:
            assert [sched[j].get("jobs_ahead") for j in (p1, p2, p3, p4)] == [0, 1, 2, 3]
            assert sched[p4]["reason_pending"] == "insufficient resources"
        else:
            assert "reason_pending" not in sched[p1]
        assert flux.job.get_job(h, blocker)["annotations"] == {
            "sched": {"resource_summary": "rank0/core[0-1]"}}
    finally:
        flux.double.stop_instance(h.instance.uri)


def test_merge_annotations_rfc27() -> None:
    annotations: dict[str, Any] = {"sched": {"t_estimate": 1.0, "reason_pending": "x"}}
    flux.double.merge_annotations(annotations, {"sched": {"t_estimate": None,
                                                          "jobs_ahead": 2}, "user": {}})
    assert annotations == {"sched": {"reason_pending": "x", "jobs_ahead": 2}}
    flux.double.merge_annotations(annotations, {"sched": {"reason_pending": None,
                                                          "jobs_ahead": None}})
    assert annotations == {}


def test_depend_urgency(handle: flux.Flux) -> None:
    ok, held, never = main_eventlogs("depend-urgency")
    parent = flux.job.submit(handle, spec(["sleep", "1"]))
    child = spec(["true"])
    child.setattr("system.dependencies", [{"scheme": "afterok", "value": parent.f58}])
    child_id = flux.job.submit(handle, child)
    flux.job.event_wait(handle, child_id, "validate")
    assert flux.job.JobList(handle, ids=[child_id]).jobs()[0].state == "DEPEND"
    expected = json.loads(json.dumps(ok).replace("128412811264", str(int(parent))))
    assert eventlog(handle, child_id) == [tuple(e) for e in expected]

    held_id = flux.job.submit(handle, spec(["true"]), urgency=0)
    flux.job.event_wait(handle, held_id, "priority")
    assert flux.job.JobList(handle, ids=[held_id]).jobs()[0].state == "SCHED"
    handle.rpc("job-manager.urgency", {"id": int(held_id), "urgency": 16}).get()
    assert eventlog(handle, held_id) == held

    failing = flux.job.submit(handle, spec(["sh", "-c", "exit 1"]))
    orphan = spec(["true"])
    orphan.setattr("system.dependencies", [{"scheme": "afterok", "value": str(failing)}])
    orphan_id = flux.job.submit(handle, orphan)
    expected = json.loads(json.dumps(never).replace("164634820608", str(int(failing))))
    assert eventlog(handle, orphan_id) == [tuple(e) for e in expected]


def test_cli_session_eventlogs(handle: flux.Flux) -> None:
    """cli.txt: the eventlogs of jobs submitted with the ``flux`` command."""
    recorded = list(cli_eventlogs().values())
    jobs = [spec(["sleep", "1"]), spec(["sleep", "300"], name="sleeper"),
            spec(["sh", "-c", "exit 3"]), spec(["sleep", "100"], duration=2),
            spec(["/nonexistent/cmd"])]
    for js, expected in zip(jobs, recorded):
        jobid = flux.job.submit(handle, js)
        if js.jobspec["attributes"]["system"].get("job", {}).get("name") == "sleeper":
            wait_tasks_started(handle, jobid)
            flux.job.cancel(handle, jobid)
        assert eventlog(handle, jobid) == expected


def test_journal_backlog_and_guests(handle: flux.Flux) -> None:
    """Not in the transcripts (recorded as the instance owner), from flux-core's
    job-manager/journal.c: without ``full`` the backlog is the active jobs; a guest of
    the instance is refused (the handler's rolemask is 0: owner only)."""
    done = flux.job.submit(handle, spec(["true"]))
    flux.job.event_wait(handle, done, "clean")
    running = flux.job.submit(handle, spec(["sleep", "60"]))
    flux.job.event_wait(handle, running, "start")
    consumer = flux.job.JournalConsumer(handle, full=False).start()
    backlog = [consumer.poll(5.0) for _ in range(6)]
    assert {e.jobid for e in backlog} == {running}
    flux.job.cancel(handle, running)
    guest = flux.Flux(flux.double.start_instance(owner=False))
    with pytest.raises(PermissionError):
        flux.job.JournalConsumer(guest).start().poll(5.0)
    flux.double.stop_instance(guest.instance.uri)


def test_timer_and_reactor_stop(handle: flux.Flux) -> None:
    ticks: list[int] = []

    def tick(h: flux.Flux, watcher: Any, revents: int, args: Any) -> None:
        ticks.append(args)
        if len(ticks) == 3:
            h.reactor_stop()

    timer = handle.timer_watcher_create(0.0, tick, repeat=0.01, args=7)
    timer.start()
    assert handle.reactor_run() == 0 and ticks == [7, 7, 7]
    timer.stop()
