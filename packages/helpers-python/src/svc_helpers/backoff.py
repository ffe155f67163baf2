"""Reconnection backoff with jitter (sdk.md §2, protocol.md §3.7), shared by the worker socket of
``svc-sdk`` and the telemetry socket of :mod:`svc_helpers.observability`.
"""

from __future__ import annotations

import math
import random as _random
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ReconnectionConfig:
    """Reconnection backoff (sdk.md §2). Delay before attempt ``n`` (0-based, reset on every open):
    ``d = min(initial_delay_ms × backoff_multiplier^n, max_delay_ms)``, then
    ``floor(d + d × jitter_factor × (2·random − 1))``.

    Attributes:
        initial_delay_ms: delay before the first reconnect attempt, ms (default 1000).
        max_delay_ms: upper bound of the delay before jitter, ms (default 30000).
        backoff_multiplier: growth factor per attempt (default 2).
        jitter_factor: relative jitter, 0–1 (default 0.3).
        max_retries: attempts allowed after a connection is lost before the client enters
            ``failed``; -1 is unlimited (default).
    """

    initial_delay_ms: float = 1000
    max_delay_ms: float = 30000
    backoff_multiplier: float = 2
    jitter_factor: float = 0.3
    max_retries: int = -1

    def __post_init__(self) -> None:
        for name, low, high in (
            ("initial_delay_ms", 0.0, math.inf),
            ("max_delay_ms", 0.0, math.inf),
            ("backoff_multiplier", 0.0, math.inf),
            ("jitter_factor", 0.0, 1.0),
            ("max_retries", -1.0, math.inf),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not low <= value <= high:
                raise ValueError(f"reconnection_config.{name} must be a number between {low:g} and {high:g}, got {value!r}")


DEFAULT_RECONNECTION_CONFIG = ReconnectionConfig()


def backoff_delay(attempt: int, config: ReconnectionConfig, random: Callable[[], float] = _random.random) -> int:
    """Delay before reconnect attempt ``attempt`` (0-based), ms, never below 0 (sdk.md §2).

    Example:
        >>> backoff_delay(3, ReconnectionConfig(jitter_factor=0))
        8000
    """
    try:
        grown = config.initial_delay_ms * config.backoff_multiplier**attempt
    except OverflowError:
        grown = math.inf
    d = min(grown, config.max_delay_ms)
    return max(0, math.floor(d + d * config.jitter_factor * (2 * random() - 1)))
