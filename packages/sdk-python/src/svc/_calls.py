"""The call table (sdk.md §6): synchronous and enqueue calls awaiting their ``invocationresult``,
each with its timeout, and the frames of calls made while not connected, sent in order after the
next open. Mirrors ``CallTable`` and ``Deadlines`` of the client core: calls whose deadlines fall in
the same 10 ms slot share one timer, so a call costs a set insert instead of a timer of its own.
A call can be cancelled (:meth:`CallTable.cancel`), and one that times out after it was sent is
reported so the session cancels it in the engine (issue 21).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
from typing import Any, Callable, Protocol

from ._codes import ErrorCode
from .errors import InvocationError

#: Width of a deadline slot, ms.
DEADLINE_SLOT_MS = 10

class CallFuture(Protocol):
    """Where a call's outcome goes: an asyncio future of the session's loop, a
    ``concurrent.futures.Future`` that a thread outside the loop waits on (settled in place, so that
    thread wakes without another loop iteration in between), or a :class:`svc._handoff.LoopFuture`
    for a caller on another event loop."""

    def done(self) -> bool: ...

    def set_result(self, result: Any, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


def resolve(future: CallFuture, value: Any) -> None:
    """Sets ``future``'s result unless it is done (a caller may cancel from its own thread)."""
    try:
        if not future.done():
            future.set_result(value)
    except (asyncio.InvalidStateError, concurrent.futures.InvalidStateError):
        pass


def reject(future: CallFuture, error: BaseException) -> None:
    """Sets ``future``'s exception unless it is done."""
    try:
        if not future.done():
            future.set_exception(error)
    except (asyncio.InvalidStateError, concurrent.futures.InvalidStateError):
        pass


class PendingCall:
    __slots__ = ("id", "function_id", "timeout_ms", "future", "slot", "frame", "sent", "owner")

    def __init__(self, call_id: str, function_id: str, timeout_ms: float, future: CallFuture) -> None:
        self.id = call_id
        self.function_id = function_id
        self.timeout_ms = timeout_ms
        self.future = future
        self.slot: set[PendingCall] | None = None
        #: The frame while the call waits in the outbound queue; None once sent or expired.
        self.frame: str | None = None
        #: Sent on the current connection: it may have run if that connection drops.
        self.sent = False
        #: The ids of the calls a handler made that await an answer (its run's ``calls``), when a
        #: handler made this one: it leaves that set when it settles.
        self.owner: set[str] | None = None


def _fmt_ms(ms: float) -> str:
    return str(int(ms)) if float(ms).is_integer() else str(ms)


class Deadlines:
    """Expiry of many short-lived items with few timers (one per 10 ms slot)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, expire: Callable[[PendingCall], None]) -> None:
        self._loop = loop
        self._expire = expire
        self._slots: dict[int, tuple[set[PendingCall], asyncio.TimerHandle]] = {}

    def add(self, item: PendingCall, timeout_ms: float) -> set[PendingCall]:
        now = self._loop.time() * 1000
        slot = math.ceil((now + timeout_ms) / DEADLINE_SLOT_MS)
        entry = self._slots.get(slot)
        if entry is None:
            items: set[PendingCall] = set()
            timer = self._loop.call_later(max(0.0, slot * DEADLINE_SLOT_MS - now) / 1000, self._fire, slot)
            entry = (items, timer)
            self._slots[slot] = entry
        entry[0].add(item)
        return entry[0]

    def clear(self) -> None:
        for _, timer in self._slots.values():
            timer.cancel()
        self._slots.clear()

    def _fire(self, slot: int) -> None:
        entry = self._slots.pop(slot, None)
        if entry is None:
            return
        for item in list(entry[0]):
            self._expire(item)


class CallTable:
    """Pending calls by invocation id, plus the queue of frames waiting for the next open."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_timeout: Callable[[PendingCall], None] | None = None) -> None:
        """``on_timeout`` is told of a call that timed out after it was sent (the session cancels
        it in the engine: its worker need not run on for nobody)."""
        self._loop = loop
        self._on_timeout = on_timeout
        self._pending: dict[str, PendingCall] = {}
        self._deadlines = Deadlines(loop, self._on_expire)
        self._queue: list[str | PendingCall] = []

    @property
    def size(self) -> int:
        return len(self._pending)

    def open(
        self,
        call_id: str,
        function_id: str,
        timeout_ms: float,
        frame: str,
        send: Callable[[str], None] | None,
        future: CallFuture | None = None,
        owner: set[str] | None = None,
    ) -> CallFuture:
        """Opens a call that fails with ``TIMEOUT`` (``invocation timed out after <ms>ms``) unless
        settled within ``timeout_ms``. ``send`` sends ``frame`` now; None queues it until :meth:`flush`.
        The outcome goes to ``future`` (a new asyncio future of the loop when None), returned.
        ``owner``: the call ids of the handler run that makes it (the id is added, and removed when
        the call ends)."""
        if future is None:
            future = self._loop.create_future()
        call = PendingCall(call_id, function_id, timeout_ms, future)
        self._pending[call_id] = call
        if owner is not None:
            call.owner = owner
            owner.add(call_id)
        call.slot = self._deadlines.add(call, timeout_ms)
        if send is not None:
            call.sent = True
            send(frame)
        else:
            call.frame = frame
            self._queue.append(call)
        return future

    def queue_void(self, frame: str) -> None:
        self._queue.append(frame)

    def settle(self, call_id: str) -> PendingCall | None:
        """Removes and returns the call (its answer arrived); None for a late or foreign answer."""
        call = self._pending.pop(call_id, None)
        if call is not None:
            _release(call)
        return call

    def cancel(self, call_id: str, make: Callable[[PendingCall], BaseException]) -> PendingCall | None:
        """Cancels the call: it fails with ``make(call)`` now and a late answer is ignored; a call still
        queued is dropped unsent. Returns the call when it was pending (its ``sent`` says whether
        the engine has it and must be told), else None."""
        call = self.settle(call_id)
        if call is None:
            return None
        call.frame = None
        reject(call.future, make(call))
        return call

    def flush(self, send: Callable[[str], None]) -> None:
        """Sends the queued frames in order; calls that expired meanwhile are skipped."""
        queue, self._queue = self._queue, []
        for item in queue:
            if isinstance(item, str):
                send(item)
            elif self._pending.get(item.id) is item and item.frame is not None:
                item.sent = True
                send(item.frame)
                item.frame = None

    def fail_sent(self, make: Callable[[PendingCall], BaseException]) -> None:
        """Fails the calls sent on a connection that was lost: they may or may not have run (sdk.md §6)."""
        for call in [c for c in self._pending.values() if c.sent]:
            del self._pending[call.id]
            _release(call)
            reject(call.future, make(call))

    def fail_all(self, make: Callable[[PendingCall], BaseException]) -> None:
        """Fails every pending and queued call; queued void calls are dropped."""
        calls = list(self._pending.values())
        self._pending.clear()
        self._deadlines.clear()
        self._queue = []
        for call in calls:
            call.frame = None
            if call.owner is not None:
                call.owner.discard(call.id)
            reject(call.future, make(call))

    def _on_expire(self, call: PendingCall) -> None:
        if self._pending.get(call.id) is not call:
            return
        del self._pending[call.id]
        if call.owner is not None:
            call.owner.discard(call.id)
        call.frame = None
        reject(
            call.future,
            InvocationError(ErrorCode.TIMEOUT, f"invocation timed out after {_fmt_ms(call.timeout_ms)}ms", call.function_id, None, call.id),
        )
        if call.sent and self._on_timeout is not None:
            self._on_timeout(call)


def _release(call: PendingCall) -> None:
    """Takes a call that left the table out of its deadline slot and its handler's set."""
    if call.slot is not None:
        call.slot.discard(call)
    if call.owner is not None:
        call.owner.discard(call.id)


def format_ms(ms: float) -> str:
    """``ms`` as the messages write it: ``1500``, ``0.5``."""
    return _fmt_ms(ms)
