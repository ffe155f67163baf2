"""The worker connection's transport: what the session needs of a socket (send in order, ping,
terminate, close, the inbound frames), and its implementation on ``websockets``' asyncio client.
Tests plug in their own :class:`Connection` through a :data:`Connector`.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable
from typing import Callable, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.frames import CloseCode, Frame, Opcode
from websockets.protocol import Event, State

#: Largest frame accepted from the engine, bytes (the engine's default ``max_message_bytes``, protocol.md §2).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

_DATA = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)
#: Bytes asked of the socket per read (below glibc's 128 KiB mmap threshold).
_READ_SIZE = 64 * 1024


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

    async def run(self, on_frame: Callable[[str | bytes], None]) -> None:
        """Calls ``on_frame`` with every inbound frame, in order, as it arrives; returns once the
        connection closed. Called once per connection."""


#: Opens a connection: ``(url, headers, handshake_timeout_s, on_alive)``; raises on failure.
Connector = Callable[[str, "dict[str, str] | None", float, Callable[[], None]], Awaitable[Connection]]


class _DirectConnection(ClientConnection):
    """``websockets``' client connection (given to ``connect`` as its documented
    ``create_connection`` factory) that hands each inbound data frame to ``on_frame`` from
    ``data_received``, instead of queueing it for ``recv()``: a frame reaches the session in the
    event-loop iteration that read it, not one or two iterations later through a waiting task.
    Frames that arrive after the opening handshake and before ``on_frame`` is set are kept, in
    order, for :meth:`start`. Pings, pongs and the close go through websockets as usual."""

    on_frame: Callable[[str | bytes], None] | None = None
    _early: list[str | bytes] | None = None
    _fragments: list[bytes] | None = None
    _fragments_text = False
    #: Set once this side failed the connection: frames read with the bad one are not delivered.
    _failing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # asyncio's socket transport reads with recv(max_size), 256 KiB by default: a buffer that
        # size comes from mmap and goes back with munmap on every read, ≈13 µs per small frame.
        # 64 KiB stays on the heap; larger frames take a few more reads. (An attribute of
        # CPython's selector transport: left alone where a transport has none.)
        if isinstance(getattr(transport, "max_size", None), int):
            transport.max_size = _READ_SIZE  # type: ignore[attr-defined]

    def start(self, on_frame: Callable[[str | bytes], None]) -> None:
        """Delivers the frames kept so far, then every later one as it is parsed."""
        early, self._early = self._early, None
        self.on_frame = on_frame
        for message in early or ():
            self._deliver(message)

    def process_event(self, event: Event) -> None:
        if self.response is None or not isinstance(event, Frame) or event.opcode not in _DATA:
            super().process_event(event)
            return
        if self._failing:
            return
        if event.opcode is not Opcode.CONT:
            if event.fin:
                self._decoded(event.opcode is Opcode.TEXT, bytes(event.data))
                return
            self._fragments, self._fragments_text = [bytes(event.data)], event.opcode is Opcode.TEXT
            return
        if self._fragments is None:
            return  # the protocol refuses a continuation without a start
        self._fragments.append(bytes(event.data))
        if event.fin:
            data, self._fragments = b"".join(self._fragments), None
            self._decoded(self._fragments_text, data)

    def _decoded(self, text: bool, data: bytes) -> None:
        if not text:
            self._deliver(data)
            return
        try:
            message = data.decode()
        except UnicodeDecodeError:
            self._fail(CloseCode.INVALID_DATA, "invalid UTF-8 in a text frame")
            return
        self._deliver(message)

    def _deliver(self, message: str | bytes) -> None:
        deliver = self.on_frame
        if deliver is None:
            if self._early is None:
                self._early = []
            self._early.append(message)
            return
        try:
            deliver(message)
        except Exception:
            # The session's frame handler never raises; if it did, drop this connection (the
            # session reconnects) rather than let asyncio log it and carry on half-way.
            self._fail(CloseCode.INTERNAL_ERROR, "frame handler failed")

    def _fail(self, code: CloseCode, reason: str) -> None:
        self._failing = True
        self.protocol.fail(code, reason)
        self.send_data()


class WsConnection:
    """A :class:`Connection` over a ``websockets`` client connection.

    ``send`` writes the first frame of an event-loop iteration to the socket at once (no task, no
    await), and the frames sent after it in the same iteration together, in one write, when the
    iteration ends (64 answers or calls made in one iteration cost two writes, not 64). While the
    socket's write buffer is above its limit, frames queue for one writer task that awaits
    websockets' flow control. Inbound frames go straight to ``run``'s callback."""

    def __init__(self, ws: _DirectConnection, on_alive: Callable[[], None]) -> None:
        self._ws = ws
        self._on_alive = on_alive
        self._outbox: collections.deque[str | bytes] = collections.deque()
        self._writer: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        #: A frame was written in this iteration: later ones wait in the protocol for _uncork.
        self._corked = False

    def send(self, text: str | bytes) -> None:
        if self._writer is None:
            ws = self._ws
            if ws.protocol.state is State.OPEN and ws.transport.get_write_buffer_size() == 0:
                try:
                    if isinstance(text, str):
                        ws.protocol.send_text(text.encode())
                    else:
                        ws.protocol.send_binary(text)
                    if not self._corked:
                        ws.send_data()
                        self._corked = True
                        self._loop.call_soon(self._uncork)
                except Exception:
                    pass  # the connection is gone; its close is handled by run()
                return
        self._outbox.append(text)
        if self._writer is None:
            self._writer = self._loop.create_task(self._write())

    def _uncork(self) -> None:
        """Writes the frames sent since the first one of the iteration, joined."""
        self._corked = False
        ws = self._ws
        try:
            chunks = ws.protocol.data_to_send()
            if not chunks:
                return
            if all(chunks):
                ws.transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
                return
            for chunk in chunks:  # an end of stream after a close frame: as websockets does it
                if chunk:
                    ws.transport.write(chunk)
                elif ws.transport.can_write_eof():
                    ws.transport.write_eof()
                else:
                    ws.transport.close()
        except Exception:
            pass  # the connection is gone; its close is handled by run()

    async def _write(self) -> None:
        outbox = self._outbox
        send = self._ws.send
        try:
            while outbox:
                await send(outbox.popleft())
        except Exception:
            outbox.clear()  # the connection is gone; its close is handled by run()
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

    async def run(self, on_frame: Callable[[str | bytes], None]) -> None:
        self._ws.start(on_frame)
        await self._ws.wait_closed()


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
        create_connection=_DirectConnection,
    )
    assert isinstance(ws, _DirectConnection)
    return WsConnection(ws, on_alive)
