//! OTLP/JSON encoding (the standard protobuf JSON mapping: camelCase names, hex ids, 64-bit
//! integers as strings) of spans and log records, as the engine's `/otel` socket takes them
//! (protocol.md §10.2). Written by hand over `serde_json` so that no protobuf or gRPC stack is
//! compiled into every worker.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::logs::AnyValue as LogValue;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::logs::SdkLogRecord;
use opentelemetry_sdk::trace::SpanData;
use opentelemetry_sdk::Resource;
use serde_json::{json, Map, Value as Json};

fn nanos(time: SystemTime) -> String {
    time.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0).to_string()
}

/// An OpenTelemetry attribute value as an OTLP `AnyValue`.
pub(crate) fn any_value(value: &Value) -> Json {
    match value {
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::I64(i) => json!({ "intValue": i.to_string() }),
        Value::F64(f) => double(*f),
        Value::String(s) => json!({ "stringValue": s.as_str() }),
        Value::Array(a) => {
            let values: Vec<Json> = match a {
                Array::Bool(v) => v.iter().map(|b| json!({ "boolValue": b })).collect(),
                Array::I64(v) => v.iter().map(|i| json!({ "intValue": i.to_string() })).collect(),
                Array::F64(v) => v.iter().map(|f| double(*f)).collect(),
                Array::String(v) => v.iter().map(|s| json!({ "stringValue": s.as_str() })).collect(),
                _ => Vec::new(),
            };
            json!({ "arrayValue": { "values": values } })
        }
        _ => json!({ "stringValue": value.to_string() }),
    }
}

fn double(f: f64) -> Json {
    if f.is_finite() {
        json!({ "doubleValue": f })
    } else {
        json!({ "doubleValue": if f.is_nan() { "NaN" } else if f > 0.0 { "Infinity" } else { "-Infinity" } })
    }
}

/// A log record value as an OTLP `AnyValue` (maps become `kvlistValue`).
pub(crate) fn log_value(value: &LogValue) -> Json {
    match value {
        LogValue::Int(i) => json!({ "intValue": i.to_string() }),
        LogValue::Double(f) => double(*f),
        LogValue::String(s) => json!({ "stringValue": s.as_str() }),
        LogValue::Boolean(b) => json!({ "boolValue": b }),
        LogValue::Bytes(b) => json!({ "stringValue": String::from_utf8_lossy(b) }),
        LogValue::ListAny(list) => json!({ "arrayValue": { "values": list.iter().map(log_value).collect::<Vec<_>>() } }),
        LogValue::Map(map) => {
            let mut entries: Vec<(&opentelemetry::Key, &LogValue)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            json!({ "kvlistValue": { "values": entries.iter().map(|(k, v)| json!({ "key": k.as_str(), "value": log_value(v) })).collect::<Vec<_>>() } })
        }
        _ => json!({}),
    }
}

/// A JSON value as a log `AnyValue` (objects as maps, arrays as lists, `null` as an empty string).
pub fn json_to_log_value(value: &Json) -> LogValue {
    match value {
        Json::Null => LogValue::String("".into()),
        Json::Bool(b) => LogValue::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => LogValue::Int(i),
            None => LogValue::Double(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => LogValue::String(s.clone().into()),
        Json::Array(items) => LogValue::ListAny(Box::new(items.iter().map(json_to_log_value).collect())),
        Json::Object(map) => LogValue::Map(Box::new(map.iter().map(|(k, v)| (opentelemetry::Key::new(k.clone()), json_to_log_value(v))).collect())),
    }
}

fn attributes(kvs: &[KeyValue]) -> Json {
    Json::Array(kvs.iter().map(|kv| json!({ "key": kv.key.as_str(), "value": any_value(&kv.value) })).collect())
}

/// The resource block: the resource's attributes.
pub(crate) fn resource_json(resource: &Resource) -> Json {
    let mut kvs: Vec<Json> = resource.iter().map(|(k, v)| json!({ "key": k.as_str(), "value": any_value(v) })).collect();
    kvs.sort_by(|a, b| a["key"].as_str().cmp(&b["key"].as_str()));
    json!({ "attributes": kvs })
}

fn span_kind(kind: &SpanKind) -> u8 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn span_json(span: &SpanData) -> Json {
    let ctx = &span.span_context;
    let mut out = Map::new();
    out.insert("traceId".into(), json!(ctx.trace_id().to_string()));
    out.insert("spanId".into(), json!(ctx.span_id().to_string()));
    if span.parent_span_id != opentelemetry::trace::SpanId::INVALID {
        out.insert("parentSpanId".into(), json!(span.parent_span_id.to_string()));
    }
    out.insert("name".into(), json!(span.name.as_ref()));
    out.insert("kind".into(), json!(span_kind(&span.span_kind)));
    out.insert("startTimeUnixNano".into(), json!(nanos(span.start_time)));
    out.insert("endTimeUnixNano".into(), json!(nanos(span.end_time)));
    out.insert("attributes".into(), attributes(&span.attributes));
    if span.dropped_attributes_count > 0 {
        out.insert("droppedAttributesCount".into(), json!(span.dropped_attributes_count));
    }
    if !span.events.events.is_empty() {
        let events: Vec<Json> = span
            .events
            .events
            .iter()
            .map(|e| json!({ "name": e.name.as_ref(), "timeUnixNano": nanos(e.timestamp), "attributes": attributes(&e.attributes) }))
            .collect();
        out.insert("events".into(), Json::Array(events));
    }
    let status = match &span.status {
        Status::Unset => json!({ "code": 0 }),
        Status::Ok => json!({ "code": 1 }),
        Status::Error { description } => json!({ "code": 2, "message": description.as_ref() }),
    };
    out.insert("status".into(), status);
    let flags = u32::from(ctx.trace_flags().to_u8()) | 0x100 | if span.parent_span_is_remote { 0x200 } else { 0 };
    out.insert("flags".into(), json!(flags));
    Json::Object(out)
}

/// An `ExportTraceServiceRequest` for `spans`, grouped by instrumentation scope.
pub fn trace_request(resource: &Json, spans: &[SpanData]) -> Json {
    let mut scopes: Vec<(String, Option<String>, Vec<Json>)> = Vec::new();
    for span in spans {
        let name = span.instrumentation_scope.name().to_string();
        let version = span.instrumentation_scope.version().map(str::to_string);
        match scopes.iter_mut().find(|(n, v, _)| *n == name && *v == version) {
            Some((_, _, list)) => list.push(span_json(span)),
            None => scopes.push((name, version, vec![span_json(span)])),
        }
    }
    let scope_spans: Vec<Json> = scopes
        .into_iter()
        .map(|(name, version, spans)| {
            let scope = match version {
                Some(v) => json!({ "name": name, "version": v }),
                None => json!({ "name": name }),
            };
            json!({ "scope": scope, "spans": spans })
        })
        .collect();
    json!({ "resourceSpans": [{ "resource": resource, "scopeSpans": scope_spans }] })
}

/// An `ExportLogsServiceRequest` for `records` (one scope: svc's logger).
pub fn logs_request(resource: &Json, records: &[&SdkLogRecord]) -> Json {
    let logs: Vec<Json> = records
        .iter()
        .map(|r| {
            let mut out = Map::new();
            let time = r.timestamp().or(r.observed_timestamp()).unwrap_or_else(SystemTime::now);
            out.insert("timeUnixNano".into(), json!(nanos(time)));
            out.insert("observedTimeUnixNano".into(), json!(nanos(r.observed_timestamp().unwrap_or(time))));
            if let Some(n) = r.severity_number() {
                out.insert("severityNumber".into(), json!(n as i32));
            }
            if let Some(t) = r.severity_text() {
                out.insert("severityText".into(), json!(t));
            }
            if let Some(body) = r.body() {
                out.insert("body".into(), log_value(body));
            }
            let attrs: Vec<Json> = r.attributes_iter().map(|(k, v)| json!({ "key": k.as_str(), "value": log_value(v) })).collect();
            out.insert("attributes".into(), Json::Array(attrs));
            if let Some(tc) = r.trace_context() {
                out.insert("traceId".into(), json!(tc.trace_id.to_string()));
                out.insert("spanId".into(), json!(tc.span_id.to_string()));
                if let Some(flags) = tc.trace_flags {
                    out.insert("flags".into(), json!(flags.to_u8()));
                }
            }
            Json::Object(out)
        })
        .collect();
    json!({ "resourceLogs": [{ "resource": resource, "scopeLogs": [{ "scope": { "name": super::TRACER_NAME }, "logRecords": logs }] }] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_otlp_json_mapping() {
        assert_eq!(any_value(&Value::I64(1 << 60)), json!({ "intValue": "1152921504606846976" }));
        assert_eq!(any_value(&Value::F64(f64::NAN)), json!({ "doubleValue": "NaN" }));
        assert_eq!(log_value(&json_to_log_value(&json!({ "b": [1, "x"], "a": true }))),
            json!({ "kvlistValue": { "values": [
                { "key": "a", "value": { "boolValue": true } },
                { "key": "b", "value": { "arrayValue": { "values": [{ "intValue": "1" }, { "stringValue": "x" }] } } }
            ] } }));
    }
}
