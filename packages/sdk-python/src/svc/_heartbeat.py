"""Keepalive of the worker connection (protocol.md §3.3), the same algorithm as the client core's
``Heartbeat`` (``packages/protocol/src/client/heartbeat.ts``): each tracked peer is pinged every
``ping_interval_ms`` and terminated once nothing (frame, ping or pong) arrived from it for
``idle_timeout_ms``. One timer sweeps every ``tick_ms``; arrivals only set a flag. A sweep counts at
most two ticks of silence however late it runs, so a loop blocked by a long synchronous callback
does not terminate a healthy connection whose frames are still waiting to be read.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Protocol


class HeartbeatPeer(Protocol):
    def ping(self) -> None:
        """Sends a keepalive ping."""

    def terminate(self) -> None:
        """Ends the connection at once."""


class _Entry:
    __slots__ = ("heard", "quiet_ms", "since_ping_ms")

    def __init__(self) -> None:
        self.heard = True
        self.quiet_ms = 0.0
        self.since_ping_ms = 0.0


class Heartbeat:
    """Watches peers on ``loop``.

    Raises:
        ValueError: when an interval is not a positive number.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        ping_interval_ms: float,
        idle_timeout_ms: float,
        on_idle: Callable[[HeartbeatPeer, float], None] | None = None,
        tick_ms: float | None = None,
    ) -> None:
        if not ping_interval_ms > 0 or not idle_timeout_ms > 0:
            raise ValueError("ping_interval_ms and idle_timeout_ms must be positive numbers of ms")
        self._loop = loop
        self._ping_interval_ms = ping_interval_ms
        self._idle_timeout_ms = idle_timeout_ms
        self._tick_ms = tick_ms if tick_ms is not None else max(1.0, min(ping_interval_ms, idle_timeout_ms) / 4)
        self._on_idle = on_idle
        self._peers: dict[HeartbeatPeer, _Entry] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._last_sweep_ms = 0.0

    @property
    def size(self) -> int:
        return len(self._peers)

    def track(self, peer: HeartbeatPeer) -> Callable[[], None]:
        """Starts watching ``peer`` (counted as heard now); returns the function to call whenever
        anything arrives from it."""
        entry = _Entry()
        self._peers[peer] = entry
        if self._timer is None:
            self._last_sweep_ms = self._loop.time() * 1000
            self._schedule()

        def heard() -> None:
            entry.heard = True

        return heard

    def untrack(self, peer: HeartbeatPeer) -> None:
        if self._peers.pop(peer, None) is not None and not self._peers:
            self.stop()

    def stop(self) -> None:
        """Stops watching every peer; nothing is terminated."""
        self._peers.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        self._timer = self._loop.call_later(self._tick_ms / 1000, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.sweep()
        if self._peers and self._timer is None:
            self._schedule()

    def sweep(self) -> None:
        """One sweep (public so a test can drive it)."""
        now = self._loop.time() * 1000
        elapsed = min(max(0.0, now - self._last_sweep_ms), 2 * self._tick_ms)
        self._last_sweep_ms = now
        ping_due = self._ping_interval_ms - self._tick_ms / 2
        for peer, entry in list(self._peers.items()):
            if entry.heard:
                entry.heard = False
                entry.quiet_ms = 0
            else:
                entry.quiet_ms += elapsed
                if entry.quiet_ms >= self._idle_timeout_ms:
                    self.untrack(peer)
                    if self._on_idle is not None:
                        self._on_idle(peer, entry.quiet_ms)
                    peer.terminate()
                    continue
            entry.since_ping_ms += elapsed
            if entry.since_ping_ms >= ping_due:
                entry.since_ping_ms = 0
                peer.ping()
