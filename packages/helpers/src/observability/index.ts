/**
 * `svc-helpers/observability` (sdk.md §12, §15): telemetry set-up, span and propagation helpers,
 * redaction, the traced `fetch`, worker gauges and the `Logger`.
 *
 * @example
 * import { initOtel, withSpan, getLogger, redact } from 'svc-helpers/observability'
 * initOtel({ serviceName: 'billing' })
 * await withSpan('charge', {}, async () => getLogger().info('charging', redact({ card: '4242', password: 'x' })))
 */
export type { Meter } from '@opentelemetry/api'
export type { Span } from '@opentelemetry/api'
export { executeTracedRequest, patchGlobalFetch, unpatchGlobalFetch, type TracedRequestInit } from './fetch.ts'
export {
  registerWorkerGauges,
  stopWorkerGauges,
  WORKER_GAUGES,
  type WorkerGaugeOptions,
  WorkerMetricsCollector,
  type WorkerResourceSample,
} from './gauges.ts'
export { getLogger, Logger, type OtelLogEvent, SeverityNumber } from './logger.ts'
export {
  BaggageSpanProcessor,
  currentOtelConfig,
  flushOtel,
  initOtel,
  isOtelInitialized,
  type OtelConfig,
  type OtelSocketStats,
  otelSocketStats,
  type ReconnectionConfig,
  type ResolvedOtelConfig,
  resolveOtelConfig,
  shutdownOtel,
} from './otel.ts'
export {
  CIRCULAR,
  isSensitiveKey,
  REDACTED_PLACEHOLDER,
  redact,
  redactAndTruncate,
  type RedactedPayload,
  redactedJson,
  resolveMaxBytesFromEnv,
  safeStringify,
  tracePayloadsDisabled,
  TRUNCATION_SUFFIX,
  UNSERIALIZABLE,
} from './redact.ts'
export { encodeTelemetryFrame, MAX_QUEUED_FRAMES, otelUrlOf, type TelemetrySocketStats } from './socket.ts'
export {
  currentSpanId,
  currentSpanIsRecording,
  currentTraceId,
  extractBaggage,
  extractContext,
  extractTraceparent,
  getAllBaggage,
  getBaggageEntry,
  injectBaggage,
  injectTraceparent,
  markSpanError,
  recordSpanEvent,
  removeBaggageEntry,
  setBaggageEntry,
  setCurrentSpanAttribute,
  setCurrentSpanError,
  setOkUnlessError,
  withSpan,
  type WithSpanOptions,
} from './trace.ts'
