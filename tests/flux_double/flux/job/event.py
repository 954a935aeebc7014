"""TEST DOUBLE of ``flux.job.event`` (flux-core 0.88): eventlog watching.

README.md section 1: ``event_watch`` replays the whole log, also for inactive jobs, and
ends by itself after ``clean``; an unknown id raises ``FileNotFoundError(ENOENT)``
(misc.txt); ``event_wait`` raises ``JobException`` on a fatal exception (infeasible.txt).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from flux.future import JobEventWatchFuture

if TYPE_CHECKING:
    from flux import Flux

# flux.job.MAIN_EVENTS: note that validate, dependency-add/-remove and memo are missing
# although they appear in the eventlog (README section 2).
MAIN_EVENTS = frozenset({"submit", "depend", "priority", "flux-restart", "urgency",
                         "alloc", "free", "start", "release", "finish", "clean", "debug",
                         "exception"})


class EventLogEvent:
    """One eventlog entry: ``name``, ``timestamp``, ``context`` (a dict)."""

    def __init__(self, event: dict[str, Any]) -> None:
        self._name = event["name"]
        self._timestamp = event["timestamp"]
        self._context = event.get("context", {})

    @property
    def name(self) -> str:
        return str(self._name)

    @property
    def timestamp(self) -> float:
        return float(self._timestamp)

    @property
    def context(self) -> dict[str, Any]:
        return self._context

    def __str__(self) -> str:
        return f"{self.timestamp:<0.5f}: {self.name} {self.context}"


class JobException(Exception):
    """A fatal ``exception`` event seen by ``event_wait`` (infeasible.txt)."""

    def __init__(self, event: EventLogEvent) -> None:
        self.timestamp = event.timestamp
        self.type = event.context["type"]
        self.note = event.context["note"]
        self.severity = event.context["severity"]
        super().__init__(self)

    def __str__(self) -> str:
        return f"job.exception: type={self.type}: {self.note}"


class _WatchFuture(JobEventWatchFuture):
    def get_event(self) -> Any:
        item = self.take()
        return None if item is None else EventLogEvent(item)


def event_watch_async(flux_handle: Flux, jobid: int,
                      eventlog: str = "eventlog") -> JobEventWatchFuture:
    future = _WatchFuture(flux_handle)
    flux_handle.instance.watch(int(jobid), eventlog, future.push)
    return future


def event_watch(flux_handle: Flux, jobid: int,
                eventlog: str = "eventlog") -> Iterator[EventLogEvent]:
    watcher = event_watch_async(flux_handle, jobid, eventlog)
    event = watcher.get_event()
    while event is not None:
        yield event
        event = watcher.get_event()


def event_wait(flux_handle: Flux, jobid: int, name: str, eventlog: str = "eventlog",
               raiseJobException: bool = True) -> EventLogEvent:
    for event in event_watch(flux_handle, jobid, eventlog):
        if event.name == name:
            return event
        if raiseJobException and event.name == "exception" \
                and event.context["severity"] == 0:
            raise JobException(event)
    raise OSError(errno.ENODATA, f"eventlog ended before event='{name}'")
