/**
 * Stores of the observability worker (builtins.md §12.3): one interface, three kinds.
 *
 * - `memory`: the in-memory window only, bounded by `memory_max_spans` / `memory_max_logs`.
 * - `builtin`: the same window, plus every record written to `<data_dir>/observability.db`
 *   (see `sqlite.ts`); the window is reloaded from the file at start.
 * - `none`: nothing stored; the query functions fail with `STORAGE_DISABLED` (the worker checks
 *   {@link TelemetryStore.kind}).
 *
 * Writes are synchronous and O(1) amortised (they sit on the invocation path); the queries read
 * the window. Every store keeps within its bounds whatever the ingest rate: the window evicts the
 * oldest records, metrics keep one hour of points (and at most {@link MAX_POINTS_PER_SERIES}).
 */
import type { LogRecord, MetricPoint, MetricSeries, SpanRecord } from './records.ts'

/** Bounds of a store (the §12.1 settings that concern it). */
export interface StoreLimits {
  /** Age limit of spans and logs, seconds (`retention_seconds`). */
  retentionSeconds: number
  /** Window size in spans (`memory_max_spans`). */
  maxSpans: number
  /** Window size in log records (`memory_max_logs`). */
  maxLogs: number
  /** `builtin` only: size cap of the SQLite file, bytes (`max_disk_bytes`). */
  maxDiskBytes: number
}

/** How long metric points are kept (§12.3: 1 h). */
export const METRIC_RETENTION_MS = 3_600_000
/** Points kept per metric series, whatever their age. */
export const MAX_POINTS_PER_SERIES = 10_000
/** Metric series kept (distinct names); later names are dropped. */
export const MAX_SERIES = 1_000

/**
 * The store seam. A span put again with the same `trace_id`/`span_id` replaces the earlier
 * version (an in-progress span that finished, as OTLP sends it); engine spans finish in place and
 * are passed to {@link TelemetryStore.updateSpan}. Iteration order is arrival order, oldest first.
 */
export interface TelemetryStore {
  readonly kind: 'memory' | 'builtin' | 'none'
  putSpan(span: SpanRecord): void
  /** `span`, put before, changed in place (an engine span that finished): written out again. */
  updateSpan(span: SpanRecord): void
  putLog(log: LogRecord): void
  /** Adds a point to the series `name`, creating it with `type`, `unit`, `description`. */
  putPoint(series: Omit<MetricSeries, 'points'>, point: MetricPoint): void
  /** Log records, oldest first. */
  logs(): LogRecord[]
  /** Spans, oldest first. */
  spans(): IterableIterator<SpanRecord>
  /** The spans of one trace (any order); empty when unknown. */
  trace(traceId: string): SpanRecord[]
  metrics(): MetricSeries[]
  /** Removes every log record; the number removed. */
  clearLogs(): number
  /** Removes every span; the number removed. */
  clearSpans(): number
  /** Drops what is older than the retention (and, `builtin`, what exceeds the size cap). */
  sweep(nowMs: number): void
  /** Numbers of records in the window. */
  counts(): { spans: number; logs: number }
  /** Writes what is pending (builtin); no-op otherwise. */
  flush(): void
  close(): void
}

/**
 * The bounded in-memory window shared by `memory` and `builtin`.
 * @example const store = new MemoryStore({ retentionSeconds: 3600, maxSpans: 1000, maxLogs: 1000, maxDiskBytes: 0 })
 */
export class MemoryStore implements TelemetryStore {
  readonly kind: 'memory' | 'builtin' = 'memory'
  protected limits: StoreLimits
  /**
   * Spans in arrival order: a ring of `maxSpans` slots, `spanRing[spanHead]` the oldest of
   * `spanCount`. No per-span key: replacement and lookup go through {@link traces}.
   */
  private spanRing: Array<SpanRecord | undefined> = []
  private spanHead = 0
  private spanCount = 0
  /** Spans by trace: one span directly (most engine traces), an array when there are more. */
  private readonly traces = new Map<string, SpanRecord | SpanRecord[]>()
  /** Ring of logs: `logBuf[logHead…]` are live. Compacted when the dead prefix grows. */
  private logBuf: LogRecord[] = []
  private logHead = 0
  private readonly series = new Map<string, MetricSeries>()

  constructor(limits: StoreLimits) {
    this.limits = limits
  }

  /** New bounds; the window shrinks at once when smaller. */
  setLimits(limits: StoreLimits): void {
    this.limits = limits
    this.trimSpans()
    this.trimLogs()
  }

  putSpan(span: SpanRecord): void {
    const traces = this.traces
    const trace = traces.get(span.trace_id)
    if (trace === undefined) traces.set(span.trace_id, span)
    else {
      // A span sent again (an in-progress one that finished): the stored object takes the new
      // content and keeps its place, so the ring needs no search.
      const earlier = Array.isArray(trace) ? trace.find((s) => s.span_id === span.span_id) : trace.span_id === span.span_id ? trace : undefined
      if (earlier !== undefined) {
        if (earlier !== span) Object.assign(earlier, span)
        return
      }
      if (Array.isArray(trace)) trace.push(span)
      else traces.set(span.trace_id, [trace, span])
    }
    const max = this.limits.maxSpans
    if (this.spanCount >= max) this.trimSpans(max - 1)
    this.ringPush(span)
  }

  /** Appends to the ring, growing it (doubling, up to `maxSpans`) while it is not full yet. */
  private ringPush(span: SpanRecord): void {
    let ring = this.spanRing
    if (this.spanCount === ring.length) {
      // Unwrap into a larger array (amortised O(1)); the window's capacity is reached gradually.
      const next: Array<SpanRecord | undefined> = new Array(Math.max(64, Math.min(this.limits.maxSpans, ring.length * 2)))
      for (let i = 0; i < this.spanCount; i++) next[i] = ring[(this.spanHead + i) % ring.length]
      this.spanRing = ring = next
      this.spanHead = 0
    }
    ring[(this.spanHead + this.spanCount) % ring.length] = span
    this.spanCount++
  }

  /** The window holds the object itself: nothing to do. */
  updateSpan(_span: SpanRecord): void {}

  putLog(log: LogRecord): void {
    this.logBuf.push(log)
    if (this.logBuf.length - this.logHead > this.limits.maxLogs) this.trimLogs()
  }

  putPoint(meta: Omit<MetricSeries, 'points'>, point: MetricPoint): void {
    let s = this.series.get(meta.name)
    if (s === undefined) {
      if (this.series.size >= MAX_SERIES) return
      s = { ...meta, points: [] }
      this.series.set(meta.name, s)
    }
    s.points.push(point)
    if (s.points.length > MAX_POINTS_PER_SERIES) s.points.splice(0, s.points.length - MAX_POINTS_PER_SERIES)
  }

  logs(): LogRecord[] {
    return this.logBuf.slice(this.logHead)
  }

  *spans(): IterableIterator<SpanRecord> {
    const ring = this.spanRing
    const head = this.spanHead
    const count = this.spanCount
    for (let i = 0; i < count; i++) yield ring[(head + i) % ring.length]!
  }

  trace(traceId: string): SpanRecord[] {
    const trace = this.traces.get(traceId)
    return trace === undefined ? [] : Array.isArray(trace) ? [...trace] : [trace]
  }

  metrics(): MetricSeries[] {
    return [...this.series.values()]
  }

  clearLogs(): number {
    const n = this.logBuf.length - this.logHead
    this.logBuf = []
    this.logHead = 0
    return n
  }

  clearSpans(): number {
    const n = this.spanCount
    this.spanRing = []
    this.spanHead = 0
    this.spanCount = 0
    this.traces.clear()
    return n
  }

  sweep(nowMs: number): void {
    const cutoffNs = (nowMs - this.limits.retentionSeconds * 1000) * 1e6
    while (this.spanCount > 0 && this.spanRing[this.spanHead]!.start_time_unix_nano < cutoffNs) this.dropOldest()
    const buf = this.logBuf
    while (this.logHead < buf.length && buf[this.logHead]!.observed_timestamp_unix_nano < cutoffNs) this.logHead++
    this.compactLogs()
    const metricCutoff = (nowMs - METRIC_RETENTION_MS) * 1e6
    for (const s of this.series.values()) {
      let i = 0
      while (i < s.points.length && s.points[i]!.time_unix_nano < metricCutoff) i++
      if (i > 0) s.points.splice(0, i)
    }
  }

  counts(): { spans: number; logs: number } {
    return { spans: this.spanCount, logs: this.logBuf.length - this.logHead }
  }

  flush(): void {}

  close(): void {}

  /** Removes the oldest span of the ring and of its trace. */
  private dropOldest(): void {
    const ring = this.spanRing
    const span = ring[this.spanHead]!
    ring[this.spanHead] = undefined
    this.spanHead = (this.spanHead + 1) % ring.length
    this.spanCount--
    const trace = this.traces.get(span.trace_id)
    if (trace === undefined) return
    if (!Array.isArray(trace)) {
      if (trace === span) this.traces.delete(span.trace_id)
      return
    }
    const i = trace.indexOf(span)
    if (i >= 0) trace.splice(i, 1)
    if (trace.length === 0) this.traces.delete(span.trace_id)
    else if (trace.length === 1) this.traces.set(span.trace_id, trace[0]!)
  }

  /** Drops the oldest spans until at most `keep` remain. */
  private trimSpans(keep = this.limits.maxSpans): void {
    while (this.spanCount > keep) this.dropOldest()
  }

  private trimLogs(): void {
    const live = this.logBuf.length - this.logHead
    if (live > this.limits.maxLogs) this.logHead += live - this.limits.maxLogs
    this.compactLogs()
  }

  /** Drops the dead prefix once it is as large as the window (amortised O(1) per record). */
  private compactLogs(): void {
    if (this.logHead > 0 && this.logHead >= this.logBuf.length - this.logHead) {
      this.logBuf = this.logBuf.slice(this.logHead)
      this.logHead = 0
    }
  }
}

/** `store: none`: keeps nothing. */
export class NoStore implements TelemetryStore {
  readonly kind = 'none' as const
  putSpan(): void {}
  updateSpan(): void {}
  putLog(): void {}
  putPoint(): void {}
  logs(): LogRecord[] {
    return []
  }
  spans(): IterableIterator<SpanRecord> {
    return [][Symbol.iterator]()
  }
  trace(): SpanRecord[] {
    return []
  }
  metrics(): MetricSeries[] {
    return []
  }
  clearLogs(): number {
    return 0
  }
  clearSpans(): number {
    return 0
  }
  sweep(): void {}
  counts(): { spans: number; logs: number } {
    return { spans: 0, logs: 0 }
  }
  flush(): void {}
  close(): void {}
}
