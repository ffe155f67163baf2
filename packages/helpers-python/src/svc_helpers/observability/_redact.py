"""Redaction and serialisation of recorded payloads (sdk.md §12.2)."""

from __future__ import annotations

import json
import os
import re
from typing import Any

REDACTED_PLACEHOLDER = "[REDACTED]"

_SENSITIVE = re.compile(
    r"^(?:.*(?:api_key|apikey|api-key|password|secret|credential|authorization|auth_token|access_token|"
    r"refresh_token|bearer|private_key|client_secret|access_key).*|token|.*[_-]token)$",
    re.IGNORECASE,
)
_MAX_DEPTH = 64


def _is_sensitive(key: str) -> bool:
    return _SENSITIVE.match(key) is not None


def redact(value: Any) -> Any:
    """A copy of ``value`` whose sensitive keys (api_key, password, secret, authorization, exactly
    ``token``, keys ending ``_token``/``-token``, …; case-insensitive) hold ``[REDACTED]`` (sdk.md
    §12.2). Nesting deeper than 64 levels is cut to ``"[TRUNCATED]"``; cycles become ``"[Circular]"``.
    """
    return _redact(value, 0, set())


def _redact(value: Any, depth: int, seen: set[int]) -> Any:
    if isinstance(value, (dict, list, tuple)):
        if depth >= _MAX_DEPTH:
            return "[TRUNCATED]"
        if id(value) in seen:
            return "[Circular]"
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                return {
                    k: (REDACTED_PLACEHOLDER if isinstance(k, str) and _is_sensitive(k) else _redact(v, depth + 1, seen))
                    for k, v in value.items()
                }
            return [_redact(v, depth + 1, seen) for v in value]
        finally:
            seen.discard(id(value))
    return value


def safe_stringify(value: Any) -> str:
    """JSON text of ``value``; values JSON cannot encode as their ``str``, cycles as ``"[Circular]"``,
    the literal ``[unserializable]`` when nothing works (sdk.md §12.2)."""
    try:
        return json.dumps(_redact(value, 0, set()), default=str, ensure_ascii=False, allow_nan=True)
    except Exception:
        return "[unserializable]"


def resolve_max_bytes_from_env() -> int | None:
    """``SVC_TRACE_PAYLOAD_MAX_BYTES`` as a byte cap; None (uncapped) when unset or not a number ≥ 0."""
    raw = os.environ.get("SVC_TRACE_PAYLOAD_MAX_BYTES", "")
    try:
        n = int(raw)
    except ValueError:
        return None
    return n if n >= 0 else None


def redact_and_truncate(value: Any, max_bytes: int | None) -> tuple[str, bool]:
    """``(json, truncated)``: the redacted JSON of ``value``, cut to ``max_bytes`` UTF-8 bytes on a
    character boundary with ``..."[TRUNCATED]"`` appended when longer (sdk.md §12.2)."""
    text = safe_stringify(value)
    if max_bytes is None:
        return text, False
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return text, False
    return raw[:max_bytes].decode("utf-8", "ignore") + '..."[TRUNCATED]"', True
