/**
 * Inputs, results and events of the configuration worker (`configuration`, builtins.md §11).
 * Types only.
 */
import type { UpdateOp, UpdateOpError } from './state.ts'

/** Kinds of change a `configuration` trigger hears (§11.3). */
export type ConfigurationEventType = 'configuration:registered' | 'configuration:updated' | 'configuration:deleted'

/** `configuration::register` (§11.2). `id` matches `[a-z0-9_-]{1,64}`; `schema` is a JSON Schema (2020-12). */
export interface ConfigurationRegisterInput<T = unknown> {
  id: string
  name?: string
  description?: string
  schema: Record<string, unknown>
  /** Stored only when the entry holds no value yet; default `{}`. */
  initial_value?: T
  metadata?: Record<string, unknown>
}

/** Result of `configuration::register`: the entry with its stored (unexpanded) value. */
export interface ConfigurationEntry<T = unknown> {
  id: string
  name: string
  description: string
  schema: Record<string, unknown> | null
  value: T
  metadata?: Record<string, unknown>
}

/** `configuration::get`: the value expanded and validated, or as stored with `raw: true`. */
export interface ConfigurationGetInput {
  id: string
  raw?: boolean
}
export interface ConfigurationGetResult<T = unknown> {
  id: string
  value: T
}

/** `configuration::set`; `metadata`, when given, replaces the entry's (an svc addition). */
export interface ConfigurationSetInput<T = unknown> {
  id: string
  value: T
  metadata?: Record<string, unknown>
}
export interface ConfigurationSetResult<T = unknown> {
  old_value: T | null
  new_value: T
}

/** `configuration::update`: §5 operations; stored only if the result validates. */
export interface ConfigurationUpdateInput {
  id: string
  ops: UpdateOp[]
}
export interface ConfigurationUpdateResult<T = unknown> {
  old_value: T | null
  new_value: T
  errors?: UpdateOpError[]
}

/** `configuration::list`: every entry without its value, sorted by id. */
export interface ConfigurationListResult {
  configurations: Array<Omit<ConfigurationEntry, 'value'>>
}

/** Config of a `configuration` trigger (§11.3); absent fields match everything. */
export interface ConfigurationTriggerConfig {
  configuration_id?: string
  event_types?: ConfigurationEventType[]
  condition_function_id?: string
}

/** Payload of a `configuration` trigger; values expanded, `old_value` null on registration, `new_value` null on deletion. */
export interface ConfigurationEventData<T = unknown> {
  type: 'configuration'
  event_type: ConfigurationEventType
  id: string
  name: string
  description: string
  old_value: T | null
  new_value: T | null
}
