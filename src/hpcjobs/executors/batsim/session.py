"""One simulation: the decision loop and the simulator it talks to.

The executor creates a session on its first submit, with a started simulator
(:mod:`.simulator`: hpcjobs.sim in this process, or a simulator process over ZeroMQ),
and the session runs the decision loop on one named daemon thread:

1. receive Batsim's message (watching the simulator: if it dies, every live job ends
   FAILED with the simulator's own error);
2. wait until its events are due (real-time mode: the wall clock reaches their time);
3. handle them (:class:`.jobmanager.JobManager`: scheduler decisions, status changes);
4. report the status changes a blocked ``Job.wait()`` is waiting for (and all that
   happened before them), then hold the reply while the time mode says so (virtual
   time: while the client is not waiting) or while Batsim would have nothing to do
   (it would end the simulation), reporting everything before blocking;
5. reply: the decisions, plus what the client asked meanwhile (registrations, kills),
   then report the remaining changes (while a simulator process computes; in this
   process the reply has run the simulation to its next message already).

A job submitted while a message is held is registered in that message's reply, at the
simulated time the time mode gives (virtual: the message's time); one submitted while
the simulator is still starting, in the reply to SIMULATION_BEGINS, at time 0.
Locks: ``_lock`` guards the job manager; ``_pace`` (a condition) guards the client
state and wakes the loop. ``_pace`` is never held while taking ``_lock`` or a job's lock.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

from ...errors import SubmitException
from ...job import Job
from ...batsim_protocol import events as protocol
from ...batsim_protocol.events import Event, Message
from .jobmanager import JobManager, JobRequest, Record
from .pacing import ClientState, Pacer, WaitTracker
from .simulator import Simulator, SimulatorGone

__all__ = ["Session", "SimulatorGone"]

log = logging.getLogger(__name__)

#: decisions Batsim answers later (an acknowledgement, a completion, JOB_KILLED)
_WAKING = ("REGISTER_JOB", "EXECUTE_JOB", "KILL_JOB")


class Session:
    """A running simulation and its decision loop."""

    def __init__(self, name: str, simulator: Simulator, run_dir: Path,
                 jm: JobManager, pacer: Pacer, cores: int, hello: bool) -> None:
        self.run_dir = run_dir
        self.jm = jm
        self.simulator = simulator
        self._pacer = pacer
        self._cores = cores
        self._hello = hello  # batprotocol: say hello first
        self._lock = threading.Lock()
        # the condition's lock, for the hot paths that only update the client state
        # (a Condition's own ``with`` costs two Python calls more)
        self._pace_lock = threading.Lock()
        self._pace = threading.Condition(self._pace_lock)
        self._client = ClientState()
        #: the wait conditions a client thread is blocked on (virtual time)
        self._blocked: set[WaitTracker] = set()
        # time of the message awaiting our reply; before the first message, 0: a job
        # submitted while the simulator starts is registered in the reply to
        # SIMULATION_BEGINS (Batsim's clock starts at 0)
        self._held: Optional[float] = 0.0
        self._now = 0.0  # the simulation's latest time
        self._floor = 0.0  # the reply's 'now' may not be earlier (registration times)
        self._call_at: Optional[float] = None  # pending CALL_ME_LATER
        self._outbox: list[Event] = []  # client requests already taken for the held reply
        self._finished_sent = False
        self._submitters = 0  # submits waiting for a message to hold (guarded by _pace)
        self.error: Optional[str] = None  # why the simulation is gone, once it is
        log.info("simulation %s: %s", run_dir, simulator.description)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- client side -------------------------------------------------------------------
    @contextmanager
    def client_call(self) -> Iterator[None]:
        """Mark a client call in progress (virtual time stands still meanwhile)."""
        self.enter_call()
        try:
            yield
        finally:
            self.exit_call()

    def enter_call(self) -> None:
        """:meth:`client_call` without the context manager."""
        with self._pace_lock:
            self._client.calls += 1

    def exit_call(self) -> None:
        """End of a call started with :meth:`enter_call`."""
        with self._pace_lock:
            self._left_call()

    def _left_call(self) -> None:
        # called with _pace held
        client = self._client
        client.calls -= 1
        client.last_activity = time.monotonic()
        # wake the loop only when it may now reply: a notify per call would
        # hand the GIL to the loop thread on every submit
        if not client.calls and client.waiters:
            self._pace.notify_all()

    def submit(self, request: JobRequest, job: Job, bind: Callable[[str], None]) -> Record:
        """Register a job in the reply to the message Batsim is waiting on: a client
        call (:meth:`client_call`), with the call's bookkeeping folded into the locking
        the registration needs anyway (this is the hot path of a burst of submits)."""
        self.enter_call()
        try:
            while True:
                if self._held is None:
                    with self._pace:
                        self._submitters += 1
                        try:
                            while self._held is None:
                                if self.error is not None:
                                    raise SubmitException(f"the simulation is gone: {self.error}")
                                self._pace.wait(0.5)
                        finally:
                            self._submitters -= 1
                with self._lock:
                    # the loop clears _held only under _lock: if it is set now, it stays
                    held = self._held
                    if held is None:
                        continue
                    t = self._pacer.submit_time(held)
                    self._floor = max(self._floor, t)
                    record = self.jm.register(t, request, job, bind)
                    # the call ends here: under _lock, the reply cannot go before it
                    with self._pace_lock:
                        self._request_reply()
                        self._left_call()
                    return record
        except BaseException:
            self.exit_call()
            raise

    def cancel(self, record: Record) -> None:
        """Cancel ``record`` in the next reply."""
        with self._lock:
            self.jm.request_cancel(record)
        with self._pace:
            self._request_reply()

    def record(self, native_id: str) -> Optional[Record]:
        """The job ``native_id`` of this simulation, if there is one."""
        with self._lock:
            return self.jm.records.get(native_id)

    def attach(self, native_id: str, job: Job) -> bool:
        """Bind ``job`` to job ``native_id`` too (False if there is no such job)."""
        with self._lock:
            return self.jm.attach(native_id, job)

    @property
    def now(self) -> float:
        """The simulation's latest time (simulated seconds)."""
        with self._lock:
            return self._now

    def native_ids(self) -> list[str]:
        """Every job of this simulation."""
        with self._lock:
            return list(self.jm.records)

    def close(self, timeout: float) -> None:
        """Finish registration, let the simulation run to its end (as fast as it can)
        for up to ``timeout`` wall seconds, then stop the simulator."""
        with self._pace:
            self._client.closing = True
            self._pace.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("simulation %s did not end within %g s of close(); stopping it",
                        self.run_dir, timeout)
            self._fail(f"the executor was closed and the simulation did not end within {timeout:g} s")
            self.simulator.stop()
            self._thread.join(5)
        self.simulator.finish(10)

    def abort(self) -> None:
        """Stop at once (executor garbage-collected): stop the simulator."""
        with self._pace:
            self._client.closing = True
            self._pace.notify_all()
        self.simulator.stop()

    def _request_reply(self) -> None:
        # called with _pace held: something waits for the next reply
        if not self._client.actions:
            self._client.actions = True
            self._pace.notify_all()

    def track(self, job: Job, lock: threading.Lock) -> WaitTracker:
        """The condition ``job.wait()`` blocks on, counted by virtual time."""
        return WaitTracker(lock, job, self.waiters_changed)

    def waiters_changed(self, tracker: WaitTracker, delta: int) -> None:
        """``delta`` client threads started (+) or stopped (-) blocking on ``tracker``
        (in ``Job.wait()``; called with the job's lock held)."""
        with self._pace_lock:
            if tracker.blocked:
                self._blocked.add(tracker)
            else:
                self._blocked.discard(tracker)
            client = self._client
            client.waiters += delta
            client.last_activity = time.monotonic()
            if client.waiters == delta > 0:  # the first waiter: the loop may go on
                self._pace.notify_all()

    # -- the decision loop -------------------------------------------------------------
    def _loop(self) -> None:
        try:
            msg = self._recv()
            if self._hello:
                # what the executor needs: dynamic registration, acknowledged, profile reuse
                self._send(Message(msg.now, [protocol.edc_hello(
                    msg.now, dynamic_registration=True, acknowledge_dynamic_jobs=True, profile_reuse=True)]))
                msg = self._recv()
            begins = [e for e in msg.events if e["type"] == "SIMULATION_BEGINS"]
            if not begins:
                raise SimulatorGone(f"the simulator's first message is not SIMULATION_BEGINS: {msg!r}"[:500])
            with self._lock:
                self.jm.begin(begins[0]["data"], self._cores)
            self._pacer.start()
            while True:
                with self._pace:
                    # from now on a submit can join this message's reply: in real time
                    # it need not wait for the events below to fall due
                    self._held = msg.now
                    if self._submitters:  # (a notify per message costs when nobody waits)
                        self._pace.notify_all()
                due = msg.now
                self._wait(lambda: self._pacer.due(due, self._client))  # called right here
                kinds = {e["type"] for e in msg.events}  # (one pass, not one per question)
                ending = "SIMULATION_ENDS" in kinds
                with self._lock:
                    self._now = msg.now
                    if "REQUESTED_CALL" in kinds:
                        self._call_at = None
                    decisions = self.jm.handle(msg.events, msg.now)
                if ending:
                    self._deliver()
                    self._send(Message(msg.now, []))
                    self._end("the simulation ended before the job finished", msg.now)
                    return
                self._deliver(waited=True)  # what waiting clients wait for, first
                while True:
                    if not self._hold(early=True):
                        # the reply must wait for the client: it sees every change meanwhile
                        self._deliver()
                        self._hold(early=False)
                    if not self._take_requests(msg.now):
                        break
                # the reply goes now; the changes nobody waits for are reported while
                # a simulator process computes (another core)
                self._send(self._reply(msg.now, decisions))
                self._deliver()
                msg = self._recv()
        except SimulatorGone as e:
            self._fail(str(e))
        except Exception as e:  # a bug or a broken scheduler: never leave jobs hanging
            log.exception("simulation %s: decision loop failed", self.run_dir)
            self._fail(f"the decision loop failed: {e!r}")
            self.simulator.stop()
        finally:
            self._cleanup()

    def _hold(self, early: bool) -> bool:
        """Wait until the reply may go; with ``early``, only say whether it may go
        now (no waiting)."""
        def delay() -> Optional[float]:
            if self._batsim_idle():
                return 1.0  # Batsim would have nothing to do: wait for the client
            return self._pacer.hold(self._client)
        if early:
            with self._pace:
                return delay() is None
        self._wait(delay)
        return True

    def _batsim_idle(self) -> bool:
        """Whether a reply now would leave Batsim nothing to do (it would end the
        simulation, or deadlock): nothing running, registered, cancelled or called for."""
        client = self._client
        return not (self.jm.busy or self._call_at is not None or client.closing or client.actions
                    or any(e["type"] in _WAKING for e in self._outbox))

    def _take_requests(self, t: float) -> bool:
        """Turn what the client asked into events of the held reply, and report what
        that changes at once (a queued job's cancel ends it here): the client sees it
        before the reply lets the simulation move on, and may add to the same reply.
        (Batsim refuses a CALL_ME_LATER at the current time, so the reply cannot ask to
        come back at this instant.) False when nothing was asked."""
        with self._lock:
            with self._pace:
                if not self._client.actions:
                    return False
                self._client.actions = False
            self._outbox += self.jm.flush(max(t, self._floor))
            self.jm.deliver()
        return True

    def _deliver(self, waited: bool = False) -> None:
        """Report the pending status changes; with ``waited``, only up to the last
        one for a job a client thread is blocked on."""
        with self._lock:
            if not waited:
                self.jm.deliver()
                return
            with self._pace:
                jobs = [tracker.job() for tracker in self._blocked]
            records = self.jm.records
            self.jm.deliver({record for record in (records.get(job.native_id or "")
                                                   for job in jobs if job is not None)
                             if record is not None})

    def _wait(self, delay: Callable[[], Optional[float]]) -> None:
        with self._pace:
            while True:
                seconds = delay()
                if seconds is None:
                    return
                self._pace.wait(min(seconds, 0.5))
                self.simulator.check()

    def _reply(self, t: float, decisions: list[Event]) -> Message:
        with self._lock:
            with self._pace:
                self._held = None
                self._client.actions = False
                closing = self._client.closing
            now = max(t, self._floor)
            requested = self._outbox + self.jm.flush(now)
            self._outbox = []
            events = decisions + requested
            tick = self._pacer.tick
            if closing and not self._finished_sent:
                # Batsim ends the simulation once registration is over and jobs are done
                events.append(protocol.notify(now, "registration_finished"))
                self._finished_sent = True
            elif not self._finished_sent and self._call_at is None:
                if tick is not None:
                    self._call_at = now + tick
                elif self.jm.live and not (self.jm.running or any(
                        e["type"] in _WAKING for e in events)):
                    # queued jobs but nothing running: a scheduler waiting for time to
                    # pass would starve Batsim (a deadlock for real Batsim)
                    log.warning("simulation %s: jobs queued but none running at %s; "
                                "asking Batsim to call back in 1 s", self.run_dir, now)
                    self._call_at = now + 1.0
                if self._call_at is not None:
                    events.append(protocol.call_me_later(now, self._call_at))
            events.sort(key=lambda e: e["timestamp"])  # stable: decisions stay in order
            return Message(now, events)

    # -- I/O ---------------------------------------------------------------------------
    def _recv(self) -> Message:
        msg = self.simulator.receive()
        if self._hello:  # batprotocol: Batsim says why it stops
            for event in msg.events:
                if event["type"] == "SIMULATION_ERROR":
                    raise SimulatorGone(f"the simulator stopped: {event['data']['error']}")
        return msg

    def _send(self, msg: Message) -> None:
        self.simulator.send(msg)

    # -- endings -----------------------------------------------------------------------
    def _fail(self, message: str) -> None:
        log.error("simulation %s: %s", self.run_dir, message)
        self._end(message, self._now)

    def _end(self, message: str, now: float) -> None:
        with self._lock:
            self.jm.end(message, now)
            # under _lock, with the live jobs ended: no submit can join the held
            # message's reply any more (it never goes; its job would stay QUEUED)
            with self._pace:
                self._held = None
                if self.error is None:
                    self.error = message
                self._pace.notify_all()

    def _cleanup(self) -> None:
        self.simulator.close()
