//! Handler spans (sdk.md §12.3, protocol.md §10.1): each handler runs inside an INTERNAL span
//! `execute <function_id>` parented on the inbound `traceparent` (and `baggage`), with the events
//! `svc.invocation.input` / `svc.invocation.output` holding the redacted, capped payloads; the
//! result carries the span's context back.

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;
use svc_helpers::observability::{self as otel, internal};

use crate::error::ErrorBody;

/// What the handler spans need, read once per client.
#[derive(Clone, Copy)]
pub(crate) struct SpanSettings {
    pub(crate) payloads: bool,
    pub(crate) max_bytes: Option<usize>,
}

impl SpanSettings {
    pub(crate) fn from_env() -> Self {
        Self { payloads: otel::trace_payloads_enabled(), max_bytes: otel::resolve_max_bytes_from_env() }
    }
}

fn payload_event(name: &'static str, text: Option<&str>, settings: SpanSettings, ok: bool) -> (&'static str, Vec<KeyValue>) {
    let value: serde_json::Value = text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(serde_json::Value::Null);
    let (json, truncated) = otel::redact_and_truncate(&value, settings.max_bytes);
    (name, vec![KeyValue::new("svc.payload.json", json), KeyValue::new("svc.payload.truncated", truncated), KeyValue::new("svc.payload.ok", ok)])
}

/// Starts the span of one invocation; `None` while telemetry is off.
pub(crate) fn start(function_id: &str, data: &RawValue, traceparent: Option<&str>, baggage: Option<&str>, settings: SpanSettings) -> Option<Context> {
    let tracer = internal::tracer()?;
    let parent = otel::extract_context(traceparent, baggage);
    let mut span = tracer.span_builder(format!("execute {function_id}")).with_kind(SpanKind::Internal).start_with_context(&tracer, &parent);
    if span.is_recording() {
        span.set_attribute(KeyValue::new("svc.function.id", function_id.to_string()));
        if settings.payloads {
            let (name, attrs) = payload_event("svc.invocation.input", Some(data.get()), settings, true);
            span.add_event(name, attrs);
        }
    }
    Some(parent.with_span(span))
}

/// The span's context as the result's `traceparent` and `baggage`.
pub(crate) fn result_context(cx: &Context) -> (Option<String>, Option<String>) {
    let _guard = cx.clone().attach();
    (otel::inject_traceparent(), otel::inject_baggage())
}

/// Ends the span with the handler's outcome.
pub(crate) fn end(cx: &Context, result: &Result<Option<String>, ErrorBody>, settings: SpanSettings) {
    let span = cx.span();
    if span.is_recording() {
        match result {
            Ok(text) => {
                if settings.payloads {
                    let (name, attrs) = payload_event("svc.invocation.output", text.as_deref(), settings, true);
                    span.add_event(name, attrs);
                }
                span.set_status(Status::Ok);
            }
            Err(e) => {
                span.add_event(
                    "exception",
                    vec![KeyValue::new("exception.type", e.code.clone()), KeyValue::new("exception.message", e.message.clone())],
                );
                span.set_status(Status::error(format!("{}: {}", e.code, e.message)));
            }
        }
    }
    span.end();
}
