"""OTLP/JSON encoding (protocol.md §10.2: the standard OTLP/JSON mapping, camelCase names, hex ids,
64-bit integers as strings) of spans read from the OpenTelemetry SDK and of this package's log
records. The OpenTelemetry Python exporters only write protobuf, so the JSON mapping is done here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

_MAX_DEPTH = 16


def any_value(value: Any, depth: int = 0) -> dict[str, Any]:
    """An OTLP ``AnyValue``: strings, booleans, integers (as decimal text), doubles, arrays and maps
    (``kvlistValue``); anything else as its ``str``. Nesting past 16 levels becomes text."""
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return {"intValue": str(value)}
        return {"stringValue": str(value)}
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {"stringValue": str(value)}
        return {"doubleValue": value}
    if value is None:
        return {}
    if depth >= _MAX_DEPTH:
        return {"stringValue": str(value)}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": [{"key": str(k), "value": any_value(v, depth + 1)} for k, v in value.items()]}}
    if isinstance(value, (bytes, bytearray)):
        return {"stringValue": bytes(value).hex()}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [any_value(v, depth + 1) for v in value]}}
    return {"stringValue": str(value)}


def attributes(attrs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if not attrs:
        return []
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items()]


def _resource(resource: Resource) -> dict[str, Any]:
    return {"attributes": attributes(resource.attributes)}


_KINDS = {SpanKind.INTERNAL: 1, SpanKind.SERVER: 2, SpanKind.CLIENT: 3, SpanKind.PRODUCER: 4, SpanKind.CONSUMER: 5}
_STATUS = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


def _span(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    assert ctx is not None
    out: dict[str, Any] = {
        "traceId": format(ctx.trace_id, "032x"),
        "spanId": format(ctx.span_id, "016x"),
        "name": span.name,
        "kind": _KINDS.get(span.kind, 1),
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": attributes(span.attributes),
        "status": {"code": _STATUS.get(span.status.status_code, 0)},
    }
    if span.parent is not None:
        out["parentSpanId"] = format(span.parent.span_id, "016x")
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {"timeUnixNano": str(e.timestamp), "name": e.name, "attributes": attributes(e.attributes)} for e in span.events
        ]
    if span.links:
        out["links"] = [
            {
                "traceId": format(link.context.trace_id, "032x"),
                "spanId": format(link.context.span_id, "016x"),
                "attributes": attributes(link.attributes),
            }
            for link in span.links
        ]
    return out


def encode_spans(spans: Sequence[ReadableSpan]) -> str:
    """An ``ExportTraceServiceRequest`` as OTLP/JSON text: spans grouped by resource, then scope."""
    groups: dict[int, tuple[Resource, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        resource = span.resource
        entry = groups.setdefault(id(resource), (resource, {}))
        scope = span.instrumentation_scope
        key = (scope.name if scope else "", (scope.version or "") if scope else "")
        entry[1].setdefault(key, []).append(_span(span))
    request = {
        "resourceSpans": [
            {
                "resource": _resource(resource),
                "scopeSpans": [{"scope": {"name": name, "version": version}, "spans": items} for (name, version), items in scopes.items()],
            }
            for resource, scopes in groups.values()
        ]
    }
    return json.dumps(request, separators=(",", ":"), default=str)


@dataclass
class LogRecordData:
    """One log record as :class:`svc_helpers.observability.Logger` emits it (sdk.md §12.4)."""

    time_unix_nano: int
    severity_number: int
    severity_text: str
    body: str
    attributes: dict[str, Any] = field(default_factory=dict)
    trace_id: str | None = None
    span_id: str | None = None


def encode_logs(records: Sequence[LogRecordData], resource: Resource, scope_name: str, scope_version: str) -> str:
    """An ``ExportLogsServiceRequest`` as OTLP/JSON text (one resource, one scope)."""
    items: list[dict[str, Any]] = []
    for r in records:
        item: dict[str, Any] = {
            "timeUnixNano": str(r.time_unix_nano),
            "observedTimeUnixNano": str(r.time_unix_nano),
            "severityNumber": r.severity_number,
            "severityText": r.severity_text,
            "body": {"stringValue": r.body},
            "attributes": attributes(r.attributes),
        }
        if r.trace_id:
            item["traceId"] = r.trace_id
        if r.span_id:
            item["spanId"] = r.span_id
        items.append(item)
    request = {
        "resourceLogs": [
            {"resource": _resource(resource), "scopeLogs": [{"scope": {"name": scope_name, "version": scope_version}, "logRecords": items}]}
        ]
    }
    return json.dumps(request, separators=(",", ":"), default=str)
