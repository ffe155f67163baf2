"""The worker connection's transport: what the session needs of a socket (send in order, ping,
terminate, close, the inbound frames), and its implementation on ``websockets``' asyncio client.
Tests plug in their own :class:`Connection` through a :data:`Connector`.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Awaitable
from typing import Callable, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

#: Largest frame accepted from the engine, bytes (the engine's default ``max_message_bytes``, protocol.md §2).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class Connection(Protocol):
    """One open connection to the engine."""

    def send(self, text: str) -> None:
        """Queues a text frame; frames leave in the order sent. Never raises."""

    def ping(self) -> None:
        """Sends a keepalive ping; its pong counts as the engine being alive."""

    def terminate(self) -> None:
        """Drops the connection at once (no closing handshake)."""

    async def close(self, code: int = 1000) -> None:
        """Closes with ``code`` after the queued frames."""

    def frames(self) -> AsyncIterator[str | bytes]:
        """The inbound frames, until the connection closes."""


#: Opens a connection: ``(url, headers, handshake_timeout_s, on_alive)``; raises on failure.
Connector = Callable[[str, "dict[str, str] | None", float, Callable[[], None]], Awaitable[Connection]]


class WsConnection:
    """A :class:`Connection` over a ``websockets`` client connection; one writer task sends the
    queued frames in order (``send`` never waits)."""

    def __init__(self, ws: ClientConnection, on_alive: Callable[[], None]) -> None:
        self._ws = ws
        self._on_alive = on_alive
        self._outbox: collections.deque[str | bytes] = collections.deque()
        self._writer: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()

    def send(self, text: str | bytes) -> None:
        self._outbox.append(text)
        if self._writer is None:
            self._writer = self._loop.create_task(self._write())

    async def _write(self) -> None:
        outbox = self._outbox
        send = self._ws.send
        try:
            while outbox:
                await send(outbox.popleft())
        except Exception:
            outbox.clear()  # the connection is gone; its close is handled by the reader
        finally:
            self._writer = None

    def ping(self) -> None:
        async def run() -> None:
            try:
                waiter = await self._ws.ping()
                await waiter
                self._on_alive()
            except Exception:
                pass

        self._loop.create_task(run())

    def terminate(self) -> None:
        transport = self._ws.transport
        if transport is not None:
            transport.abort()

    async def close(self, code: int = 1000) -> None:
        if self._writer is not None:
            try:
                await asyncio.shield(self._writer)
            except Exception:
                pass
        await self._ws.close(code)

    async def frames(self) -> AsyncIterator[str | bytes]:
        try:
            async for message in self._ws:
                yield message
        except ConnectionClosed:
            return


async def ws_connector(url: str, headers: dict[str, str] | None, handshake_timeout_s: float, on_alive: Callable[[], None]) -> Connection:
    """Opens the worker connection with ``websockets`` (no compression, frames up to 64 MiB, our own keepalive)."""
    ws = await connect(
        url,
        additional_headers=headers or None,
        open_timeout=handshake_timeout_s,
        ping_interval=None,
        compression=None,
        max_size=MAX_MESSAGE_BYTES,
        max_queue=1024,
        close_timeout=2,
        user_agent_header="svc-sdk-python",
    )
    return WsConnection(ws, on_alive)
