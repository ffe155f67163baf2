/**
 * OTLP export of the observability worker (builtins.md §12.8): stored spans, logs and metrics are
 * also sent to an OpenTelemetry backend with the official `@opentelemetry/exporter-*` packages
 * (`http/protobuf`, `http/json`, `grpc`).
 *
 * - Records are converted to the SDK's export shapes (`ReadableSpan`, `ReadableLogRecord`,
 *   `ResourceMetrics`) and buffered per signal; a batch leaves at least once per second, sooner
 *   when {@link BATCH_SIZE} records wait.
 * - Ingest never waits: a full buffer drops its oldest records (counted in {@link OtlpExport.stats}).
 * - A batch that fails is sent again on the next tick and dropped after {@link MAX_ATTEMPTS}
 *   attempts; failures are logged at most once per minute.
 * - Stopping (export turned off or its settings changed) sends what the buffers hold, then nothing
 *   more leaves ({@link OtlpExport.shutdown}).
 * - The standard `OTEL_EXPORTER_OTLP_*` variables apply where the settings leave a choice open
 *   (see {@link resolveOtlpSettings}).
 * - This module (and the OpenTelemetry packages) loads only when an export is turned on.
 */
import { SpanKind as OtelSpanKind, SpanStatusCode, TraceFlags, type Attributes, type HrTime, type SpanContext } from '@opentelemetry/api'
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources'
import type { MetricSeries, LogRecord, SpanRecord, SpanKind } from '../../adapters/observability/records.ts'
import { SIGNALS, type OtlpSettings } from './otlp-settings.ts'
import { loadOptional } from '../../adapters/optional-package.ts'

export { resolveOtlpSettings, type OtlpSettings } from './otlp-settings.ts'

/** Records of one signal per batch, at most. */
export const BATCH_SIZE = 512
/** Records of one signal held while the backend is slow or away; the oldest go first. */
export const BUFFER_LIMIT = 16_384
/** Attempts of one batch before it is dropped (§12.8). */
export const MAX_ATTEMPTS = 3
const TICK_MS = 1000
const FAILURE_LOG_MS = 60_000

/** The subset of an `@opentelemetry` exporter used here. */
interface Exporter<T> {
  export(items: T, done: (result: ExportResult) => void): void
  shutdown(): Promise<void>
}

type Signal = (typeof SIGNALS)[number]

/** Counters of an export (tests, `engine::health::check`). */
export interface OtlpExportStats {
  /** Records accepted by the backend. */
  exported: Record<Signal, number>
  /** Records dropped: buffer full or batch failed {@link MAX_ATTEMPTS} times. */
  dropped: Record<Signal, number>
  /** Failed attempts. */
  failures: number
  lastError: string | null
}

/**
 * One signal's queue: records waiting, a batch being retried, one export at a time. Closed by
 * {@link Lane.drain}: from then on it accepts nothing and starts no export of its own.
 */
class Lane<R, T> {
  private waiting: R[] = []
  private retry: { items: R[]; attempts: number } | null = null
  /** The export under way (one batch, then the next while full batches wait), undefined when idle. */
  private sending: Promise<void> | undefined
  private closed = false
  /** Whether the last attempt failed. */
  lastFailed = false

  readonly signal: Signal
  private readonly exporter: Exporter<T>
  private readonly pack: (items: R[]) => T
  private readonly owner: OtlpExport

  constructor(signal: Signal, exporter: Exporter<T>, pack: (items: R[]) => T, owner: OtlpExport) {
    this.signal = signal
    this.exporter = exporter
    this.pack = pack
    this.owner = owner
  }

  push(record: R): void {
    if (this.closed) return
    if (this.waiting.length >= BUFFER_LIMIT) {
      // Full (the backend is slow or away): the oldest batch's worth goes, in one step.
      this.waiting.splice(0, BATCH_SIZE)
      this.owner.stats.dropped[this.signal] += BATCH_SIZE
    }
    this.waiting.push(record)
    if (this.waiting.length >= BATCH_SIZE) this.send()
  }

  /** Starts sending (the batch being retried, else the next {@link BATCH_SIZE} waiting records) unless an export is under way or the lane is closed. */
  send(): void {
    if (this.closed || this.sending !== undefined) return
    this.sending = this.run()
  }

  /**
   * Closes the lane and sends what it still holds: waits for the export under way, then sends the
   * batch being retried and the waiting records, each batch once, until one fails (what is left is
   * counted as dropped). Nothing leaves after it resolves.
   */
  async drain(): Promise<void> {
    this.closed = true
    await this.sending
    while ((this.retry !== null || this.waiting.length > 0) && (await this.attempt())) {}
    const left = (this.retry?.items.length ?? 0) + this.waiting.length
    this.owner.stats.dropped[this.signal] += left
    this.retry = null
    this.waiting = []
  }

  shutdown(): Promise<void> {
    return this.exporter.shutdown()
  }

  /** One batch, then the next while full batches wait and the backend accepts them. */
  private async run(): Promise<void> {
    try {
      while ((await this.attempt()) && !this.closed && this.waiting.length >= BATCH_SIZE) {}
    } finally {
      this.sending = undefined
    }
  }

  /** Exports one batch (the one being retried, else the next waiting); whether the backend accepted it. */
  private async attempt(): Promise<boolean> {
    const batch = this.retry ?? (this.waiting.length > 0 ? { items: this.waiting.splice(0, BATCH_SIZE), attempts: 0 } : null)
    if (batch === null) return false
    this.retry = null
    let result: ExportResult
    try {
      result = await new Promise<ExportResult>((resolve) => this.exporter.export(this.pack(batch.items), resolve))
    } catch (error) {
      result = { code: ExportResultCode.FAILED, error: error as Error }
    }
    const stats = this.owner.stats
    this.lastFailed = result.code !== ExportResultCode.SUCCESS
    if (result.code === ExportResultCode.SUCCESS) {
      stats.exported[this.signal] += batch.items.length
      return true
    }
    stats.failures++
    batch.attempts++
    this.owner.failed(this.signal, result.error)
    if (batch.attempts < MAX_ATTEMPTS) this.retry = batch
    else stats.dropped[this.signal] += batch.items.length
    return false
  }
}

/** How to create the exporters of one protocol (loaded on first use: most engines never export). */
async function loadExporters(settings: OtlpSettings): Promise<{ traces: Exporter<unknown>; logs: Exporter<unknown>; metrics: Exporter<unknown> }> {
  const base = settings.endpoint
  const headers = settings.headers
  if (settings.protocol === 'grpc') {
    const [{ OTLPTraceExporter }, { OTLPLogExporter }, { OTLPMetricExporter }, grpc] = await loadOptional(
      ['@opentelemetry/exporter-trace-otlp-grpc', '@opentelemetry/exporter-logs-otlp-grpc', '@opentelemetry/exporter-metrics-otlp-grpc', '@grpc/grpc-js'],
      'an OTLP export over grpc',
      () => Promise.all([import('@opentelemetry/exporter-trace-otlp-grpc'), import('@opentelemetry/exporter-logs-otlp-grpc'), import('@opentelemetry/exporter-metrics-otlp-grpc'), import('@grpc/grpc-js')]),
    )
    const metadata = (): InstanceType<typeof grpc.Metadata> => {
      const m = new grpc.Metadata()
      for (const [k, v] of Object.entries(headers)) m.set(k, v)
      return m
    }
    const secure = base.startsWith('https:')
    const config = () => ({ url: base, metadata: metadata(), ...(secure ? {} : { credentials: grpc.credentials.createInsecure() }) })
    return { traces: new OTLPTraceExporter(config()), logs: new OTLPLogExporter(config()), metrics: new OTLPMetricExporter(config()) }
  }
  const json = settings.protocol === 'http/json'
  const [{ OTLPTraceExporter }, { OTLPLogExporter }, { OTLPMetricExporter }] = json
    ? await loadOptional(['@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-logs-otlp-http', '@opentelemetry/exporter-metrics-otlp-http'], 'an OTLP export over http/json', () =>
        Promise.all([import('@opentelemetry/exporter-trace-otlp-http'), import('@opentelemetry/exporter-logs-otlp-http'), import('@opentelemetry/exporter-metrics-otlp-http')]),
      )
    : await loadOptional(['@opentelemetry/exporter-trace-otlp-proto', '@opentelemetry/exporter-logs-otlp-proto', '@opentelemetry/exporter-metrics-otlp-proto'], 'an OTLP export over http/protobuf', () =>
        Promise.all([import('@opentelemetry/exporter-trace-otlp-proto'), import('@opentelemetry/exporter-logs-otlp-proto'), import('@opentelemetry/exporter-metrics-otlp-proto')]),
      )
  const config = (path: string) => ({ url: `${base}/v1/${path}`, headers })
  return { traces: new OTLPTraceExporter(config('traces')), logs: new OTLPLogExporter(config('logs')), metrics: new OTLPMetricExporter(config('metrics')) }
}

/**
 * A running export (§12.8). Created with {@link OtlpExport.start}; fed by the observability
 * worker with finished spans, log records and metric series; stopped with {@link OtlpExport.shutdown},
 * after which nothing more leaves.
 * @example const exp = await OtlpExport.start(resolveOtlpSettings({ enabled: true }), (m) => log.warn(m)); exp.span(record)
 */
export class OtlpExport {
  readonly stats: OtlpExportStats = { exported: { traces: 0, metrics: 0, logs: 0 }, dropped: { traces: 0, metrics: 0, logs: 0 }, failures: 0, lastError: null }
  private readonly lanes: { traces?: Lane<SpanRecord, unknown>; logs?: Lane<LogRecord, unknown>; metrics?: Lane<MetricSeries, unknown> } = {}
  private timer: NodeJS.Timeout | undefined
  private lastFailureLog = -Infinity
  private readonly resources = new Map<string, Resource>()
  private stopped: Promise<void> | undefined

  readonly settings: OtlpSettings
  private readonly warn: (message: string) => void

  private constructor(settings: OtlpSettings, warn: (message: string) => void) {
    this.settings = settings
    this.warn = warn
  }

  /** Loads the exporters of `settings.protocol` and starts the once-per-second batch timer. */
  static async start(settings: OtlpSettings, warn: (message: string) => void): Promise<OtlpExport> {
    const out = new OtlpExport(settings, warn)
    const exporters = await loadExporters(settings)
    const signals = new Set(settings.signals)
    if (signals.has('traces')) out.lanes.traces = new Lane('traces', exporters.traces, (spans: SpanRecord[]) => spans.map((s) => out.readableSpan(s)), out)
    else void exporters.traces.shutdown()
    if (signals.has('logs')) out.lanes.logs = new Lane('logs', exporters.logs, (logs: LogRecord[]) => logs.map((l) => out.readableLog(l)), out)
    else void exporters.logs.shutdown()
    if (signals.has('metrics')) out.lanes.metrics = new Lane('metrics', exporters.metrics, (series: MetricSeries[]) => out.resourceMetrics(series), out)
    else void exporters.metrics.shutdown()
    out.timer = setInterval(() => out.tick(), TICK_MS)
    out.timer.unref()
    return out
  }

  /** Whether the last attempt of any signal failed. */
  get failingNow(): boolean {
    return Object.values(this.lanes).some((l) => l.lastFailed)
  }

  /** Whether metric series are wanted (the worker skips collecting them otherwise). */
  get wantsMetrics(): boolean {
    return this.lanes.metrics !== undefined
  }

  /** A finished span (unfinished ones are exported once they end). */
  span(span: SpanRecord): void {
    this.lanes.traces?.push(span)
  }

  log(record: LogRecord): void {
    this.lanes.logs?.push(record)
  }

  /** Metric series (cumulative sums, gauges, histograms) to send with the next batch. */
  metrics(series: MetricSeries[]): void {
    const lane = this.lanes.metrics
    if (lane !== undefined) for (const s of series) if (s.points.length > 0) lane.push(s)
  }

  /**
   * Stops the export: records given from now on are ignored; the exports under way finish, then
   * what the buffers hold is sent, each batch once (a failure ends it, the rest is counted as
   * dropped), then the exporters close. Resolves once nothing more can leave; the same promise on
   * every call. Bounded by the exporters' request timeout (10 s per batch).
   */
  shutdown(): Promise<void> {
    this.stopped ??= (async () => {
      clearInterval(this.timer)
      await Promise.all(Object.values(this.lanes).map((l) => l.drain().catch(() => {})))
      await Promise.all(Object.values(this.lanes).map((l) => l.shutdown().catch(() => {})))
    })()
    return this.stopped
  }

  /** A failed attempt: counted, logged at most once per minute (§12.8). */
  failed(signal: Signal, error: Error | undefined): void {
    const message = error?.message ?? 'unknown error'
    this.stats.lastError = message
    const now = Date.now()
    if (now - this.lastFailureLog < FAILURE_LOG_MS) return
    this.lastFailureLog = now
    this.warn(`svc-observability: OTLP export of ${signal} to ${this.settings.endpoint} (${this.settings.protocol}) failed: ${message}; a batch is dropped after ${MAX_ATTEMPTS} attempts (next report in a minute at most)`)
  }

  private tick(): void {
    for (const lane of Object.values(this.lanes)) lane.send()
  }

  // --- conversions to the SDK's export shapes -------------------------------------------------

  private resource(attributes: Record<string, string>, service: string): Resource {
    const key = `${service}\u0000${JSON.stringify(attributes)}`
    let resource = this.resources.get(key)
    if (resource === undefined) {
      if (this.resources.size >= 1024) this.resources.clear()
      resource = resourceFromAttributes({ ...attributes, 'service.name': attributes['service.name'] ?? service })
      this.resources.set(key, resource)
    }
    return resource
  }

  private readableSpan(s: SpanRecord): unknown {
    const context: SpanContext = { traceId: s.trace_id, spanId: s.span_id, traceFlags: TraceFlags.SAMPLED }
    const start = hrTime(s.start_time_unix_nano)
    const endNs = s.end_time_unix_nano ?? s.start_time_unix_nano
    return {
      name: s.name,
      kind: KINDS[s.kind] ?? OtelSpanKind.INTERNAL,
      spanContext: () => context,
      parentSpanContext: s.parent_span_id === null ? undefined : { traceId: s.trace_id, spanId: s.parent_span_id, traceFlags: TraceFlags.SAMPLED, isRemote: true },
      startTime: start,
      endTime: hrTime(endNs),
      duration: hrTime(endNs - s.start_time_unix_nano),
      ended: true,
      status: { code: s.status === 'ok' ? SpanStatusCode.OK : s.status === 'error' ? SpanStatusCode.ERROR : SpanStatusCode.UNSET, ...(s.status_message !== undefined ? { message: s.status_message } : {}) },
      attributes: s.attributes as Attributes,
      events: s.events.map((e) => ({ name: e.name, time: hrTime(e.timestamp_unix_nano), attributes: e.attributes as Attributes, droppedAttributesCount: e.dropped_attributes_count ?? 0 })),
      links: s.links.map((l) => ({ context: { traceId: l.trace_id, spanId: l.span_id, traceFlags: TraceFlags.SAMPLED }, attributes: l.attributes as Attributes, droppedAttributesCount: l.dropped_attributes_count ?? 0 })),
      resource: this.resource(s.resource, s.service_name),
      instrumentationScope: SCOPE,
      droppedAttributesCount: s.dropped_attributes_count ?? 0,
      droppedEventsCount: s.dropped_events_count ?? 0,
      droppedLinksCount: s.dropped_links_count ?? 0,
    }
  }

  private readableLog(l: LogRecord): unknown {
    const record: Record<string, unknown> = {
      hrTime: hrTime(l.timestamp_unix_nano),
      hrTimeObserved: hrTime(l.observed_timestamp_unix_nano),
      severityNumber: l.severity_number,
      severityText: l.severity_text,
      body: l.body,
      resource: this.resource(l.resource, l.service_name),
      instrumentationScope: l.instrumentation_scope_name !== undefined ? { name: l.instrumentation_scope_name, version: l.instrumentation_scope_version } : SCOPE,
      attributes: l.attributes as Attributes,
      droppedAttributesCount: l.dropped_attributes_count ?? 0,
    }
    if (l.trace_id !== null && l.span_id !== null) record.spanContext = { traceId: l.trace_id, spanId: l.span_id, traceFlags: TraceFlags.SAMPLED }
    return record
  }

  private resourceMetrics(series: MetricSeries[]): unknown {
    const metrics = series.map((m) => {
      const descriptor = { name: m.name, description: m.description ?? '', unit: m.unit ?? '', valueType: 1 /* DOUBLE */ }
      const points = m.points.map((p) => {
        const at = hrTime(p.time_unix_nano)
        const value =
          m.type === 'histogram'
            ? histogramOf(p.value)
            : typeof p.value === 'number'
              ? p.value
              : Number(p.value)
        return { startTime: at, endTime: at, attributes: p.attributes as Attributes, value }
      })
      // DataPointType: HISTOGRAM 0, GAUGE 2, SUM 3; AggregationTemporality CUMULATIVE 1.
      if (m.type === 'histogram') return { descriptor, aggregationTemporality: 1, dataPointType: 0, dataPoints: points }
      if (m.type === 'sum') return { descriptor, aggregationTemporality: 1, dataPointType: 3, dataPoints: points, isMonotonic: true }
      return { descriptor, aggregationTemporality: 1, dataPointType: 2, dataPoints: points }
    })
    return { resource: this.resource({}, 'svc'), scopeMetrics: [{ scope: SCOPE, metrics }] }
  }
}

const SCOPE = Object.freeze({ name: 'svc-observability' })
const KINDS: Record<SpanKind, OtelSpanKind> = {
  internal: OtelSpanKind.INTERNAL,
  server: OtelSpanKind.SERVER,
  client: OtelSpanKind.CLIENT,
  producer: OtelSpanKind.PRODUCER,
  consumer: OtelSpanKind.CONSUMER,
}

/** Unix nanoseconds (a JSON number, microsecond precision) as OpenTelemetry's `[seconds, nanos]`. */
function hrTime(unixNano: number): HrTime {
  const seconds = Math.floor(unixNano / 1e9)
  return [seconds, Math.max(0, Math.round(unixNano - seconds * 1e9))]
}

/** A stored histogram point `{count, sum, bucket_counts, explicit_bounds}` in the SDK's shape. */
function histogramOf(value: unknown): { buckets: { boundaries: number[]; counts: number[] }; sum: number; count: number } {
  const v = (value ?? {}) as { count?: unknown; sum?: unknown; bucket_counts?: unknown; explicit_bounds?: unknown }
  const counts = Array.isArray(v.bucket_counts) ? v.bucket_counts.map(Number) : []
  const boundaries = Array.isArray(v.explicit_bounds) ? v.explicit_bounds.map(Number) : []
  return { buckets: { boundaries, counts }, sum: Number(v.sum ?? 0), count: Number(v.count ?? 0) }
}
