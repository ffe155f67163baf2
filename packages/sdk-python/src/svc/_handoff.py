"""Hand-offs between threads and event loops for calls (sdk.md §6, §14): a call made outside the
client's loop thread goes to the session through an :class:`Inbox`, and its outcome goes back to an
asyncio caller on another loop through that loop's :class:`Inbox`. An inbox wakes its loop once per
batch (``call_soon_threadsafe`` writes a byte to the loop's self-pipe, a system call and a wake-up),
so 64 calls made or answered together cost one hop, not 64.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import weakref
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Inbox(Generic[T]):
    """Items put from any thread, handled in order by ``handle`` on ``loop``.

    ``on_closed`` gets every item that can no longer reach the loop (it is closed or gone). The
    loop is held weakly, so that an inbox kept per caller loop does not keep that loop alive."""

    def __init__(self, loop: asyncio.AbstractEventLoop, handle: Callable[[T], None], on_closed: Callable[[T], None]) -> None:
        self._loop = weakref.ref(loop)
        self._handle = handle
        self._on_closed = on_closed
        self._items: collections.deque[T] = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def put(self, item: T) -> None:
        """Queues ``item``; wakes the loop unless a wake-up is already on its way."""
        with self._lock:
            self._items.append(item)
            if self._scheduled:
                return
            self._scheduled = True
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the loop is gone")
            loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed
            for stranded in self._take():
                self._on_closed(stranded)

    def _take(self) -> list[T]:
        with self._lock:
            items = list(self._items)
            self._items.clear()
            self._scheduled = False
        return items

    def _drain(self) -> None:
        for item in self._take():
            try:
                self._handle(item)
            except Exception as err:  # a handler never raises; keep the others going if one did
                loop = self._loop()
                if loop is not None:
                    loop.call_exception_handler({"message": "svc: a call hand-off failed", "exception": err})


class LoopFuture:
    """Settles an asyncio future of another event loop (a caller's) from the client's loop, through
    that loop's :class:`Inbox` of ``(future, failed, value)``; a :data:`svc._calls.CallFuture`."""

    __slots__ = ("future", "_inbox")

    def __init__(self, future: asyncio.Future[Any], inbox: Inbox[tuple[asyncio.Future[Any], bool, Any]]) -> None:
        self.future = future
        self._inbox = inbox

    def done(self) -> bool:
        return self.future.done()

    def set_result(self, result: Any) -> None:
        self._inbox.put((self.future, False, result))

    def set_exception(self, exception: BaseException) -> None:
        self._inbox.put((self.future, True, exception))


def settle_in_loop(item: tuple[asyncio.Future[Any], bool, Any]) -> None:
    """The handler of a caller loop's inbox: sets the future unless it is done (cancelled)."""
    future, failed, value = item
    if future.done():
        return
    if failed:
        future.set_exception(value)
    else:
        future.set_result(value)
