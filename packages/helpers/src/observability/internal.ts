/** `svc-helpers/observability/internal` (sdk.md §15): tracer and meter for svc's own packages, and svc-sdk's handler spans. */
export { startWorkerGauges, workerGaugeMetricsJson } from './gauges.ts'
export { HandlerSpan, knownBaggageHeader, startHandlerSpan, type StartedHandlerSpan } from './handler-span.ts'
export { getMeter, otelEnabled, otelResource } from './otel.ts'
export { noSensitiveKeys, redactAndTruncateJson } from './redact.ts'
export { getTracer, TRACER_NAME } from './trace.ts'
export { canRunInContext, currentHandler, runInHandler, ScopeContextManager } from './scope.ts'
