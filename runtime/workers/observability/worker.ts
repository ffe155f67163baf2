/**
 * The observability worker `svc-observability` (builtins.md §12, protocol.md §10 and §11.4).
 *
 * - Attaches a sink to the engine's {@link TelemetryHub}: engine spans (svc-http's
 *   `<METHOD> <route>`, `execute <function_id>` of in-process functions) and `/otel` frames land
 *   in the store of the `store` setting (§12.3).
 * - Pushes an interceptor onto the invocation pipeline: `execute <function_id>` spans for
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
 * - Sweeps the store every 60 s (retention, size cap), on the worker's clock (`systemClock` unless
 *   one is given: tests move a manual one instead of waiting minutes for retention).
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts, ./functions.ts, ./triggers.ts
 * (`log`, `trace`), and this file: the lifecycle (start, settings, the store and the OTLP export
 * they choose, stop) and the {@link TelemetrySink} the engine's hub writes to. The interceptor's
 * spans and per-function metrics are ./invocations.ts.
 */
import { join } from 'node:path'
import { Errors } from 'svc-protocol'
import type { HealthComponent } from 'svc-protocol'
import { nowUnixNano, type LogRecord, type MetricSeries, type SpanRecord } from '../../adapters/observability/records.ts'
import { SqliteStore } from '../../adapters/observability/sqlite.ts'
import { MemoryStore, NoStore, type StoreLimits, type TelemetryStore } from '../../adapters/observability/store.ts'
import type { TelemetryHub, TelemetrySink, TelemetrySource } from '../../engine/telemetry.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { systemClock, type CancelTimer, type Clock } from '../shared/clock.ts'
import { createSettingsApplier, type SettingsApplier } from '../shared/settings.ts'
import { ConsoleLines } from './console-lines.ts'
import type { OtlpExport } from './export.ts'
import { OWN_FUNCTIONS, recordOf, registerObservabilityFunctions } from './functions.ts'
import { InvocationMetrics } from './invocations.ts'
import { TelemetryLimiter } from './limits.ts'
import { logsOf, metricsOf, spansOf, spreadLogData } from './otlp.ts'
import { ProcessMetrics } from './process-metrics.ts'
import { LOG_LEVELS, parseObservabilitySettings, type ObservabilitySettings } from './settings.ts'
import { LOG_TRIGGER_TYPE, LogTriggers, TRACE_TRIGGER_TYPE, TraceTriggers } from './triggers.ts'
import type { HandlerSpanText } from '../../engine/handler-spans.ts'

export const OBSERVABILITY_WORKER_NAME = 'svc-observability'

const SWEEP_MS = 60_000

export interface ObservabilityWorkerOptions {
  /**
   * Timer of the store sweep (every 60 s) and the time retention counts back from: Unix ms is the
   * clock's reading from the worker's creation on. Default: the system clock and `Date.now()`.
   */
  clock?: Clock
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
  private readonly clock: Clock
  /** Unix ms now, on {@link clock}. */
  private readonly wallNow: () => number
  private cancelSweep: CancelTimer | undefined
  /** `execute` spans and per-function metrics of the invocations (./invocations.ts). */
  private readonly invocations = new InvocationMetrics(OWN_FUNCTIONS)
  /** Pairs captured output lines with svc-sdk's console records (issue 21). */
  private readonly consoleLines = new ConsoleLines()
  private logTriggers: LogTriggers | undefined
  private traceTriggers: TraceTriggers | undefined
  /** The running OTLP export (§12.8); undefined while `otlp.enabled` is false. */
  private export: OtlpExport | undefined
  /** Exports turned off or replaced that are still sending what they held (health: `stopping`). */
  private readonly stopping = new Set<OtlpExport>()
  private exportKey = ''
  private metricsTimer: NodeJS.Timeout | undefined
  /** Invocation count at the last metrics export: unchanged stats are not sent again. */
  private exportedCount = -1

  constructor(options: ObservabilityWorkerOptions = {}) {
    const clock = options.clock
    this.clock = clock ?? systemClock
    if (clock) {
      const epoch = Date.now() - clock.now()
      this.wallNow = () => epoch + clock.now()
    } else {
      this.wallNow = Date.now
    }
  }

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
    const logTriggers = (this.logTriggers = new LogTriggers(context.worker, context.log))
    const traceTriggers = (this.traceTriggers = new TraceTriggers(context.worker, () => this.store))
    this.invocations.hub = this.hub
    registerObservabilityFunctions(context.worker, {
      store: () => this.store,
      settings: () => this.settings,
      hub: this.hub,
      invocations: this.invocations,
      limiter: this.limiter,
      logTriggers,
      traceTriggers,
      exportHealth: () => this.exportHealth(),
      log: (record, quiet) => this.log(record, quiet),
      print: (record) => this.print(record),
    })
    context.worker.registerTriggerType(LOG_TRIGGER_TYPE, logTriggers)
    context.worker.registerTriggerType(TRACE_TRIGGER_TYPE, traceTriggers)
    this.removeInterceptor = this.hub?.addInterceptor(this.invocations.interceptor)
    this.removeProcessMetrics = this.hub?.addMetricSource((now) => this.processMetrics.read(now))
    this.removeLimitMetrics = this.hub?.addMetricSource((now) => this.limiter.series(now))
    this.removeWindowMetrics = this.hub?.addMetricSource((now) => this.windowSeries(now))
    this.scheduleSweep()
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
    this.cancelSweep?.()
    this.cancelSweep = undefined
    this.traceTriggers?.stop()
    this.logTriggers?.stop()
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
    const started = wanted ? await (await import('./export.ts')).OtlpExport.start(next.otlp, (message) => this.context?.log.warn(message)) : undefined
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
  private exportHealth(): HealthComponent {
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
    const total = this.invocations.total
    if (total === this.exportedCount) return
    this.exportedCount = total
    exporting.metrics(this.invocations.series(now))
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

  /** The next sweep, {@link SWEEP_MS} from now on the worker's clock; each sweep sets the next. */
  private scheduleSweep(): void {
    this.cancelSweep = this.clock.setTimeout(() => {
      this.sweep()
      this.scheduleSweep()
    }, SWEEP_MS)
  }

  private sweep(): void {
    try {
      this.store.sweep(this.wallNow())
    } catch (error) {
      this.context?.log.warn(`${this.name}: store sweep failed: ${String(error)}`)
    }
  }

  // --- ingest -------------------------------------------------------------------------------

  /** TelemetrySink: an engine span, started or finished (or a span of a frame), limited (./limits.ts) before it is stored. */
  span(span: SpanRecord, update = false, sealed = false): void {
    const bytes = this.limiter.span(span)
    if (update) this.store.updateSpan(span, bytes)
    else this.store.putSpan(span, bytes, sealed)
    if (this.export !== undefined && span.end_time_unix_nano !== null) this.export.span(span)
    this.gained(span.trace_id)
  }

  /** A span of `traceId` was stored: the `trace` triggers may fire (./triggers.ts). */
  private gained(traceId: string): void {
    if (this.traceTriggers !== undefined && this.traceTriggers.size > 0) this.traceTriggers.gained(traceId)
  }

  /**
   * TelemetrySink: a finished span the engine wrote as text (`runtime/engine/handler-spans.ts`),
   * stored as it is when nothing would change it: no OTLP export (which reads records) and within
   * the size limits (./limits.ts: its longest value, attribute and event counts, whole size).
   * False otherwise: the engine hands over the record, which {@link span} limits.
   */
  packedSpan(span: HandlerSpanText): boolean {
    if (this.export !== undefined) return false
    const limits = this.limiter.limits
    // UTF-16 units: at most 3 UTF-8 bytes each.
    if (span.longest * 3 > limits.attribute_value_length_limit || span.bytes > limits.record_size_limit) return false
    if (span.attributeCount > limits.attribute_count_limit || span.eventCount > limits.span_event_count_limit) return false
    this.store.putSpan(span.head, span.bytes, true, span.body)
    this.gained(span.head.trace_id)
    return true
  }

  /** TelemetrySink: an `/otel` frame or one sent on a worker's main connection (§10.2). */
  frame(prefix: 'OTLP' | 'MTRC' | 'LOGS', json: string, source: TelemetrySource): void {
    const service = source.worker_name ?? 'unknown'
    let request: unknown
    try {
      // JSON.parse, not jsonParse: OTLP/JSON carries every user-chosen name as a value
      // (`{"key": …, "value": …}`), never as an object key, so V8's escaped-key bug cannot rename
      // one; the escaped-key scan cost a quarter of the parse on frames with payload events.
      request = JSON.parse(json)
    } catch {
      return
    }
    // A frame's spans are never changed after they are stored: the window may keep them as text.
    if (prefix === 'OTLP') for (const s of spansOf(request, service)) this.span(s, false, true)
    else if (prefix === 'LOGS') {
      if (this.settings.logs_enabled)
        for (const l of logsOf(request, service, nowUnixNano())) {
          // A console call of a handler (svc-sdk): its line was printed where the worker runs (and
          // svc shows it), so it is never printed here; paired with the captured line (./console-lines.ts).
          if (l.attributes['svc.console'] === true) {
            delete l.attributes['svc.console']
            // The name svc launched the worker by (the /otel socket has none of its own).
            const worker = typeof l.attributes['svc.worker.name'] === 'string' ? l.attributes['svc.worker.name'] : source.worker_name
            if (worker === undefined || !this.consoleLines.consoleRecord(worker, l)) this.log(l)
            continue
          }
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
    const record = recordOf(worker, stream === 'stderr' ? 13 : 9, text, { 'log.source': stream }, { 'service.name': worker })
    // Trace ids arrive later, from the SDK's copy of a handler's console call (./console-lines.ts).
    if (this.consoleLines.capturedLine(worker, stream, record)) this.log(record)
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
    const hub = this.hub
    if (hub === undefined || !this.settings.logs_console_output) return
    const n = record.severity_number
    const level = n >= 17 ? 'error' : n >= 13 ? 'warn' : n >= 9 || n === 0 ? 'info' : 'debug'
    if (!hub.printsOnConsole(level)) return
    const data = Object.keys(record.attributes).length > 0 ? ` ${JSON.stringify(record.attributes)}` : ''
    hub.console!(record.service_name, level, `${record.body}${data}`)
  }

  /**
   * Limits a record (./limits.ts), stores it and delivers it to the `log` triggers (unless `quiet`:
   * records made while a delivery runs).
   */
  private log(record: LogRecord, quiet = false): void {
    const bytes = this.limiter.log(record)
    this.store.putLog(record, bytes)
    this.export?.log(record)
    if (quiet || this.logTriggers === undefined || this.logTriggers.size === 0) return
    this.logTriggers.deliver(record)
  }
}
