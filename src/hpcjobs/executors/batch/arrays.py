"""Bursts of submissions become scheduler job arrays, without ``submit()`` returning early.

A workflow system submitting thousands of small jobs would otherwise cost the scheduler
one submission RPC per job; an array is one submission for many tasks (and counts as
one job against per-user submit limits). docs/arrays.md has the user's view.

How a burst is collected while ``submit()`` stays synchronous (it returns once the job
is submitted, or raises):

* Every submit stages its job first (checked, claimed, its script rendered) and queues
  it in the :class:`BurstCollector`. The first caller that finds no submission in
  progress becomes the *leader*: it takes everything queued and sends it (grouped by
  :func:`shape`, one array per group); the others wait for their job's outcome. Jobs
  submitted while the leader's scheduler call runs are queued and go out together in
  the next round (group commit). A lone submit never waits: it is its own round.
* When other callers are already waiting (a burst is under way), the leader keeps the
  queue open until ``window`` seconds after its oldest job arrived, so callers arriving
  a moment apart still share an array.
* A single-threaded loop cannot form a burst through ``submit()`` (each call returns only
  once its job is in), hence the explicit ``submit_many(jobs)``: one round for all.

A caller interrupted while its jobs are still queued takes them back (they are released,
never submitted); jobs already in the leader's hands are submitted or released by it.

An array costs a handful of files however many tasks it has (:class:`ArrayDir`): its
jobs' scripts are concatenated in one file, and each task, when it starts, makes its
job's directory and ``job.sh`` from it on the compute node. Per-job files written at
submit time would cost one metadata operation each on the shared file system, the very
cost an array is meant to save.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, Mapping, Optional, Sequence, TypeVar

from ...errors import SubmitException
from ...job import Job
from .host import Host
from .jobdir import JobDir

__all__ = ["Staged", "BurstCollector", "ArrayDir", "shape", "chunks"]

_T = TypeVar("_T")


class Staged:
    """A job ready to go out: checked, claimed, its script rendered (nothing written:
    a lone job's directory is made when it is sent, an array task's when it starts).

    ``per_job`` are the directives in which the tasks of an array may differ (None: it
    always goes alone, see :meth:`group_key`). The sender sets ``native_id`` or
    ``error``, then ``done``.
    """

    __slots__ = ("job", "job_dir", "script", "directives", "per_job", "arrived", "taken",
                 "withdrawn", "done", "native_id", "error")

    def __init__(self, job: Job, job_dir: JobDir, script: str, directives: dict[str, Any],
                 per_job: Optional[Sequence[str]]) -> None:
        self.job = job
        self.job_dir = job_dir
        self.script = script
        self.directives = directives
        self.per_job = per_job
        self.arrived = 0.0
        self.taken = False      # in a leader's round
        self.withdrawn = False  # taken back by its interrupted caller: never sent
        self.done = False
        self.native_id: Optional[str] = None
        self.error: Optional[SubmitException] = None

    def group_key(self) -> Hashable:
        """What it must share with others to go in the same array: its :func:`shape`,
        or itself alone. Worked out when a round has more than one job only (a lone
        submit, the usual case, goes alone without it)."""
        return id(self) if self.per_job is None else shape(self.directives, self.per_job)


def shape(directives: Mapping[str, Any], per_job: Sequence[str]) -> Hashable:
    """The grouping key of a job: its scheduler directives (resources, walltime, queue,
    account, reservation, custom options: everything an array's tasks share), except
    the ``per_job`` ones that an array may differ in (the job name)."""
    return repr(sorted((k, v) for k, v in directives.items() if k not in per_job))


def chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    """``items`` in slices of at most ``size`` (an array size limit, ids per command)."""
    for i in range(0, len(items), max(1, size)):
        yield items[i:i + size]


class BurstCollector:
    """Groups concurrent submissions into rounds (see the module docstring).

    ``send(batch)`` submits a round: it must mark every item ``done`` (with
    ``native_id`` or ``error``); it runs on the leader's thread without the lock held.
    """

    def __init__(self, window: float, send: Callable[[list[Staged]], None]) -> None:
        self._window = window
        self._send = send
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[Staged] = []
        self._callers = 0  # callers whose jobs are not all done
        self._leading = False

    def submit(self, items: Sequence[Staged]) -> None:
        """Queue ``items`` and return once each is done (or withdrawn, if this caller is
        interrupted first: then the interruption is raised)."""
        with self._cond:
            now = time.monotonic()
            for item in items:
                item.arrived = now
            self._queue.extend(items)
            self._callers += 1
            try:
                while not all(item.done for item in items):
                    if self._leading:
                        self._cond.wait()
                    else:
                        self._lead()
            except BaseException:
                self._withdraw(items)
                raise
            finally:
                self._callers -= 1

    def _lead(self) -> None:
        """Run one round (called with the lock held; released during the send)."""
        self._leading = True
        try:
            if self._window > 0 and self._callers > 1:  # a burst is under way
                deadline = self._queue[0].arrived + self._window
                while (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
            batch, self._queue = self._queue, []
            for item in batch:
                item.taken = True
            self._cond.release()
            try:
                self._send_all(batch)
            finally:
                self._cond.acquire()
        finally:
            self._leading = False
            self._cond.notify_all()

    def _send_all(self, batch: list[Staged]) -> None:
        try:
            self._send(batch)
        except BaseException as e:  # a bug or an interruption: no caller may wait forever
            for item in batch:
                if not item.done:
                    item.error = SubmitException(f"job {item.job.id} was not submitted: {e!r}", e)
                    item.done = True
            raise

    def _withdraw(self, items: Sequence[Staged]) -> None:
        mine = {id(item) for item in items}
        self._queue = [q for q in self._queue if id(q) not in mine]
        for item in items:
            if not item.taken:
                item.withdrawn = item.done = True


class ArrayDir:
    """An array's directory, ``<work directory>/array-<uuid>/``::

        job.sh     the dispatcher: the array's directives, then (array_dispatch.mustache)
                   task i makes its job's directory and job.sh and execs that script
        tasks      the jobs' scripts, one after the other
        index      line i: "<offset> <length> <job directory name>" of task i's script
        <i>.out    the scheduler's output of task i (its job's batch.out links to it)

    ``<work directory>/ids/<array id>`` links to it: task ``<array id>``, index i, is
    found through the index (:meth:`task_dir`).
    """

    TASKS = "tasks"
    INDEX = "index"

    def __init__(self, job_dir: JobDir) -> None:
        self.dir = job_dir  # (a JobDir: job.sh, link(), remove() are the same)

    @classmethod
    def create(cls, work_dir: Path, items: Sequence[Staged], host: Host) -> "ArrayDir":
        """Make the directory and write the tasks' scripts and index (not job.sh)."""
        array = cls(JobDir.create(work_dir, f"array-{uuid.uuid4().hex}", host))
        try:
            index, scripts, offset = [], [], 0
            for item in items:
                data = item.script.encode("utf-8", "surrogateescape")
                index.append(f"{offset} {len(data)} {item.job_dir.path.name}\n")
                scripts.append(data)
                offset += len(data)
            host.write_file(os.path.join(array.dir.path, cls.TASKS), b"".join(scripts))
            host.write_file(os.path.join(array.dir.path, cls.INDEX),
                            "".join(index).encode("ascii"))
        except BaseException:
            array.dir.remove()
            raise
        return array

    def dispatch_context(self, variables: tuple[str, str]) -> dict[str, str]:
        """The template context of array_dispatch.mustache."""
        work = self.dir.path.parent
        return {"array": str(self.dir.path), "work": str(work), "ids": str(work / "ids"),
                "array_link": os.path.join("..", self.dir.path.name),
                "id_variable": variables[0], "index_variable": variables[1]}

    @classmethod
    def task_dir(cls, work_dir: Path, array_id: str, index: int,
                 host: Host) -> Optional[JobDir]:
        """The job directory of task ``index`` of ``array_id`` (it exists once the task
        has started), if this work directory holds that array."""
        found, = host.read_files([os.path.join(work_dir, "ids", array_id, cls.INDEX)])
        try:
            line = found.data.decode("ascii").splitlines()[index] if found else ""
            return JobDir(work_dir / line.split()[2], host=host)
        except (IndexError, ValueError):
            return None
