/**
 * Ordered per-trigger fan-out of committed events (builtins.md §2.5), shared by the reactive
 * trigger types: `state`, `stream`, `configuration`.
 *
 * 1. The writer is never delayed: {@link FanOutQueue.push} only appends, and draining starts on a
 *    later turn of the event loop, so the write's answer always leaves first.
 * 2. Each binding has its own FIFO. Events enter it in the order they are pushed (commit order)
 *    and are delivered one at a time: condition, then handler, then the next event. Queues of
 *    different bindings drain independently and concurrently.
 * 3. Each delivery (condition plus handler) is bounded by `timeoutMs`
 *    (`internal_invocation_timeout_ms`, protocol.md §6.5). Failures and timeouts are logged with
 *    trigger id, function id, code and message, then dropped; nothing is retried.
 * 4. A queue holds at most `maxQueued` (10 000) undelivered events; beyond that the oldest is
 *    dropped and a warning is logged (the first drop, then at most one every
 *    `dropWarningIntervalMs`, each giving the number dropped since the queue was last empty).
 * 5. The writer's trace context travels with each event, so deliveries are children of the
 *    writer's span (rule 7). With a telemetry sink attached, each delivery is recorded as a span
 *    `trigger <type> <function_id>` (builtins.md §12.7; pub/sub names its own), child of that
 *    context and parent of the condition and handler calls.
 *
 * Matching events to bindings stays with each trigger type; this module owns the queues.
 */
import { Errors, errorBodyOf } from 'svc-protocol/errors'
import type { ActiveSpan, TelemetryHub } from '../../engine/telemetry.ts'
import type { BindingInfo, LocalInvokeRequest, LocalWorker, Logger } from '../../engine/types.ts'
import { systemClock, type Clock } from './clock.ts'
import { createCondition, type Condition } from './conditions.ts'
import { Fifo } from './fifo.ts'

/** Undelivered events a binding may hold before the oldest is dropped (§2.5 rule 5). */
export const MAX_QUEUED_EVENTS = 10_000

/** Default spacing of drop warnings of one queue, ms. */
export const DROP_WARNING_INTERVAL_MS = 10_000

/** Trace context of the write an event comes from (protocol.md §10.1). */
export interface TraceOrigin {
  traceparent?: string | undefined
  baggage?: string | undefined
}

/** The trace context a write call carries (protocol.md §10.1), for the events it causes; undefined when none. */
export function traceOriginOf(context: { traceparent?: string | undefined; baggage?: string | undefined }): { traceparent?: string; baggage?: string } | undefined {
  if (context.traceparent === undefined && context.baggage === undefined) return undefined
  const origin: { traceparent?: string; baggage?: string } = {}
  if (context.traceparent !== undefined) origin.traceparent = context.traceparent
  if (context.baggage !== undefined) origin.baggage = context.baggage
  return origin
}

/** A binding as the fan-out delivers to it. */
export interface FanOutTarget {
  /** Trigger (binding) id. */
  id: string
  function_id: string
  /** Target namespace of `function_id` and of the condition. */
  namespace: string
  /** Sent as the second argument of condition and handler; omitted when undefined or null. */
  metadata?: unknown
  condition_function_id?: string | null | undefined
  /** Name of the span of each delivery; default `trigger <triggerType> <function_id>` (§12.7). */
  span_name?: string
}

export interface FanOutOptions {
  /** The worker whose `invoke` delivers. */
  worker: Pick<LocalWorker, 'invoke'>
  log: Logger
  /** Budget of one delivery, condition plus handler, ms (`internal_invocation_timeout_ms`). */
  timeoutMs: number
  /** Trigger type id, used in log lines: `<type> trigger <id>: handler failed`. */
  triggerType: string
  /** Default {@link MAX_QUEUED_EVENTS}. */
  maxQueued?: number
  /** Default {@link DROP_WARNING_INTERVAL_MS}. */
  dropWarningIntervalMs?: number
  /** Default {@link systemClock}; measures the budget and spaces drop warnings. */
  clock?: Clock
  /** Where delivery spans go (§12.7); none are recorded without it. */
  telemetry?: TelemetryHub
  /** `svc.worker.name` of delivery spans: the built-in that owns the trigger type. */
  workerName?: string
}

/** The queue of one binding. */
export interface FanOutQueue<E> {
  readonly target: FanOutTarget
  /** Events waiting (the one being delivered not included). */
  readonly length: number
  /** Appends an event (commit order); never blocks, never throws. Ignored once the binding is gone or the fan-out stopped. */
  push(event: E, origin?: TraceOrigin): void
}

interface Delivery<E> {
  event: E
  origin: TraceOrigin | undefined
}

class Queue<E> implements FanOutQueue<E> {
  target: FanOutTarget
  condition: Condition | null
  readonly items = new Fifo<Delivery<E>>()
  /** A drain loop owns the queue (scheduled or running). */
  draining = false
  /** Events dropped since the queue was last empty. */
  dropped = 0
  lastWarning = -Infinity
  removed = false
  private readonly owner: OrderedFanOut<E>

  constructor(owner: OrderedFanOut<E>, target: FanOutTarget, condition: Condition | null) {
    this.owner = owner
    this.target = target
    this.condition = condition
  }

  get length(): number {
    return this.items.length
  }

  push(event: E, origin?: TraceOrigin): void {
    this.owner.enqueue(this, { event, origin })
  }
}

/**
 * Owner of every binding's delivery queue for one trigger type.
 *
 * @example
 * const fanOut = new OrderedFanOut<StateEvent>({ worker, log, timeoutMs: 30_000, triggerType: 'state' })
 * const queue = fanOut.register({ id: binding.id, function_id: binding.function_id, namespace: binding.namespace })
 * queue.push(event, { traceparent }) // after the write committed
 * fanOut.unregister(binding.id)
 */
export class OrderedFanOut<E> {
  private readonly options: Required<Omit<FanOutOptions, 'clock' | 'telemetry' | 'workerName'>> & { clock: Clock; telemetry?: TelemetryHub; workerName?: string }
  private readonly queues = new Map<string, Queue<E>>()
  private stopped = false

  constructor(options: FanOutOptions) {
    this.options = {
      maxQueued: MAX_QUEUED_EVENTS,
      dropWarningIntervalMs: DROP_WARNING_INTERVAL_MS,
      clock: systemClock,
      ...options,
    }
  }

  /** Number of registered bindings. */
  get size(): number {
    return this.queues.size
  }

  /**
   * Adds a binding's queue. A known id is a replacement (protocol.md §5.5): the queue and what it
   * holds are kept, later deliveries use the new target.
   */
  register(target: FanOutTarget): FanOutQueue<E> {
    const condition = createCondition(this.options.worker, target)
    const existing = this.queues.get(target.id)
    if (existing) {
      existing.target = target
      existing.condition = condition
      return existing
    }
    const queue = new Queue<E>(this, target, condition)
    this.queues.set(target.id, queue)
    return queue
  }

  /**
   * {@link register} for a binding as the engine hands it to a provider: its id, function, target
   * namespace and metadata, with the condition its config names (§2.2).
   */
  registerBinding(binding: BindingInfo, conditionFunctionId: string | undefined, spanName?: string): FanOutQueue<E> {
    const target: FanOutTarget = {
      id: binding.id,
      function_id: binding.function_id,
      namespace: binding.namespace,
      metadata: binding.metadata,
      condition_function_id: conditionFunctionId,
    }
    if (spanName !== undefined) target.span_name = spanName
    return this.register(target)
  }

  /** Removes a binding: its waiting events are dropped; a delivery in flight finishes (and is logged if it fails). */
  unregister(id: string): void {
    const queue = this.queues.get(id)
    if (!queue) return
    this.queues.delete(id)
    queue.removed = true
    queue.items.clear()
  }

  /** The queue of a binding, undefined when not registered. */
  get(id: string): FanOutQueue<E> | undefined {
    return this.queues.get(id)
  }

  /** Drops every waiting event of every binding (for example when delivery is switched off). */
  clear(): void {
    for (const queue of this.queues.values()) queue.items.clear()
  }

  /** Drops every waiting event and refuses new ones; deliveries in flight finish unlogged. */
  stop(): void {
    this.stopped = true
    this.clear()
  }

  /** @internal */
  enqueue(queue: Queue<E>, delivery: Delivery<E>): void {
    if (this.stopped || queue.removed) return
    const { maxQueued, dropWarningIntervalMs, clock, log, triggerType } = this.options
    if (queue.items.length >= maxQueued) {
      queue.items.shift()
      queue.dropped++
      const now = clock.now()
      if (queue.dropped === 1 || now - queue.lastWarning >= dropWarningIntervalMs) {
        queue.lastWarning = now
        log.warn(`${triggerType} trigger ${queue.target.id} has ${maxQueued} undelivered events; dropped the oldest`, {
          trigger_id: queue.target.id,
          function_id: queue.target.function_id,
          dropped: queue.dropped,
        })
      }
    }
    queue.items.push(delivery)
    if (!queue.draining) {
      queue.draining = true
      setImmediate(() => void this.drain(queue))
    }
  }

  private async drain(queue: Queue<E>): Promise<void> {
    try {
      for (;;) {
        if (this.stopped || queue.removed) return
        const delivery = queue.items.shift()
        if (!delivery) break
        await this.deliver(queue, delivery)
      }
      queue.dropped = 0
      queue.lastWarning = -Infinity
    } finally {
      queue.draining = false
    }
  }

  /** One delivery (§2.5 rule 4): condition then handler, together within the budget. */
  private async deliver(queue: Queue<E>, { event, origin }: Delivery<E>): Promise<void> {
    const target = queue.target
    const { timeoutMs: budget, clock, worker } = this.options
    const started = clock.now()
    const trace: TraceOrigin = {}
    const hub = this.options.telemetry
    // Only when a span may be recorded: otherwise a delivery costs no span work at all.
    const span = hub?.recording(origin?.traceparent) === true ? this.startSpan(hub, target, origin?.traceparent) : undefined
    const traceparent = span !== undefined ? span.traceparent : origin?.traceparent
    if (traceparent !== undefined) trace.traceparent = traceparent
    if (origin?.baggage !== undefined) trace.baggage = origin.baggage

    if (queue.condition) {
      const outcome = await queue.condition(event, { timeoutMs: budget, ...trace })
      if (!outcome.run) {
        if (outcome.failed) this.failed(queue, 'condition failed; event not delivered', target.condition_function_id!, outcome.error, span)
        else span?.end('ok')
        return
      }
    }

    // The handler gets what the condition left of the budget; a timeout names the whole budget.
    const remaining = queue.condition ? Math.floor(budget - (clock.now() - started)) : budget
    if (remaining <= 0) {
      this.failed(queue, 'delivery timed out', target.function_id, Errors.timeout(budget), span)
      return
    }
    const request: LocalInvokeRequest = { function_id: target.function_id, data: event, namespace: target.namespace, timeoutMs: remaining, ...trace }
    if (target.metadata !== undefined && target.metadata !== null) request.metadata = target.metadata
    try {
      await worker.invoke(request)
      span?.end('ok')
    } catch (error) {
      const timedOut = errorBodyOf(error).code === 'TIMEOUT'
      this.failed(queue, timedOut ? 'delivery timed out' : 'handler failed', target.function_id, timedOut ? Errors.timeout(budget) : error, span)
    }
  }

  /** The span of one delivery (§12.7): `trigger <type> <function_id>` unless the target names its own. */
  private startSpan(hub: TelemetryHub, target: FanOutTarget, parent: string | undefined): ActiveSpan | undefined {
    const { triggerType, workerName } = this.options
    return hub.startSpan({
      name: target.span_name ?? `trigger ${triggerType} ${target.function_id}`,
      kind: 'internal',
      parent,
      attributes: hub.deliveryAttributes(target.function_id, target.namespace, { worker: workerName ?? triggerType, triggerType, triggerId: target.id }),
    })
  }

  private failed(queue: Queue<E>, what: string, functionId: string, error: unknown, span?: ActiveSpan): void {
    if (span !== undefined) {
      const body = errorBodyOf(error)
      span.end('error', body.message, { 'svc.error.code': body.code })
    }
    if (this.stopped) return
    const { code, message } = errorBodyOf(error)
    this.options.log.error(`${this.options.triggerType} trigger ${queue.target.id}: ${what}`, {
      trigger_id: queue.target.id,
      function_id: functionId,
      code,
      message,
    })
  }
}
