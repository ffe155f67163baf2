//! Handler spans made late with the ids and sampling decision of their start (svc addition,
//! docs/reference/protocol.md "Handler spans recorded by the engine"): svc-sdk makes a handler's
//! OpenTelemetry SDK span only when something writes to it, since the engine records the span of a
//! handler that left it untouched. Its context (trace id, span id, sampled flag, trace state) is
//! fixed at the start, when the handler's children parent on it; [`HandlerIds`] and
//! [`HandlerSampler`] give the span made later exactly that context, as Python's `HandlerIds` does.

use std::cell::RefCell;
use std::sync::Arc;

use opentelemetry::trace::{Link, SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SamplingDecision, SamplingResult, ShouldSample};

/// A span's ids and its sampler's decision, taken at its start, for the SDK span made later.
#[derive(Clone, Debug)]
pub struct SpanStart {
    /// The span's context: its children and the result's `traceparent` name it from the start.
    pub context: SpanContext,
    result: SamplingResult,
}

impl SpanStart {
    /// Whether the sampler chose to record the span (`RecordOnly` or `RecordAndSample`).
    pub fn is_recording(&self) -> bool {
        !matches!(self.result.decision, SamplingDecision::Drop)
    }
}

thread_local! {
    /// The start of the span this thread is making now, while [`Forced`] lives.
    static FORCED: RefCell<Option<SpanStart>> = const { RefCell::new(None) };
}

/// Names the start of the next span made on this thread until dropped.
pub(super) struct Forced;

impl Forced {
    pub(super) fn new(start: &SpanStart) -> Self {
        FORCED.with(|f| *f.borrow_mut() = Some(start.clone()));
        Forced
    }
}

impl Drop for Forced {
    fn drop(&mut self) {
        FORCED.with(|f| *f.borrow_mut() = None);
    }
}

fn forced<T>(read: impl FnOnce(&SpanStart) -> T) -> Option<T> {
    FORCED.with(|f| f.borrow().as_ref().map(read))
}

/// Random ids, except for a span made while a [`SpanStart`] is forced on this thread: its ids.
#[derive(Debug, Default)]
pub(super) struct HandlerIds {
    random: RandomIdGenerator,
}

impl IdGenerator for HandlerIds {
    fn new_trace_id(&self) -> TraceId {
        forced(|s| s.context.trace_id()).unwrap_or_else(|| self.random.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        forced(|s| s.context.span_id()).unwrap_or_else(|| self.random.new_span_id())
    }
}

/// The process's sampler (the SDK's default, `OTEL_TRACES_SAMPLER`), except for a span made while a
/// [`SpanStart`] is forced on this thread: the decision taken at its start.
#[derive(Clone, Debug)]
pub(super) struct HandlerSampler {
    pub(super) inner: Arc<dyn ShouldSample>,
}

impl ShouldSample for HandlerSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        forced(|s| s.result.clone()).unwrap_or_else(|| self.inner.should_sample(parent_context, trace_id, name, span_kind, attributes, links))
    }
}

impl HandlerSampler {
    /// The ids and decision of an INTERNAL span `name` that would start now under `parent`, as the
    /// SDK's tracer takes them (a valid parent's trace id, else a new one; a new span id).
    pub(super) fn start(&self, parent: &Context, name: &str) -> SpanStart {
        let random = RandomIdGenerator::default();
        let span = parent.span();
        let parent_sc = span.span_context();
        let trace_id = if parent_sc.is_valid() { parent_sc.trace_id() } else { random.new_trace_id() };
        let span_id = random.new_span_id();
        let result = self.inner.should_sample(Some(parent), trace_id, name, &SpanKind::Internal, &[], &[]);
        let flags = match result.decision {
            SamplingDecision::Drop => TraceFlags::default(),
            SamplingDecision::RecordOnly => parent_sc.trace_flags().with_sampled(false),
            SamplingDecision::RecordAndSample => parent_sc.trace_flags().with_sampled(true),
        };
        let context = SpanContext::new(trace_id, span_id, flags, false, result.trace_state.clone());
        SpanStart { context, result }
    }
}
