/**
 * The `state` trigger type (builtins.md §4.3) and its reactive fan-out (§2.5).
 *
 * A committed change is matched against the bindings synchronously, in commit order, and appended
 * to each matching binding's own FIFO. Each FIFO is drained by one loop that delivers one event at
 * a time (condition, then handler); loops of different bindings run concurrently. Draining starts
 * on a later turn of the event loop, so the writer's answer always leaves first.
 */
import { performance } from 'node:perf_hooks'
import { SvcError, errorBodyOf, Errors } from 'svc-protocol/errors'
import type { StateChange, StateWriteOrigin } from '../../adapters/state/types.ts'
import type { BindingInfo, LocalInvokeRequest, LocalTriggerProvider, LocalWorker, Logger } from '../../engine/types.ts'
import type { StateEventData, StateTriggerConfig } from './types.ts'

/** Undelivered events a binding may hold before the oldest is dropped (§2.5 rule 5). */
export const MAX_QUEUED_EVENTS = 10_000

/** Drops are logged on the first one and then every this many, so a flood cannot flood the log. */
const DROP_LOG_EVERY = 1000

interface Delivery {
  event: StateEventData<unknown>
  origin: StateWriteOrigin | undefined
}

interface ActiveTrigger {
  binding: BindingInfo
  config: StateTriggerConfig
  readonly queue: Fifo<Delivery>
  /** True while a drain loop owns the queue (scheduled or running). */
  draining: boolean
  /** Events dropped since the queue was last empty. */
  dropped: number
  removed: boolean
}

export interface StateTriggerDeps {
  worker: LocalWorker
  log: Logger
  /** `internal_invocation_timeout_ms`: the budget of one delivery, condition plus handler (§2.5 rule 4). */
  timeoutMs: number
}

/**
 * Validates a `state` trigger config (§4.3). Missing or `null` config and fields mean "no filter".
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field.
 */
export function parseStateTriggerConfig(config: unknown): StateTriggerConfig {
  if (config === undefined || config === null) return {}
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new SvcError('INVALID_TRIGGER_CONFIG', 'config must be an object for state triggers')
  }
  const source = config as Record<string, unknown>
  const result: StateTriggerConfig = {}
  for (const field of ['scope', 'key'] as const) {
    const value = source[field]
    if (value === undefined || value === null) continue
    if (typeof value !== 'string') {
      throw new SvcError('INVALID_TRIGGER_CONFIG', `${field} must be a string for state triggers`)
    }
    result[field] = value
  }
  const condition = source.condition_function_id
  if (condition !== undefined && condition !== null) {
    if (typeof condition !== 'string' || condition === '') {
      throw new SvcError('INVALID_TRIGGER_CONFIG', 'condition_function_id must be a non-empty string for state triggers')
    }
    result.condition_function_id = condition
  }
  return result
}

/** The event payload of a committed change (§4.3). */
export function stateEvent(change: StateChange): StateEventData<unknown> {
  const event_type =
    change.new_value === undefined ? 'state:deleted' : change.old_value === undefined ? 'state:created' : 'state:updated'
  return {
    type: 'state',
    message_type: 'state',
    event_type,
    scope: change.scope,
    key: change.key,
    old_value: change.old_value ?? null,
    new_value: change.new_value ?? null,
  }
}

/**
 * Provider of the `state` trigger type and owner of every binding's delivery queue.
 *
 * @example
 * const triggers = new StateTriggers({ worker, log, timeoutMs: 30000 })
 * worker.registerTriggerType({ id: 'state', description: '…' }, triggers)
 * adapter.subscribe((change) => triggers.publish(change))
 */
export class StateTriggers implements LocalTriggerProvider {
  private readonly deps: StateTriggerDeps
  private readonly byId = new Map<string, ActiveTrigger>()
  /** Bindings filtered on a scope, by scope; the others are in {@link anyScope}. */
  private readonly byScope = new Map<string, Set<ActiveTrigger>>()
  private readonly anyScope = new Set<ActiveTrigger>()
  private enabled = true
  private stopped = false

  constructor(deps: StateTriggerDeps) {
    this.deps = deps
  }

  registerTrigger(binding: BindingInfo): void {
    const config = parseStateTriggerConfig(binding.config)
    const existing = this.byId.get(binding.id)
    if (existing) {
      // A known id is a replacement (protocol.md §5.5): keep its queue, change what it matches.
      this.unindex(existing)
      existing.binding = binding
      existing.config = config
      this.index(existing)
      return
    }
    const trigger: ActiveTrigger = { binding, config, queue: new Fifo(), draining: false, dropped: 0, removed: false }
    this.byId.set(binding.id, trigger)
    this.index(trigger)
  }

  unregisterTrigger(binding: BindingInfo): void {
    const trigger = this.byId.get(binding.id)
    if (!trigger) return
    this.byId.delete(binding.id)
    this.unindex(trigger)
    trigger.removed = true
    trigger.queue.clear()
  }

  /**
   * Queues the event of a committed change for every matching binding. Synchronous, so events
   * enter the queues in commit order and a binding registered later never sees this change.
   */
  publish(change: StateChange): void {
    if (!this.enabled || this.stopped || this.byId.size === 0) return
    const scoped = this.byScope.get(change.scope)
    if (!scoped && this.anyScope.size === 0) return
    const event = stateEvent(change)
    for (const set of [scoped, this.anyScope]) {
      if (!set) continue
      for (const trigger of set) {
        if (trigger.config.key !== undefined && trigger.config.key !== change.key) continue
        this.enqueue(trigger, { event, origin: change.origin })
      }
    }
  }

  /** `triggers_enabled` (§4.1): when off, nothing is queued and what was queued is dropped. */
  setEnabled(enabled: boolean): void {
    this.enabled = enabled
    if (!enabled) for (const trigger of this.byId.values()) trigger.queue.clear()
  }

  /** Drops every queued event; deliveries in flight finish without being logged. */
  stop(): void {
    this.stopped = true
    for (const trigger of this.byId.values()) trigger.queue.clear()
  }

  private index(trigger: ActiveTrigger): void {
    const scope = trigger.config.scope
    if (scope === undefined) {
      this.anyScope.add(trigger)
      return
    }
    let set = this.byScope.get(scope)
    if (!set) this.byScope.set(scope, (set = new Set()))
    set.add(trigger)
  }

  private unindex(trigger: ActiveTrigger): void {
    const scope = trigger.config.scope
    if (scope === undefined) {
      this.anyScope.delete(trigger)
      return
    }
    const set = this.byScope.get(scope)
    set?.delete(trigger)
    if (set?.size === 0) this.byScope.delete(scope)
  }

  private enqueue(trigger: ActiveTrigger, delivery: Delivery): void {
    if (trigger.queue.length >= MAX_QUEUED_EVENTS) {
      trigger.queue.shift()
      trigger.dropped++
      if (trigger.dropped === 1 || trigger.dropped % DROP_LOG_EVERY === 0) {
        this.deps.log.warn(
          `state trigger ${trigger.binding.id} has ${MAX_QUEUED_EVENTS} undelivered events; dropped the oldest`,
          { trigger_id: trigger.binding.id, function_id: trigger.binding.function_id, dropped: trigger.dropped },
        )
      }
    }
    trigger.queue.push(delivery)
    if (!trigger.draining) {
      trigger.draining = true
      setImmediate(() => void this.drain(trigger))
    }
  }

  private async drain(trigger: ActiveTrigger): Promise<void> {
    try {
      for (;;) {
        if (this.stopped || trigger.removed) return
        const delivery = trigger.queue.shift()
        if (!delivery) break
        await this.deliver(trigger, delivery)
      }
      trigger.dropped = 0
    } finally {
      trigger.draining = false
    }
  }

  /** One delivery (§2.5 rule 4): condition then handler, together within the timeout. */
  private async deliver(trigger: ActiveTrigger, { event, origin }: Delivery): Promise<void> {
    const { binding, config } = trigger
    const budget = this.deps.timeoutMs
    const started = performance.now()
    const request: Omit<LocalInvokeRequest, 'function_id'> = { data: event, namespace: binding.namespace }
    if (binding.metadata !== undefined && binding.metadata !== null) request.metadata = binding.metadata
    if (origin?.traceparent !== undefined) request.traceparent = origin.traceparent
    if (origin?.baggage !== undefined) request.baggage = origin.baggage

    if (config.condition_function_id !== undefined) {
      const conditionId = config.condition_function_id
      try {
        const verdict = await this.deps.worker.invoke({ ...request, function_id: conditionId, timeoutMs: budget })
        if (verdict === false) return
      } catch (error) {
        this.failed('condition failed; event not delivered', trigger, conditionId, error)
        return
      }
    }

    // The handler gets what the condition left of the budget; a timeout names the whole budget.
    const remaining = config.condition_function_id === undefined ? budget : Math.floor(budget - (performance.now() - started))
    if (remaining <= 0) {
      this.failed('delivery timed out', trigger, binding.function_id, Errors.timeout(budget))
      return
    }
    try {
      await this.deps.worker.invoke({ ...request, function_id: binding.function_id, timeoutMs: remaining })
    } catch (error) {
      const timedOut = errorBodyOf(error).code === 'TIMEOUT'
      this.failed(timedOut ? 'delivery timed out' : 'handler failed', trigger, binding.function_id, timedOut ? Errors.timeout(budget) : error)
    }
  }

  private failed(what: string, trigger: ActiveTrigger, functionId: string, error: unknown): void {
    if (this.stopped) return
    const { code, message } = errorBodyOf(error)
    this.deps.log.error(`state trigger ${trigger.binding.id}: ${what}`, {
      trigger_id: trigger.binding.id,
      function_id: functionId,
      code,
      message,
    })
  }
}

/** A first-in first-out queue with O(1) push and shift (an array's shift is O(n)). */
class Fifo<T> {
  private items: Array<T | undefined> = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined
    // Compact once the consumed prefix dominates, keeping memory proportional to what is queued.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  clear(): void {
    this.items = []
    this.head = 0
  }
}
