//! Trace-context helpers (sdk.md §12.2) over the `opentelemetry` API: current ids, spans around
//! closures and futures, events and attributes on the active span, W3C `traceparent` and
//! `baggage` propagation.

use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{FutureExt, Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use super::internal;

/// The active span's trace id (32 hex digits), or `None` outside a valid span.
pub fn current_trace_id() -> Option<String> {
    let cx = Context::current();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// The active span's id (16 hex digits), or `None` outside a valid span.
pub fn current_span_id() -> Option<String> {
    let cx = Context::current();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| sc.span_id().to_string())
}

/// True when the active span records (telemetry on and sampled).
pub fn current_span_is_recording() -> bool {
    Context::current().span().is_recording()
}

fn start(name: &str, kind: SpanKind, traceparent: Option<&str>) -> Option<Context> {
    let tracer = internal::tracer()?;
    let parent = match traceparent {
        Some(tp) => extract_traceparent(tp),
        None => Context::current(),
    };
    let span = tracer.span_builder(name.to_string()).with_kind(kind).start_with_context(&tracer, &parent);
    Some(parent.with_span(span))
}

/// Runs `f` inside a new INTERNAL span `name` (child of `traceparent` when given, else of the
/// active span), with status OK. Without telemetry `f` runs in the current context.
///
/// ```
/// let n = svc_helpers::observability::with_span("step", None, |_cx| 1 + 1);
/// assert_eq!(n, 2);
/// ```
pub fn with_span<T>(name: &str, traceparent: Option<&str>, f: impl FnOnce(&Context) -> T) -> T {
    match start(name, SpanKind::Internal, traceparent) {
        None => f(&Context::current()),
        Some(cx) => {
            let out = {
                let _guard = cx.clone().attach();
                f(&cx)
            };
            cx.span().set_status(Status::Ok);
            cx.span().end();
            out
        }
    }
}

/// Awaits `fut` inside a new INTERNAL span `name`: status OK on `Ok`, ERROR with a recorded
/// `exception` event on `Err` (sdk.md §12.2).
pub async fn with_span_async<T, E: Display, F: Future<Output = Result<T, E>>>(name: &str, traceparent: Option<&str>, fut: F) -> Result<T, E> {
    match start(name, SpanKind::Internal, traceparent) {
        None => fut.await,
        Some(cx) => {
            let out = fut.with_context(cx.clone()).await;
            let span = cx.span();
            match &out {
                Ok(_) => span.set_status(Status::Ok),
                Err(e) => {
                    let message = e.to_string();
                    span.add_event("exception", vec![KeyValue::new("exception.message", message.clone())]);
                    span.set_status(Status::error(message));
                }
            }
            span.end();
            out
        }
    }
}

/// Adds an event to the active span.
pub fn record_span_event(name: &str, attributes: Vec<KeyValue>) {
    Context::current().span().add_event(name.to_string(), attributes);
}

/// Sets an attribute on the active span.
pub fn set_current_span_attribute(key: &str, value: impl Into<Value>) {
    Context::current().span().set_attribute(KeyValue::new(key.to_string(), value.into()));
}

/// Marks the active span as failed with `message`.
pub fn set_current_span_error(message: &str) {
    Context::current().span().set_status(Status::error(message.to_string()));
}

/// The active context as a W3C `traceparent`, or `None` outside a valid span.
pub fn inject_traceparent() -> Option<String> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&Context::current(), &mut carrier);
    carrier.remove("traceparent")
}

/// The active context's baggage as a W3C `baggage` header, or `None` when empty.
pub fn inject_baggage() -> Option<String> {
    inject_baggage_of(&Context::current())
}

/// The baggage of `cx` as a W3C `baggage` header, or `None` when empty.
pub fn inject_baggage_of(cx: &Context) -> Option<String> {
    if cx.baggage().is_empty() {
        return None;
    }
    let mut carrier = HashMap::new();
    BaggagePropagator::new().inject_context(cx, &mut carrier);
    carrier.remove("baggage").filter(|b| !b.is_empty())
}

/// A context whose remote parent is `traceparent` (an invalid header gives the current context's span-less copy).
pub fn extract_traceparent(traceparent: &str) -> Context {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    TraceContextPropagator::new().extract(&carrier)
}

/// A context holding the entries of a W3C `baggage` header.
pub fn extract_baggage(baggage: &str) -> Context {
    let carrier = HashMap::from([("baggage".to_string(), baggage.to_string())]);
    BaggagePropagator::new().extract(&carrier)
}

/// The two headers of an invocation, read by the propagators without copying them into a map.
struct Headers<'a> {
    traceparent: Option<&'a str>,
    baggage: Option<&'a str>,
}

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent,
            "baggage" => self.baggage,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        [self.traceparent.map(|_| "traceparent"), self.baggage.map(|_| "baggage")].into_iter().flatten().collect()
    }
}

/// A context from both headers (either may be absent), on top of the current context.
pub fn extract_context(traceparent: Option<&str>, baggage: Option<&str>) -> Context {
    let headers = Headers { traceparent, baggage };
    let cx = TraceContextPropagator::new().extract(&headers);
    match baggage {
        Some(_) => BaggagePropagator::new().extract_with_context(&cx, &headers),
        None => cx,
    }
}

/// Contexts holding only the entries of a `baggage` header, with that baggage as this SDK writes it
/// back, by header, per thread: the calls of one function carry the same baggage, and parsing it
/// (percent-decoding every entry into a map) and writing it again cost more than the rest of an
/// untouched handler span. At most [`BAGGAGE_CACHE_SIZE`] headers of at most [`BAGGAGE_CACHE_TEXT`]
/// bytes; a full cache starts over.
const BAGGAGE_CACHE_SIZE: usize = 256;
const BAGGAGE_CACHE_TEXT: usize = 1024;

/// A baggage header's context and the header written back.
type BaggageEntry = (Context, Option<Arc<str>>);

thread_local! {
    static BAGGAGE_CONTEXTS: std::cell::RefCell<HashMap<String, BaggageEntry>> = std::cell::RefCell::new(HashMap::new());
}

fn baggage_context(baggage: &str) -> BaggageEntry {
    if let Some(hit) = BAGGAGE_CONTEXTS.with(|c| c.borrow().get(baggage).cloned()) {
        return hit;
    }
    let headers = Headers { traceparent: None, baggage: Some(baggage) };
    let cx = BaggagePropagator::new().extract_with_context(&Context::new(), &headers);
    let entry = (cx.clone(), inject_baggage_of(&cx).map(Arc::from));
    if baggage.len() <= BAGGAGE_CACHE_TEXT {
        BAGGAGE_CONTEXTS.with(|c| {
            let mut cache = c.borrow_mut();
            if cache.len() >= BAGGAGE_CACHE_SIZE {
                cache.clear();
            }
            cache.insert(baggage.to_string(), entry.clone());
        });
    }
    entry
}

/// For svc-sdk's handler spans: the parent context of an invocation from its `traceparent` and
/// `baggage` (either may be absent; a fresh context, not the current one, under them), and its
/// baggage as a W3C `baggage` header written back (`None` when it holds no entry).
pub(crate) fn handler_parent(traceparent: Option<&str>, baggage: Option<&str>) -> BaggageEntry {
    let (base, header) = match baggage {
        Some(b) => baggage_context(b),
        None => (Context::new(), None),
    };
    let cx = match traceparent {
        Some(tp) => TraceContextPropagator::new().extract_with_context(&base, &Headers { traceparent: Some(tp), baggage: None }),
        None => base,
    };
    (cx, header)
}

/// The value of baggage entry `key` in the active context.
pub fn get_baggage_entry(key: &str) -> Option<String> {
    Context::current().baggage().get(key).map(|v| v.to_string())
}

/// Every baggage entry of the active context.
pub fn get_all_baggage() -> HashMap<String, String> {
    Context::current().baggage().iter().map(|(k, (v, _))| (k.to_string(), v.to_string())).collect()
}

/// Copies the parent context's baggage entries onto every span as attributes (sdk.md §12.1).
#[derive(Debug, Clone, Copy, Default)]
pub struct BaggageSpanProcessor;

impl SpanProcessor for BaggageSpanProcessor {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        for (key, (value, _)) in cx.baggage().iter() {
            span.set_attribute(KeyValue::new(key.clone(), value.to_string()));
        }
    }

    fn on_end(&self, _span: SpanData) {}

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(cx: &Context) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = cx.baggage().iter().map(|(k, (v, _))| (k.to_string(), v.to_string())).collect();
        all.sort();
        all
    }

    #[test]
    fn a_handler_parent_is_the_context_the_propagators_extract_whether_its_baggage_was_seen_or_not() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        for (traceparent, baggage) in [
            (Some(tp), Some("tenant=acme,user%20id=a%2Cb;meta=1")),
            (Some(tp), Some("tenant=acme,user%20id=a%2Cb;meta=1")),
            (Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), Some("k=v")),
            (Some("not a traceparent"), None),
            (None, Some("=broken,k2=v2")),
            (Some(tp), Some("")),
            (None, None),
        ] {
            let (cx, header) = handler_parent(traceparent, baggage);
            let expected = extract_context(traceparent, baggage);
            assert_eq!(cx.span().span_context(), expected.span().span_context(), "{traceparent:?}");
            assert_eq!(entries(&cx), entries(&expected), "{baggage:?}");
            // Entries in any order: a baggage is a hash map.
            let sorted = |h: Option<&str>| h.map(|h| {
                let mut parts: Vec<&str> = h.split(',').collect();
                parts.sort();
                parts.join(",")
            });
            assert_eq!(sorted(header.as_deref()), sorted(inject_baggage_of(&expected).as_deref()), "{baggage:?}");
        }
    }
}
