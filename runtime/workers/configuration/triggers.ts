/**
 * The `configuration` trigger type (builtins.md §11.3): bindings filtered by entry id and event
 * type, each committed change of an entry delivered through the kit's ordered fan-out (§2.5).
 */
import { Errors } from 'svc-protocol/errors'
import type { BindingInfo, BuiltinContext, LocalTriggerProvider, LocalTriggerTypeOptions } from '../../engine/types.ts'
import { OrderedFanOut, type FanOutOptions, type FanOutQueue, type TraceOrigin } from '../shared/fanout.ts'

/** The event types of the `configuration` trigger (§11.3). */
export const CONFIGURATION_EVENT_TYPES = ['configuration:registered', 'configuration:updated', 'configuration:deleted'] as const
export type ConfigurationEventType = (typeof CONFIGURATION_EVENT_TYPES)[number]

/** The payload of a `configuration` trigger (§11.3); values expanded where they can be. */
export interface ConfigurationEvent {
  type: 'configuration'
  event_type: ConfigurationEventType
  id: string
  name: string
  description: string
  old_value: unknown
  new_value: unknown
}

/** The `configuration` trigger type as the worker registers it (§11.3). */
export const CONFIGURATION_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'configuration',
  description: 'Fires when a settings entry is registered, updated or deleted',
  trigger_request_format: {
    type: 'object',
    properties: {
      configuration_id: { type: 'string', description: 'exact entry id; absent matches every entry' },
      event_types: { type: 'array', items: { type: 'string', enum: [...CONFIGURATION_EVENT_TYPES] } },
      condition_function_id: { type: 'string' },
    },
  },
  call_request_format: {
    type: 'object',
    required: ['type', 'event_type', 'id', 'name', 'description', 'old_value', 'new_value'],
    properties: {
      type: { type: 'string' },
      event_type: { type: 'string', enum: [...CONFIGURATION_EVENT_TYPES] },
      id: { type: 'string' },
      name: { type: 'string' },
      description: { type: 'string' },
      old_value: {},
      new_value: {},
    },
  },
}

/** A validated `configuration` trigger config (§11.3); absent filters match everything. */
export interface ConfigurationTriggerConfig {
  configuration_id?: string
  event_types?: ConfigurationEventType[]
  condition_function_id?: string
}

/**
 * Validates a `configuration` trigger config (§11.3).
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field.
 */
export function parseConfigurationTriggerConfig(config: unknown): ConfigurationTriggerConfig {
  if (config === undefined || config === null) return {}
  if (typeof config !== 'object' || Array.isArray(config)) throw Errors.invalidTriggerConfig('config must be an object for configuration triggers')
  const source = config as Record<string, unknown>
  const result: ConfigurationTriggerConfig = {}
  const id = source.configuration_id
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string') throw Errors.invalidTriggerConfig('configuration_id must be a string for configuration triggers')
    result.configuration_id = id
  }
  const types = source.event_types
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.some((t) => !(CONFIGURATION_EVENT_TYPES as readonly unknown[]).includes(t))) {
      throw Errors.invalidTriggerConfig(`event_types must be an array of ${CONFIGURATION_EVENT_TYPES.join(', ')}`)
    }
    result.event_types = types as ConfigurationEventType[]
  }
  const condition = source.condition_function_id
  if (condition !== undefined && condition !== null) {
    if (typeof condition !== 'string' || condition === '') throw Errors.invalidTriggerConfig('condition_function_id must be a non-empty string for configuration triggers')
    result.condition_function_id = condition
  }
  return result
}

/**
 * Provider of the `configuration` trigger type: {@link ConfigurationTriggers.publish} queues an
 * event on the fan-out queue of every binding whose `configuration_id` and `event_types` match.
 */
export class ConfigurationTriggers implements LocalTriggerProvider {
  private readonly fanOut: OrderedFanOut<ConfigurationEvent>
  private readonly bindings = new Map<string, { config: ConfigurationTriggerConfig; queue: FanOutQueue<ConfigurationEvent> }>()

  constructor(context: BuiltinContext) {
    const options: FanOutOptions = { worker: context.worker, log: context.log, timeoutMs: context.internalInvocationTimeoutMs, triggerType: 'configuration', workerName: 'configuration' }
    if (context.telemetry) options.telemetry = context.telemetry
    this.fanOut = new OrderedFanOut(options)
  }

  registerTrigger(binding: BindingInfo): void {
    const config = parseConfigurationTriggerConfig(binding.config)
    const queue = this.fanOut.registerBinding(binding, config.condition_function_id)
    this.bindings.set(binding.id, { config, queue })
  }

  unregisterTrigger(binding: BindingInfo): void {
    this.bindings.delete(binding.id)
    this.fanOut.unregister(binding.id)
  }

  publish(event: ConfigurationEvent, origin?: TraceOrigin): void {
    for (const { config, queue } of this.bindings.values()) {
      if (config.configuration_id !== undefined && config.configuration_id !== event.id) continue
      if (config.event_types !== undefined && !config.event_types.includes(event.event_type)) continue
      queue.push(event, origin)
    }
  }

  stop(): void {
    this.fanOut.stop()
  }
}
