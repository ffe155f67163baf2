/**
 * The functions of the observability worker (builtins.md §12.5, protocol.md §11.4): `engine::log::*`,
 * `engine::logs::list` / `::clear`, `engine::traces::list` / `::tree` / `::group_by` / `::clear`,
 * `engine::metrics::list`, `engine::baggage::get` / `::set` / `::get_all` and
 * `engine::health::check`, and `engine::runs::list` (./runs.ts). Queries read the store in use (./query.ts); a store `none` answers
 * `STORAGE_DISABLED`.
 */
import { EngineFunctions, Errors } from 'svc-protocol'
import type { HealthCheckResult, HealthComponent, LogRecord, MetricSeries, MetricsListResult } from 'svc-protocol'
import { nowUnixNano } from '../../adapters/observability/records.ts'
import { SqliteStore } from '../../adapters/observability/sqlite.ts'
import { redisHealth } from '../../adapters/redis.ts'
import type { TelemetryStore } from '../../adapters/observability/store.ts'
import { ENGINE_VERSION } from '../../engine/engine.ts'
import type { TelemetryHub } from '../../engine/telemetry.ts'
import type { InvocationContext, LocalWorker } from '../../engine/types.ts'
import { observabilityFunctionFormats } from './formats.ts'
import type { InvocationMetrics } from './invocations.ts'
import type { TelemetryLimiter } from './limits.ts'
import { severityText, spreadLogData, stripAnsi } from './otlp.ts'
import { groupBy, listLogs, listTraces, traceTree } from './query.ts'
import { listRuns, RUNS_LIST_FORMATS } from './runs.ts'
import { LOG_LEVELS, type ObservabilitySettings } from './settings.ts'
import { DELIVERY_TRACE, type LogTriggers, type TraceTriggers } from './triggers.ts'

/** Ids served by this worker; the interceptor records no spans for them (no feedback loop). */
export const OWN_FUNCTIONS = new Set<string>()

/** What the functions need of the worker. */
export interface ObservabilityHost {
  /** The store in use. */
  store(): TelemetryStore
  /** The settings in effect. */
  settings(): ObservabilitySettings
  /** The engine's hub: the metric sources `engine::metrics::list` reads. */
  readonly hub: TelemetryHub | undefined
  readonly invocations: InvocationMetrics
  readonly limiter: TelemetryLimiter
  readonly logTriggers: LogTriggers
  readonly traceTriggers: TraceTriggers
  /** The `otlp_export` component of `engine::health::check`. */
  exportHealth(): HealthComponent
  /** Limits, stores, exports and delivers a record to the `log` triggers (unless `quiet`). */
  log(record: LogRecord, quiet: boolean): void
  /** Prints a worker's record on the engine's console when `logs_console_output` is on. */
  print(record: LogRecord): void
}

/**
 * Registers the observability functions on `worker`.
 * @example registerObservabilityFunctions(context.worker, host)
 */
export function registerObservabilityFunctions(worker: LocalWorker, host: ObservabilityHost): void {
  const fn = (id: string, description: string, handler: (data: unknown, ctx: InvocationContext) => unknown): void => {
    OWN_FUNCTIONS.add(id)
    worker.registerFunction(id, handler, { description, ...observabilityFunctionFormats(id) })
  }
  for (const [level, severity] of Object.entries(LOG_LEVELS)) {
    fn(`engine::log::${level}`, `Records a log line at severity ${severity} ({message, data?, trace_id?, span_id?, service_name?})`, (data, ctx) => logCall(host, level, severity, data, ctx))
  }
  const stored = (): TelemetryStore => {
    const store = host.store()
    if (store.kind === 'none') throw Errors.storageDisabled()
    return store
  }
  fn('engine::logs::list', 'Stored log records, newest first (filters: time, trace, service, severity, search)', (data) => listLogs(stored(), data))
  fn('engine::logs::clear', 'Removes every stored log record', () => ({ cleared: stored().clearLogs() }))
  fn('engine::traces::list', 'Traces by their root span (filter, sort, limit)', (data) => listTraces(stored(), data))
  fn('engine::traces::tree', 'The spans of one trace as a forest', (data) => traceTree(stored(), data))
  fn('engine::traces::group_by', 'Spans grouped by the value of one attribute', (data) => groupBy(stored(), data))
  fn('engine::traces::clear', 'Removes every stored span', () => ({ cleared: stored().clearSpans() }))
  fn('engine::metrics::list', 'Metrics: per-function invocations, errors, durations, worker metrics, queues and the engine process', (data) => metrics(host, stored(), data))
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
  fn('engine::health::check', 'Health of the engine and its observability store', () => health(host))

  // Run history (issue 21, the console's function page): its own block, apart from the trace queries.
  OWN_FUNCTIONS.add(EngineFunctions.LIST_RUNS)
  worker.registerFunction(EngineFunctions.LIST_RUNS, (data) => listRuns(stored(), data), {
    description: 'Recent invocations of one function, newest first: status, timings, caller, payload previews (filters: status, before_ms)',
    ...RUNS_LIST_FORMATS,
  })
}

/** `engine::health::check` (protocol.md §11.4): the engine, the store and what was dropped or truncated, the OTLP export. */
function health(host: ObservabilityHost): HealthCheckResult {
  const store = host.store()
  const counts = store.counts()
  const bytes = store.windowBytes()
  const dropped = store instanceof SqliteStore ? store.droppedRows : 0
  const undelivered = host.logTriggers.dropped
  const droppedTraceIds = host.traceTriggers.droppedTraceIds
  let limited = 0
  for (const n of Object.values(host.limiter.totals())) limited += n
  // Components of the hub's health sources (the fleet's, issue 19); one degraded degrades the engine.
  const sources: Record<string, { status: string; detail?: string }> = { ...host.hub?.healthComponents() }
  const redis = redisHealth()
  if (redis !== undefined) sources.redis = redis
  const degraded = Object.values(sources).some((c) => c.status === 'degraded')
  return {
    status: degraded ? 'degraded' : 'healthy',
    version: ENGINE_VERSION,
    timestamp: new Date().toISOString(),
    components: {
      engine: { status: 'healthy' },
      ...sources,
      observability: { status: host.settings().enabled ? 'healthy' : 'disabled', detail: `store ${store.kind}: ${counts.spans} spans (${mib(bytes.spans)} MiB), ${counts.logs} logs (${mib(bytes.logs)} MiB)${dropped > 0 ? `, ${dropped} rows not written to observability.db (writer behind)` : ''}${undelivered > 0 ? `, ${undelivered} log records not delivered to log triggers (handlers behind)` : ''}${droppedTraceIds > 0 ? `, ${droppedTraceIds} trace ids left out of trace trigger batches` : ''}${limited > 0 ? `, ${limited} values truncated or items dropped by the size limits (svc.observability.truncated)` : ''}` },
      otlp_export: host.exportHealth(),
    },
  }
}

/** `engine::log::<level>` (§12.2): `{message, data?, trace_id?, span_id?, service_name?}`, no result. */
function logCall(host: ObservabilityHost, level: string, severity: number, data: unknown, ctx: InvocationContext): void {
  const d = (data ?? {}) as Record<string, unknown>
  if (typeof d !== 'object' || typeof d.message !== 'string') throw Errors.invalidInput(`engine::log::${level}`, 'message must be a string')
  const settings = host.settings()
  if (!settings.enabled || !settings.logs_enabled) return
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
  const service = typeof d.service_name === 'string' && d.service_name !== '' ? d.service_name : (ctx.caller?.name ?? settings.service_name)
  const record = recordOf(service, severity, d.message, attributes, {}, traceId, spanId)
  host.log(record, quiet)
  host.print(record)
}

/** `engine::metrics::list` (§12.5): the stored series, the per-function ones and those of the hub's metric sources. */
async function metrics(host: ObservabilityHost, store: TelemetryStore, data: unknown): Promise<MetricsListResult> {
  const d = (data ?? {}) as { metric_name?: unknown; worker?: unknown; start_time?: unknown; end_time?: unknown }
  const now = nowUnixNano()
  const fnSeries = host.invocations.series(now)
  const startNs = typeof d.start_time === 'number' ? d.start_time * 1e6 : undefined
  const endNs = typeof d.end_time === 'number' ? d.end_time * 1e6 : undefined
  const sourced = (await host.hub?.collectMetrics(now)) ?? []
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

/** A log record observed now (§12.4): ANSI removed from `body`, severity text from the number. */
export function recordOf(service: string, severity: number, body: string, attributes: Record<string, unknown>, resource: Record<string, string>, traceId: string | null = null, spanId: string | null = null): LogRecord {
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
