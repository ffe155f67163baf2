/**
 * Telemetry initialisation (sdk.md §12.1): a tracer, meter and logger provider whose exporters
 * send OTLP/JSON batches over the engine's `/otel` socket (protocol.md §10.2), W3C trace-context and
 * baggage propagators, a context manager whose store also carries svc-sdk's handler scope (`scope.ts`), and a span processor that copies
 * baggage onto span attributes. Environment variables override defaults; explicit fields override both.
 *
 * Spans are written as OTLP/JSON text when they end and sent in batches ({@link SpanBatch}); the
 * handler spans of svc-sdk skip the SDK's span classes altogether ({@link startHandlerSpan}), and
 * its worker gauges the metrics SDK (`startWorkerGauges`). The SDK's providers are registered as
 * lazy ones (`lazy-sdk.ts`): `@opentelemetry/sdk-*` load when a span of another tracer, a log
 * record or a meter instrument first needs them, not at import nor at `initOtel`.
 *
 * @example
 * initOtel({ serviceName: 'billing', engineWsUrl: 'ws://127.0.0.1:49134' })
 * // … spans, logs and gauges flow to the engine …
 * await shutdownOtel()
 */
import { randomUUID } from 'node:crypto'
import { type Context, context, logs, metrics, type Meter, propagation, type TextMapPropagator, trace } from '@opentelemetry/api'
import type { ExportResultCode } from '@opentelemetry/core'
import type { LoggerProvider, LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs'
import type { MeterProvider, PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics'
import type { Resource } from '@opentelemetry/resources'
import type { Span, SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { Connector } from 'svc-protocol/transport'
import { connectWebSocket } from 'svc-protocol/transport/ws'
import { patchGlobalFetch, unpatchGlobalFetch } from './fetch.ts'
import { workerGaugeMetricsJson } from './gauges.ts'
import { pooledIdGenerator, setHandlerSpanSink } from './handler-span.ts'
import { LazyLoggerProvider, LazyMeterProvider, LazyTracerProvider, otelCore, otlpTransformer, sdkLogs, sdkMetrics, sdkResources, sdkTrace } from './lazy-sdk.ts'
import { resourceJson, scopeJson } from './otlp-json.ts'
import { ScopeContextManager, setScopeManagerActive } from './scope.ts'
import { type FramePrefix, otelUrlOf, type SocketBackoff, TelemetrySocket, type TelemetrySocketStats } from './socket.ts'
import { BatchingSpanProcessor, SpanBatch, type SpanBatchStats } from './span-batch.ts'
import { TRACER_NAME } from './trace.ts'

/** Reconnection backoff (sdk.md §2). */
export type ReconnectionConfig = SocketBackoff

/** The configuration table of sdk.md §12.1; every field optional. */
export interface OtelConfig {
  /** Default true; env `OTEL_ENABLED` = false/0/no/off disables. */
  enabled?: boolean
  /** Default the first address of env `SVC_URL` (a comma-separated list of engines, issue 19 §3), else `ws://127.0.0.1:49134`. */
  engineWsUrl?: string
  /** Default true: patches global `fetch`. */
  fetchInstrumentationEnabled?: boolean
  /** OpenTelemetry instrumentations, each enabled with the tracer provider (objects with `setTracerProvider`/`enable`). */
  instrumentations?: unknown[]
  /** Log records per batch; default 1 (env `OTEL_LOGS_BATCH_SIZE`). */
  logsBatchSize?: number
  /** ms; default 100 (env `OTEL_LOGS_FLUSH_INTERVAL_MS`). */
  logsFlushIntervalMs?: number
  /** Default true (env `OTEL_METRICS_ENABLED`). */
  metricsEnabled?: boolean
  /** ms; default 60000. */
  metricsExportIntervalMs?: number
  reconnectionConfig?: Partial<ReconnectionConfig>
  /** Default env `SERVICE_INSTANCE_ID`, else a random UUID. */
  serviceInstanceId?: string
  /** Default env `OTEL_SERVICE_NAME`, else `svc-node`. */
  serviceName?: string
  /** Default env `SERVICE_NAMESPACE`. */
  serviceNamespace?: string
  /** Default env `SERVICE_VERSION`, else `unknown`. */
  serviceVersion?: string
  /** ms; default 100 (env `OTEL_SPANS_FLUSH_INTERVAL_MS`). */
  spansFlushIntervalMs?: number
  /** Extra upgrade headers of `/otel` (sdk.md §2 `headers`). */
  headers?: Record<string, string>
  /** Opens the socket; default the Node `ws` transport (a test seam). */
  connector?: Connector
}

/** {@link OtelConfig} after defaults. */
export interface ResolvedOtelConfig {
  enabled: boolean
  engineWsUrl: string
  fetchInstrumentationEnabled: boolean
  instrumentations: unknown[]
  logsBatchSize: number
  logsFlushIntervalMs: number
  metricsEnabled: boolean
  metricsExportIntervalMs: number
  reconnectionConfig: ReconnectionConfig
  serviceInstanceId: string
  serviceName: string
  serviceNamespace: string | undefined
  serviceVersion: string
  spansFlushIntervalMs: number
}

type Env = Record<string, string | undefined>

function envString(env: Env, name: string): string | undefined {
  const v = env[name]?.trim()
  return v === undefined || v === '' ? undefined : v
}
function envBool(env: Env, name: string): boolean | undefined {
  const v = envString(env, name)?.toLowerCase()
  if (v === undefined) return undefined
  return !['false', '0', 'no', 'off'].includes(v)
}
function envNumber(env: Env, name: string): number | undefined {
  const v = envString(env, name)
  const n = v === undefined ? Number.NaN : Number(v)
  // An unparsable or non-positive value counts as unset.
  return Number.isFinite(n) && n > 0 ? n : undefined
}

/** Whether telemetry is on (sdk.md §12.1): `enabled`, else env `OTEL_ENABLED` (false/0/no/off is off), else true. Pure. */
export function otelEnabled(enabled: boolean | undefined, env: Env = process.env): boolean {
  return enabled ?? envBool(env, 'OTEL_ENABLED') ?? true
}

/** Applies env and defaults to `config` (sdk.md §12.1). Pure. */
export function resolveOtelConfig(config: OtelConfig = {}, env: Env = process.env): ResolvedOtelConfig {
  return {
    enabled: otelEnabled(config.enabled, env),
    engineWsUrl: config.engineWsUrl ?? (envString(env, 'SVC_URL')?.split(',')[0]!.trim() || 'ws://127.0.0.1:49134'),
    fetchInstrumentationEnabled: config.fetchInstrumentationEnabled ?? true,
    instrumentations: config.instrumentations ?? [],
    logsBatchSize: Math.max(1, Math.floor(config.logsBatchSize ?? envNumber(env, 'OTEL_LOGS_BATCH_SIZE') ?? 1)),
    logsFlushIntervalMs: config.logsFlushIntervalMs ?? envNumber(env, 'OTEL_LOGS_FLUSH_INTERVAL_MS') ?? 100,
    metricsEnabled: config.metricsEnabled ?? envBool(env, 'OTEL_METRICS_ENABLED') ?? true,
    metricsExportIntervalMs: config.metricsExportIntervalMs ?? 60000,
    reconnectionConfig: {
      initialDelayMs: 1000, maxDelayMs: 30000, backoffMultiplier: 2, jitterFactor: 0.3, maxRetries: -1,
      ...Object.fromEntries(Object.entries(config.reconnectionConfig ?? {}).filter(([, v]) => v !== undefined)),
    },
    serviceInstanceId: config.serviceInstanceId ?? envString(env, 'SERVICE_INSTANCE_ID') ?? randomUUID(),
    serviceName: config.serviceName ?? envString(env, 'OTEL_SERVICE_NAME') ?? 'svc-node',
    serviceNamespace: config.serviceNamespace ?? envString(env, 'SERVICE_NAMESPACE'),
    serviceVersion: config.serviceVersion ?? envString(env, 'SERVICE_VERSION') ?? 'unknown',
    spansFlushIntervalMs: config.spansFlushIntervalMs ?? envNumber(env, 'OTEL_SPANS_FLUSH_INTERVAL_MS') ?? 100,
  }
}

/** Sends serialized batches as frames; a serializer failure drops the batch (counted by the socket caller). */
/**
 * The global propagator `initOtel` sets: W3C trace context and baggage (`CompositePropagator` of
 * `@opentelemetry/core`), made at its first use, so a worker connects and registers before
 * `@opentelemetry/core` loads (issue 20 "Engine start").
 */
function w3cPropagators(): TextMapPropagator {
  let composite: TextMapPropagator | undefined
  const real = (): TextMapPropagator => {
    const core = otelCore()
    return (composite ??= new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] }))
  }
  return {
    inject: (ctx, carrier, setter) => real().inject(ctx, carrier, setter),
    extract: (ctx, carrier, getter) => real().extract(ctx, carrier, getter),
    fields: () => real().fields(),
  }
}

function sendBatch(socket: TelemetrySocket, prefix: FramePrefix, bytes: Uint8Array | undefined): boolean {
  if (bytes === undefined) return false
  socket.send(prefix, bytes)
  return true
}

class SocketLogExporter implements LogRecordExporter {
  readonly socket: TelemetrySocket
  constructor(socket: TelemetrySocket) {
    this.socket = socket
  }
  export(records: ReadableLogRecord[], done: (r: { code: ExportResultCode }) => void): void {
    const ok = sendBatch(this.socket, 'LOGS', otlpTransformer().JsonLogsSerializer.serializeRequest(records))
    done({ code: ok ? otelCore().ExportResultCode.SUCCESS : otelCore().ExportResultCode.FAILED })
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

class SocketMetricExporter implements PushMetricExporter {
  readonly socket: TelemetrySocket
  constructor(socket: TelemetrySocket) {
    this.socket = socket
  }
  export(data: ResourceMetrics, done: (r: { code: ExportResultCode }) => void): void {
    const ok = sendBatch(this.socket, 'MTRC', otlpTransformer().JsonMetricsSerializer.serializeRequest(data))
    done({ code: ok ? otelCore().ExportResultCode.SUCCESS : otelCore().ExportResultCode.FAILED })
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** Copies every baggage entry of the parent context onto the span as an attribute (sdk.md §12.1). */
export class BaggageSpanProcessor implements SpanProcessor {
  onStart(span: Span, parentContext: Context): void {
    for (const [key, entry] of propagation.getBaggage(parentContext)?.getAllEntries() ?? []) span.setAttribute(key, entry.value)
  }
  onEnd(): void {}
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

interface OtelState {
  config: ResolvedOtelConfig
  socket: TelemetrySocket
  spans: SpanBatch
  /** The SDK providers, each built the first time something needs it (`lazy-sdk.ts`). */
  tracerProvider: LazyTracerProvider<TracerProvider>
  meterProvider: LazyMeterProvider<MeterProvider> | undefined
  loggerProvider: LazyLoggerProvider<LoggerProvider>
  contextManager: ScopeContextManager
  /** OTLP/JSON `Resource` of every frame. */
  resourceJson: string
  /** The same resource's attributes (frozen). */
  resource: Readonly<Record<string, string>>
  /** Exports the worker gauges of `startWorkerGauges` every `metricsExportIntervalMs` (metrics on). */
  gaugeTimer: ReturnType<typeof setInterval> | undefined
}

/** OTLP/JSON scope of the worker gauges: svc's meter ({@link TRACER_NAME}). */
const GAUGE_SCOPE = scopeJson(TRACER_NAME)

/** Sends one `MTRC` frame of the gauges `startWorkerGauges` started, sampled now (none: nothing sent). */
function exportWorkerGauges(s: OtelState): void {
  const metricsJson = workerGaugeMetricsJson()
  if (metricsJson === '') return
  s.socket.send('MTRC', '{"resourceMetrics":[{"resource":' + s.resourceJson + ',"scopeMetrics":[{"scope":' + GAUGE_SCOPE + ',"metrics":[' + metricsJson + ']}]}]}')
}

let state: OtelState | undefined

/** True once {@link initOtel} has set up telemetry (and before {@link shutdownOtel}). */
export function isOtelInitialized(): boolean {
  return state !== undefined
}

/** Counters of the telemetry socket, or undefined when telemetry is off. */
export interface OtelSocketStats extends TelemetrySocketStats {
  /** Spans sent and spans dropped because the batch was full ({@link SpanBatch}). */
  spans: SpanBatchStats
}

/** Counters of the telemetry socket and the span batch, or undefined when telemetry is off. */
export function otelSocketStats(): OtelSocketStats | undefined {
  return state === undefined ? undefined : { ...state.socket.stats, spans: state.spans.stats }
}

/** The resolved configuration in force, or undefined when telemetry is off. */
export function currentOtelConfig(): ResolvedOtelConfig | undefined {
  return state?.config
}

/**
 * Sets up telemetry (sdk.md §12.1) and registers the global providers, propagator and context
 * manager. Idempotent: a second call while initialised does nothing and returns false. Returns
 * false too when disabled (`enabled: false` or `OTEL_ENABLED=false`).
 * @throws TypeError when `engineWsUrl` is not a URL.
 */
export function initOtel(config: OtelConfig = {}): boolean {
  if (state !== undefined) return false
  const resolved = resolveOtelConfig(config)
  if (!resolved.enabled) return false
  const socket = new TelemetrySocket({
    url: otelUrlOf(resolved.engineWsUrl),
    connector: config.connector ?? connectWebSocket,
    backoff: resolved.reconnectionConfig,
    ...(config.headers !== undefined ? { headers: config.headers } : {}),
  })
  const resourceAttributes = {
    'service.name': resolved.serviceName,
    'service.version': resolved.serviceVersion,
    'service.instance.id': resolved.serviceInstanceId,
    ...(resolved.serviceNamespace !== undefined ? { 'service.namespace': resolved.serviceNamespace } : {}),
  }
  // The SDK's resource and providers are built when first needed: a worker whose only telemetry
  // is handler spans, worker gauges and no log records never loads the OpenTelemetry SDK.
  let resource: Resource | undefined
  const sdkResource = (): Resource => (resource ??= sdkResources().resourceFromAttributes(resourceAttributes))
  const spanJsonResource = resourceJson(resourceAttributes)
  const spans = new SpanBatch({ resourceJson: spanJsonResource, flushIntervalMs: resolved.spansFlushIntervalMs, framePrefix: 'OTLP', send: (frame) => socket.sendFrame(frame) })
  // The context manager shares svc-sdk's handler scope store (scope.ts): one `run` per handler.
  const contextManager = new ScopeContextManager().enable()
  setScopeManagerActive(context.setGlobalContextManager(contextManager))
  propagation.setGlobalPropagator(w3cPropagators())
  const tracerProvider = new LazyTracerProvider(
    () =>
      new (sdkTrace().TracerProvider)({
        resource: sdkResource(),
        idGenerator: pooledIdGenerator,
        // Bounded: at most MAX_QUEUED_SPANS wait in the batch, later ones are dropped and counted.
        spanProcessors: [new BaggageSpanProcessor(), new BatchingSpanProcessor(spans)],
      }),
  )
  trace.setGlobalTracerProvider(tracerProvider)
  const loggerProvider = new LazyLoggerProvider(() => {
    const { BatchLogRecordProcessor, LoggerProvider } = sdkLogs()
    return new LoggerProvider({
      resource: sdkResource(),
      processors: [
        new BatchLogRecordProcessor({
          exporter: new SocketLogExporter(socket),
          scheduledDelayMillis: resolved.logsFlushIntervalMs,
          maxExportBatchSize: resolved.logsBatchSize,
          maxQueueSize: Math.max(2048, resolved.logsBatchSize),
        }),
      ],
    })
  })
  logs.setGlobalLoggerProvider(loggerProvider)
  let meterProvider: LazyMeterProvider<MeterProvider> | undefined
  let gaugeTimer: ReturnType<typeof setInterval> | undefined
  if (resolved.metricsEnabled) {
    meterProvider = new LazyMeterProvider(() => {
      const { MeterProvider, PeriodicExportingMetricReader } = sdkMetrics()
      return new MeterProvider({
        resource: sdkResource(),
        readers: [new PeriodicExportingMetricReader({ exporter: new SocketMetricExporter(socket), exportIntervalMillis: resolved.metricsExportIntervalMs })],
      })
    })
    metrics.setGlobalMeterProvider(meterProvider)
    gaugeTimer = setInterval(() => {
      if (state !== undefined) exportWorkerGauges(state)
    }, resolved.metricsExportIntervalMs)
    gaugeTimer.unref()
  }
  for (const instrumentation of resolved.instrumentations) {
    const i = instrumentation as { setTracerProvider?: (p: unknown) => void; setMeterProvider?: (p: unknown) => void; enable?: () => void }
    // An instrumentation gets the SDK provider itself: it may keep and inspect what it is given.
    i.setTracerProvider?.(tracerProvider.provider)
    if (meterProvider !== undefined) i.setMeterProvider?.(meterProvider.provider)
    i.enable?.()
  }
  if (resolved.fetchInstrumentationEnabled) patchGlobalFetch()
  setHandlerSpanSink(spans)
  state = { config: resolved, socket, spans, tracerProvider, meterProvider, loggerProvider, contextManager, resourceJson: spanJsonResource, resource: Object.freeze({ ...resourceAttributes }), gaugeTimer }
  return true
}

/**
 * The resource attributes of every span this process exports (`service.name`, `service.version`,
 * `service.instance.id`, `service.namespace` when set), or undefined when telemetry is off. svc-sdk
 * announces them to an engine that records its handler spans (protocol.md §3.2 `handler_spans`).
 */
export function otelResource(): Readonly<Record<string, string>> | undefined {
  return state?.resource
}

/** Exports every buffered span, log record and metric now. Resolves when handed to the socket. */
export async function flushOtel(): Promise<void> {
  const s = state
  if (s === undefined) return
  s.spans.flush()
  if (s.config.metricsEnabled) exportWorkerGauges(s)
  await Promise.all([s.tracerProvider.forceFlush(), s.loggerProvider.forceFlush(), s.meterProvider?.forceFlush()])
}

/**
 * Flushes, then shuts the providers down, closes the socket, restores `fetch` and unregisters the
 * globals. Telemetry can be initialised again afterwards.
 */
export async function shutdownOtel(): Promise<void> {
  const s = state
  if (s === undefined) return
  state = undefined
  clearInterval(s.gaugeTimer)
  try {
    s.spans.flush()
    if (s.config.metricsEnabled) exportWorkerGauges(s)
    await Promise.allSettled([s.tracerProvider.forceFlush(), s.loggerProvider.forceFlush(), s.meterProvider?.forceFlush()])
    await Promise.allSettled([s.tracerProvider.shutdown(), s.loggerProvider.shutdown(), s.meterProvider?.shutdown()])
  } finally {
    setHandlerSpanSink(undefined)
    s.spans.close()
    s.socket.close()
    unpatchGlobalFetch()
    trace.disable()
    logs.disable()
    metrics.disable()
    propagation.disable()
    s.contextManager.disable()
    setScopeManagerActive(false)
    context.disable()
  }
}

/** svc's meter from the global provider (a no-op meter until {@link initOtel}). */
export function getMeter(): Meter {
  return metrics.getMeter(TRACER_NAME)
}
