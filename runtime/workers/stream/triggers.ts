/**
 * The trigger types of the stream worker: `stream` (builtins.md §6.4), delivered through the kit's
 * ordered fan-out (§2.5), and the join/leave hooks `stream:join` / `stream:leave` (§6.5).
 */
import { Errors, errorBodyOf } from 'svc-protocol/errors'
import type { StreamChangeEvent, StreamJoinLeaveEvent, StreamJoinLeaveTriggerConfig, StreamTriggerConfig } from 'svc-protocol'
import type { StreamAdapterChange } from '../../adapters/stream/index.ts'
import type { BindingInfo, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker, Logger } from '../../engine/types.ts'
import { createCondition, type Condition } from '../shared/conditions.ts'
import type { TelemetryHub } from '../../engine/telemetry.ts'
import { OrderedFanOut, type FanOutOptions, type FanOutQueue, type TraceOrigin } from '../shared/fanout.ts'
import { JOIN_LEAVE_PAYLOAD, STREAM_CHANGE_EVENT } from './formats.ts'

/** The `stream` trigger type as the worker registers it (§6.4). */
export const STREAM_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'stream',
  description: 'Fires on every change of a stream item (create, update, delete) and on stream::send',
  trigger_request_format: {
    type: 'object',
    required: ['stream_name'],
    properties: { stream_name: { type: 'string' }, group_id: { type: 'string' }, item_id: { type: 'string' }, condition_function_id: { type: 'string' } },
  },
  call_request_format: STREAM_CHANGE_EVENT,
}

const JOIN_LEAVE_FORMAT = {
  trigger_request_format: {
    type: 'object',
    properties: { stream_name: { type: 'string' }, group_id: { type: 'string' }, condition_function_id: { type: 'string' } },
  },
  call_request_format: JOIN_LEAVE_PAYLOAD,
} as const

/** The `stream:join` trigger type as the worker registers it (§6.5). */
export const STREAM_JOIN_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'stream:join',
  description: 'Runs before a WebSocket client joins a stream group; may refuse the join',
  ...JOIN_LEAVE_FORMAT,
}

/** The `stream:leave` trigger type as the worker registers it (§6.5). */
export const STREAM_LEAVE_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'stream:leave',
  description: 'Runs after a WebSocket client left a stream group',
  ...JOIN_LEAVE_FORMAT,
}

/** The §6.3 event of a change from an adapter's change feed: an item change, or a `stream::send`. */
export function changeEventOf(change: StreamAdapterChange): StreamChangeEvent<unknown> {
  if (change.kind === 'send') {
    return { type: 'stream', timestamp: Date.now(), streamName: change.stream_name, groupId: change.group_id, id: change.id, event: { type: 'event', event: { type: change.type, data: change.data } } }
  }
  return itemChangeEvent(change.stream_name, change.group_id, change.item_id, change.old_value, change.new_value)
}

/**
 * The §6.3 event of an item change: `create` when there was no old value, `update`, or `delete`
 * when `newValue` is undefined (its data the old value, null when unknown).
 */
export function itemChangeEvent(stream: string, group: string, item: string, oldValue: unknown, newValue: unknown): StreamChangeEvent<unknown> {
  const event =
    newValue === undefined
      ? { type: 'delete' as const, data: oldValue ?? null }
      : { type: oldValue === undefined || oldValue === null ? ('create' as const) : ('update' as const), data: newValue }
  return { type: 'stream', timestamp: Date.now(), streamName: stream, groupId: group, id: item, event }
}

function optionalString(source: Record<string, unknown>, field: string, type: string): string | undefined {
  const value = source[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw Errors.invalidTriggerConfig(`${field} must be a string for ${type} triggers`)
  return value
}

function conditionOf(source: Record<string, unknown>, type: string): string | undefined {
  const value = source.condition_function_id
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value === '') {
    throw Errors.invalidTriggerConfig(`condition_function_id must be a non-empty string for ${type} triggers`)
  }
  return value
}

function objectOf(config: unknown, type: string): Record<string, unknown> {
  if (config === undefined || config === null) return {}
  if (typeof config !== 'object' || Array.isArray(config)) throw Errors.invalidTriggerConfig(`config must be an object for ${type} triggers`)
  return config as Record<string, unknown>
}

/**
 * Validates a `stream` trigger config (§6.4); empty `group_id`/`item_id` mean "no filter".
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field (`stream_name is required for stream triggers`).
 */
export function parseStreamTriggerConfig(config: unknown): StreamTriggerConfig {
  const source = objectOf(config, 'stream')
  const stream_name = optionalString(source, 'stream_name', 'stream')
  if (stream_name === undefined || stream_name === '') throw Errors.invalidTriggerConfig('stream_name is required for stream triggers')
  const result: StreamTriggerConfig = { stream_name }
  const group = optionalString(source, 'group_id', 'stream')
  if (group) result.group_id = group
  const item = optionalString(source, 'item_id', 'stream')
  if (item) result.item_id = item
  const condition = conditionOf(source, 'stream')
  if (condition) result.condition_function_id = condition
  return result
}

/**
 * Validates a `stream:join` / `stream:leave` config (§6.5); absent filters match everything.
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field.
 */
export function parseJoinLeaveTriggerConfig(config: unknown, type: string): StreamJoinLeaveTriggerConfig {
  const source = objectOf(config, type)
  const result: StreamJoinLeaveTriggerConfig = {}
  const stream = optionalString(source, 'stream_name', type)
  if (stream !== undefined) result.stream_name = stream
  const group = optionalString(source, 'group_id', type)
  if (group !== undefined) result.group_id = group
  const condition = conditionOf(source, type)
  if (condition) result.condition_function_id = condition
  return result
}

interface ActiveStreamTrigger {
  config: StreamTriggerConfig
  readonly queue: FanOutQueue<StreamChangeEvent<unknown>>
}

/**
 * Provider of the `stream` trigger type: matches each change event against the bindings of its
 * stream and queues it, in commit order, on each matching binding's fan-out queue.
 *
 * @example
 * const triggers = new StreamTriggers({ worker, log, timeoutMs: 30_000 })
 * worker.registerTriggerType({ id: 'stream', description: '…' }, triggers)
 * triggers.publish(event)
 */
export class StreamTriggers implements LocalTriggerProvider {
  private readonly fanOut: OrderedFanOut<StreamChangeEvent<unknown>>
  private readonly byId = new Map<string, ActiveStreamTrigger>()
  private readonly byStream = new Map<string, Set<ActiveStreamTrigger>>()

  /** `telemetry`: where delivery spans `trigger stream <function_id>` (builtins.md §12.7) go. */
  constructor(deps: { worker: LocalWorker; log: Logger; timeoutMs: number; telemetry?: TelemetryHub | undefined }) {
    const options: FanOutOptions = { worker: deps.worker, log: deps.log, timeoutMs: deps.timeoutMs, triggerType: 'stream', workerName: 'svc-stream' }
    if (deps.telemetry) options.telemetry = deps.telemetry
    this.fanOut = new OrderedFanOut(options)
  }

  registerTrigger(binding: BindingInfo): void {
    const config = parseStreamTriggerConfig(binding.config)
    const queue = this.fanOut.registerBinding(binding, config.condition_function_id)
    const existing = this.byId.get(binding.id)
    if (existing) this.unindex(existing)
    const trigger: ActiveStreamTrigger = existing ?? { config, queue }
    trigger.config = config
    this.byId.set(binding.id, trigger)
    let set = this.byStream.get(config.stream_name)
    if (!set) this.byStream.set(config.stream_name, (set = new Set()))
    set.add(trigger)
  }

  unregisterTrigger(binding: BindingInfo): void {
    const trigger = this.byId.get(binding.id)
    if (!trigger) return
    this.byId.delete(binding.id)
    this.unindex(trigger)
    this.fanOut.unregister(binding.id)
  }

  /** Queues `event` for every matching binding; synchronous, so queues keep commit order. */
  publish(event: StreamChangeEvent<unknown>, origin?: TraceOrigin): void {
    const set = this.byStream.get(event.streamName)
    if (!set) return
    for (const { config, queue } of set) {
      if (config.group_id !== undefined && config.group_id !== event.groupId) continue
      if (config.item_id !== undefined && config.item_id !== event.id) continue
      queue.push(event, origin)
    }
  }

  stop(): void {
    this.fanOut.stop()
  }

  private unindex(trigger: ActiveStreamTrigger): void {
    const set = this.byStream.get(trigger.config.stream_name)
    set?.delete(trigger)
    if (set?.size === 0) this.byStream.delete(trigger.config.stream_name)
  }
}

interface Hook {
  binding: BindingInfo
  config: StreamJoinLeaveTriggerConfig
  condition: Condition | null
}

/**
 * Provider of `stream:join` or `stream:leave` (§6.5): the hooks, in registration order, run one
 * after another for each join or leave of a client subscription.
 */
export class JoinLeaveHooks implements LocalTriggerProvider {
  private readonly hooks = new Map<string, Hook>()
  private readonly type: 'stream:join' | 'stream:leave'
  private readonly worker: LocalWorker
  private readonly log: Logger
  private readonly timeoutMs: number

  constructor(type: 'stream:join' | 'stream:leave', deps: { worker: LocalWorker; log: Logger; timeoutMs: number }) {
    this.type = type
    this.worker = deps.worker
    this.log = deps.log
    this.timeoutMs = deps.timeoutMs
  }

  registerTrigger(binding: BindingInfo): void {
    const config = parseJoinLeaveTriggerConfig(binding.config, this.type)
    const condition = createCondition(this.worker, {
      condition_function_id: config.condition_function_id,
      namespace: binding.namespace,
      metadata: binding.metadata,
    })
    this.hooks.set(binding.id, { binding, config, condition })
  }

  unregisterTrigger(binding: BindingInfo): void {
    this.hooks.delete(binding.id)
  }

  /**
   * Runs the matching hooks one after another with `payload`. For joins, resolves `false` as soon
   * as one hook refuses (returns `{unauthorized: true}`, fails or times out), else `true`; a hook
   * whose condition returned `false` or failed is skipped (§2.2). Leave hook results are ignored.
   */
  async run(payload: StreamJoinLeaveEvent<unknown>): Promise<boolean> {
    for (const hook of [...this.hooks.values()]) {
      if (!this.hooks.has(hook.binding.id)) continue
      const { stream_name, group_id } = hook.config
      if (stream_name !== undefined && stream_name !== '' && stream_name !== payload.stream_name) continue
      if (group_id !== undefined && group_id !== '' && group_id !== payload.group_id) continue
      if (hook.condition) {
        const outcome = await hook.condition(payload, { timeoutMs: this.timeoutMs })
        if (!outcome.run) {
          if (outcome.failed) this.logFailure(hook, 'condition failed; hook not called', hook.config.condition_function_id!, outcome.error)
          continue
        }
      }
      const { binding } = hook
      try {
        const request = { function_id: binding.function_id, data: payload, namespace: binding.namespace, timeoutMs: this.timeoutMs }
        const result = await this.worker.invoke(
          binding.metadata !== undefined && binding.metadata !== null ? { ...request, metadata: binding.metadata } : request,
        )
        if (this.type === 'stream:join' && isRefusal(result)) return false
      } catch (error) {
        this.logFailure(hook, this.type === 'stream:join' ? 'join hook failed; join refused' : 'leave hook failed', binding.function_id, error)
        if (this.type === 'stream:join') return false
      }
    }
    return true
  }

  private logFailure(hook: Hook, what: string, functionId: string, error: unknown): void {
    const { code, message } = errorBodyOf(error)
    this.log.error(`${this.type} trigger ${hook.binding.id}: ${what}`, { trigger_id: hook.binding.id, function_id: functionId, code, message })
  }
}

function isRefusal(result: unknown): boolean {
  return typeof result === 'object' && result !== null && (result as Record<string, unknown>).unauthorized === true
}
