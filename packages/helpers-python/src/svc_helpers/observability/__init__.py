"""Telemetry of the svc SDKs for Python (sdk.md §12): OpenTelemetry traces and the ``Logger``,
exported as OTLP/JSON over the engine's ``/otel`` WebSocket (protocol.md §10.2).

``svc.register_worker`` calls :func:`init_otel` unless telemetry is disabled (``otel={"enabled":
False}`` or env ``OTEL_ENABLED=false``). Spans of any OpenTelemetry tracer go through the global
tracer provider set here; log records of :class:`Logger` carry the active span's trace and span ids.

Example:
    >>> from svc_helpers.observability import Logger
    >>> log = Logger()
    >>> def create_order(data):
    ...     log.info("creating order", {"items": len(data["items"])})  # linked to the invocation's trace
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass, fields
from enum import IntEnum
from typing import Any, Callable, TypeVar

from opentelemetry import baggage as _baggage
from opentelemetry import context as _context
from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, Tracer, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .. import __version__
from ..backoff import ReconnectionConfig
from ._otlp import LogRecordData, encode_logs, encode_spans
from ._redact import REDACTED_PLACEHOLDER, redact, redact_and_truncate, resolve_max_bytes_from_env, safe_stringify
from ._socket import MAX_QUEUED_FRAMES, TelemetrySocket, encode_frame, otel_url_of

__all__ = [
    "MAX_QUEUED_FRAMES",
    "REDACTED_PLACEHOLDER",
    "BaggageSpanProcessor",
    "Logger",
    "OtelConfig",
    "SeverityNumber",
    "current_span_id",
    "current_span_is_recording",
    "current_trace_id",
    "extract_baggage",
    "extract_context",
    "extract_traceparent",
    "flush_otel",
    "get_all_baggage",
    "otel_resource",
    "otel_socket_stats",
    "get_baggage_entry",
    "get_logger",
    "get_tracer",
    "init_otel",
    "inject_baggage",
    "inject_traceparent",
    "is_otel_initialized",
    "otel_enabled",
    "otel_url_of",
    "record_span_event",
    "redact",
    "redact_and_truncate",
    "remove_baggage_entry",
    "resolve_max_bytes_from_env",
    "safe_stringify",
    "set_baggage_entry",
    "set_current_span_attribute",
    "set_current_span_error",
    "shutdown_otel",
    "with_span",
]

TRACER_NAME = "svc-sdk-python"
T = TypeVar("T")


class SeverityNumber(IntEnum):
    """OpenTelemetry log severities used by :class:`Logger` (sdk.md §12.4)."""

    TRACE = 1
    DEBUG = 5
    INFO = 9
    WARN = 13
    ERROR = 17


@dataclass
class OtelConfig:
    """Telemetry configuration (sdk.md §12.1). Environment variables override defaults, explicit
    fields override both. ``None`` means "not given".

    Attributes:
        enabled: default True; env ``OTEL_ENABLED`` set to ``false``, ``0``, ``no`` or ``off`` disables.
        engine_ws_url: engine address; the socket is ``<address>/otel``. Default env ``SVC_URL`` (its
            first address when it lists several, comma-separated), else
            ``ws://127.0.0.1:49134``.
        service_name: env ``OTEL_SERVICE_NAME``, else ``svc-python``.
        service_version: env ``SERVICE_VERSION``, else ``unknown``.
        service_namespace: env ``SERVICE_NAMESPACE``.
        service_instance_id: env ``SERVICE_INSTANCE_ID``, else a generated UUID.
        metrics_enabled: accepted for compatibility (env ``OTEL_METRICS_ENABLED``); this SDK sends no metrics yet.
        logs_batch_size: records per ``LOGS`` frame (default 1, env ``OTEL_LOGS_BATCH_SIZE``).
        logs_flush_interval_ms: longest wait before a partial batch is sent, ms (default 100).
        spans_flush_interval_ms: span batch interval, ms (default 100, env ``OTEL_SPANS_FLUSH_INTERVAL_MS``).
        reconnection_config: backoff of the telemetry socket (sdk.md §2).
        headers: HTTP headers of the ``/otel`` upgrade (authentication).
    """

    enabled: bool | None = None
    engine_ws_url: str | None = None
    service_name: str | None = None
    service_version: str | None = None
    service_namespace: str | None = None
    service_instance_id: str | None = None
    metrics_enabled: bool | None = None
    logs_batch_size: int | None = None
    logs_flush_interval_ms: float | None = None
    spans_flush_interval_ms: float | None = None
    reconnection_config: ReconnectionConfig | None = None
    headers: dict[str, str] | None = None

    @classmethod
    def of(cls, value: OtelConfig | Mapping[str, Any] | None) -> OtelConfig:
        """An ``OtelConfig`` from itself, a dict of its fields (as iii-sdk takes it), or None.

        Raises:
            TypeError: for a key that is not a field.
        """
        if value is None:
            return cls()
        if isinstance(value, OtelConfig):
            return value
        names = {f.name for f in fields(cls)}
        unknown = set(value) - names
        if unknown:
            raise TypeError(f"unknown otel option(s): {', '.join(sorted(unknown))}")
        return cls(**dict(value))


def _env_number(name: str) -> float | None:
    raw = os.environ.get(name, "")
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value >= 0 else None


def otel_enabled(explicit: bool | None = None) -> bool:
    """Whether telemetry is on: ``explicit`` when given, else env ``OTEL_ENABLED`` (``false``, ``0``,
    ``no``, ``off`` disable), else True (sdk.md §12.1)."""
    if explicit is not None:
        return explicit
    return os.environ.get("OTEL_ENABLED", "").strip().lower() not in ("false", "0", "no", "off")


class _SocketSpanExporter(SpanExporter):
    def __init__(self, socket: TelemetrySocket) -> None:
        self._socket = socket
        self.exported = 0

    def export(self, spans: Any) -> SpanExportResult:
        if spans:
            self._socket.send(encode_frame("OTLP", encode_spans(spans)))
            self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class BaggageSpanProcessor(SpanProcessor):
    """Copies the baggage entries of the parent context onto each span's attributes (sdk.md §12.1)."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        for key, value in _baggage.get_all(parent_context).items():
            span.set_attribute(key, str(value))

    def on_end(self, span: ReadableSpan) -> None:
        return None

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class HandlerIds(RandomIdGenerator):
    """Random ids, except for a span whose ids were handed out before it was made: svc-sdk starts a
    handler's span only when the handler changes it (the engine records the others), with the ids
    its context carried from the start. :meth:`forced` names them for the next span this thread
    starts."""

    def __init__(self) -> None:
        self._next = threading.local()

    @contextlib.contextmanager
    def forced(self, trace_id: int, span_id: int) -> Iterator[None]:
        """The next span started in this thread (inside the block) gets these ids."""
        self._next.ids = (trace_id, span_id)
        try:
            yield
        finally:
            self._next.ids = None

    def generate_trace_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        return ids[0] if ids is not None else super().generate_trace_id()

    def generate_span_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        if ids is None:
            return super().generate_span_id()
        self._next.ids = None
        return int(ids[1])


class _LogBatch:
    """Log records waiting for their ``LOGS`` frame: sent when ``batch_size`` wait, or after
    ``flush_interval_ms``, whichever comes first."""

    def __init__(self, socket: TelemetrySocket, resource: Resource, batch_size: int, flush_interval_ms: float) -> None:
        self._socket = socket
        self._resource = resource
        self._batch_size = max(1, batch_size)
        self._interval_s = max(0.0, flush_interval_ms) / 1000
        self._records: list[LogRecordData] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def add(self, record: LogRecordData) -> None:
        with self._lock:
            self._records.append(record)
            full = len(self._records) >= self._batch_size
            if not full and self._timer is None:
                self._timer = threading.Timer(self._interval_s, self.flush)
                self._timer.daemon = True
                self._timer.start()
        if full:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            records, self._records = self._records, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if records:
            self._socket.send(encode_frame("LOGS", encode_logs(records, self._resource, TRACER_NAME, __version__)))


def _engine_url(config: OtelConfig) -> str:
    """The engine whose ``/otel`` socket gets the telemetry: ``engine_ws_url``, else the first address
    of env ``SVC_URL`` (which may list several engines, comma-separated, issue 19 §3), else the default."""
    return config.engine_ws_url or (os.environ.get("SVC_URL") or "").split(",")[0].strip() or "ws://127.0.0.1:49134"


class _Pipeline:
    def __init__(self, config: OtelConfig) -> None:
        from svc_helpers.backoff import DEFAULT_RECONNECTION_CONFIG

        url = _engine_url(config)
        attrs: dict[str, Any] = {
            "service.name": config.service_name or os.environ.get("OTEL_SERVICE_NAME") or "svc-python",
            "service.version": config.service_version or os.environ.get("SERVICE_VERSION") or "unknown",
            "service.instance.id": config.service_instance_id or os.environ.get("SERVICE_INSTANCE_ID") or str(uuid.uuid4()),
            "telemetry.sdk.language": "python",
            "telemetry.sdk.name": "svc-sdk-python",
            "telemetry.sdk.version": __version__,
        }
        namespace = config.service_namespace or os.environ.get("SERVICE_NAMESPACE")
        if namespace:
            attrs["service.namespace"] = namespace
        self.resource = Resource.create(attrs)
        self.socket = TelemetrySocket(url, config.headers, config.reconnection_config or DEFAULT_RECONNECTION_CONFIG)
        spans_ms = config.spans_flush_interval_ms
        if spans_ms is None:
            spans_ms = _env_number("OTEL_SPANS_FLUSH_INTERVAL_MS") or 100
        self.ids = HandlerIds()
        self.provider = TracerProvider(resource=self.resource, id_generator=self.ids)
        self.provider.add_span_processor(BaggageSpanProcessor())
        self.exporter = _SocketSpanExporter(self.socket)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter, schedule_delay_millis=max(1.0, spans_ms)))
        batch = config.logs_batch_size or int(_env_number("OTEL_LOGS_BATCH_SIZE") or 1)
        logs_ms = config.logs_flush_interval_ms
        if logs_ms is None:
            logs_ms = _env_number("OTEL_LOGS_FLUSH_INTERVAL_MS") or 100
        self.logs = _LogBatch(self.socket, self.resource, batch, logs_ms)
        self.tracer = self.provider.get_tracer(TRACER_NAME, __version__)

    def flush(self, timeout_s: float) -> None:
        self.provider.force_flush(int(timeout_s * 1000))
        self.logs.flush()
        self.socket.flush(timeout_s)

    def shutdown(self, timeout_s: float) -> None:
        self.flush(timeout_s)
        self.provider.shutdown()
        self.socket.close(timeout_s)


_lock = threading.Lock()
_pipeline: _Pipeline | None = None
_users = 0
_global_set = False


def init_otel(config: OtelConfig | Mapping[str, Any] | None = None) -> bool:
    """Sets up tracing and logs over ``<engine>/otel`` (sdk.md §12.1) once per process; later calls
    only count another user (see :func:`shutdown_otel`). Installs the SDK's tracer provider as the
    global one when none was set. Returns whether telemetry is on.

    Raises:
        TypeError: for an unknown option in a dict config.
    """
    global _pipeline, _users, _global_set
    cfg = OtelConfig.of(config)
    if not otel_enabled(cfg.enabled):
        return False
    with _lock:
        if _pipeline is None:
            _pipeline = _Pipeline(cfg)
            if not _global_set:
                _global_set = True
                with contextlib.suppress(Exception):
                    trace.set_tracer_provider(_pipeline.provider)
        _users += 1
    return True


def is_otel_initialized() -> bool:
    """True between :func:`init_otel` and the last :func:`shutdown_otel`."""
    return _pipeline is not None


def otel_socket_stats() -> dict[str, int] | None:
    """Counters of the telemetry pipeline, or None while telemetry is off: ``spans_exported`` (spans
    handed to the socket), ``frames_sent`` (frames written to ``/otel``), ``frames_dropped`` (frames
    dropped while more than :data:`MAX_QUEUED_FRAMES` waited, or after close)."""
    pipeline = _pipeline
    if pipeline is None:
        return None
    return {"spans_exported": pipeline.exporter.exported, "frames_sent": pipeline.socket.sent, "frames_dropped": pipeline.socket.dropped}


def otel_resource() -> dict[str, str] | None:
    """The resource of the spans this process exports (``service.name`` and the others), each value
    as text, or None while telemetry is off. svc-sdk announces it so that the engine records
    handler spans with the same resource (docs/reference/protocol.md "Handler spans recorded by the
    engine")."""
    pipeline = _pipeline
    if pipeline is None:
        return None
    out: dict[str, str] = {}
    for key, value in pipeline.resource.attributes.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def flush_otel(timeout_s: float = 5.0) -> None:
    """Exports every finished span and log record now and waits until they were written to the
    socket (at most ``timeout_s`` s while connected)."""
    pipeline = _pipeline
    if pipeline is not None:
        pipeline.flush(timeout_s)


def shutdown_otel(timeout_s: float = 5.0, *, force: bool = False) -> None:
    """Flushes, then shuts the pipeline down once its last user (each :func:`init_otel` call counts
    one) released it, or at once with ``force``."""
    global _pipeline, _users
    with _lock:
        if _pipeline is None:
            return
        _users = 0 if force else max(0, _users - 1)
        if _users > 0:
            pipeline = None
        else:
            pipeline, _pipeline = _pipeline, None
    if pipeline is None:
        flush_otel(timeout_s)
    else:
        pipeline.shutdown(timeout_s)


def handler_span_support() -> tuple[Tracer, HandlerIds] | None:
    """For svc-sdk: the pipeline's SDK tracer and its id generator, or None while telemetry is off."""
    pipeline = _pipeline
    if pipeline is None or not isinstance(pipeline.tracer, Tracer):
        return None
    return pipeline.tracer, pipeline.ids


def get_tracer() -> trace.Tracer:
    """The SDK's tracer: the pipeline's when telemetry is on, else the global (no-op) one."""
    pipeline = _pipeline
    return pipeline.tracer if pipeline is not None else trace.get_tracer(TRACER_NAME, __version__)


def _active_context() -> trace.SpanContext | None:
    ctx = trace.get_current_span().get_span_context()
    return ctx if ctx.is_valid else None


def current_trace_id() -> str | None:
    """The active span's trace id (32 lower-case hex), or None outside a valid span."""
    ctx = _active_context()
    return format(ctx.trace_id, "032x") if ctx else None


def current_span_id() -> str | None:
    """The active span's span id (16 lower-case hex), or None outside a valid span."""
    ctx = _active_context()
    return format(ctx.span_id, "016x") if ctx else None


def current_span_is_recording() -> bool:
    """True when there is an active span and it records (telemetry on, sampled)."""
    return trace.get_current_span().is_recording()


def record_span_event(name: str, attributes: Mapping[str, Any] | None = None) -> None:
    """Adds an event to the active span (no-op outside one)."""
    trace.get_current_span().add_event(name, dict(attributes or {}))


def set_current_span_attribute(key: str, value: Any) -> None:
    """Sets an attribute of the active span (no-op outside one)."""
    trace.get_current_span().set_attribute(key, value)


def set_current_span_error(message: str) -> None:
    """Marks the active span ERROR with ``message``."""
    trace.get_current_span().set_status(Status(StatusCode.ERROR, message))


_tracecontext = TraceContextTextMapPropagator()
_baggage_propagator = W3CBaggagePropagator()


def inject_traceparent(ctx: Context | None = None) -> str | None:
    """The W3C ``traceparent`` of ``ctx`` (default: the active context), or None without a span."""
    carrier: dict[str, str] = {}
    _tracecontext.inject(carrier, ctx)
    return carrier.get("traceparent")


def inject_baggage(ctx: Context | None = None) -> str | None:
    """The W3C ``baggage`` header of ``ctx`` (default: the active context), or None when empty."""
    carrier: dict[str, str] = {}
    _baggage_propagator.inject(carrier, ctx)
    return carrier.get("baggage") or None


#: A ``traceparent`` as every W3C propagator writes it (version 00, lowercase hex, nothing after
#: the flags): read here without the propagator's general expression, carrier and getter.
_CANONICAL_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def extract_traceparent(traceparent: str, ctx: Context | None = None) -> Context:
    """A context whose parent span is ``traceparent`` (invalid text gives ``ctx`` unchanged), as the
    W3C trace-context propagator extracts it."""
    match = _CANONICAL_TRACEPARENT.fullmatch(traceparent)
    if match is not None:
        trace_id, span_id = int(match[1], 16), int(match[2], 16)
        if trace_id and span_id:
            parent = trace.SpanContext(trace_id, span_id, is_remote=True, trace_flags=trace.TraceFlags(int(match[3], 16)), trace_state=None)
            return trace.set_span_in_context(trace.NonRecordingSpan(parent), Context() if ctx is None else ctx)
    return _tracecontext.extract({"traceparent": traceparent}, ctx)


def extract_baggage(baggage: str, ctx: Context | None = None) -> Context:
    """A context carrying the entries of the W3C ``baggage`` header."""
    return _baggage_propagator.extract({"baggage": baggage}, ctx)


#: Contexts holding only the entries of a ``baggage`` header, by header: the calls of one function
#: carry the same baggage, and parsing it (percent-decoding every entry) cost as much as starting
#: the handler's span. Contexts are immutable, so one may be shared. At most this many, each of a
#: header of at most :data:`_BAGGAGE_CACHE_TEXT` characters.
_BAGGAGE_CACHE_SIZE = 256
_BAGGAGE_CACHE_TEXT = 1024
_baggage_contexts: dict[str, Context] = {}


def _baggage_context(baggage: str) -> Context:
    ctx = _baggage_contexts.get(baggage)
    if ctx is None:
        ctx = extract_baggage(baggage, Context())
        if len(baggage) <= _BAGGAGE_CACHE_TEXT:
            while len(_baggage_contexts) >= _BAGGAGE_CACHE_SIZE:
                try:
                    del _baggage_contexts[next(iter(_baggage_contexts))]
                except (KeyError, StopIteration, RuntimeError):
                    break  # another thread evicted it first
            _baggage_contexts[baggage] = ctx
    return ctx


def extract_context(traceparent: str | None = None, baggage: str | None = None) -> Context:
    """A context from an inbound ``traceparent`` and ``baggage`` (either may be absent)."""
    ctx = _baggage_context(baggage) if baggage else Context()
    if traceparent:
        ctx = extract_traceparent(traceparent, ctx)
    return ctx


def get_baggage_entry(key: str) -> str | None:
    """A baggage entry of the active context."""
    value = _baggage.get_baggage(key)
    return None if value is None else str(value)


def set_baggage_entry(key: str, value: str) -> Context:
    """A new context: the active one with ``key`` set (attach it to make it active)."""
    return _baggage.set_baggage(key, value)


def remove_baggage_entry(key: str) -> Context:
    """A new context: the active one without ``key``."""
    return _baggage.remove_baggage(key)


def get_all_baggage() -> dict[str, str]:
    """Every baggage entry of the active context."""
    return {k: str(v) for k, v in _baggage.get_all().items()}


def _mark_error(span: trace.Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, str(error)))


def _ok_unless_error(span: trace.Span) -> None:
    status = getattr(span, "status", None)
    if status is None or status.status_code is not StatusCode.ERROR:
        span.set_status(Status(StatusCode.OK))


@contextlib.contextmanager
def _span_scope(name: str, kind: SpanKind, traceparent: str | None, attributes: Mapping[str, Any] | None) -> Iterator[trace.Span]:
    parent = extract_traceparent(traceparent) if traceparent else None
    span = get_tracer().start_span(name, context=parent, kind=kind, attributes=dict(attributes or {}))
    token = _context.attach(trace.set_span_in_context(span, parent))
    try:
        yield span
    except BaseException as error:
        _mark_error(span, error)
        raise
    else:
        _ok_unless_error(span)
    finally:
        _context.detach(token)
        span.end()


def with_span(
    name: str,
    fn: Callable[[trace.Span], T],
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    traceparent: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> T:
    """Runs ``fn(span)`` inside a new active span ``name`` and ends it (sdk.md §12.2): status OK on
    success, ERROR plus a recorded exception when it raises (re-raised). When ``fn`` is a coroutine
    function, returns an awaitable that does the same around awaiting it. A no-op span when telemetry
    is off.

    Example:
        >>> total = with_span("sum", lambda span: 1 + 2)
    """
    if inspect.iscoroutinefunction(fn):
        async def run() -> Any:
            with _span_scope(name, kind, traceparent, attributes) as span:
                return await fn(span)

        return run()  # type: ignore[return-value]
    with _span_scope(name, kind, traceparent, attributes) as span:
        return fn(span)


async def with_span_async(
    name: str,
    fn: Callable[[trace.Span], Awaitable[T]],
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    traceparent: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> T:
    """:func:`with_span` for an async ``fn``."""
    with _span_scope(name, kind, traceparent, attributes) as span:
        return await fn(span)


_LEVELS: dict[str, tuple[SeverityNumber, str]] = {
    "debug": (SeverityNumber.DEBUG, "DEBUG"),
    "info": (SeverityNumber.INFO, "INFO"),
    "warn": (SeverityNumber.WARN, "WARN"),
    "error": (SeverityNumber.ERROR, "ERROR"),
}


class Logger:
    """Emits OpenTelemetry log records (sdk.md §12.4): body = ``message``, severity 5/9/13/17,
    attributes ``trace_id``/``span_id`` (the constructor's, else the active span's), ``service.name``
    (when given) and ``log.data`` = the redacted ``data``. Inside a handler the records carry the
    invocation's trace. Without telemetry it prints ``message`` (and the redacted data) to stdout
    (debug, info) or stderr (warn, error).

    Example:
        >>> log = Logger(service_name="orders")
        >>> log.warn("order stored", {"order_id": "ord_123", "password": "x"})  # password redacted
    """

    def __init__(self, trace_id: str | None = None, service_name: str | None = None, span_id: str | None = None) -> None:
        self._trace_id = trace_id
        self._service_name = service_name
        self._span_id = span_id

    def debug(self, message: str, data: Any = None) -> None:
        self._emit("debug", message, data)

    def info(self, message: str, data: Any = None) -> None:
        self._emit("info", message, data)

    def warn(self, message: str, data: Any = None) -> None:
        self._emit("warn", message, data)

    warning = warn

    def error(self, message: str, data: Any = None) -> None:
        self._emit("error", message, data)

    def _emit(self, level: str, message: str, data: Any) -> None:
        pipeline = _pipeline
        if pipeline is None:
            stream = sys.stderr if level in ("warn", "error") else sys.stdout
            print(message if data is None else f"{message} {safe_stringify(data)}", file=stream)
            return
        severity, text = _LEVELS[level]
        attrs: dict[str, Any] = {}
        trace_id = self._trace_id or current_trace_id()
        span_id = self._span_id or current_span_id()
        if trace_id:
            attrs["trace_id"] = trace_id
        if span_id:
            attrs["span_id"] = span_id
        if self._service_name is not None:
            attrs["service.name"] = self._service_name
        if data is not None:
            attrs["log.data"] = redact(data)
        pipeline.logs.add(
            LogRecordData(time.time_ns(), int(severity), text, str(message), attrs, trace_id, span_id),
        )


_shared_logger: Logger | None = None


def get_logger() -> Logger:
    """A process-wide :class:`Logger` without fixed ids (records follow the active span)."""
    global _shared_logger
    if _shared_logger is None:
        _shared_logger = Logger()
    return _shared_logger
