/**
 * The observability worker `svc-observability` (builtins.md §12, protocol.md §10 and §11.4).
 *
 * - Attaches a sink to the engine's {@link TelemetryHub}: engine spans (svc-http's
 *   `<METHOD> <route>`, `execute <function_id>` of in-process functions) and `/otel` frames land
 *   in the store of the `store` setting (§12.3).
 * - Pushes an {@link Interceptor} onto the invocation pipeline: `execute <function_id>` spans for
 *   functions the engine serves itself (§10.1: worker-routed calls get no engine span, their
 *   `traceparent` is forwarded unchanged) and per-function invocation metrics.
 * - Registers `engine::log::*`, `engine::logs::*`, `engine::traces::*`, `engine::metrics::list`,
 *   `engine::baggage::*`, `engine::health::check` and the trigger types `log` and `trace` (§12.6).
 * - Serves `engine::metrics::list` from the store, its per-function counters and the metric
 *   sources of the hub (`TelemetryHub.addMetricSource`: queue figures, the engine process metrics
 *   of ./process-metrics.ts, which it adds itself while enabled).
 * - Applies the size limits (./limits.ts: attribute values, counts, log bodies, whole records) to
 *   every span, log record and metric point before it is stored, delivered or exported, and
 *   counts what they truncated (`svc.observability.truncated`); the size the limiter measures is
 *   what the store's window counts against `memory_max_span_bytes` / `memory_max_log_bytes`
 *   (`svc.observability.window_bytes`).
 * - Sweeps the store every 60 s (retention, size cap).
 */
import { join } from 'node:path'
import { Errors, type ErrorBody, type JsonInput } from 'svc-protocol'
import { nowUnixNano, type LogRecord, type MetricSeries, type SpanRecord } from '../../adapters/observability/records.ts'
import { SqliteStore } from '../../adapters/observability/sqlite.ts'
import { DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_SPAN_BYTES, MemoryStore, MIN_WINDOW_BYTES, NoStore, type StoreLimits, type TelemetryStore } from '../../adapters/observability/store.ts'
import { ENGINE_VERSION } from '../../engine/engine.ts'
import type { FunctionEntry } from '../../engine/functions.ts'
import type { Interceptor, Invocation } from '../../engine/pipeline.ts'
import { UNSAMPLED_TRACEPARENT, type ActiveSpan, type TelemetryHub, type TelemetrySink, type TelemetrySource } from '../../engine/telemetry.ts'
import type { BindingInfo, BuiltinContext, BuiltinWorker, InvocationContext, LocalTriggerProvider } from '../../engine/types.ts'
import { createSettingsApplier, type SettingsApplier } from '../shared/settings.ts'
import { OtlpExport, resolveOtlpSettings, type OtlpSettings } from './export.ts'
import { logsOf, metricsOf, severityText, spansOf, spreadLogData, stripAnsi } from './otlp.ts'
import { ProcessMetrics } from './process-metrics.ts'
import { DEFAULT_TELEMETRY_LIMITS, MIN_LENGTH_LIMIT, MIN_RECORD_SIZE_LIMIT, TelemetryLimiter, type TelemetryLimits } from './limits.ts'
import { LogDelivery } from './deliveries.ts'
import { LOG_TRIGGER_FORMATS, observabilityFunctionFormats, TRACE_TRIGGER_FORMATS } from './formats.ts'
import { groupBy, listLogs, listTraces, traceTree } from './query.ts'

export const OBSERVABILITY_WORKER_NAME = 'svc-observability'

/**
 * The §12.1 settings this release acts on, defaults applied (`exporter` folded into `store`), and
 * the size limits of stored telemetry ({@link TelemetryLimits}).
 */
export interface ObservabilitySettings extends TelemetryLimits {
  enabled: boolean
  service_name: string
  store: 'builtin' | 'memory' | 'none'
  retention_seconds: number
  max_disk_bytes: number
  memory_max_spans: number
  memory_max_logs: number
  /** Bytes of spans the in-memory window holds at most (estimated, see `TelemetryStore.windowBytes`). */
  memory_max_span_bytes: number
  /** Bytes of log records the in-memory window holds at most. */
  memory_max_log_bytes: number
  sampling_ratio: number
  logs_enabled: boolean
  /** The engine prints worker log records on its console (§12.1). */
  logs_console_output: boolean
  /** Threshold of the engine's own log. */
  log_level: 'trace' | 'debug' | 'info' | 'warn' | 'error'
  /** §12.8, with `OTEL_EXPORTER_OTLP_*` filling what the block leaves out. */
  otlp: OtlpSettings
}

/**
 * Validates a settings value (§12.1) and applies the defaults.
 * @throws Error starting with the offending key (`store must be builtin, memory or none`).
 */
export function parseObservabilitySettings(value: unknown): ObservabilitySettings {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  const bool = (k: string, d: boolean): boolean => {
    if (v[k] === undefined) return d
    if (typeof v[k] !== 'boolean') throw new Error(`${k} must be a boolean`)
    return v[k]
  }
  const int = (k: string, d: number, min: number): number => {
    if (v[k] === undefined) return d
    const n = v[k]
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min) throw new Error(`${k} must be an integer ≥ ${min}`)
    return n
  }
  if (v.exporter !== undefined && v.exporter !== 'memory' && v.exporter !== 'otlp' && v.exporter !== 'both') throw new Error('exporter must be memory, otlp or both')
  const store = v.store ?? (v.exporter === 'otlp' ? 'none' : 'builtin')
  if (store !== 'builtin' && store !== 'memory' && store !== 'none') throw new Error('store must be builtin, memory or none')
  const ratio = v.sampling_ratio ?? 1
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1)) throw new Error('sampling_ratio must be a number from 0 to 1')
  const service = v.service_name ?? 'svc'
  if (typeof service !== 'string' || service === '') throw new Error('service_name must be a non-empty string')
  return {
    enabled: bool('enabled', true),
    service_name: service,
    store,
    retention_seconds: int('retention_seconds', 604800, 60),
    max_disk_bytes: int('max_disk_bytes', 1073741824, 1),
    memory_max_spans: int('memory_max_spans', 100000, 1000),
    memory_max_logs: int('memory_max_logs', 20000, 1000),
    memory_max_span_bytes: int('memory_max_span_bytes', DEFAULT_MAX_SPAN_BYTES, MIN_WINDOW_BYTES),
    memory_max_log_bytes: int('memory_max_log_bytes', DEFAULT_MAX_LOG_BYTES, MIN_WINDOW_BYTES),
    sampling_ratio: ratio,
    logs_enabled: bool('logs_enabled', true),
    logs_console_output: bool('logs_console_output', true),
    log_level: levelOf(v.log_level),
    otlp: otlpOf(v),
    attribute_value_length_limit: int('attribute_value_length_limit', DEFAULT_TELEMETRY_LIMITS.attribute_value_length_limit, MIN_LENGTH_LIMIT),
    attribute_count_limit: int('attribute_count_limit', DEFAULT_TELEMETRY_LIMITS.attribute_count_limit, 0),
    span_event_count_limit: int('span_event_count_limit', DEFAULT_TELEMETRY_LIMITS.span_event_count_limit, 0),
    span_link_count_limit: int('span_link_count_limit', DEFAULT_TELEMETRY_LIMITS.span_link_count_limit, 0),
    log_body_length_limit: int('log_body_length_limit', DEFAULT_TELEMETRY_LIMITS.log_body_length_limit, MIN_LENGTH_LIMIT),
    record_size_limit: int('record_size_limit', DEFAULT_TELEMETRY_LIMITS.record_size_limit, MIN_RECORD_SIZE_LIMIT),
  }
}

function levelOf(value: unknown): ObservabilitySettings['log_level'] {
  if (value === undefined) return 'info'
  if (typeof value === 'string' && Object.hasOwn(LOG_LEVELS, value)) return value as ObservabilitySettings['log_level']
  throw new Error('log_level must be trace, debug, info, warn or error')
}

/** The `otlp` block; the compatibility key `exporter: otlp | both` turns export on (§12.1). */
function otlpOf(v: Record<string, unknown>): OtlpSettings {
  const block = v.otlp
  if (v.exporter !== 'otlp' && v.exporter !== 'both') return resolveOtlpSettings(block)
  const base = typeof block === 'object' && block !== null && !Array.isArray(block) ? block : {}
  return resolveOtlpSettings({ enabled: true, ...base })
}

/** Ids served by this worker; the interceptor records no spans for them (no feedback loop). */
const OWN_FUNCTIONS = new Set<string>()
const LOG_LEVELS = { trace: 1, debug: 5, info: 9, warn: 13, error: 17 } as const
/** `log` trigger `level` → minimum severity number (§12.6). */
const LEVEL_MIN: Record<string, number> = { all: 0, debug: 5, info: 9, warn: 13, error: 17 }
/** Unsampled context for trigger deliveries: their spans never fire `trace` again (§12.6). */
const UNSAMPLED = UNSAMPLED_TRACEPARENT
/** The trace id of {@link UNSAMPLED}: a log call carrying it comes from a trigger delivery. */
const DELIVERY_TRACE = '00000000000000000000000000000001'
const SWEEP_MS = 60_000
const TRACE_BATCH_MS = 300
/** Trace ids one `trace` batch holds; beyond that the oldest leave the batch (counted). */
export const MAX_BATCH_TRACES = 10_000
/** Duration histogram bounds of `svc.function.duration`, ms. */
const BOUNDS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]

interface FunctionStats {
  count: number
  errors: number
  sum: number
  buckets: number[]
}

export class ObservabilityWorker implements BuiltinWorker, TelemetrySink {
  readonly name = OBSERVABILITY_WORKER_NAME
  private context: BuiltinContext | null = null
  private hub: TelemetryHub | undefined
  private applier: SettingsApplier<ObservabilitySettings> | null = null
  private settings: ObservabilitySettings = parseObservabilitySettings({})
  /** The size limits of stored telemetry, applied at ingest (./limits.ts). */
  private readonly limiter = new TelemetryLimiter(this.settings)
  private removeLimitMetrics: (() => void) | undefined
  private removeWindowMetrics: (() => void) | undefined
  private store: TelemetryStore = new NoStore()
  private storeKey = ''
  private removeInterceptor: (() => void) | undefined
  private readonly processMetrics = new ProcessMetrics()
  private removeProcessMetrics: (() => void) | undefined
  private sweepTimer: NodeJS.Timeout | undefined
  private readonly stats = new Map<string, FunctionStats>()
  private readonly logBindings = new Map<string, LogDelivery>()
  private readonly traceBindings = new Map<string, { binding: BindingInfo; service?: string; status?: string }>()
  private pendingTraces = new Set<string>()
  /** Trace ids left out of `trace` batches (more than {@link MAX_BATCH_TRACES} within one). */
  private droppedTraceIds = 0
  private traceTimer: NodeJS.Timeout | undefined
  /** The running OTLP export (§12.8); undefined while `otlp.enabled` is false. */
  private export: OtlpExport | undefined
  /** Exports turned off or replaced that are still sending what they held (health: `stopping`). */
  private readonly stopping = new Set<OtlpExport>()
  private exportKey = ''
  private metricsTimer: NodeJS.Timeout | undefined
  /** Invocation count at the last metrics export: unchanged stats are not sent again. */
  private exportedCount = -1

  get serviceName(): string {
    return this.settings.service_name
  }

  get samplingRatio(): number {
    return this.settings.sampling_ratio
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.hub = context.telemetry
    this.applier = createSettingsApplier<ObservabilitySettings>({
      worker: this.name,
      log: context.log,
      parse: parseObservabilitySettings,
      apply: (next) => this.apply(next),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    await this.applier.apply(settings)
    this.registerFunctions(context)
    this.registerTriggerTypes(context)
    this.removeInterceptor = this.hub?.addInterceptor(this.interceptor)
    this.removeProcessMetrics = this.hub?.addMetricSource((now) => this.processMetrics.read(now))
    this.removeLimitMetrics = this.hub?.addMetricSource((now) => this.limiter.series(now))
    this.removeWindowMetrics = this.hub?.addMetricSource((now) => this.windowSeries(now))
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS)
    this.sweepTimer.unref()
  }

  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${this.name}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    if (this.hub?.sink === this) this.hub.sink = undefined
    this.removeInterceptor?.()
    this.removeProcessMetrics?.()
    this.removeLimitMetrics?.()
    this.removeWindowMetrics?.()
    this.processMetrics.stop()
    clearInterval(this.sweepTimer)
    clearTimeout(this.traceTimer)
    for (const delivery of this.logBindings.values()) delivery.stop()
    this.logBindings.clear()
    clearInterval(this.metricsTimer)
    const exporting = this.export
    this.export = undefined
    this.exportKey = ''
    await Promise.all([exporting?.shutdown(), ...[...this.stopping].map((e) => e.shutdown())])
    this.store.close()
    this.store = new NoStore()
    this.storeKey = ''
  }

  /** The store in use (tests, the benchmark). */
  get currentStore(): TelemetryStore {
    return this.store
  }

  private async apply(next: ObservabilitySettings): Promise<void> {
    await this.applyExport(next)
    const limits: StoreLimits = {
      retentionSeconds: next.retention_seconds,
      maxSpans: next.memory_max_spans,
      maxLogs: next.memory_max_logs,
      maxSpanBytes: next.memory_max_span_bytes,
      maxLogBytes: next.memory_max_log_bytes,
      maxDiskBytes: next.max_disk_bytes,
    }
    const key = next.enabled ? next.store : 'none'
    if (key !== this.storeKey) {
      const store = key === 'builtin' ? new SqliteStore(join(this.context!.dataDir, 'observability.db'), limits) : key === 'memory' ? new MemoryStore(limits) : new NoStore()
      this.store.close()
      this.store = store
      this.storeKey = key
      if (store instanceof SqliteStore && store.movedAside !== undefined) {
        this.context!.log.warn(`${this.name}: observability.db was damaged; moved to ${store.movedAside}, starting with an empty store`, { moved_to: store.movedAside })
      }
    } else if (this.store instanceof MemoryStore) {
      this.store.setLimits(limits)
    }
    this.settings = next
    this.limiter.limits = next
    if (this.hub) {
      this.hub.sink = next.enabled ? this : undefined
      this.hub.setLogLevel(next.log_level)
    }
    // The event-loop delay monitor samples only while something may read it.
    if (next.enabled) this.processMetrics.start()
    else this.processMetrics.stop()
  }

  /** Starts, replaces or stops the OTLP export when `otlp` (or `enabled`) changed. */
  private async applyExport(next: ObservabilitySettings): Promise<void> {
    const wanted = next.enabled && next.otlp.enabled
    const key = wanted ? JSON.stringify(next.otlp) : ''
    if (key === this.exportKey) return
    const started = wanted ? await OtlpExport.start(next.otlp, (message) => this.context?.log.warn(message)) : undefined
    const previous = this.export
    this.export = started
    this.exportKey = key
    clearInterval(this.metricsTimer)
    this.metricsTimer = undefined
    if (started?.wantsMetrics) {
      this.exportedCount = -1
      this.metricsTimer = setInterval(() => this.exportFunctionMetrics(), 1000)
      this.metricsTimer.unref()
    }
    if (previous === undefined) return
    // What the previous export holds leaves first; health shows it `stopping` until nothing more
    // can leave. The settings wait 2 s at most, so that a dead endpoint cannot hold them up.
    this.stopping.add(previous)
    const stopped = previous.shutdown().finally(() => this.stopping.delete(previous))
    await Promise.race([stopped, new Promise((r) => setTimeout(r, 2000).unref())])
  }

  /**
   * The `otlp_export` component of `engine::health::check`: where export goes and how it fares.
   * `disabled` only once nothing more can leave: while an export turned off still sends what it
   * held, `stopping`.
   */
  private exportHealth(): Record<string, unknown> {
    const exporting = this.export
    const draining = this.stopping.size > 0 ? { detail: 'the previous export is sending the records it held' } : {}
    if (exporting === undefined) return this.stopping.size > 0 ? { status: 'stopping', ...draining } : { status: 'disabled' }
    const { settings, stats } = exporting
    return {
      status: stats.lastError !== null && stats.failures > 0 && exporting.failingNow ? 'degraded' : 'healthy',
      ...draining,
      endpoint: settings.endpoint,
      protocol: settings.protocol,
      signals: settings.signals,
      exported: stats.exported,
      dropped: stats.dropped,
      failures: stats.failures,
      last_error: stats.lastError,
    }
  }

  /**
   * Sends the metric sources' series (queues, the engine process) each second, and the
   * per-function series when invocations happened since the last time.
   */
  private exportFunctionMetrics(): void {
    const exporting = this.export
    if (exporting === undefined) return
    const now = nowUnixNano()
    void this.hub?.collectMetrics(now).then((series) => exporting.metrics(series))
    let total = 0
    for (const s of this.stats.values()) total += s.count
    if (total === this.exportedCount) return
    this.exportedCount = total
    exporting.metrics(this.functionSeries(now))
  }

  /**
   * `svc.observability.window_bytes` (gauge, bytes): what the in-memory window holds, by
   * `svc.telemetry.signal` (`spans`, `logs`), as the store counts it against `memory_max_span_bytes`
   * / `memory_max_log_bytes`. None with `store: none`.
   */
  private windowSeries(now: number): MetricSeries[] {
    if (this.store.kind === 'none') return []
    const bytes = this.store.windowBytes()
    return [
      {
        name: 'svc.observability.window_bytes',
        type: 'gauge',
        unit: 'By',
        description: 'estimated bytes of spans and log records held by the in-memory window',
        points: [
          { time_unix_nano: now, value: bytes.spans, attributes: { 'svc.telemetry.signal': 'spans' } },
          { time_unix_nano: now, value: bytes.logs, attributes: { 'svc.telemetry.signal': 'logs' } },
        ],
      },
    ]
  }

  private sweep(): void {
    try {
      this.store.sweep(Date.now())
    } catch (error) {
      this.context?.log.warn(`${this.name}: store sweep failed: ${String(error)}`)
    }
  }

  // --- ingest -------------------------------------------------------------------------------

  /** TelemetrySink: an engine span, started or finished (or a span of a frame), limited (./limits.ts) before it is stored. */
  span(span: SpanRecord, update = false): void {
    const bytes = this.limiter.span(span)
    if (update) this.store.updateSpan(span, bytes)
    else this.store.putSpan(span, bytes)
    if (this.export !== undefined && span.end_time_unix_nano !== null) this.export.span(span)
    if (this.traceBindings.size > 0) this.traceGained(span.trace_id)
  }

  /** TelemetrySink: an `/otel` frame or one sent on a worker's main connection (§10.2). */
  frame(prefix: 'OTLP' | 'MTRC' | 'LOGS', json: string, source: TelemetrySource): void {
    let request: unknown
    try {
      // JSON.parse, not jsonParse: OTLP/JSON carries every user-chosen name as a value
      // (`{"key": …, "value": …}`), never as an object key, so V8's escaped-key bug cannot rename
      // one; the escaped-key scan cost a quarter of the parse on frames with payload events.
      request = JSON.parse(json)
    } catch {
      return
    }
    const service = source.worker_name ?? 'unknown'
    if (prefix === 'OTLP') for (const s of spansOf(request, service)) this.span(s)
    else if (prefix === 'LOGS') {
      if (this.settings.logs_enabled)
        for (const l of logsOf(request, service, nowUnixNano())) {
          this.log(l)
          this.print(l)
        }
    } else
      for (const { series, point } of metricsOf(request)) {
        this.limiter.point(series, point)
        this.store.putPoint(series, point)
        this.export?.metrics([{ ...series, points: [point] }])
      }
  }

  /** TelemetrySink: a worker process's output line (§12.2, cli.md §5.6). */
  output(worker: string, stream: 'stdout' | 'stderr', text: string): void {
    if (!this.settings.logs_enabled) return
    this.log(recordOf(worker, stream === 'stderr' ? 13 : 9, text, { 'log.source': stream }, { 'service.name': worker }))
  }

  /** TelemetrySink: a record of the engine's own log (service `service_name`, §12.1 `log_level` applied). */
  engineLog(level: 'debug' | 'info' | 'warn' | 'error', message: string, data?: Record<string, unknown>): void {
    if (!this.settings.logs_enabled) return
    const attributes: Record<string, unknown> = { 'log.source': 'engine' }
    if (data !== undefined) spreadLogData(attributes, data)
    const service = this.settings.service_name
    this.log(recordOf(service, LOG_LEVELS[level], message, attributes, { 'service.name': service }))
  }

  /** Prints a worker's record on the engine's console when `logs_console_output` is on (§12.1). */
  private print(record: LogRecord): void {
    const console = this.hub?.console
    if (console === undefined || !this.settings.logs_console_output) return
    const n = record.severity_number
    const level = n >= 17 ? 'error' : n >= 13 ? 'warn' : n >= 9 || n === 0 ? 'info' : 'debug'
    const data = Object.keys(record.attributes).length > 0 ? ` ${JSON.stringify(record.attributes)}` : ''
    console(record.service_name, level, `${record.body}${data}`)
  }

  /**
   * Limits a record (./limits.ts), stores it and delivers it to the `log` triggers (unless `quiet`:
   * records made while a delivery runs).
   */
  private log(record: LogRecord, quiet = false): void {
    const bytes = this.limiter.log(record)
    this.store.putLog(record, bytes)
    this.export?.log(record)
    if (quiet || this.logBindings.size === 0) return
    for (const delivery of this.logBindings.values()) if (record.severity_number >= delivery.min) delivery.push(record)
  }

  private traceGained(traceId: string): void {
    const pending = this.pendingTraces
    if (pending.size >= MAX_BATCH_TRACES && !pending.has(traceId)) {
      // A span flood: the batch keeps the newest traces (a set iterates oldest first).
      pending.delete(pending.values().next().value!)
      this.droppedTraceIds++
    }
    pending.add(traceId)
    if (this.traceTimer !== undefined) return
    this.traceTimer = setTimeout(() => {
      this.traceTimer = undefined
      const ids = [...this.pendingTraces]
      this.pendingTraces = new Set()
      // Traces of internal functions (the engine's own housekeeping) are not delivered, as their
      // log records are not (§12.6) and engine::traces::list hides them by default.
      const roots = new Map(ids.map((id) => [id, rootOf(this.store.trace(id))]))
      for (const [id, root] of roots) if (root !== undefined && root.attributes['svc.function.kind'] === 'internal') roots.delete(id)
      for (const { binding, service, status } of this.traceBindings.values()) {
        const matched = [...roots.keys()].filter((id) => {
          if (service === undefined && status === undefined) return true
          const root = roots.get(id)
          return root !== undefined && (service === undefined || root.service_name.toLowerCase() === service) && (status === undefined || root.status === status)
        })
        if (matched.length === 0) continue
        this.context!.worker.invoke({ function_id: binding.function_id, namespace: binding.namespace, data: { trace_ids: matched }, action: { type: 'void' }, traceparent: UNSAMPLED }).catch(() => {})
      }
    }, TRACE_BATCH_MS)
    this.traceTimer.unref()
  }

  // --- interceptor ----------------------------------------------------------------------------

  private readonly interceptor: Interceptor = {
    name: 'observability',
    intercept: (invocation: Invocation, target: FunctionEntry): void => {
      const id = target.id
      if (OWN_FUNCTIONS.has(id)) return
      const replica = target.latest
      let span: ActiveSpan | undefined
      if (replica.peer.kind === 'builtin' && replica.ownSpan !== true && this.hub !== undefined) {
        const attributes: Record<string, unknown> = { 'svc.function.id': id, 'svc.worker.name': replica.peer.name }
        if (id.startsWith('engine::') || (replica.metadata as { internal?: unknown } | undefined)?.internal === true) attributes['svc.function.kind'] = 'internal'
        span = this.hub.startSpan({ name: `execute ${id}`, kind: 'internal', parent: invocation.traceparent, attributes })
        if (span !== undefined) invocation.traceparent = span.traceparent
      }
      let stats = this.stats.get(id)
      if (stats === undefined) this.stats.set(id, (stats = { count: 0, errors: 0, sum: 0, buckets: new Array<number>(BOUNDS.length + 1).fill(0) }))
      const s = stats
      const started = performance.now()
      const reply = invocation.reply
      const done = (error: ErrorBody | undefined): void => {
        const ms = performance.now() - started
        s.count++
        s.sum += ms
        let b = 0
        while (b < BOUNDS.length && ms > BOUNDS[b]!) b++
        s.buckets[b]!++
        if (error !== undefined) {
          s.errors++
          span?.end('error', error.message, { 'svc.error.code': error.code })
        } else span?.end('ok')
      }
      invocation.reply = {
        result(value: JsonInput | undefined) {
          done(undefined)
          reply.result(value)
        },
        error(error: ErrorBody) {
          done(error)
          reply.error(error)
        },
      }
    },
  }

  // --- functions ------------------------------------------------------------------------------

  private registerFunctions(context: BuiltinContext): void {
    const worker = context.worker
    const fn = (id: string, description: string, handler: (data: unknown, ctx: InvocationContext) => unknown): void => {
      OWN_FUNCTIONS.add(id)
      worker.registerFunction(id, handler, { description, ...observabilityFunctionFormats(id) })
    }
    for (const [level, severity] of Object.entries(LOG_LEVELS)) {
      fn(`engine::log::${level}`, `Records a log line at severity ${severity} ({message, data?, trace_id?, span_id?, service_name?})`, (data, ctx) => this.logCall(level, severity, data, ctx))
    }
    const stored = (): TelemetryStore => {
      if (this.store.kind === 'none') throw Errors.storageDisabled()
      return this.store
    }
    fn('engine::logs::list', 'Stored log records, newest first (filters: time, trace, service, severity, search)', (data) => listLogs(stored(), data))
    fn('engine::logs::clear', 'Removes every stored log record', () => ({ cleared: stored().clearLogs() }))
    fn('engine::traces::list', 'Traces by their root span (filter, sort, limit)', (data) => listTraces(stored(), data))
    fn('engine::traces::tree', 'The spans of one trace as a forest', (data) => traceTree(stored(), data))
    fn('engine::traces::group_by', 'Spans grouped by the value of one attribute', (data) => groupBy(stored(), data))
    fn('engine::traces::clear', 'Removes every stored span', () => ({ cleared: stored().clearSpans() }))
    fn('engine::metrics::list', 'Metrics: per-function invocations, errors, durations, worker metrics, queues and the engine process', (data) => this.metrics(stored(), data))
    fn('engine::baggage::get', "One entry of the invocation's W3C baggage", (data, ctx) => {
      const key = (data as { key?: unknown } | null)?.key
      if (typeof key !== 'string' || key === '') throw Errors.invalidInput('engine::baggage::get', 'key is required')
      return { value: parseBaggage(ctx.baggage).get(key) ?? null }
    })
    fn('engine::baggage::set', "The invocation's baggage with one entry set (the header value)", (data, ctx) => {
      const { key, value } = (data ?? {}) as { key?: unknown; value?: unknown }
      if (typeof key !== 'string' || key === '' || typeof value !== 'string') throw Errors.invalidInput('engine::baggage::set', 'key and value must be strings')
      const entries = parseBaggage(ctx.baggage)
      entries.set(key, value)
      return { baggage: [...entries].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join(',') }
    })
    fn('engine::baggage::get_all', "Every entry of the invocation's baggage", (_data, ctx) => ({ entries: Object.fromEntries(parseBaggage(ctx.baggage)) }))
    fn('engine::health::check', 'Health of the engine and its observability store', () => {
      const counts = this.store.counts()
      const bytes = this.store.windowBytes()
      const dropped = this.store instanceof SqliteStore ? this.store.droppedRows : 0
      let undelivered = 0
      for (const delivery of this.logBindings.values()) undelivered += delivery.dropped
      let limited = 0
      for (const n of Object.values(this.limiter.totals())) limited += n
      const sources = this.hub?.healthComponents() ?? {}
      const degraded = Object.values(sources).some((c) => c.status === 'degraded')
      return {
        status: degraded ? 'degraded' : 'healthy',
        version: ENGINE_VERSION,
        timestamp: new Date().toISOString(),
        components: {
          engine: { status: 'healthy' },
          ...sources,
          observability: { status: this.settings.enabled ? 'healthy' : 'disabled', detail: `store ${this.store.kind}: ${counts.spans} spans (${mib(bytes.spans)} MiB), ${counts.logs} logs (${mib(bytes.logs)} MiB)${dropped > 0 ? `, ${dropped} rows not written to observability.db (writer behind)` : ''}${undelivered > 0 ? `, ${undelivered} log records not delivered to log triggers (handlers behind)` : ''}${this.droppedTraceIds > 0 ? `, ${this.droppedTraceIds} trace ids left out of trace trigger batches` : ''}${limited > 0 ? `, ${limited} values truncated or items dropped by the size limits (svc.observability.truncated)` : ''}` },
          otlp_export: this.exportHealth(),
        },
      }
    })
  }

  /** `engine::log::<level>` (§12.2): `{message, data?, trace_id?, span_id?, service_name?}`, no result. */
  private logCall(level: string, severity: number, data: unknown, ctx: InvocationContext): void {
    const d = (data ?? {}) as Record<string, unknown>
    if (typeof d !== 'object' || typeof d.message !== 'string') throw Errors.invalidInput(`engine::log::${level}`, 'message must be a string')
    if (!this.settings.enabled || !this.settings.logs_enabled) return
    const attributes: Record<string, unknown> = {}
    spreadLogData(attributes, d.data)
    // Output of a process someone else launched (the compose daemon's containers), as for the
    // engine's own workers (§12.2).
    if (d.source === 'stdout' || d.source === 'stderr') attributes['log.source'] = d.source
    // The caller's trace context when the record names none.
    let tp = ctx.traceparent !== undefined && ctx.traceparent.length === 55 ? ctx.traceparent : undefined
    // A handler of a `log`/`trace` delivery logging: stored, never delivered again (§12.6), no loop.
    const quiet = tp !== undefined && tp.slice(3, 35) === DELIVERY_TRACE
    if (quiet) tp = undefined
    const traceId = typeof d.trace_id === 'string' ? d.trace_id.toLowerCase() : tp !== undefined ? tp.slice(3, 35) : null
    const spanId = typeof d.span_id === 'string' ? d.span_id.toLowerCase() : tp !== undefined && typeof d.trace_id !== 'string' ? tp.slice(36, 52) : null
    const service = typeof d.service_name === 'string' && d.service_name !== '' ? d.service_name : (ctx.caller?.name ?? this.settings.service_name)
    const record = recordOf(service, severity, d.message, attributes, {}, traceId, spanId)
    this.log(record, quiet)
    this.print(record)
  }

  /** The per-function series (§12 metrics): invocations and errors (cumulative sums), durations (histogram, ms). */
  private functionSeries(now: number): MetricSeries[] {
    const fnSeries: MetricSeries[] = [
      { name: 'svc.function.invocations', type: 'sum', unit: '{invocation}', description: 'invocations per function', points: [] },
      { name: 'svc.function.errors', type: 'sum', unit: '{invocation}', description: 'failed invocations per function', points: [] },
      { name: 'svc.function.duration', type: 'histogram', unit: 'ms', description: 'invocation duration per function', points: [] },
    ]
    for (const [id, s] of this.stats) {
      const attributes = { 'svc.function.id': id }
      fnSeries[0]!.points.push({ time_unix_nano: now, value: s.count, attributes })
      fnSeries[1]!.points.push({ time_unix_nano: now, value: s.errors, attributes })
      fnSeries[2]!.points.push({ time_unix_nano: now, value: { count: s.count, sum: s.sum, bucket_counts: [...s.buckets], explicit_bounds: BOUNDS }, attributes })
    }
    return fnSeries
  }

  /** `engine::metrics::list` (§12.5): the stored series, the per-function ones and those of the hub's metric sources. */
  private async metrics(store: TelemetryStore, data: unknown): Promise<{ metrics: MetricSeries[] }> {
    const d = (data ?? {}) as { metric_name?: unknown; worker?: unknown; start_time?: unknown; end_time?: unknown }
    const now = nowUnixNano()
    const fnSeries = this.functionSeries(now)
    const startNs = typeof d.start_time === 'number' ? d.start_time * 1e6 : undefined
    const endNs = typeof d.end_time === 'number' ? d.end_time * 1e6 : undefined
    const sourced = (await this.hub?.collectMetrics(now)) ?? []
    const all = [...store.metrics(), ...fnSeries, ...sourced]
      .filter((m) => typeof d.metric_name !== 'string' || m.name === d.metric_name)
      .map((m) => ({
        ...m,
        points: m.points.filter(
          (p) => (typeof d.worker !== 'string' || p.attributes['worker.name'] === d.worker) && (startNs === undefined || p.time_unix_nano >= startNs) && (endNs === undefined || p.time_unix_nano <= endNs),
        ),
      }))
      .filter((m) => m.points.length > 0 || typeof d.metric_name === 'string')
    return { metrics: all }
  }

  // --- trigger types --------------------------------------------------------------------------

  private registerTriggerTypes(context: BuiltinContext): void {
    const logProvider: LocalTriggerProvider = {
      registerTrigger: (binding) => {
        const level = String((binding.config as { level?: unknown } | null)?.level ?? 'all').toLowerCase()
        const min = LEVEL_MIN[level]
        if (min === undefined) throw Object.assign(new Error('level must be all, debug, info, warn or error'), { code: 'INVALID_TRIGGER_CONFIG' })
        // A known id is a replacement (protocol.md §5.5): what the old binding had waiting is dropped.
        this.logBindings.get(binding.id)?.stop()
        this.logBindings.set(binding.id, new LogDelivery(binding, min, context.worker, context.log, UNSAMPLED))
      },
      unregisterTrigger: (binding) => {
        this.logBindings.get(binding.id)?.stop()
        this.logBindings.delete(binding.id)
      },
    }
    context.worker.registerTriggerType({ id: 'log', description: 'Receives every log record at or above its level (fire-and-forget)', ...LOG_TRIGGER_FORMATS }, logProvider)
    const traceProvider: LocalTriggerProvider = {
      registerTrigger: (binding) => {
        const c = (binding.config ?? {}) as { service_name?: unknown; status?: unknown }
        const entry: { binding: BindingInfo; service?: string; status?: string } = { binding }
        if (typeof c.service_name === 'string') entry.service = c.service_name.toLowerCase()
        if (typeof c.status === 'string') entry.status = c.status.toLowerCase()
        this.traceBindings.set(binding.id, entry)
      },
      unregisterTrigger: (binding) => void this.traceBindings.delete(binding.id),
    }
    context.worker.registerTriggerType({ id: 'trace', description: 'Receives {trace_ids} of traces that gained spans, batched over 300 ms', ...TRACE_TRIGGER_FORMATS }, traceProvider)
  }
}

/** A log record observed now (§12.4): ANSI removed from `body`, severity text from the number. */
function recordOf(service: string, severity: number, body: string, attributes: Record<string, unknown>, resource: Record<string, string>, traceId: string | null = null, spanId: string | null = null): LogRecord {
  const now = nowUnixNano()
  return {
    timestamp_unix_nano: now,
    observed_timestamp_unix_nano: now,
    severity_number: severity,
    severity_text: severityText(severity),
    body: stripAnsi(body),
    attributes,
    resource,
    service_name: service,
    trace_id: traceId,
    span_id: spanId,
  }
}

/** Bytes as MiB with one decimal. */
function mib(bytes: number): string {
  return (bytes / 1048576).toFixed(1)
}

function rootOf(spans: SpanRecord[]): SpanRecord | undefined {
  const ids = new Set(spans.map((s) => s.span_id))
  let root: SpanRecord | undefined
  for (const s of spans) if ((s.parent_span_id === null || !ids.has(s.parent_span_id)) && (root === undefined || s.start_time_unix_nano < root.start_time_unix_nano)) root = s
  return root
}

/** W3C baggage (`k=v;props,…`, percent-encoded) as a map; malformed members are skipped. */
export function parseBaggage(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  if (header === undefined) return out
  for (const member of header.split(',')) {
    const [pair] = member.split(';')
    const eq = pair!.indexOf('=')
    if (eq <= 0) continue
    try {
      out.set(decodeURIComponent(pair!.slice(0, eq).trim()), decodeURIComponent(pair!.slice(eq + 1).trim()))
    } catch {
      // skip a member that is not valid percent-encoding
    }
  }
  return out
}
