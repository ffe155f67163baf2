"""The frame codec of the client side (protocol.md §3.5, §4–§5): :func:`decode_engine_frame` reads
what the engine sends, the ``encode_*`` functions write what a worker sends.

Decoding is lenient as §3.5 asks: missing optional fields take their defaults, ``null`` in an
optional field counts as omitted, unknown fields and types are ignored. It accepts the reference iii
engine's spellings too (protocol.md §14): a ``workerregistered`` without ``reattach_token``, a
``registrationrejected`` without ``reason``/``message``, an ``unregistertrigger`` without
``function_id``. It never raises.
"""

from __future__ import annotations

import json
from typing import Any

from ._formats import jsonable
from .errors import is_error_body

Frame = dict[str, Any]

_loads = json.loads
# Plain JSON values cost nothing extra; Pydantic models, dataclasses, datetimes… go through `jsonable`.
_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=jsonable).encode


def dumps(value: Any) -> str:
    """Compact JSON text (Pydantic models, dataclasses, datetimes, UUIDs converted).

    Raises:
        ValueError, TypeError: for values JSON cannot encode (NaN, arbitrary objects, …).
    """
    return _dumps(value)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _error_body(value: object) -> dict[str, Any]:
    """A wire ErrorBody as is; anything else becomes ``UNKNOWN`` with its JSON text (sdk.md §7.1)."""
    if is_error_body(value):
        assert isinstance(value, dict)
        body: dict[str, Any] = {"code": value["code"], "message": value["message"]}
        if isinstance(value.get("stacktrace"), str):
            body["stacktrace"] = value["stacktrace"]
        return body
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = str(value)
    return {"code": "UNKNOWN", "message": text}


def decode_engine_frame(data: str | bytes | bytearray | memoryview) -> Frame | None:
    """Decodes one frame a worker received (protocol.md §4, E→W). A binary frame is read as UTF-8 JSON.

    Returns:
        The frame as a dict whose fields the session reads are checked and defaulted, or None for
        what carries nothing to act on: empty, broken, too deeply nested or non-object frames,
        unknown and W→E-only types, and frames missing a field their handling needs (an
        ``invocationresult`` or ``cancelinvocation`` without a string ``invocation_id``, an ``invokefunction`` without a
        string ``function_id``, a trigger frame without a string ``id``, a ``workerregistered``
        without a string ``worker_id``, an ``error`` without an ErrorBody).
    """
    try:
        raw = _loads(data if isinstance(data, str) else bytes(data).decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if type(raw) is not dict:
        return None
    kind = raw.get("type")
    if kind == "invocationresult":
        if type(raw.get("invocation_id")) is not str:
            return None
        error = raw.get("error")
        if error is not None:
            raw["error"] = _error_body(error)
        return raw
    if kind == "invokefunction":
        if type(raw.get("function_id")) is not str:
            return None
        out: Frame = {
            "type": "invokefunction",
            "invocation_id": _str(raw.get("invocation_id")),
            "function_id": raw["function_id"],
            "data": raw.get("data"),
            "metadata": raw.get("metadata"),
            "traceparent": _str(raw.get("traceparent")),
            "baggage": _str(raw.get("baggage")),
        }
        return out
    if kind == "workerregistered":
        worker_id = _str(raw.get("worker_id"))
        if worker_id is None:
            return None
        features = raw.get("features")
        return {
            "type": kind,
            "worker_id": worker_id,
            "reattach_token": _str(raw.get("reattach_token")),
            "features": frozenset(f for f in features if isinstance(f, str)) if isinstance(features, list) else frozenset(),
        }
    if kind == "registertrigger":
        trigger_id, trigger_type, function_id = _str(raw.get("id")), _str(raw.get("trigger_type")), _str(raw.get("function_id"))
        if trigger_id is None or trigger_type is None or function_id is None:
            return None
        config = raw.get("config")
        return {
            "type": kind,
            "id": trigger_id,
            "trigger_type": trigger_type,
            "function_id": function_id,
            "config": {} if config is None else config,
            "metadata": raw.get("metadata"),
            "namespace": _str(raw.get("namespace")),
            "trigger_namespace": _str(raw.get("trigger_namespace")),
        }
    if kind == "unregistertrigger":
        trigger_id = _str(raw.get("id"))
        if trigger_id is None:
            return None
        return {"type": kind, "id": trigger_id, "trigger_type": _str(raw.get("trigger_type")), "function_id": _str(raw.get("function_id"))}
    if kind == "triggerregistrationresult":
        trigger_id = _str(raw.get("id"))
        if trigger_id is None:
            return None
        error = raw.get("error")
        return {
            "type": kind,
            "id": trigger_id,
            "trigger_type": _str(raw.get("trigger_type")) or "",
            "function_id": _str(raw.get("function_id")) or "",
            "error": None if error is None else _error_body(error),
        }
    if kind == "registrationrejected":
        code = _str(raw.get("code")) or "UNKNOWN"
        return {
            "type": kind,
            "code": code,
            "message": _str(raw.get("message")) or f"registration rejected: {code}",
            "reason": _str(raw.get("reason")),
            "namespace": _str(raw.get("namespace")),
            "function_id": _str(raw.get("function_id")),
            "trigger_type_id": _str(raw.get("trigger_type_id")),
            "worker_name": _str(raw.get("worker_name")),
            "owner_worker_id": _str(raw.get("owner_worker_id")) or "",
        }
    if kind == "cancelinvocation":
        # The engine asks this worker to stop running a call it sent (svc addition, issue 21).
        if type(raw.get("invocation_id")) is not str:
            return None
        reason = _str(raw.get("reason"))
        return {"type": kind, "invocation_id": raw["invocation_id"], "reason": None if reason is None else reason[:1024]}
    if kind == "ping" or kind == "pong":
        return {"type": kind}
    if kind == "error":
        error = raw.get("error")
        return {"type": kind, "error": _error_body(error)} if is_error_body(error) else None
    return None


def encode_invoke(
    function_id: str,
    data: Any,
    *,
    invocation_id: str | None = None,
    metadata: Any = None,
    action: dict[str, Any] | None = None,
    namespace: str | None = None,
    traceparent: str | None = None,
    baggage: str | None = None,
) -> str:
    """An ``invokefunction`` frame (protocol.md §5.8), optional fields omitted when None.

    Raises:
        ValueError, TypeError: ``data`` or ``metadata`` cannot be encoded as JSON.
    """
    frame: dict[str, Any] = {"type": "invokefunction", "function_id": function_id, "data": data}
    if invocation_id is not None:
        frame["invocation_id"] = invocation_id
    if metadata is not None:
        frame["metadata"] = metadata
    if action is not None:
        frame["action"] = action
    if namespace is not None:
        frame["namespace"] = namespace
    if traceparent is not None:
        frame["traceparent"] = traceparent
    if baggage is not None:
        frame["baggage"] = baggage
    return _dumps(frame)


def encode_result(
    invocation_id: str,
    function_id: str,
    result_json: str | None,
    error: dict[str, Any] | None,
    traceparent: str | None = None,
    baggage: str | None = None,
    span: tuple[str, str] | None = None,
) -> str:
    """An ``invocationresult`` frame (protocol.md §5.9) around an already-encoded result; ``error`` wins.
    ``span``: the handler span's ``(span_start, span_end)`` when the engine records it (svc addition,
    docs/reference/protocol.md "Handler spans recorded by the engine"; needs ``traceparent``)."""
    head = '{"type":"invocationresult","invocation_id":' + _dumps(invocation_id) + ',"function_id":' + _dumps(function_id)
    if error is not None:
        head += ',"error":' + _dumps(error)
    elif result_json is not None:
        head += ',"result":' + result_json
    if traceparent is not None:
        head += ',"traceparent":' + _dumps(traceparent)
    if baggage is not None:
        head += ',"baggage":' + _dumps(baggage)
    if span is not None and traceparent is not None:
        head += ',"span_start":' + _dumps(span[0]) + ',"span_end":' + _dumps(span[1])
    return head + "}"


def encode_trigger_result(trigger_id: str, trigger_type: str, function_id: str, error: dict[str, Any] | None) -> str:
    """A ``triggerregistrationresult`` frame (protocol.md §5.7), W→E: a provider's answer."""
    frame: dict[str, Any] = {"type": "triggerregistrationresult", "id": trigger_id, "trigger_type": trigger_type, "function_id": function_id}
    if error is not None:
        frame["error"] = error
    return _dumps(frame)


def encode_cancel(invocation_id: str, reason: str | None = None) -> str:
    """A ``cancelinvocation`` frame, W→E (svc addition, docs/reference/protocol.md): the caller
    cancels a call it made. ``reason`` is cut to 1024 characters (what the engine keeps); None and
    an empty text send none."""
    frame: dict[str, Any] = {"type": "cancelinvocation", "invocation_id": invocation_id}
    if reason is not None and reason != "":
        frame["reason"] = reason[:1024]
    return _dumps(frame)


def encode_frame(frame: dict[str, Any]) -> str:
    """Any other frame (registrations, ``reattach``, ``ping``, …) as compact JSON."""
    return _dumps(frame)
