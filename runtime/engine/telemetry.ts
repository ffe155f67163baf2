/**
 * The engine's telemetry seam (protocol.md §10, builtins.md §12): where spans of built-ins
 * (svc-http, the engine's own functions) and the `/otel` frames go. The observability worker
 * attaches a {@link TelemetrySink} at start; until then (or with `enabled: false`) every call is
 * a cheap no-op, so built-ins may call it unconditionally.
 *
 * W3C trace context: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`; flag `01` = sampled.
 */
import { randomFillSync } from 'node:crypto'
import type { TelemetryPrefix } from 'svc-protocol'
import type { HandlerSpanText } from './handler-spans.ts'
import type { MetricSeries, MetricSource, SpanKind, SpanRecord, SpanStatus } from '../adapters/observability/records.ts'
import { nowUnixNano } from '../adapters/observability/records.ts'
import type { LogLevel } from './logger.ts'
import type { FunctionEntry } from './functions.ts'
import type { Interceptor, InvocationPipeline } from './pipeline.ts'
import type { Logger } from './config.ts'

/** Where a telemetry frame came from (an `/otel` link or a worker's main connection). */
/** One component of `engine::health::check` (§12.5). */
export interface HealthComponent {
  status: 'healthy' | 'degraded' | 'disabled'
  detail?: string
}

export interface TelemetrySource {
  worker_id?: string
  worker_name?: string
}

/** What the observability worker receives from the engine. */
export interface TelemetrySink {
  /** Service name of engine spans (`service_name` setting). */
  readonly serviceName: string
  /** Head sampling of traces the engine starts (0–1). */
  readonly samplingRatio: number
  /**
   * A span started (unfinished, `end_time_unix_nano` null) or, with `update`, the same object
   * again once it finished in place.
   */
  span(span: SpanRecord, update?: boolean, sealed?: boolean): void
  /**
   * A finished span the engine wrote as the store's text (`handler-spans.ts`, {@link HandlerSpanText}).
   * False when the sink wants the record instead (an OTLP export reads records; the size limits
   * would change the text): the caller then hands it to {@link span}.
   */
  packedSpan?(span: HandlerSpanText): boolean
  /** An `OTLP`, `MTRC` or `LOGS` frame (§10.2): `json` is the text after the prefix, unparsed. */
  frame(prefix: TelemetryPrefix, json: string, source: TelemetrySource): void
  /** One line a worker process printed (cli.md §5.6): INFO for stdout, WARN for stderr. */
  output(worker: string, stream: 'stdout' | 'stderr', text: string): void
  /** One record of the engine's own log (at or above the hub's {@link TelemetryHub.logLevel}). */
  engineLog(level: Exclude<LogLevel, 'trace'>, message: string, data?: Record<string, unknown>): void
}

const LEVEL_ORDER: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 }

/** A span in progress, ended once with {@link ActiveSpan.end}. */
export interface ActiveSpan {
  /** `traceparent` naming this span as parent (sampled). */
  readonly traceparent: string
  readonly record: SpanRecord
  /**
   * Finishes the span with a status (`error` with its message) and extra attributes. `endTime`
   * (ns since the Unix epoch, default now): when it ended, for a span handed over a little after
   * (the queue's `deliver`, off the delivery chain's critical path).
   */
  end(status: SpanStatus, message?: string, attributes?: Record<string, unknown>, endTime?: number): void
}

/**
 * An unsampled parent for calls that must record no span and start no trace: trigger deliveries of
 * the observability worker (their spans never fire `trace` again, builtins.md §12.6) and the
 * built-ins' own start-up housekeeping (registering their settings entries).
 */
export const UNSAMPLED_TRACEPARENT = '00-00000000000000000000000000000001-0000000000000001-00'

/** By UTF-16 unit below 128: 1 for a hex digit of either case (the check runs after no `toLowerCase`). */
const HEX_DIGIT = new Uint8Array(128)
for (const c of '0123456789abcdefABCDEF') HEX_DIGIT[c.charCodeAt(0)] = 1

/** Whether `s` from `from` to `to` is hex digits of either case, not all `0`. */
function hexNotZero(s: string, from: number, to: number): boolean {
  let zero = true
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    if (c >= 128 || HEX_DIGIT[c] !== 1) return false
    if (c !== 0x30) zero = false
  }
  return !zero
}

/** The last value {@link parseTraceparent} read and its parts: a span's parent is read twice, by `recording` and `startSpan`. */
let lastTraceparent: string | undefined
let lastParts: { traceId: string; spanId: string; sampled: boolean } | undefined

/**
 * The parts of a valid W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, hex of either case, ids
 * returned lower case; all-zero ids are invalid); undefined otherwise. The same object for the
 * same value twice in a row (never change it). Checked by character rather than by a regular
 * expression, whose match array, captures and lower-cased copy were most of its cost (issue 20).
 */
export function parseTraceparent(value: string | undefined): { traceId: string; spanId: string; sampled: boolean } | undefined {
  if (value === undefined || value.length !== 55) return undefined
  if (value === lastTraceparent) return lastParts
  if (value.charCodeAt(0) !== 0x30 || value.charCodeAt(1) !== 0x30 || value.charCodeAt(2) !== 0x2d || value.charCodeAt(35) !== 0x2d || value.charCodeAt(52) !== 0x2d) return undefined
  if (!hexNotZero(value, 3, 35) || !hexNotZero(value, 36, 52)) return undefined
  const f1 = value.charCodeAt(53)
  const f2 = value.charCodeAt(54)
  if (f1 >= 128 || f2 >= 128 || HEX_DIGIT[f1] !== 1 || HEX_DIGIT[f2] !== 1) return undefined
  const parts = { traceId: value.slice(3, 35).toLowerCase(), spanId: value.slice(36, 52).toLowerCase(), sampled: (parseInt(value.slice(53), 16) & 1) === 1 }
  lastTraceparent = value
  lastParts = parts
  return parts
}

/** Random ids from a pooled buffer: one `randomFill` per 256 ids instead of one per id. */
const pool = Buffer.alloc(4096)
let poolOffset = pool.length
function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes)
  poolOffset += bytes
  return hex
}

/** A new span id (16 hex). */
export const newSpanId = (): string => randomHex(8)
/** A new trace id (32 hex). */
export const newTraceId = (): string => randomHex(16)

/** Shared by engine spans (never mutated): fewer objects per stored span, less GC work. */
const NONE: never[] = Object.freeze([]) as unknown as never[]
let resource: { name: string; value: Record<string, string> } = { name: '', value: {} }
function resourceOf(serviceName: string): Record<string, string> {
  if (resource.name !== serviceName) resource = { name: serviceName, value: Object.freeze({ 'service.name': serviceName }) as Record<string, string> }
  return resource.value
}

/** Options of {@link TelemetryHub.startSpan}. */
export interface SpanOptions {
  name: string
  kind: SpanKind
  /** The inbound `traceparent`; absent or invalid: a new trace (head-sampled). */
  parent?: string | undefined
  attributes?: Record<string, unknown>
  /**
   * True: the span is written once, finished, when it ends (the store may keep it as text, as it
   * keeps handler spans) instead of at its start and again at its end; one still running
   * {@link UNFINISHED_VISIBLE_MS} after its start is written then, unfinished, and finished in place
   * at its end as the others are. For spans that are mostly over before anyone could see them
   * unfinished (a queue's `enqueue` and `deliver`, issue 20). Default false: visible at once.
   */
  atEnd?: boolean
}

/**
 * How long a span started with {@link SpanOptions.atEnd} may run before it is written unfinished,
 * ms: it becomes visible 250–500 ms after its start (one timer, armed while such spans run, looks
 * every 250 ms), where a span of another kind is visible at once.
 */
export const UNFINISHED_VISIBLE_MS = 250

/** What the hub needs from the function registry: whether a delivery target is internal (§12.4). */
export interface FunctionLookup {
  resolve(namespace: string, id: string): FunctionEntry | undefined
}

/** Where a span of a delivery comes from (builtins.md §12.7 common attributes). */
export interface DeliveryOrigin {
  /** `svc.worker.name`: the built-in that delivers (`queue`, `svc-cron`, …). */
  worker: string
  /** `svc.trigger.type`, `svc.trigger.id`: absent for deliveries no trigger asked for (the enqueue action). */
  triggerType?: string
  triggerId?: string
}

export class TelemetryHub {
  /** The attached sink; undefined while no observability worker runs. */
  sink: TelemetrySink | undefined
  /**
   * Prints a worker's log record on the engine's console (`logs_console_output`, §12.1); set by
   * the composition root of `svc`, absent in tests and embedded engines.
   */
  console: ((service: string, level: Exclude<LogLevel, 'trace'>, message: string) => void) | undefined
  /**
   * The lowest level `console` prints (`svc --log-level`, `info` by default): a record below it is
   * not formatted at all (its attributes' JSON was ~0.4 µs per line of log ingest, then dropped).
   */
  consoleLevel: LogLevel = 'trace'
  private readonly pipeline: InvocationPipeline | undefined
  private threshold: number = LEVEL_ORDER.info
  private readonly fixedLevel: boolean

  private readonly functions: FunctionLookup | undefined
  private readonly metricSources: MetricSource[] = []
  /**
   * Running spans of {@link SpanOptions.atEnd} not yet written, oldest first: a list through the
   * spans themselves (no hash table that keeps ended spans reachable), looked at by {@link openTimer}.
   */
  private openHead: DeferredSpan | undefined
  private openTail: DeferredSpan | undefined
  private openTimer: NodeJS.Timeout | undefined
  private readonly healthSources = new Map<string, () => HealthComponent>()

  /**
   * `functions` tells internal functions apart (§12.4); `fixedLevel` is a level the operator
   * chose (`svc --log-level`) that the `log_level` setting does not change.
   */
  constructor(pipeline?: InvocationPipeline, functions?: FunctionLookup, fixedLevel?: LogLevel) {
    this.pipeline = pipeline
    this.functions = functions
    this.fixedLevel = fixedLevel !== undefined
    if (fixedLevel !== undefined) this.threshold = LEVEL_ORDER[fixedLevel]
  }

  /** Whether {@link console} is set and prints a record at `level` ({@link consoleLevel}). */
  printsOnConsole(level: Exclude<LogLevel, 'trace'>): boolean {
    return this.console !== undefined && LEVEL_ORDER[level] >= LEVEL_ORDER[this.consoleLevel]
  }

  /** Sets the threshold of the engine's own log (`log_level`, §12.1) unless the operator fixed one. */
  setLogLevel(level: LogLevel): void {
    if (!this.fixedLevel) this.threshold = LEVEL_ORDER[level]
  }

  /**
   * The engine's logger: records below the threshold are dropped; the rest go to `console` (which
   * prints them) and to the sink (which stores them, service `svc`).
   */
  engineLogger(console: Logger): Logger {
    const emit = (level: Exclude<LogLevel, 'trace'>, message: string, data?: Record<string, unknown>): void => {
      if (LEVEL_ORDER[level] < this.threshold) return
      console[level](message, data)
      try {
        this.sink?.engineLog(level, message, data)
      } catch {
        // Storing a log record never disturbs the code that logs.
      }
    }
    return {
      debug: (m, d) => emit('debug', m, d),
      info: (m, d) => emit('info', m, d),
      warn: (m, d) => emit('warn', m, d),
      error: (m, d) => emit('error', m, d),
    }
  }


  /**
   * Adds a component to `engine::health::check` (`components.<name>`), read on every check; a
   * `degraded` one makes the whole engine `degraded`. Returns the function that removes it.
   * @example const remove = hub.addHealthSource('fleet', () => ({ status: 'healthy', detail: '3 engines' }))
   */
  addHealthSource(name: string, source: () => HealthComponent): () => void {
    this.healthSources.set(name, source)
    return () => {
      if (this.healthSources.get(name) === source) this.healthSources.delete(name)
    }
  }

  /** The components of every health source; one that throws reports `degraded` with its error. */
  healthComponents(): Record<string, HealthComponent> {
    const components: Record<string, HealthComponent> = {}
    for (const [name, source] of this.healthSources) {
      try {
        components[name] = source()
      } catch (err) {
        components[name] = { status: 'degraded', detail: `the health source failed: ${(err as Error).message}` }
      }
    }
    return components
  }

  /**
   * Adds a source of metric series, read by `engine::metrics::list` (builtins.md §12.5) each
   * time it runs: built-ins contribute their own series (queue depths, process metrics) without
   * knowing the observability worker. The returned function removes it.
   * @example const remove = hub.addMetricSource((now) => [{ name: 'svc.queue.depth', type: 'gauge', unit: '{message}', points: [{ time_unix_nano: now, value: 3, attributes: { 'svc.queue.name': 'jobs' } }] }])
   */
  addMetricSource(source: MetricSource): () => void {
    this.metricSources.push(source)
    return () => {
      const i = this.metricSources.indexOf(source)
      if (i >= 0) this.metricSources.splice(i, 1)
    }
  }

  /**
   * The current series of every metric source, each point stamped `now` (Unix ns) unless the
   * source chose otherwise. A source that throws or rejects contributes nothing. Never throws.
   */
  async collectMetrics(now: number = nowUnixNano()): Promise<MetricSeries[]> {
    const batches = await Promise.all(
      this.metricSources.map(async (source) => {
        try {
          return await source(now)
        } catch {
          return []
        }
      }),
    )
    return batches.flat()
  }

  /**
   * The common attributes of a span around a delivery to `functionId` (builtins.md §12.7):
   * `svc.function.id`, `svc.worker.name`, `svc.trigger.type` and `svc.trigger.id` when a trigger
   * asked for it, and `svc.function.kind: "internal"` for internal targets (§12.4: id starting with
   * `engine::` or metadata `internal: true`). A new object each call (spans own their attributes).
   */
  deliveryAttributes(functionId: string, namespace: string, origin: DeliveryOrigin): Record<string, unknown> {
    const attributes: Record<string, unknown> = { 'svc.function.id': functionId, 'svc.worker.name': origin.worker }
    if (origin.triggerType !== undefined) attributes['svc.trigger.type'] = origin.triggerType
    if (origin.triggerId !== undefined) attributes['svc.trigger.id'] = origin.triggerId
    if (this.isInternal(functionId, namespace)) attributes['svc.function.kind'] = 'internal'
    return attributes
  }

  /** Whether spans of `functionId` are marked internal (§12.4); false for unknown functions not under `engine::`. */
  isInternal(functionId: string, namespace = 'default'): boolean {
    if (functionId.startsWith('engine::')) return true
    const entry = this.functions?.resolve(namespace, functionId)
    if (entry === undefined || entry.replicas.length === 0) return false
    return (entry.latest.metadata as { internal?: unknown } | undefined)?.internal === true
  }

  /** Pushes `interceptor` onto the invocation pipeline; the returned function removes it. */
  addInterceptor(interceptor: Interceptor): () => void {
    const list = this.pipeline?.interceptors
    if (list === undefined) return () => {}
    list.push(interceptor)
    return () => {
      const i = list.indexOf(interceptor)
      if (i >= 0) list.splice(i, 1)
    }
  }

  /** Hands a telemetry frame to the sink (dropped when none). Never throws. */
  frame(prefix: TelemetryPrefix, json: string, source: TelemetrySource): void {
    const sink = this.sink
    if (sink === undefined) return
    try {
      sink.frame(prefix, json, source)
    } catch {
      // A malformed frame is the sender's problem; the socket keeps going.
    }
  }

  /**
   * Stores a finished span the engine built for a worker (a handler span, `handler-spans.ts`):
   * never changed afterwards. Dropped when no sink is attached. Never throws.
   */
  /**
   * Stores a finished span the engine wrote as text ({@link TelemetrySink.packedSpan}); false
   * when the sink takes records only, or none is attached: hand the record to {@link finishedSpan}.
   * Never throws.
   */
  packedSpan(span: HandlerSpanText): boolean {
    try {
      return this.sink?.packedSpan?.(span) ?? false
    } catch {
      // Recording never fails the call it describes.
      return true
    }
  }

  finishedSpan(record: SpanRecord): void {
    try {
      this.sink?.span(record, false, true)
    } catch {
      // Recording never fails the call it describes.
    }
  }

  /**
   * Records one output line of a worker process the engine launched (builtins.md §12.2): a log
   * record with `service_name` = `worker`, severity INFO (stdout) or WARN (stderr), attribute
   * `log.source`, ANSI removed. Dropped when no sink is attached. Never throws.
   * @example hub.output('links', 'stderr', 'boom')
   */
  output(worker: string, stream: 'stdout' | 'stderr', text: string): void {
    try {
      this.sink?.output(worker, stream, text)
    } catch {
      // Output recording never disturbs the supervisor.
    }
  }

  /**
   * Whether a span with parent `parent` may be recorded: a sink is attached and `parent`, when it
   * is a valid `traceparent`, is sampled (a new trace still meets head sampling in
   * {@link startSpan}). A cheap check before building a span's name and attributes on a hot path.
   */
  recording(parent?: string): boolean {
    if (this.sink === undefined) return false
    if (parent === undefined) return true
    const parsed = parseTraceparent(parent)
    return parsed === undefined || parsed.sampled
  }

  /**
   * Starts a span recorded in the engine (§12.7), visible at once as unfinished. Undefined when
   * no sink is attached or the trace is not sampled (a parent's sampled flag is honoured; a new
   * trace is sampled with `sampling_ratio`).
   * @example const span = hub.startSpan({ name: 'GET /s/:code', kind: 'server', parent: req.headers.traceparent }); … span?.end('ok')
   */
  startSpan(options: SpanOptions): ActiveSpan | undefined {
    const sink = this.sink
    if (sink === undefined) return undefined
    const parent = parseTraceparent(options.parent)
    if (parent !== undefined ? !parent.sampled : sink.samplingRatio < 1 && Math.random() >= sink.samplingRatio) return undefined
    const record: SpanRecord = {
      trace_id: parent?.traceId ?? newTraceId(),
      span_id: newSpanId(),
      parent_span_id: parent?.spanId ?? null,
      name: options.name,
      kind: options.kind,
      service_name: sink.serviceName,
      start_time_unix_nano: nowUnixNano(),
      end_time_unix_nano: null,
      duration_ms: null,
      status: 'unset',
      attributes: options.attributes ?? {},
      resource: resourceOf(sink.serviceName),
      events: NONE,
      links: NONE,
    }
    if (options.atEnd === true) return this.open(new DeferredSpan(sink, record, this))
    sink.span(record)
    return new EngineSpan(sink, record)
  }

  /** Appends `span` to the running deferred spans, arming the timer that writes the long ones unfinished. */
  private open(span: DeferredSpan): DeferredSpan {
    const tail = this.openTail
    span.prev = tail
    if (tail === undefined) this.openHead = span
    else tail.next = span
    this.openTail = span
    if (this.openTimer === undefined) {
      this.openTimer = setTimeout(() => this.writeLongRunning(), UNFINISHED_VISIBLE_MS)
      this.openTimer.unref()
    }
    return span
  }

  /** Takes `span` off the running deferred spans (it ended, or is written unfinished). */
  closeDeferred(span: DeferredSpan): void {
    const { prev, next } = span
    if (prev === undefined) this.openHead = next
    else prev.next = next
    if (next === undefined) this.openTail = prev
    else next.prev = prev
    span.prev = span.next = undefined
  }

  /** Writes, unfinished, the deferred spans running for {@link UNFINISHED_VISIBLE_MS} or more; looks again later while any run. */
  private writeLongRunning(): void {
    this.openTimer = undefined
    const cutoff = nowUnixNano() - UNFINISHED_VISIBLE_MS * 1e6
    // Oldest first: the first younger one ends the walk.
    for (let span = this.openHead; span !== undefined && span.record.start_time_unix_nano <= cutoff; span = this.openHead) {
      this.closeDeferred(span)
      span.writeUnfinished()
    }
    if (this.openHead !== undefined) {
      this.openTimer = setTimeout(() => this.writeLongRunning(), UNFINISHED_VISIBLE_MS)
      this.openTimer.unref()
    }
  }
}

/**
 * A span of {@link SpanOptions.atEnd}: handed to the sink once, sealed, when it ends; or, still
 * running after {@link UNFINISHED_VISIBLE_MS}, handed over unfinished then and finished in place
 * ({@link EngineSpan}'s way).
 */
class DeferredSpan implements ActiveSpan {
  readonly traceparent: string
  readonly record: SpanRecord
  private readonly sink: TelemetrySink
  private readonly hub: TelemetryHub
  /** Neighbours in the hub's list of running deferred spans. */
  prev: DeferredSpan | undefined
  next: DeferredSpan | undefined
  private ended = false
  private written = false

  constructor(sink: TelemetrySink, record: SpanRecord, hub: TelemetryHub) {
    this.sink = sink
    this.record = record
    this.hub = hub
    this.traceparent = `00-${record.trace_id}-${record.span_id}-01`
  }

  /** Hands the span over unfinished (it has run long enough for someone to look at it). */
  writeUnfinished(): void {
    if (this.ended || this.written) return
    this.written = true
    try {
      this.sink.span(this.record)
    } catch {
      // Recording never fails the work it describes.
    }
  }

  end(status: SpanStatus, message?: string, attributes?: Record<string, unknown>, endTime?: number): void {
    if (this.ended) return
    this.ended = true
    const record = finish(this.record, status, message, attributes, endTime)
    if (this.written) {
      this.sink.span(record, true)
      return
    }
    this.hub.closeDeferred(this)
    // Never changed again: the store may keep it as its text.
    this.sink.span(record, false, true)
  }
}

class EngineSpan implements ActiveSpan {
  readonly traceparent: string
  readonly record: SpanRecord
  private readonly sink: TelemetrySink
  private ended = false

  constructor(sink: TelemetrySink, record: SpanRecord) {
    this.sink = sink
    this.record = record
    this.traceparent = `00-${record.trace_id}-${record.span_id}-01`
  }

  end(status: SpanStatus, message?: string, attributes?: Record<string, unknown>, endTime?: number): void {
    if (this.ended) return
    this.ended = true
    // Finished in place: the store holds this very object (stores write it out later, so the
    // finished version is the one written when both happen before a flush).
    this.sink.span(finish(this.record, status, message, attributes, endTime), true)
  }
}

/** Ends `record` at `endTime` (ns, default now) with `status` (and its message and attributes, when given); returns it. */
function finish(record: SpanRecord, status: SpanStatus, message: string | undefined, attributes: Record<string, unknown> | undefined, endTime?: number): SpanRecord {
  const end = endTime ?? nowUnixNano()
  record.end_time_unix_nano = end
  record.duration_ms = (end - record.start_time_unix_nano) / 1e6
  record.status = status
  if (message !== undefined) record.status_message = message
  if (attributes !== undefined) Object.assign(record.attributes, attributes)
  return record
}
