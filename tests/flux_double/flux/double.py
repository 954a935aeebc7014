"""TEST DOUBLE control and engine: a simulated single-node flux-core 0.88 instance.

Not part of the real bindings.  Tests call ``start_instance()`` to get a URI for
``flux.Flux(uri)`` (or ``FLUX_URI``) and ``stop_instance()`` to end it.  The engine plays
job-ingest, job-manager, sched-simple and job-exec + flux-shell, reproducing the
recorded behaviour in tests/fixtures/flux-0.88 (README.md sections 2 and 3):

* main eventlog: submit, [dependency-add], validate, [dependency-remove], depend,
  priority, alloc, start, [exception], finish, release, free, clean (true.txt,
  cancel-running.txt, depend-urgency.txt), with the recorded context payloads;
* a job that can never be allocated is accepted, then gets ``exception type=alloc``
  and ``clean`` (infeasible.txt); cancel while pending gives exception + clean
  (cancel-pending.txt); cancel before the shell started the tasks gives a raw
  signal status 15 (misc.txt); running tasks get SIGTERM (status 143<<8,
  cancel-running.txt), SIGALRM at the time limit (142<<8, timeout.txt); a task killed
  by signal N is reported as exit code 128+N (selfkill.txt, kill-signal.txt);
* RFC 27 annotation merging and FIFO ``t_estimate`` forward simulation like
  sched-simple (annotations.txt), published as journal-only ``annotations`` events
  (journal.txt).

Each job's tasks are real processes run with the jobspec's command, cwd, environment
and stdio redirections.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

_INSTANCES: dict[str, Instance] = {}
#: what a journal subscriber receives when its stream ends
JOURNAL_ENDED = object()
_COUNTER = itertools.count()

# job-manager/event.c transitions (fixtures README section 3)
_NEXT_STATE = {"validate": "DEPEND", "depend": "PRIORITY", "priority": "SCHED",
               "alloc": "RUN", "finish": "CLEANUP", "clean": "INACTIVE"}
_KILL_SIGNAL = {"cancel": signal.SIGTERM, "timeout": signal.SIGALRM}
# RFC 26 dependency schemes as the job-manager describes them (depend-urgency.txt)
_DEPENDENCY_SCHEMES = {"afterok": "after-success", "afterany": "after-finish",
                       "afternotok": "after-failure"}


def start_instance(cores: int = 2, gpus: int = 0, hostname: str = "vm",
                   shell_start_delay: float = 0.0, kill_timeout: float = 5.0,
                   annotate_reason_pending: bool = False, owner: bool = True) -> str:
    """Start a simulated instance and return its URI.

    ``shell_start_delay`` widens the window between ``start`` and ``shell.start`` (real:
    ~15 ms) so tests can hit it; ``annotate_reason_pending`` is sched-simple's debug bit 2
    (annotations.txt); ``owner=False`` makes the test process a guest of the instance
    (a system instance), which may not read the journal.
    """
    uri = f"local:///tmp/flux-double-{os.getpid()}-{next(_COUNTER)}/local-0"
    _INSTANCES[uri] = Instance(uri, cores, gpus, hostname, shell_start_delay,
                               kill_timeout, annotate_reason_pending, owner)
    return uri


def stop_instance(uri: str) -> None:
    """Cancel every active job, wait for them to be cleaned up, forget the instance."""
    instance = _INSTANCES.pop(uri)
    instance.shutdown()


def end_journals(uri: str) -> None:
    """End every journal stream of the instance, as when the job-manager module is
    reloaded (journal.c answers ENODATA: the Python consumer's ``poll`` returns None)."""
    instance = _INSTANCES[uri]
    with instance.cv:
        for sink in instance.journals:
            sink(JOURNAL_ENDED)
        instance.journals.clear()


def lookup(uri: str) -> Instance | None:
    return _INSTANCES.get(uri)


def merge_annotations(orig: dict[str, Any], update: dict[str, Any]) -> None:
    """RFC 27 update rules, as job-manager/annotate.c applies them.

    Nested dicts merge recursively, null deletes a key, a dict left empty is removed.
    """
    for key, value in update.items():
        if value is None:
            orig.pop(key, None)
        elif isinstance(value, dict):
            if not isinstance(orig.get(key), dict):
                orig[key] = {}
            merge_annotations(orig[key], value)
            if not orig[key]:
                del orig[key]
        else:
            orig[key] = value


def _idset(ids: list[int]) -> str:
    """RFC 22 idset string: ``0``, ``[0-1]``, ``[0,2-3]`` (brackets when more than one)."""
    parts: list[str] = []
    for _, group in itertools.groupby(enumerate(sorted(ids)), lambda p: p[1] - p[0]):
        run = [v for _, v in group]
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    text = ",".join(parts)
    return text if len(ids) == 1 else f"[{text}]"


class Request:
    """Resources and tasks asked for by a jobspec (RFC 14 V1 shapes from_command makes)."""

    def __init__(self, jobspec: dict[str, Any]) -> None:
        top = jobspec["resources"][0]
        self.nnodes = top["count"] if top["type"] == "node" else 0
        self.exclusive = bool(top.get("exclusive"))
        slot = top["with"][0] if top["type"] == "node" else top
        self.nslots = slot["count"] * max(self.nnodes, 1)
        self.cores_per_slot = self.gpus_per_slot = 0
        for child in slot.get("with", []):
            if child["type"] == "core":
                self.cores_per_slot = child["count"]
            elif child["type"] == "gpu":
                self.gpus_per_slot = child["count"]
        count = jobspec["tasks"][0]["count"]
        self.ntasks = count.get("total", self.nslots * count.get("per_slot", 1))

    def unsatisfiable(self, cores: int, gpus: int) -> str | None:
        """sched-simple's note when the request can never fit (infeasible.txt)."""
        if self.nnodes > 1:  # unrecorded wording: the recorded instance had one node
            return f"unsatisfiable request: need {self.nnodes} node(s), only 1 available"
        if self.nslots * self.cores_per_slot > cores:
            return (f"unsatisfiable request: need {self.nslots} slot(s) of "
                    f"{self.cores_per_slot} core(s), only {cores // self.cores_per_slot} "
                    f"such slot(s) available (total cores: {cores})")
        if self.nslots * self.gpus_per_slot > gpus:  # unrecorded wording
            return f"unsatisfiable request: need {self.nslots * self.gpus_per_slot} gpu(s)"
        return None

    def cores_needed(self, cores: int) -> int:
        return cores if self.exclusive else self.nslots * self.cores_per_slot


class Job:
    """The job manager's record of one job."""

    def __init__(self, jobid: int, jobspec: dict[str, Any], urgency: int) -> None:
        self.id = jobid
        self.jobspec = jobspec
        self.request = Request(jobspec)
        system = jobspec["attributes"].get("system", {})
        self.system: dict[str, Any] = system
        self.name: str = system.get("job", {}).get("name") or os.path.basename(
            jobspec["tasks"][0]["command"][0])
        self.urgency = urgency
        self.priority: int | None = None
        self.userid = os.getuid()
        self.state = "NEW"
        self.logs: dict[str, list[dict[str, Any]]] = {"eventlog": [],
                                                      "guest.exec.eventlog": []}
        self.watchers: list[tuple[str, Callable[[Any], None]]] = []
        self.annotations: dict[str, Any] | None = None
        self.fatal: dict[str, Any] | None = None      # first severity-0 exception
        self.exception: dict[str, Any] | None = None  # last exception (job-list)
        self.cores: list[int] = []
        self.R: dict[str, Any] | None = None
        self.expiration = 0.0
        self.procs: list[subprocess.Popen[bytes]] = []
        self.task_status: dict[int, int] = {}
        self.dependencies: list[tuple[str, str, int]] = []
        self.waitstatus: int | None = None
        self.times: dict[str, float] = {}
        self.thread: threading.Thread | None = None

    def post_times(self, name: str, stamp: float) -> None:
        key = {"submit": "t_submit", "validate": "t_depend", "depend": "t_priority",
               "priority": "t_sched", "alloc": "t_run", "finish": "t_cleanup",
               "clean": "t_inactive"}.get(name)
        if key and key not in self.times:
            self.times[key] = stamp


class Instance:
    """One simulated Flux instance: a single node called ``hostname``."""

    def __init__(self, uri: str, cores: int, gpus: int, hostname: str,
                 shell_start_delay: float, kill_timeout: float,
                 annotate_reason_pending: bool, owner: bool) -> None:
        self.uri = uri
        self.owner = owner
        self.cores, self.gpus, self.hostname = cores, gpus, hostname or socket.gethostname()
        self.shell_start_delay = shell_start_delay
        self.kill_timeout = kill_timeout
        self.annotate_reason_pending = annotate_reason_pending
        self.cwd = os.getcwd()
        self.cv = threading.Condition()
        self.jobs: dict[int, Job] = {}
        self.queue: list[Job] = []
        self.free_cores = list(range(cores))
        self.journals: list[Callable[[Any], None]] = []
        self.t0 = time.time()
        self.last_id = 0

    # --- ingest ----------------------------------------------------------------------
    def submit(self, jobspec: dict[str, Any], urgency: int, flags: int) -> int:
        with self.cv:
            # FLUID: milliseconds since the instance started, in the top 40 bits
            jobid = max(int((time.time() - self.t0) * 1000 + 1) << 24, self.last_id + 1)
            self.last_id = jobid
            job = Job(jobid, jobspec, urgency)
            self.jobs[jobid] = job
            self.post(job, "submit", {"userid": job.userid, "urgency": urgency,
                                      "flags": flags, "version": 1})
            self._validate(job)
        job.thread = threading.Thread(target=self._lifecycle, args=(job,), daemon=True,
                                      name=f"flux-double-job-{jobid}")
        job.thread.start()
        return jobid

    # --- eventlogs, watches, journal -----------------------------------------------------
    def post(self, job: Job, name: str, context: dict[str, Any],
             log: str = "eventlog", journal_only: bool = False) -> None:
        """Append an event (caller holds ``cv``) and feed watchers and journals."""
        stamp = time.time()
        event = {"timestamp": stamp, "name": name, "context": context}
        if log == "eventlog":
            if name in _NEXT_STATE and not journal_only:
                job.state = _NEXT_STATE[name]
            job.post_times(name, stamp)
            extra = {"jobspec": _redacted(job.jobspec)} if name == "submit" else {}
            if name == "alloc":
                extra = {"R": job.R}
            for sink in self.journals:
                sink((job.id, copy.deepcopy(event), extra))
        if not journal_only:
            job.logs[log].append(event)
            for watch_log, sink in list(job.watchers):
                if watch_log == log:
                    sink(copy.deepcopy(event))
                if self._log_ended(job, watch_log):
                    sink(None)
                    job.watchers.remove((watch_log, sink))
        self.cv.notify_all()

    @staticmethod
    def _log_ended(job: Job, log: str) -> bool:
        # event_watch ends by itself after clean (README section 1); the exec log after
        # done, or when the job went inactive without running.
        events = job.logs[log]
        return job.state == "INACTIVE" or (
            log != "eventlog" and bool(events) and events[-1]["name"] == "done")

    def watch(self, jobid: int, log: str, sink: Callable[[Any], None]) -> None:
        """Replay a job's eventlog into ``sink``, then feed it new events until the end."""
        with self.cv:
            job = self.jobs.get(jobid)
            if job is None or log not in job.logs:
                sink(FileNotFoundError(2, "ENOENT: No such file or directory"))  # misc.txt
                return
            for event in job.logs[log]:
                sink(copy.deepcopy(event))
            if self._log_ended(job, log):
                sink(None)
            else:
                job.watchers.append((log, sink))

    def journal(self, sink: Callable[[Any], None], full: bool) -> Callable[[], None]:
        """Subscribe to every job's main events (job-manager.events-journal).

        The backlog comes first: the events so far of the active jobs, and with
        ``full`` of the inactive ones too; then ``None`` marks its end (the sentinel).
        Returns the unsubscribe function.  Only the instance owner may subscribe
        (flux-core job-manager/journal.c registers the handler with rolemask 0).
        """
        with self.cv:
            if not self.owner:
                sink(PermissionError(1, "Operation not permitted"))
                return lambda: None
            history = [(job.id, copy.deepcopy(ev), {}) for job in self.jobs.values()
                       if full or job.state != "INACTIVE" for ev in job.logs["eventlog"]]
            for item in sorted(history, key=lambda h: h[1]["timestamp"]):
                sink(item)
            sink(None)
            self.journals.append(sink)

        def unsubscribe() -> None:
            with self.cv:
                if sink in self.journals:
                    self.journals.remove(sink)

        return unsubscribe

    # --- job manager requests --------------------------------------------------------
    def get(self, jobid: int) -> Job:
        job = self.jobs.get(jobid)
        if job is None:
            raise FileNotFoundError(2, "unknown job id")  # misc.txt
        return job

    def raise_exception(self, jobid: int, etype: str, severity: int, note: str) -> None:
        with self.cv:
            job = self.get(jobid)
            if job.state == "INACTIVE":
                raise FileNotFoundError(2, "job is inactive")  # misc.txt
            self._exception(job, etype, severity, note)

    def _exception(self, job: Job, etype: str, severity: int, note: str,
                   order: tuple[str, ...] = ("type", "severity", "note", "userid")) -> None:
        values = {"type": etype, "severity": severity, "note": note, "userid": job.userid}
        context = {key: values[key] for key in order}
        self.post(job, "exception", context)
        job.exception = context
        if severity == 0 and job.fatal is None:
            job.fatal = context
            job.state = "CLEANUP"  # job-manager/event.c: a fatal exception means CLEANUP
            if job in self.queue:
                self.queue.remove(job)
                self._schedule()

    def kill(self, jobid: int, signum: int) -> None:
        with self.cv:
            job = self.get(jobid)
            if job.state == "INACTIVE":
                raise FileNotFoundError(2, "job is inactive")
            if job.state != "RUN":  # unrecorded wording
                raise OSError(22, "job is not running")
            # kill-signal.txt: a kill before the shell started the tasks is lost
            self._signal(job, signum)

    @staticmethod
    def _signal(job: Job, signum: int) -> None:
        for proc in job.procs:
            if proc.returncode is None:
                try:
                    os.killpg(proc.pid, signum)
                except ProcessLookupError:
                    pass

    def set_urgency(self, jobid: int, urgency: int) -> None:
        """``job-manager.urgency`` RPC (depend-urgency.txt): urgency, then priority."""
        with self.cv:
            job = self.get(jobid)
            job.urgency = urgency
            self.post(job, "urgency", {"userid": job.userid, "urgency": urgency})
            if job.state in ("SCHED", "PRIORITY") and job.priority is not None:
                self._set_priority(job)

    # --- the job's life ------------------------------------------------------------------
    def _validate(self, job: Job) -> None:
        """Up to SCHED at once, as the recorded "cancel immediately after submit" shows
        (misc.txt: the exception came after priority); dependencies wait in _lifecycle."""
        job.dependencies = []
        for dep in job.system.get("dependencies", []):
            scheme = _DEPENDENCY_SCHEMES.get(dep["scheme"], dep["scheme"])
            parent_id = int(_jobid(dep["value"]))
            job.dependencies.append((f"{scheme}={parent_id}", scheme, parent_id))
            self.post(job, "dependency-add", {"description": job.dependencies[-1][0]})
        self.post(job, "validate", {})
        if not job.dependencies:
            self.post(job, "depend", {})
            self._set_priority(job, schedule=False)

    def _lifecycle(self, job: Job) -> None:
        with self.cv:
            if self._resolve_dependencies(job):
                self._schedule()
                self.cv.wait_for(lambda: job.fatal is not None or job.R is not None)
            if job.R is None:
                self._end(job)
                return
        self._run(job)

    def _resolve_dependencies(self, job: Job) -> bool:
        """Wait for each parent to end; False if the job died meanwhile."""
        for description, scheme, parent_id in job.dependencies:
            parent = self.jobs.get(parent_id)
            self.cv.wait_for(lambda: job.fatal is not None or parent is None
                             or parent.state == "INACTIVE")
            if job.fatal is not None:
                return False
            if parent is None or not _dependency_met(scheme, _result(parent)):
                self._exception(job, "dependency", 0,
                                f"dependency {description} can never be satisfied")
                return False
            self.post(job, "dependency-remove", {"description": description})
        if job.dependencies:
            self.post(job, "depend", {})
            self._set_priority(job, schedule=False)
        return job.fatal is None

    def _set_priority(self, job: Job, schedule: bool = True) -> None:
        # default priority plugin: priority = urgency; 0 means held (depend-urgency.txt)
        job.priority = job.urgency
        self.post(job, "priority", {"priority": job.priority})
        if job.priority > 0 and job not in self.queue:
            self.queue.append(job)
        if schedule:
            self._schedule()

    def _schedule(self) -> None:
        """sched-simple, FIFO: allocate in order until a job does not fit now."""
        self.queue.sort(key=lambda j: (-(j.priority or 0), j.id))
        for job in list(self.queue):
            if job not in self.queue:
                continue
            note = job.request.unsatisfiable(self.cores, self.gpus)
            if note is not None:
                # infeasible.txt: accepted, then an alloc exception; annotations dropped
                self.queue.remove(job)
                self._exception(job, "alloc", 0, note)
                continue
            need = job.request.cores_needed(self.cores)
            if need > len(self.free_cores):
                break
            self.queue.remove(job)
            self._alloc(job, need)
        self._annotate_pending()

    def _alloc(self, job: Job, need: int) -> None:
        job.cores, self.free_cores = self.free_cores[:need], self.free_cores[need:]
        start = time.time()
        duration = float(job.system.get("duration", 0))
        # infeasible.txt: a negative duration was accepted and meant "no limit"
        job.expiration = start + duration if duration > 0 else 0.0
        job.R = {"version": 1, "execution": {
            "R_lite": [{"rank": "0", "children": {"core": _idset(job.cores).strip("[]")}}],
            "starttime": start, "expiration": job.expiration, "nslots": job.request.nslots,
            "nodelist": [self.hostname]}}
        summary = f"rank0/core{_idset(job.cores)}"
        self._annotate(job, {"sched": {"resource_summary": summary, "t_estimate": None,
                                       "reason_pending": None, "jobs_ahead": None}})
        self.post(job, "alloc", {"annotations": copy.deepcopy(job.annotations)})

    def _annotate(self, job: Job, update: dict[str, Any]) -> None:
        merged = copy.deepcopy(job.annotations or {})
        merge_annotations(merged, update)
        if (merged or None) != job.annotations:
            job.annotations = merged or None
            # journal.txt: a journal-only "annotations" event with the whole dictionary
            self.post(job, "annotations", {"annotations": copy.deepcopy(job.annotations)},
                      journal_only=True)

    def _annotate_pending(self) -> None:
        """t_estimate by forward simulation, only as far as time limits allow
        (annotations.txt: estimates stop after the first job without a duration)."""
        now = time.time()
        busy = [(j.expiration or float("inf"), len(j.cores))
                for j in self.jobs.values() if j.cores]
        start: float | None = now
        for ahead, job in enumerate(self.queue):
            need = job.request.cores_needed(self.cores)
            if start is not None:
                candidates = sorted({start} | {end for end, _ in busy if end > start})
                start = next((t for t in candidates
                              if self.cores - sum(n for end, n in busy if end > t) >= need),
                             None)
            sched: dict[str, Any] = {"t_estimate": start}
            duration = float(job.system.get("duration", 0))
            if start is not None and duration > 0:
                busy.append((start + duration, need))
            else:
                start = None  # nothing after a job without a time limit gets an estimate
            if self.annotate_reason_pending:
                sched.update(reason_pending="insufficient resources", jobs_ahead=ahead)
            self._annotate(job, {"sched": sched})

    def _run(self, job: Job) -> None:
        """job-exec + flux-shell: run the tasks, enforce the time limit, report."""
        with self.cv:
            self.post(job, "start", {})
            self.post(job, "init", {}, log="guest.exec.eventlog")
            self.post(job, "starting", {}, log="guest.exec.eventlog")
            self.cv.wait_for(lambda: job.fatal is not None, self.shell_start_delay)
            if job.fatal is not None:
                # misc.txt: cancelled before the shell started the tasks: raw status 15
                job.waitstatus = int(_KILL_SIGNAL.get(job.fatal["type"], signal.SIGTERM))
            else:
                self.post(job, "shell.init", {"service": f"{job.userid}-shell-"
                                              f"{_f58plain(job.id)}", "leader-rank": 0,
                                              "size": 1}, log="guest.exec.eventlog")
                self.post(job, "shell.start", {"taskmap": {"version": 1, "map": [
                    [0, 1, job.request.ntasks, 1]]}}, log="guest.exec.eventlog")
                self._spawn(job)
                self._supervise(job)
            self._end(job)

    def _spawn(self, job: Job) -> None:
        command = job.jobspec["tasks"][0]["command"]
        env = dict(job.system.get("environment", {}))
        cwd = job.system.get("cwd", self.cwd)
        options = job.system.get("shell", {}).get("options", {})
        try:
            stdio, shell_log = _open_stdio(options, job.id)
        except OSError as exc:  # unrecorded: a missing stdin file fails the start
            self._start_failed(job, 0, f"{exc.filename}: {exc.strerror}", 127)
            return
        if not os.path.isdir(cwd):
            # badcwd.txt: the shell warns on stderr and runs the job in /tmp
            shell_log(f"flux-shell[0]: ERROR: host {self.hostname}: Could not change dir "
                      f"to {cwd}: No such file or directory. Going to /tmp instead\n")
            cwd = "/tmp"
        for rank in range(job.request.ntasks):
            # flux-shell adds these to the job's environment (not recorded: names from
            # the flux-shell(1) manual)
            task_env = dict(env, FLUX_JOB_ID=_f58(job.id), FLUX_JOB_SIZE=str(
                job.request.ntasks), FLUX_JOB_NNODES="1", FLUX_TASK_RANK=str(rank),
                FLUX_TASK_LOCAL_ID=str(rank), FLUX_URI=self.uri)
            try:
                proc = subprocess.Popen(command, cwd=cwd, env=task_env, stdin=stdio[0],
                                        stdout=stdio[1], stderr=stdio[2],
                                        start_new_session=True)
            except OSError as exc:
                # nonexistent.txt: exec exception, exit code 127 (126: not executable)
                note = self._start_failed(job, rank, f"{command[0]}: {exc.strerror}",
                                          127 if isinstance(exc, FileNotFoundError) else 126)
                shell_log(f"flux-shell[0]: FATAL: {note}\n")
                break
            job.procs.append(proc)
            threading.Thread(target=self._reap, args=(job, rank, proc), daemon=True,
                             name=f"flux-double-reap-{job.id}-{rank}").start()
        for stream in stdio:
            if hasattr(stream, "close"):
                stream.close()

    def _start_failed(self, job: Job, rank: int, reason: str, code: int) -> str:
        """The shell could not start task ``rank``: it and later ranks never ran."""
        for later in range(rank, job.request.ntasks):
            job.task_status[later] = code << 8
        note = f"task {rank} (host {self.hostname}): start failed: {reason}"
        self._exception(job, "exec", 0, note)
        return note

    def _reap(self, job: Job, rank: int, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        with self.cv:
            job.task_status[rank] = (
                proc.returncode << 8 if proc.returncode >= 0 else -proc.returncode)
            self.post(job, "shell.task-exit", {
                "localid": rank, "rank": 0, "state": "Exited", "pid": proc.pid,
                "wait_status": job.task_status[rank],
                "signaled": max(-proc.returncode, 0),
                "exitcode": _exitcode(job.task_status[rank])},
                log="guest.exec.eventlog")

    def _supervise(self, job: Job) -> None:
        """Wait for all tasks; SIGALRM at the time limit, SIGTERM on cancel, then
        SIGKILL after ``kill_timeout`` (job-exec's behaviour)."""
        signalled_at: float | None = None
        while len(job.task_status) < job.request.ntasks:
            if job.fatal is not None and len(job.task_status) > len(job.procs):
                self._signal(job, signal.SIGKILL)  # an exec failure kills the other tasks
            if job.expiration and job.fatal is None and time.time() >= job.expiration:
                self._exception(job, "timeout", 0, "resource allocation expired",
                                order=("type", "severity", "userid", "note"))  # timeout.txt
            if job.fatal is not None and signalled_at is None:
                signalled_at = time.time()
                self._signal(job, _KILL_SIGNAL.get(job.fatal["type"], signal.SIGTERM))
            elif signalled_at is not None and time.time() - signalled_at > self.kill_timeout:
                self._signal(job, signal.SIGKILL)
            deadlines = [d for d in (job.expiration if job.fatal is None else None,
                                     signalled_at and signalled_at + self.kill_timeout) if d]
            wait = max(min(deadlines) - time.time(), 0.0) + 0.001 if deadlines else None
            self.cv.wait(wait)
        # a task killed by signal N counts as exit code 128+N (selfkill.txt)
        job.waitstatus = max(_exitcode(s) for s in job.task_status.values()) << 8
        self.post(job, "shell-exit", {"rank": 0, "wait_status": job.waitstatus},
                  log="guest.exec.eventlog")
        self.post(job, "complete", {"status": job.waitstatus}, log="guest.exec.eventlog")

    def _end(self, job: Job) -> None:
        """finish (if the job ran), release, free, clean; give the cores back."""
        if job.R is not None:
            self.post(job, "finish", {"status": job.waitstatus})
            if job.logs["guest.exec.eventlog"]:
                self.post(job, "done", {}, log="guest.exec.eventlog")
            self.post(job, "release", {"ranks": "all", "final": True})
            self.post(job, "free", {})
            self.free_cores = sorted(self.free_cores + job.cores)
        elif job.annotations is not None:
            # annotations are discarded when the allocation fails (RFC 27)
            job.annotations = None
            self.post(job, "annotations", {"annotations": None}, journal_only=True)
        self.post(job, "clean", {})
        self._schedule()

    def shutdown(self) -> None:
        with self.cv:
            for job in self.jobs.values():
                if job.state != "INACTIVE":
                    self._exception(job, "cancel", 0, "instance shutdown")
            threads = [job.thread for job in self.jobs.values() if job.thread]
        for thread in threads:
            thread.join(timeout=self.kill_timeout + 5)


# --- helpers shared with flux.job.list ------------------------------------------------
def _exitcode(status: int) -> int:
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _jobid(value: Any) -> Any:
    from flux.job.JobID import JobID  # flux.job imports this module

    return JobID(value)


def _f58(jobid: int) -> str:
    return str(_jobid(jobid).f58)


def _f58plain(jobid: int) -> str:
    return str(_jobid(jobid).f58plain)


def _result(job: Job) -> str:
    """job-list's result: the first fatal exception decides, else the wait status."""
    if job.state != "INACTIVE":
        return ""
    if job.fatal is not None:
        return {"cancel": "CANCELED", "timeout": "TIMEOUT"}.get(job.fatal["type"], "FAILED")
    return "COMPLETED" if job.waitstatus == 0 else "FAILED"


def _dependency_met(scheme: str, result: str) -> bool:
    return {"after-success": result == "COMPLETED", "after-failure": result != "COMPLETED",
            "after-finish": True}.get(scheme, False)


def _redacted(jobspec: dict[str, Any]) -> dict[str, Any]:
    """The journal's submit jobspec has no environment (journal.txt)."""
    redacted = copy.deepcopy(jobspec)
    redacted["attributes"].get("system", {}).pop("environment", None)
    return redacted


def _open_stdio(options: dict[str, Any], jobid: int) -> tuple[list[Any], Callable[[str], None]]:
    """Files for stdin/stdout/stderr from the shell options; default output goes to the
    KVS, which this double does not keep.  ``{{id}}`` expands to the f58 id (misc.txt).
    Returns the streams and a function that writes shell log lines to the job's stderr."""
    def path_of(iotype: str, stream: str) -> str | None:
        spec = options.get(iotype, {}).get(stream, {})
        path = spec.get("path") if spec.get("type") != "kvs" else None
        return path.replace("{{id}}", _f58(jobid)) if path else None

    stdin_path = path_of("input", "stdin")
    stdin: Any = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    out_path, err_path = path_of("output", "stdout"), path_of("output", "stderr")
    stdout: Any = open(out_path, "ab" if options.get("output", {}).get("mode") == "append"
                       else "wb") if out_path else subprocess.DEVNULL
    # flux-core src/shell/output/conf.c: stderr inherits stdout's settings unless its
    # own say otherwise ("type": "kvs" sends it to the KVS, a path to that file)
    if err_path and err_path != out_path:
        stderr: Any = open(err_path, "wb")
    elif options.get("output", {}).get("stderr", {}).get("type") == "kvs":
        stderr = subprocess.DEVNULL
    else:
        stderr = stdout

    def shell_log(line: str) -> None:
        if hasattr(stderr, "write"):
            stderr.write(line.encode())
            stderr.flush()

    return [stdin, stdout, stderr], shell_log


def eventlog_text(events: list[dict[str, Any]]) -> str:
    """RFC 18 eventlog: one JSON object per line, ``context`` omitted when empty."""
    lines = []
    for event in events:
        entry = {k: v for k, v in event.items() if k != "context" or v}
        lines.append(json.dumps(entry))
    return "".join(line + "\n" for line in lines)


def all_jobs(instance: Instance) -> Iterator[Job]:
    with instance.cv:
        jobs = list(instance.jobs.values())
    return iter(jobs)
