/**
 * What the observability worker records of each invocation (builtins.md §12, protocol.md §10.1),
 * through an {@link Interceptor} on the invocation pipeline: an `execute <function_id>` span for a
 * function the engine serves itself (worker-routed calls get no engine span, their `traceparent`
 * is forwarded unchanged), and per-function counts, errors and durations, read as the
 * `svc.function.*` series.
 *
 * In a fleet a call is counted once across the engines (issue 19): in `svc.function.*` by the
 * engine whose replica runs it, and, on the engine that sent it there over NATS, only in
 * `svc.fleet.forwarded` (by function and serving engine) — so a sum over every engine's series
 * is the number of calls.
 */
import type { ErrorBody, JsonInput } from 'svc-protocol'
import type { MetricSeries } from '../../adapters/observability/records.ts'
import type { FunctionEntry, Replica } from '../../engine/functions.ts'
import type { Interceptor, Invocation } from '../../engine/pipeline.ts'
import type { Reply } from '../../engine/invocation.ts'
import type { ActiveSpan, TelemetryHub } from '../../engine/telemetry.ts'

/** Duration histogram bounds of `svc.function.duration`, ms. */
const BOUNDS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]

interface FunctionStats {
  count: number
  errors: number
  sum: number
  buckets: number[]
}

/** Calls sent to other engines of the fleet: per function id, per serving engine. */
type ForwardedStats = Map<string, Map<string, number>>

/**
 * The reply of a counted invocation: counts its outcome and duration in its function's stats and
 * ends its `execute` span, then answers the invocation's own reply. One object per call (not a
 * closure and a literal with two more), as the pipeline's replies are: this wraps every call the
 * engine's replicas run.
 */
class MeteredReply implements Reply {
  private readonly reply: Reply
  private readonly stats: FunctionStats
  private readonly span: ActiveSpan | undefined
  /** `performance.now()` when the call was dispatched, ms. */
  private readonly started = performance.now()

  constructor(reply: Reply, stats: FunctionStats, span: ActiveSpan | undefined) {
    this.reply = reply
    this.stats = stats
    this.span = span
  }

  result(value: JsonInput | undefined): void {
    this.done(undefined)
    this.reply.result(value)
  }

  error(error: ErrorBody): void {
    this.done(error)
    this.reply.error(error)
  }

  private done(error: ErrorBody | undefined): void {
    const ms = performance.now() - this.started
    const s = this.stats
    s.count++
    s.sum += ms
    let b = 0
    while (b < BOUNDS.length && ms > BOUNDS[b]!) b++
    s.buckets[b]!++
    if (error !== undefined) {
      s.errors++
      this.span?.end('error', error.message, { 'svc.error.code': error.code })
    } else this.span?.end('ok')
  }
}

/**
 * Per-function invocation metrics and engine spans.
 * @example
 * const invocations = new InvocationMetrics(OWN_FUNCTIONS)
 * invocations.hub = hub
 * const remove = hub.addInterceptor(invocations.interceptor)
 * invocations.series(nowUnixNano())
 */
export class InvocationMetrics {
  private readonly stats = new Map<string, FunctionStats>()
  private readonly forwarded: ForwardedStats = new Map()
  private forwardedTotal = 0
  private readonly ignored: ReadonlySet<string>
  /** Where `execute` spans start; none while undefined (set at the worker's start). */
  hub: TelemetryHub | undefined

  /** `ignored`: ids of functions neither counted nor spanned (the worker's own: no feedback loop). */
  constructor(ignored: ReadonlySet<string>) {
    this.ignored = ignored
  }

  /** Invocations counted since start, every function together, forwarded ones included. */
  get total(): number {
    let total = this.forwardedTotal
    for (const s of this.stats.values()) total += s.count
    return total
  }

  readonly interceptor: Interceptor = {
    name: 'observability',
    intercept: (invocation: Invocation, target: FunctionEntry, replica: Replica): void => {
      const id = target.id
      if (this.ignored.has(id)) return
      // Sent to another engine: that engine counts it in svc.function.* when its replica runs it.
      if (replica.callee.remote === true) return this.countForwarded(id, replica.peer.engine ?? '')
      let span: ActiveSpan | undefined
      if (replica.peer.kind === 'builtin' && replica.ownSpan !== true && this.hub !== undefined) {
        const attributes: Record<string, unknown> = { 'svc.function.id': id, 'svc.worker.name': replica.peer.name }
        if (id.startsWith('engine::') || (replica.metadata as { internal?: unknown } | undefined)?.internal === true) attributes['svc.function.kind'] = 'internal'
        span = this.hub.startSpan({ name: `execute ${id}`, kind: 'internal', parent: invocation.traceparent, attributes })
        if (span !== undefined) invocation.traceparent = span.traceparent
      }
      let stats = this.stats.get(id)
      if (stats === undefined) this.stats.set(id, (stats = { count: 0, errors: 0, sum: 0, buckets: new Array<number>(BOUNDS.length + 1).fill(0) }))
      invocation.reply = new MeteredReply(invocation.reply, stats, span)
    },
  }

  private countForwarded(id: string, engine: string): void {
    let byEngine = this.forwarded.get(id)
    if (byEngine === undefined) this.forwarded.set(id, (byEngine = new Map()))
    byEngine.set(engine, (byEngine.get(engine) ?? 0) + 1)
    this.forwardedTotal++
  }

  /**
   * The per-function series (§12 metrics): invocations and errors (cumulative sums), durations
   * (histogram, ms), by `svc.function.id`, of the calls this engine's replicas ran; and, once a call
   * went to another engine of the fleet, `svc.fleet.forwarded` (cumulative sum, by
   * `svc.function.id` and `svc.fleet.engine`, the serving engine's name), counted when sent.
   * `now`: the points' time, ns since the epoch.
   */
  series(now: number): MetricSeries[] {
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
    if (this.forwarded.size > 0) {
      const forwarded: MetricSeries = { name: 'svc.fleet.forwarded', type: 'sum', unit: '{invocation}', description: 'invocations sent to another engine of the fleet, per function and serving engine', points: [] }
      for (const [id, byEngine] of this.forwarded) {
        for (const [engine, count] of byEngine) forwarded.points.push({ time_unix_nano: now, value: count, attributes: { 'svc.function.id': id, 'svc.fleet.engine': engine } })
      }
      fnSeries.push(forwarded)
    }
    return fnSeries
  }
}
