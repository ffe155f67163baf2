"""Channels (sdk.md §9, protocol.md §9): ordered text and binary items from one writer to one
reader through the engine. Refs are plain JSON (``{"channel_id", "access_key", "direction"}``);
the SDK hands a handler a live :class:`ChannelReader` or :class:`ChannelWriter` for every ref in its
payload, and ``trigger`` results get the same treatment. An end opens its WebSocket
(``<worker URL>/ws/channels/<id>?key=<access_key>&dir=<direction>``) lazily, on first use.

Ends live on the client's event loop: use them from async handlers (or any coroutine on that loop);
from another thread, use the ``*_blocking`` methods.

Example:
    >>> async def upload(data):
    ...     body = await data["body"].read_all()          # a reader ref in the payload
    ...     return {"bytes": len(body)}
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Literal, TypeVar

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ._codes import ErrorCode
from .errors import InvocationError
from .types import StreamChannelRef

T = TypeVar("T")

#: Largest binary frame a writer sends, bytes (sdk.md §9).
MAX_FRAME_BYTES = 64 * 1024
#: Items a reader holds before it stops reading its socket (the engine then holds the writer).
READER_BUFFER_ITEMS = 64
_MAX_DEPTH = 64


class ChannelDirection(str, Enum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class ChannelItem:
    """One item: ``kind`` ``"text"`` with ``text``, or ``"binary"`` with ``data``."""

    kind: Literal["text", "binary"]
    text: str | None = None
    data: bytes | None = None

    @staticmethod
    def Text(text: str) -> ChannelItem:  # noqa: N802 (sdk.md §9)
        return ChannelItem("text", text=text)

    @staticmethod
    def Binary(data: bytes) -> ChannelItem:  # noqa: N802
        return ChannelItem("binary", data=bytes(data))


def is_channel_ref(value: object) -> bool:
    """True for a dict with string ``channel_id`` and ``access_key`` and ``direction`` read or write."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("channel_id"), str)
        and isinstance(value.get("access_key"), str)
        and value.get("direction") in ("read", "write")
    )


def channel_url(worker_url: str, ref: StreamChannelRef) -> str:
    """The channel route of ``ref`` (protocol.md §9): the worker URL without query, trailing slash removed."""
    parts = urllib.parse.urlsplit(worker_url)
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    query = urllib.parse.urlencode({"key": ref["access_key"], "dir": ref["direction"]})
    return f"{base}/ws/channels/{urllib.parse.quote(ref['channel_id'], safe='')}?{query}"


class _End:
    def __init__(self, loop: asyncio.AbstractEventLoop, worker_url: str, ref: StreamChannelRef, headers: dict[str, str] | None = None) -> None:
        self._loop = loop
        self._worker_url = worker_url
        self.ref: StreamChannelRef = {"channel_id": ref["channel_id"], "access_key": ref["access_key"], "direction": ref["direction"]}
        self._ws: ClientConnection | None = None
        self._opening: asyncio.Future[ClientConnection] | None = None

    def __svc_ref__(self) -> StreamChannelRef:
        """The ref this end was made from; an end put in a payload travels as it."""
        return self.ref

    async def _open(self) -> ClientConnection:
        if self._ws is not None:
            return self._ws
        if self._opening is None:
            self._opening = asyncio.ensure_future(
                connect(channel_url(self._worker_url, self.ref), compression=None, max_size=None, ping_interval=None, max_queue=READER_BUFFER_ITEMS)
            )
        self._ws = await asyncio.shield(self._opening)
        return self._ws

    def _blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            coro.close()
            raise RuntimeError("a blocking channel method was called on the client's own event loop; await the async method instead")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()


class ChannelWriter(_End):
    """The writing end of a channel (sdk.md §9)."""

    async def write(self, chunk: bytes | bytearray | memoryview | str) -> None:
        """Sends binary data (a ``str`` as UTF-8 bytes) in frames of at most 64 KiB; waits while the
        engine holds ``buffer_size`` items (backpressure)."""
        data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        ws = await self._open()
        for start in range(0, max(len(data), 1), MAX_FRAME_BYTES):
            await ws.send(data[start : start + MAX_FRAME_BYTES])

    async def send_message(self, text: str) -> None:
        """Sends one text item."""
        ws = await self._open()
        await ws.send(text)

    async def close(self) -> None:
        """Ends the channel normally (close code 1000 after the items sent); the reader then ends."""
        ws = await self._open()
        await ws.close(1000)

    async def abort(self) -> None:
        """Ends the channel abnormally: the reader gets an error instead of an end."""
        ws = await self._open()
        transport = ws.transport
        if transport is not None:
            transport.abort()

    def write_blocking(self, chunk: bytes | str) -> None:
        """:meth:`write` from a thread other than the client's loop (a sync handler)."""
        self._blocking(self.write(chunk))

    def send_message_blocking(self, text: str) -> None:
        self._blocking(self.send_message(text))

    def close_blocking(self) -> None:
        self._blocking(self.close())


_END = object()


class ChannelReader(_End):
    """The reading end of a channel (sdk.md §9): an async iterator of binary items.

    Raises (from :meth:`next`, :meth:`read_all`, iteration): InvocationError ``CHANNEL_CLOSED`` when the
    writer ended abnormally (close code 1011) or the channel was removed (1001).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, worker_url: str, ref: StreamChannelRef, headers: dict[str, str] | None = None) -> None:
        super().__init__(loop, worker_url, ref, headers)
        self._items: asyncio.Queue[Any] | None = None
        self._pump: asyncio.Task[None] | None = None
        self._callbacks: list[Callable[[str], None]] = []
        self._error: InvocationError | None = None
        self._ended = False

    def _start(self) -> asyncio.Queue[Any]:
        if self._items is None:
            self._items = asyncio.Queue(READER_BUFFER_ITEMS)
            self._pump = self._loop.create_task(self._run())
        return self._items

    async def _run(self) -> None:
        assert self._items is not None
        try:
            ws = await self._open()
            try:
                async for frame in ws:
                    if isinstance(frame, str):
                        if self._callbacks:
                            for cb in list(self._callbacks):
                                cb(frame)
                        else:
                            await self._items.put(ChannelItem("text", text=frame))
                    else:
                        await self._items.put(ChannelItem("binary", data=frame))
            except ConnectionClosed:
                pass
            code = ws.close_code
            if code != 1000:
                self._error = InvocationError(ErrorCode.CHANNEL_CLOSED, f"channel {self.ref['channel_id']} ended abnormally (close code {code})")
        except Exception as err:
            self._error = InvocationError(ErrorCode.CHANNEL_CLOSED, f"channel {self.ref['channel_id']} could not be read: {err}")
        await self._items.put(_END)

    def on_message(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Calls ``callback`` (on the client's loop) with every text item from now on; returns the remover."""
        self._callbacks.append(callback)
        self._start()

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def next_item(self) -> ChannelItem | None:
        """The next item (text or binary), or None once the channel ended normally."""
        items = self._start()
        if self._ended:
            if self._error is not None:
                raise self._error
            return None
        item = await items.get()
        if item is _END:
            self._ended = True
            if self._error is not None:
                raise self._error
            return None
        assert isinstance(item, ChannelItem)
        return item

    async def next(self) -> bytes | None:
        """The next binary item (text items go to :meth:`on_message` callbacks, else are skipped),
        or None once the channel ended normally."""
        while True:
            item = await self.next_item()
            if item is None:
                return None
            if item.kind == "binary":
                assert item.data is not None
                return item.data
            for cb in list(self._callbacks):
                cb(item.text or "")

    async def read_all(self) -> bytes:
        """Every binary item until the channel ends, joined."""
        parts: list[bytes] = []
        while (chunk := await self.next()) is not None:
            parts.append(chunk)
        return b"".join(parts)

    async def items(self) -> AsyncIterator[ChannelItem]:
        """Every item, text and binary, in order."""
        while (item := await self.next_item()) is not None:
            yield item

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._binary()

    async def _binary(self) -> AsyncIterator[bytes]:
        while (chunk := await self.next()) is not None:
            yield chunk

    async def close(self) -> None:
        """Stops reading; the engine closes the writer's socket with 1011."""
        ws = await self._open()
        await ws.close(1000)

    def read_all_blocking(self) -> bytes:
        """:meth:`read_all` from a thread other than the client's loop (a sync handler)."""
        return self._blocking(self.read_all())

    def next_blocking(self) -> bytes | None:
        return self._blocking(self.next())


@dataclass
class Channel:
    """A channel created by :func:`svc.helpers.create_channel`: both live ends and both refs."""

    writer: ChannelWriter
    reader: ChannelReader
    writer_ref: StreamChannelRef
    reader_ref: StreamChannelRef


def materializer(loop: asyncio.AbstractEventLoop, worker_url: str | Callable[[], str]) -> Callable[[Any], Any]:
    """The session hook that turns every channel ref in a payload or result into a live end.

    ``worker_url`` is the engine address, or a function read for every ref: a session with several
    engine addresses (issue 19 §3) gives its current one, so an end connects to the engine the
    session is on when the ref arrives (the one that holds the channel).
    """
    current_url: Callable[[], str] = (lambda: worker_url) if isinstance(worker_url, str) else worker_url

    def walk(value: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return value
        if type(value) is dict:
            if is_channel_ref(value):
                ref: StreamChannelRef = value  # type: ignore[assignment]
                url = current_url()
                return ChannelReader(loop, url, ref) if ref["direction"] == "read" else ChannelWriter(loop, url, ref)
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    replaced = walk(item, depth + 1)
                    if replaced is not item:
                        value[key] = replaced
            return value
        if type(value) is list:
            for i, item in enumerate(value):
                if type(item) is dict or type(item) is list:
                    replaced = walk(item, depth + 1)
                    if replaced is not item:
                        value[i] = replaced
        return value

    return lambda value: walk(value, 0)


def extract_channel_refs(data: Any) -> list[tuple[str, StreamChannelRef]]:
    """Every channel ref in ``data`` with its path (``a.b[0]``), depth-first."""
    found: list[tuple[str, StreamChannelRef]] = []

    def walk(value: Any, path: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        if is_channel_ref(value):
            found.append((path, value))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else str(k), depth + 1)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]", depth + 1)

    walk(data, "", 0)
    return found
