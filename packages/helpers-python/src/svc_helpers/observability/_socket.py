"""The telemetry socket (protocol.md §10.2): one WebSocket per process at ``<engine URL>/otel``
carrying binary frames, 4 ASCII prefix bytes (``OTLP``, ``MTRC``, ``LOGS``) then UTF-8 OTLP/JSON.

It runs on its own daemon thread with its own asyncio loop, so exporters (called from the
OpenTelemetry SDK's batch threads) and the worker's loop never wait on it. It reconnects with the
worker backoff (:func:`svc_helpers.backoff.backoff_delay`); while disconnected it keeps at most
:data:`MAX_QUEUED_FRAMES` frames and drops the oldest beyond that, counting drops. The engine never
answers frames: sending is fire-and-forget and bounded.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import urllib.parse
from typing import Literal

from websockets.asyncio.client import ClientConnection, connect

from ..backoff import ReconnectionConfig, backoff_delay

#: Frames kept while disconnected (protocol.md §10.2).
MAX_QUEUED_FRAMES = 1000

FramePrefix = Literal["OTLP", "MTRC", "LOGS"]


def otel_url_of(engine_url: str) -> str:
    """``<engine URL>/otel``: the path with ``/otel`` appended after any trailing slash is removed;
    the query string is kept (authentication, protocol.md §10.2)."""
    parts = urllib.parse.urlsplit(engine_url)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/otel"))


def encode_frame(prefix: FramePrefix, json_text: str) -> bytes:
    """One frame: the 4-byte ASCII prefix then the JSON as UTF-8."""
    return prefix.encode("ascii") + json_text.encode("utf-8", "surrogatepass")


class TelemetrySocket:
    """A self-reconnecting ``/otel`` socket. ``send`` may be called from any thread."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, reconnection: ReconnectionConfig | None = None) -> None:
        self.url = otel_url_of(url)
        self._headers = dict(headers or {})
        self._reconnection = reconnection or ReconnectionConfig()
        self._queue: collections.deque[bytes] = collections.deque()
        self.sent = 0
        self.dropped = 0
        self._closed = False
        self._wake: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._idle = threading.Event()
        self._idle.set()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="svc-otel-socket", daemon=True)
        self._thread.start()
        self._ready.wait()

    @property
    def connected(self) -> bool:
        return self._ws is not None

    _ws: ClientConnection | None = None

    def send(self, frame: bytes) -> None:
        """Queues ``frame``; the oldest frame is dropped while more than 1000 wait. Thread-safe."""
        if self._closed:
            self.dropped += 1
            return
        self._idle.clear()
        self._queue.append(frame)
        while len(self._queue) > MAX_QUEUED_FRAMES:
            self._queue.popleft()
            self.dropped += 1
        try:
            self._loop.call_soon_threadsafe(self._poke)
        except RuntimeError:
            pass  # the loop has stopped (interpreter shutdown)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Waits until every queued frame was written while connected (at most ``timeout_s`` s)."""
        if not self._queue:
            return True
        return self._idle.wait(timeout_s) if self._ws is not None else False

    def close(self, timeout_s: float = 2.0) -> None:
        """Flushes what it can within ``timeout_s``, then closes the socket and stops its thread."""
        if self._closed:
            return
        self.flush(timeout_s)
        self._closed = True
        try:
            self._loop.call_soon_threadsafe(self._stopping)
        except RuntimeError:
            return
        self._thread.join(timeout_s)

    def _stopping(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._ready.set()
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        attempt = 0
        assert self._stop is not None
        while not self._closed:
            try:
                async with connect(
                    self.url,
                    additional_headers=self._headers or None,
                    open_timeout=10,
                    compression=None,
                    max_size=1 << 20,
                ) as ws:
                    self._ws = ws
                    attempt = 0
                    await self._pump(ws)
            except Exception:
                pass
            finally:
                self._ws = None
            if self._closed:
                break
            config = self._reconnection
            if config.max_retries != -1 and attempt >= config.max_retries:
                break
            delay = backoff_delay(attempt, config) / 1000
            attempt += 1
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
            except asyncio.TimeoutError:
                pass
        self.dropped += len(self._queue)
        self._queue.clear()
        self._idle.set()

    async def _pump(self, ws: ClientConnection) -> None:
        assert self._wake is not None
        closed = asyncio.ensure_future(ws.wait_closed())
        try:
            while not self._closed:
                while self._queue:
                    frame = self._queue[0]
                    await ws.send(frame)
                    if self._queue and self._queue[0] is frame:
                        self._queue.popleft()
                    self.sent += 1
                self._idle.set()
                self._wake.clear()
                if self._queue:
                    continue
                waiter = asyncio.ensure_future(self._wake.wait())
                done, _ = await asyncio.wait({waiter, closed}, return_when=asyncio.FIRST_COMPLETED)
                if closed in done:
                    waiter.cancel()
                    return
        finally:
            closed.cancel()
