"""Handler spans and trace context (sdk.md §12.3, protocol.md §10.1): each inbound invocation runs
in an INTERNAL span ``execute <function_id>`` parented on the inbound ``traceparent`` (with its
``baggage``), with span events ``svc.invocation.input``/``svc.invocation.output`` holding the
redacted, capped payloads; outgoing calls carry the active context. The session calls these hooks;
with telemetry off, :func:`start_handler` returns None and no tracing work is done.

On a connection whose engine records handler spans (svc addition, docs/reference/protocol.md
"Handler spans recorded by the engine"), a span the handler left as the SDK made it is handed over:
:func:`hand_over` returns its times for the ``invocationresult`` and the span is never ended here,
so nothing is exported for it; its input payload event is deferred and never made. A span the
handler changed (attribute, event, link, status, name, exception, end) is exported as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Tracer
from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Decision, Sampler
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.util import types

from svc_helpers.observability import (
    extract_context,
    extract_traceparent,
    inject_baggage,
    HandlerIds,
    handler_span_support,
    inject_traceparent,
    is_otel_initialized,
    otel_resource,
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


#: What the engine takes in an announce's ``handler_spans.resource``: attributes, and UTF-16 code
#: units of a key and of a value (it ignores a larger resource, and the spans handed over with it).
_MAX_RESOURCE_ATTRIBUTES = 32
_MAX_RESOURCE_KEY = 256
_MAX_RESOURCE_VALUE = 4096


def _fits(text: str, most: int) -> bool:
    """``text`` is well-formed (no lone surrogate) and at most ``most`` UTF-16 code units long."""
    try:
        return len(text.encode("utf-16-le")) <= 2 * most
    except UnicodeEncodeError:
        return False


def handler_spans_announce() -> dict[str, Any] | None:
    """The announce's ``handler_spans`` (protocol.md §3.2, svc addition): this process's span
    resource and payload settings, so that the engine records handler spans as this SDK would.
    None while telemetry is off, or when the engine would not take the resource (more than 32
    attributes, a key over 256 or a value over 4096 UTF-16 code units, no ``service.name``): every
    span is then exported as before."""
    resource = otel_resource()
    if resource is None or len(resource) > _MAX_RESOURCE_ATTRIBUTES or not resource.get("service.name"):
        return None
    if not all(_fits(k, _MAX_RESOURCE_KEY) and _fits(v, _MAX_RESOURCE_VALUE) for k, v in resource.items()):
        return None
    disabled, max_bytes = _settings()
    out: dict[str, Any] = {"resource": resource}
    if disabled:
        out["payloads"] = False
    if max_bytes is not None:
        out["payload_max_bytes"] = max_bytes
    return out


def _record(span: trace.Span, name: str, value: Any, ok: bool, timestamp: int | None = None) -> None:
    disabled, max_bytes = _settings()
    if disabled or not span.is_recording():
        return
    text, truncated = redact_and_truncate(value, max_bytes)
    span.add_event(name, {"svc.payload.json": text, "svc.payload.truncated": truncated, "svc.payload.ok": ok}, timestamp)


class HandlerSpan(trace.Span):
    """The span a handler sees as its current one, ``execute <function_id>``: its context (ids,
    sampled flag) is fixed at the start, but the OpenTelemetry SDK's span behind it is made only
    when something writes to it — the handler (attribute, event, link, status, name, exception,
    end), or the SDK ending a span it did not hand over — with those ids and the start time. A span
    handed over (:meth:`hand_over`) is never made, so it costs neither the SDK's span nor its export.
    The first write records the deferred input payload event first (at the start time), so an
    exported span has the shape it would have had."""

    __slots__ = ("_span", "_context", "_recording", "_parent", "_name", "_attributes", "_start", "_support", "_touched", "_ended", "_deferred", "_has_deferred")

    def __init__(
        self,
        context: SpanContext,
        recording: bool,
        parent: Context,
        name: str,
        attributes: dict[str, Any],
        start: int,
        support: tuple[Tracer, HandlerIds],
    ) -> None:
        self._span: trace.Span | None = None
        self._context = context
        self._recording = recording
        self._parent = parent
        self._name = name
        self._attributes = attributes
        self._start = start
        self._support = support
        self._touched = False
        self._ended = False
        self._deferred: Any = None
        self._has_deferred = False

    @property
    def start_time(self) -> int:
        """Nanoseconds since the epoch."""
        return self._start

    def inner(self) -> trace.Span | None:
        """The SDK's span, made now if it was not yet; None when the span is not sampled."""
        if self._span is None and self._recording:
            tracer, ids = self._support
            with ids.forced(self._context.trace_id, self._context.span_id):
                self._span = tracer.start_span(self._name, context=self._parent, kind=SpanKind.INTERNAL, attributes=self._attributes, start_time=self._start)
        return self._span

    def defer_input(self, data: Any) -> None:
        """Leaves the input payload event to be recorded when the span is first changed or ended
        here, or never when it is handed over (:func:`hand_over`)."""
        self._deferred = data
        self._has_deferred = True

    def record_deferred_input(self) -> None:
        """Records the deferred input payload event now (at the span's start time), if one waits."""
        if not self._has_deferred:
            return
        data = self._deferred
        self._deferred = None
        self._has_deferred = False
        span = self.inner()
        if span is not None:
            _record(span, "svc.invocation.input", data, True, self._start)

    def _touch(self) -> trace.Span | None:
        if not self._touched:
            self._touched = True
            self.record_deferred_input()
        return self.inner()

    def hand_over(self) -> tuple[str, str] | None:
        """``(start, end)`` in nanoseconds since the epoch, as decimal text, when nothing but the SDK
        changed the span; the SDK's span is then never made (nothing is exported). None when the
        handler changed it, it ended, or it is not sampled."""
        if self._touched or self._ended or not self._recording:
            return None
        self._ended = True
        self._deferred = None
        self._has_deferred = False
        return str(self._start), str(max(self._start, time.time_ns()))

    # trace.Span: reads

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return self._recording and not self._ended

    # trace.Span: writes

    def end(self, end_time: int | None = None) -> None:
        span = self._touch()
        self._ended = True
        if span is not None:
            span.end(end_time)

    def set_attributes(self, attributes: Mapping[str, types.AttributeValue]) -> None:
        span = self._touch()
        if span is not None:
            span.set_attributes(attributes)

    def set_attribute(self, key: str, value: types.AttributeValue) -> None:
        span = self._touch()
        if span is not None:
            span.set_attribute(key, value)

    def add_event(self, name: str, attributes: types.Attributes = None, timestamp: int | None = None) -> None:
        span = self._touch()
        if span is not None:
            span.add_event(name, attributes, timestamp)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        span = self._touch()
        if span is not None:
            span.add_link(context, attributes)

    def update_name(self, name: str) -> None:
        span = self._touch()
        if span is not None:
            span.update_name(name)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        span = self._touch()
        if span is not None:
            span.set_status(status, description)

    def record_exception(
        self, exception: BaseException, attributes: types.Attributes = None, timestamp: int | None = None, escaped: bool = False
    ) -> None:
        span = self._touch()
        if span is not None:
            span.record_exception(exception, attributes, timestamp, escaped)


class HandlerScope:
    """One handler run: its span and the context to run it in."""

    __slots__ = ("span", "context", "traceparent", "baggage", "handed_over")

    def __init__(self, span: HandlerSpan, ctx: Context, traceparent: str | None, baggage: str | None) -> None:
        self.span = span
        self.context = ctx
        self.traceparent = traceparent
        self.baggage = baggage
        self.handed_over = False


def is_unsampled(traceparent: str | None) -> bool:
    """True for a W3C ``traceparent`` whose sampled flag is off."""
    if traceparent is None or len(traceparent) != 55:
        return False
    try:
        return int(traceparent[53:], 16) & 1 == 0
    except ValueError:
        return False


#: Trace flags as a ``traceparent`` writes them, by value.
_FLAGS_TEXT = tuple(f"{flags:02x}" for flags in range(256))

#: The W3C flag bit of a random trace id (OpenTelemetry SDK 1.3x+; 0 where it has none).
_RANDOM_TRACE_ID = int(getattr(TraceFlags, "RANDOM_TRACE_ID", 0))


def _sample(sampler: Sampler, parent: Context, parent_context: SpanContext, trace_id: int, name: str, attributes: dict[str, Any]) -> tuple[bool, bool, TraceState | None]:
    """The sampler's decision for a handler span: ``(sampled, recording, trace state)``. The SDK's
    default sampler, ``ParentBased(ALWAYS_ON)`` (``DEFAULT_ON``, ``OTEL_TRACES_SAMPLER`` unset or
    ``parentbased_always_on``), is answered without calling it: a valid parent's sampled flag
    decides (sampled without one), and the trace state is the parent's — what it returns, for a
    third of the cost of a handler span that is handed over."""
    if sampler is DEFAULT_ON:
        if not parent_context.is_valid:
            return True, True, None
        sampled = parent_context.trace_flags.sampled
        return sampled, sampled, parent_context.trace_state
    result = sampler.should_sample(parent, trace_id, name, SpanKind.INTERNAL, attributes)
    decision = result.decision
    return decision is Decision.RECORD_AND_SAMPLE, decision is not Decision.DROP, result.trace_state


def start_handler(function_id: str, data: Any, traceparent: str | None, baggage: str | None, defer_input: bool = False) -> HandlerScope | None:
    """Starts the span of one inbound invocation; None when telemetry is off. ``defer_input``: the
    engine may record the span (:func:`hand_over`), so the SDK's span and its input payload event
    wait until the span is changed or ended here. The span's context is the one the SDK would give
    it: its sampler's decision, a new span id, the parent's trace (or a new one)."""
    support = handler_span_support() if is_otel_initialized() else None
    if support is None:
        return None
    tracer, ids = support
    parent = extract_context(traceparent, baggage or None)
    name = f"execute {function_id}"
    attributes: dict[str, Any] = {"svc.function.id": function_id}
    parent_context = trace.get_current_span(parent).get_span_context()
    root = not parent_context.is_valid
    trace_id = ids.generate_trace_id() if root else parent_context.trace_id
    sampled, recording, trace_state = _sample(tracer.sampler, parent, parent_context, trace_id, name, attributes)
    flags = TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT
    if _RANDOM_TRACE_ID and (ids.is_trace_id_random() if root else int(parent_context.trace_flags) & _RANDOM_TRACE_ID):
        flags |= _RANDOM_TRACE_ID
    span_id = ids.generate_span_id()
    context = SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(flags), trace_state=trace_state)
    span = HandlerSpan(context, recording, parent, name, attributes, time.time_ns(), support)
    span.defer_input(data)
    if not defer_input:
        span.record_deferred_input()
    ctx = trace.set_span_in_context(span, parent)
    # The W3C traceparent of the span, as the SDK's propagator writes it.
    tp = f"00-{trace_id:032x}-{span_id:016x}-{_FLAGS_TEXT[flags]}"
    return HandlerScope(span, ctx, tp, baggage or None)


def hand_over(scope: HandlerScope) -> tuple[str, str] | None:
    """Hands the span to the engine (docs/reference/protocol.md "Handler spans recorded by the
    engine"): ``(span_start, span_end)`` for the ``invocationresult`` when the handler left the
    span as the SDK made it and it is sampled; :func:`end_handler` then does nothing. None when the
    span is sent in full."""
    times = scope.span.hand_over()
    if times is not None:
        scope.handed_over = True
    return times


def unsampled_context(traceparent: str | None) -> Context | None:
    """With telemetry off: the context that carries an unsampled inbound parent to the calls the
    handler makes (the engine delivers ``trace`` triggers that way; protocol.md §10.1), else None."""
    return extract_traceparent(traceparent) if traceparent is not None and is_unsampled(traceparent) else None


def end_handler(scope: HandlerScope, result: Any, error: dict[str, Any] | None) -> None:
    """Ends the span with the outcome (after the answer was sent); nothing for a span handed over."""
    if scope.handed_over:
        return
    scope.span.record_deferred_input()
    span = scope.span.inner()
    if span is None:
        return
    if error is not None:
        code, message = str(error.get("code")), str(error.get("message"))
        span.set_status(Status(StatusCode.ERROR, message))
        span.set_attribute("error.type", code)
        # The exception event as svc-sdk for Node and the engine record it: the handler's traceback.
        stack = error.get("stacktrace")
        span.add_event(
            "exception",
            {
                "exception.type": code,
                "exception.message": message,
                "exception.stacktrace": stack if isinstance(stack, str) and stack != "" else f"{code}: {message}",
            },
        )
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
