/**
 * The `state` trigger type (builtins.md §4.3) and its reactive fan-out (§2.5).
 *
 * A committed change is matched against the bindings synchronously, in commit order, and pushed
 * to each matching binding's queue of the kit's ordered fan-out (../shared/fanout.ts), which
 * delivers one event at a time per binding (condition, then handler) on later turns of the event
 * loop, so the writer's answer always leaves first.
 */
import { Errors } from 'svc-protocol/errors'
import type { StateChange } from '../../adapters/state/types.ts'
import type { TelemetryHub } from '../../engine/telemetry.ts'
import type { BindingInfo, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker, Logger } from '../../engine/types.ts'
import type { Clock } from '../shared/clock.ts'
import { OrderedFanOut, type FanOutOptions, type FanOutQueue } from '../shared/fanout.ts'
import type { StateEventData, StateTriggerConfig } from './types.ts'

/** The `state` trigger type as the worker registers it (§4.3). */
export const STATE_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'state',
  description: 'Fires on every change of a state key (state:created, state:updated, state:deleted)',
  trigger_request_format: {
    type: 'object',
    properties: {
      scope: { type: 'string', description: 'exact scope; absent matches every scope' },
      key: { type: 'string', description: 'exact key; absent matches every key' },
      condition_function_id: { type: 'string' },
    },
  },
  call_request_format: {
    type: 'object',
    required: ['type', 'message_type', 'event_type', 'scope', 'key', 'old_value', 'new_value'],
    properties: {
      type: { type: 'string' },
      message_type: { type: 'string' },
      event_type: { type: 'string', enum: ['state:created', 'state:updated', 'state:deleted'] },
      scope: { type: 'string' },
      key: { type: 'string' },
      old_value: {},
      new_value: {},
    },
  },
}

export { MAX_QUEUED_EVENTS } from '../shared/fanout.ts'

interface ActiveTrigger {
  config: StateTriggerConfig
  readonly queue: FanOutQueue<StateEventData<unknown>>
}

export interface StateTriggerDeps {
  worker: LocalWorker
  log: Logger
  /** `internal_invocation_timeout_ms`: the budget of one delivery, condition plus handler (§2.5 rule 4). */
  timeoutMs: number
  /** Default: the system clock. */
  clock?: Clock
  /** Delivery spans `trigger state <function_id>` (builtins.md §12.7) go here. */
  telemetry?: TelemetryHub
}

/**
 * Validates a `state` trigger config (§4.3). Missing or `null` config and fields mean "no filter".
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field.
 */
export function parseStateTriggerConfig(config: unknown): StateTriggerConfig {
  if (config === undefined || config === null) return {}
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw Errors.invalidTriggerConfig('config must be an object for state triggers')
  }
  const source = config as Record<string, unknown>
  const result: StateTriggerConfig = {}
  for (const field of ['scope', 'key'] as const) {
    const value = source[field]
    if (value === undefined || value === null) continue
    if (typeof value !== 'string') {
      throw Errors.invalidTriggerConfig(`${field} must be a string for state triggers`)
    }
    result[field] = value
  }
  const condition = source.condition_function_id
  if (condition !== undefined && condition !== null) {
    if (typeof condition !== 'string' || condition === '') {
      throw Errors.invalidTriggerConfig('condition_function_id must be a non-empty string for state triggers')
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
  private readonly fanOut: OrderedFanOut<StateEventData<unknown>>
  private readonly byId = new Map<string, ActiveTrigger>()
  /** Bindings filtered on a scope, by scope; the others are in {@link anyScope}. */
  private readonly byScope = new Map<string, Set<ActiveTrigger>>()
  private readonly anyScope = new Set<ActiveTrigger>()
  private enabled = true
  private stopped = false

  constructor(deps: StateTriggerDeps) {
    const options: FanOutOptions = { worker: deps.worker, log: deps.log, timeoutMs: deps.timeoutMs, triggerType: 'state', workerName: 'svc-state' }
    if (deps.clock) options.clock = deps.clock
    if (deps.telemetry) options.telemetry = deps.telemetry
    this.fanOut = new OrderedFanOut(options)
  }

  registerTrigger(binding: BindingInfo): void {
    const config = parseStateTriggerConfig(binding.config)
    // A known id is a replacement (protocol.md §5.5): the fan-out keeps its queue; what it matches changes.
    const queue = this.fanOut.registerBinding(binding, config.condition_function_id)
    const existing = this.byId.get(binding.id)
    if (existing) {
      this.unindex(existing)
      existing.config = config
      this.index(existing)
      return
    }
    const trigger: ActiveTrigger = { config, queue }
    this.byId.set(binding.id, trigger)
    this.index(trigger)
  }

  unregisterTrigger(binding: BindingInfo): void {
    const trigger = this.byId.get(binding.id)
    if (!trigger) return
    this.byId.delete(binding.id)
    this.unindex(trigger)
    this.fanOut.unregister(binding.id)
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
        trigger.queue.push(event, change.origin)
      }
    }
  }

  /** `triggers_enabled` (§4.1): when off, nothing is queued and what was queued is dropped. */
  setEnabled(enabled: boolean): void {
    this.enabled = enabled
    if (!enabled) this.fanOut.clear()
  }

  /** Drops every queued event; deliveries in flight finish without being logged. */
  stop(): void {
    this.stopped = true
    this.fanOut.stop()
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
}
