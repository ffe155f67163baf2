//! Handler spans (sdk.md §12.3, protocol.md §10.1): each handler runs inside an INTERNAL span
//! `execute <function_id>` parented on the inbound `traceparent` (and `baggage`), with the events
//! `svc.invocation.input` / `svc.invocation.output` holding the redacted, capped payloads; the
//! result carries the span's context back.
//!
//! On a connection whose engine records handler spans (svc addition, docs/reference/protocol.md
//! "Handler spans recorded by the engine"), a span the handler left as the SDK made it is handed
//! over: [`hand_over`] gives its times for the `invocationresult` and the span is not exported;
//! its input payload event is deferred and never made. The handler's current span is a
//! [`HandlerSpan`], which notes any change (attribute, event, link, status, name, end): a changed
//! span is exported in full, as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{Span, SpanContext, SpanKind, Status, TraceContextExt, TraceFlags, Tracer as _};
use opentelemetry::{Context, KeyValue};
use serde_json::value::RawValue;
use svc_helpers::observability::internal::{self, SdkTracer, SpanStart};
use svc_helpers::observability::{self as otel};

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

fn payload_event(text: Option<&str>, settings: SpanSettings, ok: bool) -> Vec<KeyValue> {
    let value: serde_json::Value = text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(serde_json::Value::Null);
    let (json, truncated) = otel::redact_and_truncate(&value, settings.max_bytes);
    vec![KeyValue::new("svc.payload.json", json), KeyValue::new("svc.payload.truncated", truncated), KeyValue::new("svc.payload.ok", ok)]
}

/// What the session and the span share: whether the handler changed it, and whether it is being
/// handed over (then the SDK's own writes are not the handler's).
#[derive(Default)]
struct SpanState {
    touched: AtomicBool,
    handing_over: AtomicBool,
}

/// What makes the SDK span of a span not yet written to.
struct Pending {
    tracer: SdkTracer,
    start: SpanStart,
    parent: Context,
    name: String,
    function_id: String,
    time: SystemTime,
}

impl Pending {
    fn build(self) -> internal::SdkSpan {
        let builder = self.tracer.span_builder(self.name).with_kind(SpanKind::Internal).with_start_time(self.time);
        let mut span = internal::build_span(&self.tracer, &self.start, builder, &self.parent);
        if span.is_recording() {
            span.set_attribute(KeyValue::new("svc.function.id", self.function_id));
        }
        span
    }
}

/// The handler's current span `execute <function_id>`, noting whether the handler changed it. Its
/// context is fixed at the start; on a connection whose engine records handler spans, the
/// OpenTelemetry SDK's span is only made when something writes to it (with that context, through
/// [`internal::build_span`]), so a span handed over costs neither the SDK span nor its export.
/// Reads change nothing; the first write records the deferred input payload event first (at the
/// span's start time), so an exported span has the shape it would have had.
pub(crate) struct HandlerSpan {
    context: SpanContext,
    inner: Option<internal::SdkSpan>,
    pending: Option<Pending>,
    state: Arc<SpanState>,
    /// The input payload event, not yet recorded: `(data, start)`.
    deferred: Option<(Box<RawValue>, SystemTime)>,
    settings: SpanSettings,
}

impl HandlerSpan {
    /// The SDK span for a write: made now if it was not yet; `None` for a span handed over (its
    /// writes come after its end).
    fn write(&mut self) -> Option<&mut internal::SdkSpan> {
        if self.state.handing_over.load(Ordering::Relaxed) {
            return self.inner.as_mut();
        }
        self.state.touched.store(true, Ordering::Relaxed);
        if let Some(pending) = self.pending.take() {
            self.inner = Some(pending.build());
        }
        let inner = self.inner.as_mut()?;
        if let Some((data, start)) = self.deferred.take() {
            inner.add_event_with_timestamp("svc.invocation.input", start, payload_event(Some(data.get()), self.settings, true));
        }
        Some(inner)
    }
}

impl Span for HandlerSpan {
    fn add_event_with_timestamp<T>(&mut self, name: T, timestamp: SystemTime, attributes: Vec<KeyValue>)
    where
        T: Into<std::borrow::Cow<'static, str>>,
    {
        if let Some(inner) = self.write() {
            inner.add_event_with_timestamp(name, timestamp, attributes);
        }
    }

    fn span_context(&self) -> &SpanContext {
        &self.context
    }

    fn is_recording(&self) -> bool {
        self.inner.as_ref().map_or(self.pending.is_some() && !self.state.handing_over.load(Ordering::Relaxed), |inner| inner.is_recording())
    }

    fn set_attribute(&mut self, attribute: KeyValue) {
        if let Some(inner) = self.write() {
            inner.set_attribute(attribute);
        }
    }

    fn set_status(&mut self, status: Status) {
        if let Some(inner) = self.write() {
            inner.set_status(status);
        }
    }

    fn update_name<T>(&mut self, new_name: T)
    where
        T: Into<std::borrow::Cow<'static, str>>,
    {
        if let Some(inner) = self.write() {
            inner.update_name(new_name);
        }
    }

    fn add_link(&mut self, span_context: SpanContext, attributes: Vec<KeyValue>) {
        if let Some(inner) = self.write() {
            inner.add_link(span_context, attributes);
        }
    }

    fn end_with_timestamp(&mut self, timestamp: SystemTime) {
        if let Some(inner) = self.write() {
            inner.end_with_timestamp(timestamp);
        }
    }
}

/// One handler run's span: its context (to run the handler in) and what the session reads.
pub(crate) struct HandlerScope {
    pub(crate) cx: Context,
    /// The inbound baggage as a `baggage` header, for the result.
    baggage: Option<Arc<str>>,
    state: Arc<SpanState>,
    start: SystemTime,
    handed_over: bool,
}

/// Starts the span of one invocation; `None` while telemetry is off. `defer_input`: the engine may
/// record the span ([`hand_over`]), so the input payload event waits until the span is changed or
/// ended here, and so does the SDK span of a sampled one.
pub(crate) fn start(
    function_id: &str,
    data: &RawValue,
    traceparent: Option<&str>,
    baggage: Option<&str>,
    settings: SpanSettings,
    defer_input: bool,
) -> Option<HandlerScope> {
    let (parent, baggage) = internal::handler_parent(traceparent, baggage);
    let name = format!("execute {function_id}");
    let (tracer, span_start) = internal::start_span(&parent, &name)?;
    let time = SystemTime::now();
    let mut deferred = None;
    let mut input_now = false;
    if span_start.is_recording() && settings.payloads {
        if defer_input {
            deferred = Some((data.to_owned(), time));
        } else {
            input_now = true;
        }
    }
    let context = span_start.context.clone();
    let pending = Pending { tracer, start: span_start, parent: parent.clone(), name, function_id: function_id.to_string(), time };
    let (inner, pending) = if defer_input && context.is_sampled() { (None, Some(pending)) } else { (Some(pending.build()), None) };
    let state = Arc::new(SpanState::default());
    let mut span = HandlerSpan { context, inner, pending, state: state.clone(), deferred, settings };
    if input_now {
        if let Some(inner) = span.inner.as_mut() {
            inner.add_event_with_timestamp("svc.invocation.input", time, payload_event(Some(data.get()), settings, true));
        }
    }
    Some(HandlerScope { cx: parent.with_span(span), baggage, state, start: time, handed_over: false })
}

/// The span's context as the result's `traceparent` and `baggage`.
pub(crate) fn result_context(scope: &HandlerScope) -> (Option<String>, Option<Arc<str>>) {
    let span = scope.cx.span();
    let sc = span.span_context();
    let traceparent = sc.is_valid().then(|| format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags() & TraceFlags::SAMPLED));
    (traceparent, scope.baggage.clone())
}

fn unix_nanos(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// Hands the span to the engine: `(span_start, span_end)`, nanoseconds since the Unix epoch as
/// decimal text, for the `invocationresult` when the span is sampled and the handler left it as the
/// SDK made it; the span then ends marked so that it is not exported, and [`end`] does nothing.
/// `None` when the span is sent in full.
pub(crate) fn hand_over(scope: &mut HandlerScope) -> Option<(String, String)> {
    let span = scope.cx.span();
    if !span.span_context().is_sampled() || scope.state.touched.load(Ordering::Relaxed) {
        return None;
    }
    scope.state.handing_over.store(true, Ordering::Relaxed);
    let end = SystemTime::now().max(scope.start);
    // Set even on a span not made: a write racing this check holds the span's lock, so the SDK span
    // it made is marked here (and not exported), and a write after it is dropped (handing over).
    span.set_attribute(internal::handed_over_marker());
    span.end_with_timestamp(end);
    scope.handed_over = true;
    Some((unix_nanos(scope.start).to_string(), unix_nanos(end).to_string()))
}

/// Ends the span with the handler's outcome, as svc-sdk for Node does: status OK and the output
/// event, or status ERROR with the message, `error.type`, an `exception` event (the handler's
/// stack when it had one) and the error as a failed output event. Nothing for a span handed over.
pub(crate) fn end(scope: &HandlerScope, result: &Result<Option<String>, ErrorBody>, settings: SpanSettings) {
    if scope.handed_over {
        return;
    }
    let span = scope.cx.span();
    if span.is_recording() {
        match result {
            Ok(text) => {
                if settings.payloads {
                    span.add_event("svc.invocation.output", payload_event(text.as_deref(), settings, true));
                }
                span.set_status(Status::Ok);
            }
            Err(e) => {
                span.set_attribute(KeyValue::new("error.type", e.code.clone()));
                let stack = e.stacktrace.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| format!("{}: {}", e.code, e.message));
                span.add_event(
                    "exception",
                    vec![
                        KeyValue::new("exception.type", e.code.clone()),
                        KeyValue::new("exception.message", e.message.clone()),
                        KeyValue::new("exception.stacktrace", stack),
                    ],
                );
                if settings.payloads {
                    let body = serde_json::to_string(e).ok();
                    span.add_event("svc.invocation.output", payload_event(body.as_deref(), settings, false));
                }
                span.set_status(Status::error(e.message.clone()));
            }
        }
    }
    span.end();
}

/// What the engine takes in an announce's `handler_spans.resource`: attributes, and UTF-16 code
/// units of a key and of a value (it ignores a larger resource, and the spans handed over with it).
const MAX_RESOURCE_ATTRIBUTES: usize = 32;
const MAX_RESOURCE_KEY: usize = 256;
const MAX_RESOURCE_VALUE: usize = 4096;

/// The announce's `handler_spans` (protocol.md §3.2, svc addition): this process's span resource
/// and payload settings, so that the engine records handler spans as this SDK would. `None` while
/// telemetry is off, or when the engine would not take the resource (more than 32 attributes, a
/// key over 256 or a value over 4096 UTF-16 code units, no `service.name`): every span is then
/// exported as before.
pub(crate) fn announce(settings: SpanSettings) -> Option<serde_json::Value> {
    let resource = internal::resource()?;
    let fits = |text: &str, most: usize| text.encode_utf16().count() <= most;
    if resource.len() > MAX_RESOURCE_ATTRIBUTES
        || !resource.iter().any(|(k, v)| k == "service.name" && !v.is_empty())
        || !resource.iter().all(|(k, v)| fits(k, MAX_RESOURCE_KEY) && fits(v, MAX_RESOURCE_VALUE))
    {
        return None;
    }
    let mut out = serde_json::Map::new();
    out.insert("resource".into(), resource.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect::<serde_json::Map<_, _>>().into());
    if !settings.payloads {
        out.insert("payloads".into(), false.into());
    }
    if let Some(max) = settings.max_bytes {
        out.insert("payload_max_bytes".into(), max.into());
    }
    Some(out.into())
}
