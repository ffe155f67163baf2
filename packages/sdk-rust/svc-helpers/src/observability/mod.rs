//! OpenTelemetry for svc workers (sdk.md §12): spans and log records exported as OTLP/JSON over
//! the engine's `/otel` socket (protocol.md §10.2), W3C trace-context and baggage propagation,
//! the [`Logger`], redaction and the helpers of sdk.md §12.2.
//!
//! [`init_otel`] installs a tracer provider (batched every `spans_flush_interval_ms`, default
//! 100 ms) and a logger provider (each record sent as it is emitted) as the process's global
//! OpenTelemetry providers, so spans of any `opentelemetry` tracer reach the engine too.
//!
//! ```no_run
//! use svc_helpers::observability::{init_otel, with_span, OtelConfig};
//!
//! init_otel(OtelConfig::default());
//! let answer = with_span("compute", None, |_cx| 42);
//! assert_eq!(answer, 42);
//! svc_helpers::observability::shutdown_otel();
//! ```

mod handler_ids;
mod logger;
mod otlp;
mod redact;
mod socket;
mod trace;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, SdkLoggerProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, Config, SdkTracer, SdkTracerProvider, SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

pub use logger::{get_logger, Logger};
pub use otlp::{json_to_log_value, logs_request, trace_request};
pub use redact::{is_sensitive_key, redact, redact_and_truncate, resolve_max_bytes_from_env, trace_payloads_enabled, REDACTED_PLACEHOLDER};
pub use trace::{
    current_span_id, current_span_is_recording, current_trace_id, extract_baggage, extract_context, extract_traceparent,
    get_all_baggage, get_baggage_entry, inject_baggage, inject_baggage_of, inject_traceparent, record_span_event, set_current_span_attribute,
    set_current_span_error, with_span, with_span_async, BaggageSpanProcessor,
};

pub use crate::reconnect::ReconnectionConfig;
pub use opentelemetry::logs::Severity as SeverityNumber;

/// Name of svc's tracer and logger (the instrumentation scope of handler spans and log records).
pub const TRACER_NAME: &str = "svc-sdk";

/// The engine's default worker address (protocol.md §2).
pub const DEFAULT_ENGINE_URL: &str = "ws://127.0.0.1:49134";

/// Telemetry configuration (sdk.md §12.1). Every field is optional: environment variables
/// override the defaults and explicit fields override both.
#[derive(Debug, Clone, Default)]
pub struct OtelConfig {
    /// Default true; env `OTEL_ENABLED` set to `false`, `0`, `no` or `off` disables.
    pub enabled: Option<bool>,
    /// Worker address whose `/otel` path receives the frames; env `SVC_URL` (its first address when
    /// it lists several), else [`DEFAULT_ENGINE_URL`].
    pub engine_ws_url: Option<String>,
    /// `service.name`; env `OTEL_SERVICE_NAME`, else `svc-rust`.
    pub service_name: Option<String>,
    /// `service.version`; env `SERVICE_VERSION`, else `unknown`.
    pub service_version: Option<String>,
    /// `service.namespace`; env `SERVICE_NAMESPACE`.
    pub service_namespace: Option<String>,
    /// `service.instance.id`; env `SERVICE_INSTANCE_ID`, else a generated UUID.
    pub service_instance_id: Option<String>,
    /// Interval of span batches, ms; env `OTEL_SPANS_FLUSH_INTERVAL_MS`, else 100.
    pub spans_flush_interval_ms: Option<u64>,
    /// Reconnection of the telemetry socket; default as sdk.md §2.
    pub reconnection_config: Option<ReconnectionConfig>,
    /// Extra HTTP headers on the upgrade of `/otel` (for the listener's auth function).
    pub headers: Option<Vec<(String, String)>>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl OtelConfig {
    /// Whether telemetry is on: the explicit field, else `OTEL_ENABLED`, else true.
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or_else(|| !matches!(env("OTEL_ENABLED").map(|v| v.to_ascii_lowercase()).as_deref(), Some("false" | "0" | "no" | "off")))
    }
}

struct Pipeline {
    tracer_provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// The provider's sampler, which also answers for handler spans made late.
    sampler: handler_ids::HandlerSampler,
    logger_provider: SdkLoggerProvider,
    socket: socket::TelemetrySocket,
    service_name: String,
    /// The resource's attributes as text, in key order.
    resource: Vec<(String, String)>,
    /// Spans handed to the socket.
    spans_exported: Arc<AtomicU64>,
}

fn pipeline_slot() -> &'static Mutex<Option<Arc<Pipeline>>> {
    static SLOT: OnceLock<Mutex<Option<Arc<Pipeline>>>> = OnceLock::new();
    SLOT.get_or_init(|| Mutex::new(None))
}

fn pipeline() -> Option<Arc<Pipeline>> {
    pipeline_slot().lock().ok()?.clone()
}

#[derive(Debug)]
struct SocketSpanExporter {
    socket: socket::TelemetrySocket,
    resource: serde_json::Value,
    exported: Arc<AtomicU64>,
}

/// A span carrying this attribute was handed to the engine, which records it (svc addition,
/// docs/reference/protocol.md "Handler spans recorded by the engine"): it is not exported.
const HANDED_OVER: &str = "svc.internal.handed_over";

impl SpanExporter for SocketSpanExporter {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        batch.retain(|span| !span.attributes.iter().rev().any(|kv| kv.key.as_str() == HANDED_OVER));
        if !batch.is_empty() {
            let json = otlp::trace_request(&self.resource, &batch);
            self.socket.send(b"OTLP", &serde_json::to_vec(&json).unwrap_or_default());
            self.exported.fetch_add(batch.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = otlp::resource_json(resource);
    }
}

#[derive(Debug)]
struct SocketLogExporter {
    socket: socket::TelemetrySocket,
    resource: serde_json::Value,
}

impl LogExporter for SocketLogExporter {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        let records: Vec<_> = batch.iter().map(|(record, _)| record).collect();
        if !records.is_empty() {
            let json = otlp::logs_request(&self.resource, &records);
            self.socket.send(b"LOGS", &serde_json::to_vec(&json).unwrap_or_default());
        }
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = otlp::resource_json(resource);
    }
}

/// Sets up tracing and logs exporting over the engine's `/otel` socket (sdk.md §12.1) and installs
/// the W3C trace-context and baggage propagators. Returns whether telemetry is on. A second call
/// while a pipeline runs keeps the first one (one socket per process) and returns true.
pub fn init_otel(config: OtelConfig) -> bool {
    if !config.is_enabled() {
        return false;
    }
    let Ok(mut slot) = pipeline_slot().lock() else { return false };
    if slot.is_some() {
        return true;
    }
    let url = engine_url(config.engine_ws_url.clone(), env("SVC_URL"));
    let reconnection = config.reconnection_config.unwrap_or_default();
    let Ok(socket) = socket::TelemetrySocket::start(&url, config.headers.clone().unwrap_or_default(), reconnection) else { return false };
    let service_name = config.service_name.clone().or_else(|| env("OTEL_SERVICE_NAME")).unwrap_or_else(|| "svc-rust".into());
    let mut attributes = vec![
        KeyValue::new("service.name", service_name.clone()),
        KeyValue::new("service.version", config.service_version.clone().or_else(|| env("SERVICE_VERSION")).unwrap_or_else(|| "unknown".into())),
        KeyValue::new(
            "service.instance.id",
            config.service_instance_id.clone().or_else(|| env("SERVICE_INSTANCE_ID")).unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        ),
        KeyValue::new("telemetry.sdk.language", "rust"),
        KeyValue::new("telemetry.sdk.name", "svc-sdk"),
    ];
    if let Some(ns) = config.service_namespace.clone().or_else(|| env("SERVICE_NAMESPACE")) {
        attributes.push(KeyValue::new("service.namespace", ns));
    }
    let resource = Resource::builder_empty().with_attributes(attributes).build();
    let interval = config
        .spans_flush_interval_ms
        .or_else(|| env("OTEL_SPANS_FLUSH_INTERVAL_MS").and_then(|v| v.parse().ok()))
        .unwrap_or(100);
    let spans_exported = Arc::new(AtomicU64::new(0));
    let spans = SocketSpanExporter { socket: socket.clone(), resource: otlp::resource_json(&resource), exported: spans_exported.clone() };
    let mut resource_text: Vec<(String, String)> = resource.iter().map(|(k, v)| (k.as_str().to_string(), v.to_string())).collect();
    resource_text.sort();
    let processor = BatchSpanProcessor::builder(spans)
        .with_batch_config(BatchConfigBuilder::default().with_scheduled_delay(Duration::from_millis(interval.max(1))).build())
        .build();
    // The SDK's default sampler (`OTEL_TRACES_SAMPLER`), shared with svc-sdk's handler spans.
    let sampler = handler_ids::HandlerSampler { inner: Config::default().sampler.into() };
    let tracer_provider = SdkTracerProvider::builder()
        .with_sampler(sampler.clone())
        .with_id_generator(handler_ids::HandlerIds::default())
        .with_resource(resource.clone())
        .with_span_processor(BaggageSpanProcessor)
        .with_span_processor(processor)
        .build();
    let logs = SocketLogExporter { socket: socket.clone(), resource: otlp::resource_json(&resource) };
    let logger_provider = SdkLoggerProvider::builder().with_resource(resource).with_simple_exporter(logs).build();
    opentelemetry::global::set_tracer_provider(tracer_provider.clone());
    opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    use opentelemetry::trace::TracerProvider as _;
    let tracer = tracer_provider.tracer(TRACER_NAME);
    *slot = Some(Arc::new(Pipeline { tracer_provider, tracer, sampler, logger_provider, socket, service_name, resource: resource_text, spans_exported }));
    true
}

/// Sends every finished span and log record now and waits (at most 5 s) until they were written
/// to the socket. A no-op when telemetry is off.
pub fn flush_otel() {
    if let Some(p) = pipeline() {
        let _ = p.tracer_provider.force_flush();
        let _ = p.logger_provider.force_flush();
        p.socket.flush(Duration::from_secs(5));
    }
}

/// Flushes, then shuts the pipeline down and closes the telemetry socket. Idempotent; a later
/// [`init_otel`] starts a new pipeline.
pub fn shutdown_otel() {
    let taken = pipeline_slot().lock().ok().and_then(|mut slot| slot.take());
    if let Some(p) = taken {
        let _ = p.tracer_provider.force_flush();
        let _ = p.logger_provider.force_flush();
        let _ = p.tracer_provider.shutdown();
        let _ = p.logger_provider.shutdown();
        p.socket.stop(Duration::from_secs(5));
    }
}

/// For svc's own crates (sdk.md §15 `svc-helpers/observability/internal`).
pub mod internal {
    use super::*;

    /// The span type of svc's tracer.
    pub type SdkSpan = opentelemetry_sdk::trace::Span;

    pub use super::handler_ids::SpanStart;
    pub use opentelemetry_sdk::trace::SdkTracer;

    /// svc's tracer while telemetry is on.
    pub fn tracer() -> Option<SdkTracer> {
        pipeline().map(|p| p.tracer.clone())
    }

    /// svc's tracer and the ids and sampling decision of an INTERNAL span `name` starting now as a
    /// child of `parent`, taken as the tracer would take them, for a span whose SDK span is made
    /// later ([`build_span`]) or never; `None` while telemetry is off.
    pub fn start_span(parent: &opentelemetry::Context, name: &str) -> Option<(SdkTracer, SpanStart)> {
        let p = pipeline()?;
        let start = p.sampler.start(parent, name);
        Some((p.tracer.clone(), start))
    }

    /// The parent context of an invocation from its `traceparent` and `baggage` headers (either may
    /// be absent), and its baggage as a W3C `baggage` header written back (`None` without entries);
    /// the contexts of recent `baggage` headers are kept, so a repeated one is not parsed again.
    pub fn handler_parent(traceparent: Option<&str>, baggage: Option<&str>) -> (opentelemetry::Context, Option<Arc<str>>) {
        super::trace::handler_parent(traceparent, baggage)
    }

    /// Makes the SDK span of `builder` as a child of `parent` with the ids and sampling decision of
    /// `start` (its span processors run now, as for any span).
    pub fn build_span(tracer: &SdkTracer, start: &SpanStart, builder: opentelemetry::trace::SpanBuilder, parent: &opentelemetry::Context) -> SdkSpan {
        use opentelemetry::trace::Tracer as _;
        let _forced = super::handler_ids::Forced::new(start);
        tracer.build_with_context(builder, parent)
    }

    /// True while a pipeline runs.
    pub fn is_active() -> bool {
        pipeline().is_some()
    }

    /// The resource of the spans this process exports (`service.name` and the others), each value
    /// as text, in key order; `None` while telemetry is off. svc-sdk announces it so that the engine
    /// records handler spans with the same resource.
    pub fn resource() -> Option<Vec<(String, String)>> {
        pipeline().map(|p| p.resource.clone())
    }

    /// Spans this process handed to the telemetry socket so far; `None` while telemetry is off.
    pub fn spans_exported() -> Option<u64> {
        pipeline().map(|p| p.spans_exported.load(Ordering::Relaxed))
    }

    /// Marks a span that the engine records (svc addition, docs/reference/protocol.md "Handler
    /// spans recorded by the engine"): set on it before it ends, it keeps the exporter from
    /// sending it.
    pub fn handed_over_marker() -> KeyValue {
        KeyValue::new(HANDED_OVER, true)
    }

    pub(crate) fn logger_provider() -> Option<(SdkLoggerProvider, String)> {
        pipeline().map(|p| (p.logger_provider.clone(), p.service_name.clone()))
    }
}

/// The engine whose `/otel` socket gets the telemetry: the configured address, else the first of
/// `svc_url` (env `SVC_URL`, which may list several engines separated by commas, issue 19 §3), else
/// [`DEFAULT_ENGINE_URL`].
fn engine_url(configured: Option<String>, svc_url: Option<String>) -> String {
    configured
        .or_else(|| svc_url.and_then(|v| v.split(',').next().map(|s| s.trim().to_string())).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| DEFAULT_ENGINE_URL.to_string())
}

#[cfg(test)]
mod tests {
    use super::socket::otel_url;

    #[test]
    fn otel_path_keeps_the_query() {
        assert_eq!(otel_url("ws://h:1"), "ws://h:1/otel");
        assert_eq!(otel_url("ws://h:1/?token=a"), "ws://h:1/otel?token=a");
    }

    #[test]
    fn telemetry_goes_to_the_first_engine_of_an_svc_url_list() {
        use super::engine_url;
        assert_eq!(engine_url(None, Some(" ws://a:1 , ws://b:2".into())), "ws://a:1");
        assert_eq!(engine_url(Some("ws://c:3".into()), Some("ws://a:1,ws://b:2".into())), "ws://c:3");
        assert_eq!(engine_url(None, None), super::DEFAULT_ENGINE_URL);
    }
}
