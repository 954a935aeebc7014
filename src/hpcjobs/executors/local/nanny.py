"""The nanny: the one process that spawns, reaps and records a local executor's jobs.

Why a separate process: a job's exit status can only be collected by its parent, and it
must survive the client being SIGKILLed, yet ``single`` must exec the executable with no
shell in between. So each executor starts one nanny (lazily, in its own session, as a
grandchild that init adopts, so nobody has to reap it). The nanny reads one JSON request
per line on stdin, reports one JSON event per line on stdout, and appends each job's
records to its records file, where any process can read them:

    requests   ["S", id, argv, env, cwd, stdin, stdout, stderr, held]  spawn a job (env
                                                  null: the previous request's; held: keep
                                                  it until released)
               ["R", id]                          release a held job: spawn it now
               ["K", id]                          cancel a job
    events     ["N", nanny_pid, start_ticks]      first line: who I am
               ["S", id, pid, time]               started
               ["X", id, exit_code, time, canceled]  ended (code < 0: signal)
               ["E", id, message]                 could not be started
               ["C", id, time]                    cancelled while held (never started)
    records    "P <id> <pid> <start_ticks>\\n"      started (pid record)
               "X <id> <exit_code> <time> <canceled 0|1>\\n"  ended (exit record)
               "H <id>\\n", "R <id>\\n"            held, released
               "C <id> <time> <asked 0|1>\\n"       cancelled while held: asked, or its
                                                  client left and nobody can release it
    marks      <jobs>/<id>.cancel                 made by whoever cancels

Records are appended to one file (written before the events that announce them), not
one file per job: on a busy filesystem creating a file costs far more than an append,
more than a whole spawn (docs/decisions.md). A line without its newline is still being written: readers skip it.

One loop, no threads: ``selectors`` waits on the request
pipe and on SIGCHLD (through ``signal.set_wakeup_fd``), and each wake-up reaps every
exited child with ``waitpid(-1, WNOHANG)``: O(1) work per exit, no sleeping. When the
client closes the pipe (or dies) the nanny keeps reaping until its last job has ended,
then exits. Jobs still held then can never be released (only the client can ask):
they are recorded as cancelled.

This file is also run as a script (``python -I -S nanny.py <jobs dir> <records file>
<grace>``), so it
imports nothing but the standard library: the client imports its record helpers too.
"""

from __future__ import annotations

import heapq
import json
import os
import selectors
import signal
import sys
import time
from typing import Any, Optional

CANCEL_MARK = ".cancel"


# -- records shared with the client -------------------------------------------------------
def start_ticks(pid: int) -> Optional[int]:
    """The process's start time in clock ticks since boot (Linux ``/proc/<pid>/stat``
    field 22), which with the pid identifies a process across pid reuse; None if
    there is no such process, it has ended (a zombie), or there is no ``/proc``."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # field 2 (comm) is in parentheses and may itself contain ") ": split after the last
    fields = data[data.rindex(b")") + 2:].split()
    if fields[0] in (b"Z", b"X"):  # ended; a zombie only waits for its parent to reap it
        return None
    return int(fields[19])


def process_alive(pid: int, ticks: Optional[int]) -> bool:
    """True if process ``pid`` exists and (when ``ticks`` is known) is the same process
    that had start time ``ticks``: a reused pid is not mistaken for the job."""
    now = start_ticks(pid)
    if now is not None:
        return ticks is None or now == ticks
    if os.path.isdir("/proc/self"):
        return False
    try:  # no /proc: the pid is all we can check
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


# -- the nanny itself ---------------------------------------------------------------------
def _write_all(fd: int, data: bytes) -> None:
    # a signal (SIGCHLD) can cut a large pipe write short: finish it
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _open(field: str, path: str, flags: int) -> int:
    try:
        return os.open(path, flags, 0o666)
    except OSError as e:
        raise _SpawnError(f"cannot open JobSpec.{field} {path!r}: {e.strerror}") from None


_DEFAULT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ")
                         if hasattr(signal, name))


class _SpawnError(Exception):
    pass


def _adopt_environment(env: dict[str, str]) -> None:
    # change only what differs: jobs that differ by a variable or two stay cheap
    current = os.environ
    for name in [name for name in current if name not in env]:
        del current[name]
    for name, value in env.items():
        if current.get(name) != value:
            current[name] = value


class Nanny:
    """Spawns the jobs asked for on ``requests``, reports on ``events``."""

    def __init__(self, jobs_dir: str, records: str, grace: float, requests: int,
                 events: int) -> None:
        self.jobs_dir = jobs_dir
        self.records = os.open(records, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.new_records: list[str] = []
        self.grace = grace
        self.requests = requests
        self.events: Optional[int] = events
        self.running: dict[int, str] = {}  # pid -> job id
        self.pids: dict[str, int] = {}
        self.canceled: set[str] = set()
        self.kills: list[tuple[float, int, str]] = []  # (deadline, pid, id): SIGKILL due
        self.pending: list[bytes] = []
        self.unrecorded: list[str] = []  # started jobs without a pid record yet
        # unset streams read from / write to /dev/null (psij-python's choice too)
        self.devnull = os.open(os.devnull, os.O_RDWR)
        self.env: dict[bytes, bytes] = {}  # the current job environment, encoded once
        self.adopted: Optional[dict[str, str]] = None  # ... as the client sent it
        self.requested: dict[str, str] = {}  # the last environment a request carried
        #: held jobs: id -> the rest of their spawn request
        self.held: dict[str, tuple[Any, ...]] = {}

    def report(self, *event: Any) -> None:
        if self.events is not None:
            self.pending.append(json.dumps(event).encode() + b"\n")

    def flush(self) -> None:
        if self.new_records:  # first: a job is on record before it is reported
            _write_all(self.records, "".join(self.new_records).encode())
            self.new_records.clear()
        if self.pending and self.events is not None:
            try:
                _write_all(self.events, b"".join(self.pending))
            except BrokenPipeError:  # the client is gone; the job records still count
                os.close(self.events)
                self.events = None
        self.pending.clear()

    def run(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        sel = selectors.DefaultSelector()
        sel.register(self.requests, selectors.EVENT_READ)
        sel.register(wake_r, selectors.EVENT_READ)
        client_open = True
        partial = b""
        while client_open or self.running or self.held:
            if not client_open and self.held:
                for job_id in list(self.held):  # nobody is left who could release them
                    self.cancel_held(job_id, asked=False)
                self.flush()
                continue
            timeout = max(0.0, self.kills[0][0] - time.monotonic()) if self.kills else None
            for key, _ in sel.select(timeout):
                if key.fd == wake_r:
                    while True:
                        try:
                            if not os.read(wake_r, 4096):
                                break
                        except BlockingIOError:
                            break
                    continue
                data = os.read(self.requests, 1 << 16)
                if not data:
                    client_open = False
                    sel.unregister(self.requests)
                    continue
                *lines, partial = (partial + data).split(b"\n")
                for line in lines:
                    self.handle(json.loads(line))
            self.reap()
            self.record_pids()
            self.fire_kills()
            self.flush()

    def handle(self, request: list[Any]) -> None:
        if request[0] == "S":
            job_id, argv, env, *rest = request[1:]
            # successive jobs usually share one environment: it comes when it changes
            if env is not None:
                self.requested = env
            if len(rest) > 4 and rest[4]:
                self.held[job_id] = (argv, self.requested, *rest[:4])
                self.new_records.append(f"H {job_id}\n")
            else:
                self.spawn(job_id, argv, self.requested, *rest[:4])
        elif request[0] == "R":
            self.release(request[1])
        elif request[0] == "K":
            self.cancel(request[1])

    def release(self, job_id: str) -> None:
        held = self.held.pop(job_id, None)
        if held is None:  # not held (any more): nothing to do
            return
        if os.path.exists(os.path.join(self.jobs_dir, job_id + CANCEL_MARK)):
            # another process cancelled it meanwhile (it cannot tell us: it left a mark)
            self.held[job_id] = held
            self.cancel_held(job_id, asked=True)
            return
        self.new_records.append(f"R {job_id}\n")
        self.spawn(job_id, *held)

    def cancel_held(self, job_id: str, asked: bool) -> None:
        del self.held[job_id]
        now = time.time()
        self.new_records.append(f"C {job_id} {now:.6f} {int(asked)}\n")
        self.report("C", job_id, now)

    def spawn(self, job_id: str, argv: list[str], env: dict[str, str], cwd: str,
              stdin: Optional[str], stdout: Optional[str], stderr: Optional[str]) -> None:
        if env is not self.adopted:
            # Encoded once per environment. It also becomes ours, because posix_spawnp
            # looks a bare executable name up on the caller's PATH (the job's, so).
            _adopt_environment(env)
            self.env = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
            self.adopted = env
        opened: list[int] = []
        try:
            fds = [self.devnull] * 3
            if stdin is not None:
                fds[0] = _open("stdin_path", stdin, os.O_RDONLY)
                opened.append(fds[0])
            out_flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            if stdout is not None:
                fds[1] = _open("stdout_path", stdout, out_flags)
                opened.append(fds[1])
            if stderr is not None and stderr == stdout:
                fds[2] = fds[1]  # one file, one offset: the two streams interleave
            elif stderr is not None:
                fds[2] = _open("stderr_path", stderr, out_flags)
                opened.append(fds[2])
            # posix_spawn has no chdir action: the child inherits our directory (we are
            # single-threaded and use absolute paths, so nothing else minds). Every
            # time, even for the same path: it may have been removed and made anew.
            try:
                os.chdir(cwd)
            except OSError as e:
                raise _SpawnError(f"cannot use JobSpec.directory {cwd!r}: {e.strerror}") from None
            try:
                # posix_spawn (vfork-like in glibc) costs the nanny less than
                # subprocess.Popen. setsid: the job leads its own process group, so a
                # cancel reaches everything it started; setsigdef: the default SIGPIPE
                # and SIGXFSZ dispositions that Python changed for itself. Every other
                # descriptor of ours is close-on-exec (Python's default).
                pid = os.posix_spawnp(argv[0], argv, self.env, setsid=True,
                                      setsigdef=_DEFAULT_SIGNALS,
                                      file_actions=[(os.POSIX_SPAWN_DUP2, fd, i)
                                                    for i, fd in enumerate(fds)])
            except OSError as e:
                what = e.filename if e.filename is not None else argv[0]
                raise _SpawnError(f"could not start the job: {e.strerror}: {what!r}") from None
        except _SpawnError as e:
            self.report("E", job_id, str(e))
            return
        finally:
            for fd in opened:
                os.close(fd)
        self.running[pid] = job_id
        self.pids[job_id] = pid
        self.unrecorded.append(job_id)
        self.report("S", job_id, pid, time.time())

    def record_pids(self) -> None:
        """Write the pid records of the jobs started in this round that still run.

        Done after reaping and before reporting the starts, so that a job reported as
        started has a pid record or an exit record for any other process to find; a
        short job that has already ended (common when many are submitted at once) never
        costs a record and a /proc read.
        """
        for job_id in self.unrecorded:
            pid = self.pids.get(job_id)
            if pid is not None:
                self.new_records.append(f"P {job_id} {pid} {start_ticks(pid)}\n")
        self.unrecorded.clear()

    def cancel(self, job_id: str) -> None:
        if job_id in self.held:
            self.cancel_held(job_id, asked=True)
            return
        pid = self.pids.get(job_id)
        if pid is None:  # already ended (or never started): nothing to do
            return
        self.canceled.add(job_id)
        _killpg(pid, signal.SIGTERM)
        heapq.heappush(self.kills, (time.monotonic() + self.grace, pid, job_id))

    def fire_kills(self) -> None:
        now = time.monotonic()
        while self.kills and self.kills[0][0] <= now:
            _, pid, job_id = heapq.heappop(self.kills)
            if self.pids.get(job_id) == pid:
                _killpg(pid, signal.SIGKILL)

    def reap(self) -> None:
        while self.running:
            # peek, then reap: a cancelled job's leftover group gets SIGKILL while its
            # leader's pid still names it (once reaped, the pid may be reused)
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is None:
                return
            pid = info.si_pid
            job_id = self.running.pop(pid, None)
            canceled = job_id is not None and (job_id in self.canceled or os.path.exists(
                os.path.join(self.jobs_dir, job_id + CANCEL_MARK)))
            if canceled:
                _killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            now = time.time()
            if job_id is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            del self.pids[job_id]
            self.canceled.discard(job_id)
            self.new_records.append(f"X {job_id} {code} {now:.6f} {int(canceled)}\n")
            self.report("X", job_id, code, now, canceled)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str]) -> None:
    """``nanny.py <jobs dir> <cancel grace seconds>``; requests on stdin, events on stdout."""
    jobs_dir, records, grace = argv[0], argv[1], float(argv[2])
    # become a grandchild of the client: init adopts us, so no zombie waits on the client
    if os.fork() != 0:
        os._exit(0)
    events = sys.stdout.fileno()
    _write_all(events, json.dumps(["N", os.getpid(), start_ticks(os.getpid())]).encode() + b"\n")
    Nanny(jobs_dir, records, grace, sys.stdin.fileno(), events).run()


if __name__ == "__main__":
    main(sys.argv[1:])
