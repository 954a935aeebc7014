"""TEST DOUBLE of ``flux.future`` (flux-core 0.88): the futures async.txt uses.

A future is fed items by the simulated instance (``push``); ``then(cb)`` makes the
handle's ``reactor_run`` call ``cb(future)`` once per item, and a synchronous getter
blocks until an item is there.  An item may be an exception, raised by the getter.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flux import Flux


class Future:
    """A stream of results for one request; single-response futures get one item."""

    def __init__(self, handle: Flux, streaming: bool = False) -> None:
        self.handle = handle
        self._streaming = streaming
        self._items: collections.deque[Any] = collections.deque()
        self._cond = threading.Condition()
        self._cb: Callable[..., None] | None = None
        self._cb_args: tuple[Any, ...] = ()
        self._ended = False

    # --- producer side (the simulated instance) ----------------------------------
    def push(self, item: Any) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()
            armed = self._cb is not None
        if armed:
            self.handle.notify(self)

    # --- consumer side -----------------------------------------------------------
    def then(self, cb: Callable[..., None], *args: Any) -> Future:
        with self._cond:
            self._cb, self._cb_args = cb, args
            pending = len(self._items)
        self.handle.arm(1)
        for _ in range(pending):
            self.handle.notify(self)
        return self

    def fire(self) -> None:
        """Called by ``reactor_run``: one callback per item, disarm at the end."""
        assert self._cb is not None
        self._cb(self, *self._cb_args)
        with self._cond:
            done = self._ended or not self._streaming
        if done:
            self.handle.arm(-1)

    def take(self, timeout: float | None = None) -> Any:
        """Next item (blocking); ``TimeoutError`` if none within ``timeout``."""
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._items), timeout):
                raise TimeoutError(110, "Connection timed out")
            item = self._items[0] if not self._streaming else self._items.popleft()
            if item is None or isinstance(item, BaseException):
                self._ended = True
        if isinstance(item, BaseException):
            raise item
        return item

    def get(self) -> Any:
        return self.take()


class SubmitFuture(Future):
    """``flux.job.submit_async`` result: ``get_id()`` is the new JobID."""

    def get_id(self) -> Any:
        return self.take()


class JobEventWatchFuture(Future):
    """``flux.job.event_watch_async`` result: ``get_event()`` is ``None`` at the end."""

    def __init__(self, handle: Flux) -> None:
        super().__init__(handle, streaming=True)

    def get_event(self) -> Any:
        return self.take()
