/**
 * Invocations in flight and their cancellation (svc addition, docs/reference/protocol.md
 * "cancelinvocation"; issue 21). Every invocation that enters the engine — a session's call, a
 * built-in's, `inject`, a call served for another engine of the fleet — gets a {@link Flight}: the
 * reply the pipeline delivers to, indexed by an engine-assigned id for
 * `engine::invocations::list`/`cancel`, and by the caller's own id on its session so a
 * `cancelinvocation` frame finds it.
 *
 * Cancelling a flight answers the caller at once with `cancelled` and stops the work through the
 * hook its callee set at dispatch ({@link Flight.stop}): a remote leg sends `cancelinvocation` to
 * the worker and drops the leg (a late result is ignored), an in-process handler's `signal`
 * aborts, an HTTP-invoked function's request is aborted, a call to another engine sends the cancel
 * over NATS. A call not yet dispatched (waiting for the queue provider) is simply answered.
 */
import { uuid4 } from './uuid.ts'
import { errorBody, Errors, MAX_CANCEL_REASON, type ErrorBody, type JsonInput } from 'svc-protocol'
import type { Peer } from './peer.ts'
import type { InvocationFlight, Reply, WorkStopper } from './invocation.ts'
import { CallIndex } from './call-index.ts'

/** One in-flight invocation as `engine::invocations::list` shows it (ids, names, ms epoch). */
export interface FlightSummary {
  invocation_id: string
  function_id: string
  namespace: string
  /** Worker id serving the call; null until dispatched (waiting in the engine). */
  worker: string | null
  worker_name: string | null
  /** Worker id of the caller; null for the engine itself (HTTP routes, cron, inject…). */
  caller: string | null
  caller_name: string | null
  /** Unix ms when the call entered the engine. */
  started_at: number
  /** 32 hex digits of the call's W3C trace, null without trace context. */
  trace_id: string | null
}

/** Most flights `engine::invocations::list` returns. */
export const MAX_LISTED_FLIGHTS = 1000

export class Flight implements InvocationFlight {
  /** Engine-assigned id (UUID v4); a leg to a remote worker uses it as its invocation id. */
  readonly id: string
  readonly functionId: string
  readonly namespace: string
  readonly caller: Peer | null
  readonly startedAt = Date.now()
  /** Order of arrival among the engine's flights (set by {@link FlightTable.add}). */
  seq = 0
  /** The peer serving the call, once dispatched. */
  worker: Peer | undefined
  traceparent: string | undefined
  /** Set by the callee at dispatch: stops the work. */
  stop: WorkStopper | undefined
  /** True once an outcome went to the caller (result, error or `cancelled`). */
  settled = false
  private readonly table: FlightTable
  private readonly reply: Reply
  /** The reply the callee answers (interceptors wrap the flight): a cancel goes through it, so spans end. */
  private outer: Reply | undefined
  /** The caller's session index this flight is in, and its key there. */
  private readonly index: CallIndex<Flight> | undefined
  private readonly key: string | undefined

  constructor(table: FlightTable, functionId: string, namespace: string, caller: Peer | null, reply: Reply, index?: CallIndex<Flight>, key?: string) {
    this.table = table
    this.id = uuid4()
    this.functionId = functionId
    this.namespace = namespace
    this.caller = caller
    this.reply = reply
    if (index !== undefined && key !== undefined) {
      this.index = index
      this.key = key
      index.set(key, this)
    }
    table.add(this)
  }

  /** Dispatch: who serves the call, and the reply its callee answers (after the interceptors). */
  dispatched(worker: Peer, outer: Reply, traceparent: string | undefined): void {
    this.worker = worker
    this.outer = outer === this ? undefined : outer
    this.traceparent = traceparent
  }

  result(value: JsonInput | undefined): void {
    if (this.settle()) this.reply.result(value)
  }

  error(error: ErrorBody): void {
    if (this.settle()) this.reply.error(error)
  }

  /**
   * Cancels the call: stops its work and answers the caller with `answer` (default `cancelled`
   * with `reason`). Returns false when the call had already ended.
   */
  cancel(reason: string | undefined, answer?: ErrorBody): boolean {
    if (this.settled) return false
    const cut = reason !== undefined && reason.length > MAX_CANCEL_REASON ? reason.slice(0, MAX_CANCEL_REASON) : reason
    const stop = this.stop
    this.stop = undefined
    try {
      stop?.stopWork(cut)
    } finally {
      ;(this.outer ?? this).error(answer ?? errorBody(Errors.cancelled, cut))
    }
    return true
  }

  summary(): FlightSummary {
    const worker = this.worker
    return {
      invocation_id: this.id,
      function_id: this.functionId,
      namespace: this.namespace,
      worker: worker?.workerId ?? null,
      worker_name: worker?.name ?? null,
      caller: this.caller?.workerId ?? null,
      caller_name: this.caller?.name ?? null,
      started_at: this.startedAt,
      trace_id: traceIdOf(this.traceparent),
    }
  }

  private settle(): boolean {
    if (this.settled) return false
    this.settled = true
    this.stop = undefined
    this.table.remove(this)
    if (this.index !== undefined && this.index.get(this.key!) === this) this.index.delete(this.key!)
    return true
  }
}

/** Every flight of the engine, by its engine-assigned id. */
export class FlightTable {
  private readonly flights = new CallIndex<Flight>()
  /** Flights added so far: each flight's {@link Flight.seq}, the order `list` gives. */
  private added = 0

  get size(): number {
    return this.flights.size
  }

  add(flight: Flight): void {
    flight.seq = this.added++
    this.flights.set(flight.id, flight)
  }

  remove(flight: Flight): void {
    if (this.flights.get(flight.id) === flight) this.flights.delete(flight.id)
  }

  get(id: string): Flight | undefined {
    return this.flights.get(id)
  }

  /**
   * The oldest `limit` flights (at most {@link MAX_LISTED_FLIGHTS}), oldest first, that `visible`
   * lets through; `total` counts every one it lets through.
   */
  list(limit: number, visible: (flight: Flight) => boolean): { invocations: FlightSummary[]; total: number } {
    const bound = Math.max(0, Math.min(limit, MAX_LISTED_FLIGHTS))
    const invocations: FlightSummary[] = []
    const shown: Flight[] = []
    for (const flight of this.flights.values()) if (visible(flight)) shown.push(flight)
    shown.sort((a, b) => a.seq - b.seq)
    for (let i = 0; i < shown.length && i < bound; i++) invocations.push(shown[i]!.summary())
    return { invocations, total: shown.length }
  }
}

/** The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), else null. */
export function traceIdOf(traceparent: string | undefined): string | null {
  if (traceparent === undefined || traceparent.length < 35 || traceparent.charCodeAt(2) !== 45) return null
  const id = traceparent.slice(3, 35)
  return /^[0-9a-f]{32}$/.test(id) && id !== '0'.repeat(32) ? id : null
}
