"""Handler spans and trace context (sdk.md §12.3, protocol.md §10.1): each inbound invocation runs
in an INTERNAL span ``execute <function_id>`` parented on the inbound ``traceparent`` (with its
``baggage``), with span events ``svc.invocation.input``/``svc.invocation.output`` holding the
redacted, capped payloads; outgoing calls carry the active context. The session calls these hooks;
with telemetry off, :func:`start_handler` returns None and no tracing work is done.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from svc_helpers.observability import (
    extract_context,
    extract_traceparent,
    get_tracer,
    inject_baggage,
    inject_traceparent,
    is_otel_initialized,
    redact_and_truncate,
    resolve_max_bytes_from_env,
)

_payload_settings: tuple[bool, int | None] | None = None


def _settings() -> tuple[bool, int | None]:
    global _payload_settings
    if _payload_settings is None:
        disabled = os.environ.get("SVC_DISABLE_TRACE_PAYLOADS", "").strip().lower() in ("1", "true")
        _payload_settings = (disabled, resolve_max_bytes_from_env())
    return _payload_settings


class HandlerScope:
    """One handler run: its span and the context to run it in."""

    __slots__ = ("span", "context", "traceparent", "baggage")

    def __init__(self, span: trace.Span, ctx: Context, traceparent: str | None, baggage: str | None) -> None:
        self.span = span
        self.context = ctx
        self.traceparent = traceparent
        self.baggage = baggage


def _record(span: trace.Span, name: str, value: Any, ok: bool) -> None:
    disabled, max_bytes = _settings()
    if disabled or not span.is_recording():
        return
    text, truncated = redact_and_truncate(value, max_bytes)
    span.add_event(name, {"svc.payload.json": text, "svc.payload.truncated": truncated, "svc.payload.ok": ok})


def is_unsampled(traceparent: str | None) -> bool:
    """True for a W3C ``traceparent`` whose sampled flag is off."""
    if traceparent is None or len(traceparent) != 55:
        return False
    try:
        return int(traceparent[53:], 16) & 1 == 0
    except ValueError:
        return False


def start_handler(function_id: str, data: Any, traceparent: str | None, baggage: str | None) -> HandlerScope | None:
    """Starts the span of one inbound invocation; None when telemetry is off."""
    if not is_otel_initialized():
        return None
    parent = extract_context(traceparent, baggage or None)
    span = get_tracer().start_span(f"execute {function_id}", context=parent, kind=SpanKind.INTERNAL, attributes={"svc.function.id": function_id})
    ctx = trace.set_span_in_context(span, parent)
    _record(span, "svc.invocation.input", data, True)
    return HandlerScope(span, ctx, inject_traceparent(ctx), baggage or None)


def unsampled_context(traceparent: str | None) -> Context | None:
    """With telemetry off: the context that carries an unsampled inbound parent to the calls the
    handler makes (the engine delivers ``trace`` triggers that way; protocol.md §10.1), else None."""
    return extract_traceparent(traceparent) if traceparent is not None and is_unsampled(traceparent) else None


def end_handler(scope: HandlerScope, result: Any, error: dict[str, Any] | None) -> None:
    """Ends the span with the outcome (after the answer was sent)."""
    span = scope.span
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, str(error.get("message"))))
        span.set_attribute("error.type", str(error.get("code")))
        _record(span, "svc.invocation.output", error, False)
    else:
        status = getattr(span, "status", None)
        if status is None or status.status_code is not StatusCode.ERROR:
            span.set_status(Status(StatusCode.OK))
        _record(span, "svc.invocation.output", result, True)
    span.end()


def outgoing() -> tuple[str | None, str | None] | None:
    """The trace context of an outgoing call from the active context: ``(traceparent, baggage)``,
    or None outside any span and without baggage. Call it in the caller's thread."""
    ctx = otel_context.get_current()
    if not ctx:
        return None  # an empty context holds neither a span nor baggage (the common case, cheaply)
    span_ctx = trace.get_current_span(ctx).get_span_context()
    tp = inject_traceparent(ctx) if span_ctx.is_valid else None
    bg = inject_baggage(ctx)
    if tp is None and bg is None:
        return None
    return tp, bg


def attach(ctx: Context) -> object:
    return otel_context.attach(ctx)


def detach(token: object) -> None:
    otel_context.detach(token)  # type: ignore[arg-type]
