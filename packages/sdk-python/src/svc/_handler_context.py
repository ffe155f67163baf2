"""The context a handler runs with: its invocation id and its cancellation (svc addition,
docs/reference/protocol.md "cancelinvocation"; ``HandlerRun`` of the client core's
``handler-context.ts``). The session keeps one :class:`HandlerRun` per running invocation, by the id
the engine sent, so that a ``cancelinvocation`` frame finds it; a context variable makes it current
while the handler runs (in its task, or in its thread for a sync handler), so the calls the handler
makes are cancelled with it.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

#: Longest ``reason`` a ``cancelinvocation`` carries, characters (the engine keeps no more).
MAX_CANCEL_REASON = 1024


def bound_reason(reason: str | None) -> str | None:
    """``reason`` cut to :data:`MAX_CANCEL_REASON` characters; None (and an empty text) stay None."""
    if reason is None or reason == "":
        return None
    return reason[:MAX_CANCEL_REASON]


def cancelled_message(reason: str | None) -> str:
    """The catalogue's message of ``cancelled``: ``Invocation cancelled`` or ``Invocation cancelled: <reason>``."""
    return "Invocation cancelled" if reason is None or reason == "" else f"Invocation cancelled: {reason}"


class HandlerContext:
    """What a running handler may ask about its invocation (the Node SDK's ``HandlerContext``).
    Get it with :func:`svc.handler_context` inside a handler (sync or async).

    Attributes:
        invocation_id: the id the engine gave this invocation (protocol.md §5.8).
        function_id: the function being run.

    A cancelled invocation (its caller cancelled it, its caller's or the engine's timeout passed,
    its caller or HTTP client went away, or ``engine::invocations::cancel`` named it) is not
    waited for any more: an async handler's task gets ``asyncio.CancelledError`` at its ``await``;
    a sync handler runs on in its thread and should check :attr:`cancelled` (or
    :meth:`wait_cancelled`) and stop. Either way its answer is dropped, and the calls it made with
    ``trigger``/``trigger_async`` are cancelled with it.

    Example:
        >>> from svc import handler_context
        >>> def build(data):
        ...     ctx = handler_context()
        ...     for page in data["pages"]:
        ...         if ctx is not None and ctx.cancelled:
        ...             return None  # nobody waits for the answer any more
        ...         render(page)
    """

    __slots__ = ("invocation_id", "function_id", "_cancelled", "_reason", "_event")

    def __init__(self, invocation_id: str, function_id: str) -> None:
        self.invocation_id = invocation_id
        self.function_id = function_id
        self._cancelled = False
        self._reason: str | None = None
        self._event: threading.Event | None = None

    @property
    def cancelled(self) -> bool:
        """True once the invocation is cancelled."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The canceller's reason (at most 1024 characters), None without one or before a cancel."""
        return self._reason

    def wait_cancelled(self, timeout_s: float | None = None) -> bool:
        """Blocks the calling thread until the invocation is cancelled or ``timeout_s`` seconds
        pass; returns :attr:`cancelled`. For sync handlers (an async one is cancelled at its ``await``)."""
        event = self._event
        if event is None:
            event = threading.Event()
            self._event = event
            # Set after publishing: a cancel that ran in between saw no event, so set it here.
            if self._cancelled:
                event.set()
        return event.wait(timeout_s)

    def __repr__(self) -> str:
        return f"HandlerContext(invocation_id={self.invocation_id!r}, function_id={self.function_id!r}, cancelled={self._cancelled!r})"


class HandlerRun(HandlerContext):
    """A running invocation as the session holds it: the context plus the asyncio task of an async
    handler (None for a sync one) and the ids of the calls it made that still await an answer.
    Touched on the session's loop only, except :attr:`cancelled`/:meth:`wait_cancelled`."""

    __slots__ = ("task", "calls")

    def __init__(self, invocation_id: str, function_id: str) -> None:
        super().__init__(invocation_id, function_id)
        self.task: asyncio.Task[Any] | None = None
        self.calls: set[str] = set()

    def abort(self, reason: str | None) -> bool:
        """Marks the run cancelled with ``reason``; False when it already was."""
        if self._cancelled:
            return False
        self._reason = bound_reason(reason)
        self._cancelled = True
        event = self._event
        if event is not None:
            event.set()
        return True


_current: contextvars.ContextVar[HandlerRun | None] = contextvars.ContextVar("svc_handler_run", default=None)


def current_run() -> HandlerRun | None:
    """The run of the handler whose task or thread is calling, else None."""
    return _current.get()


def set_current(run: HandlerRun | None) -> contextvars.Token[HandlerRun | None]:
    return _current.set(run)


def reset_current(token: contextvars.Token[HandlerRun | None]) -> None:
    _current.reset(token)


def handler_context() -> HandlerContext | None:
    """The :class:`HandlerContext` of the invocation the calling handler serves (in its async task,
    or in its thread for a sync handler); None outside a handler. Code a handler runs in a task or
    thread of its own does not see it: pass it along.

    Example:
        >>> async def report(data):
        ...     ctx = handler_context()
        ...     log.info("building report for %s", ctx.invocation_id)
    """
    return _current.get()
