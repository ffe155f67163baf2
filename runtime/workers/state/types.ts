/**
 * Inputs, results and events of the state worker (builtins.md §4.2–§4.3), as a caller sees them on
 * the wire. These are the shapes `svc-sdk/state` exports to users (sdk.md §10).
 */
import type { UpdateOp, UpdateOpError } from '../../update-ops/types.ts'

export type { UpdateOp, UpdateOpError }

/** `state::get`, `state::delete`. */
export interface StateKeyInput {
  scope: string
  key: string
}

/** `state::set`; `data` is accepted for `value`. */
export interface StateSetInput<T = unknown> extends StateKeyInput {
  value: T
}

/** `state::set` result; `old_value` is `null` when the key was new. */
export interface StateSetResult<T = unknown> {
  old_value: T | null
  new_value: T
}

/** `state::delete` result: `{old_value}`, or `{}` when the key was absent. */
export interface StateDeleteResult<T = unknown> {
  old_value?: T
}

/** `state::update`. */
export interface StateUpdateInput extends StateKeyInput {
  ops: UpdateOp[]
}

/** `state::update` result (builtins.md §5.3); `errors` is omitted when every op applied. */
export interface StateUpdateResult<T = unknown> {
  old_value: T | null
  new_value: T
  errors?: UpdateOpError[]
}

/** `state::list`: the result is the scope's values ordered by key. */
export interface StateListInput {
  scope: string
}

/** `state::list_keys`, `state::list_entries`. */
export interface StatePageInput {
  scope: string
  /** Only keys starting with this string. */
  prefix?: string
  /** Default 0. */
  offset?: number
  /** Default 100, at most 1000. */
  limit?: number
}

export interface StateListKeysResult {
  keys: string[]
  /** Keys matching the prefix in the whole scope. */
  total: number
  offset: number
  limit: number
}

export interface StateListEntriesResult<T = unknown> {
  entries: Array<{ key: string; value: T }>
  total: number
  offset: number
  limit: number
}

/** `state::list_groups` result: the scopes holding at least one key, sorted. */
export interface StateListGroupsResult {
  groups: string[]
}

/** Config of a `state` trigger (§4.3). Absent filters match everything. */
export interface StateTriggerConfig {
  scope?: string
  key?: string
  condition_function_id?: string
}

export type StateEventType = 'state:created' | 'state:updated' | 'state:deleted'

/**
 * Payload delivered to `state` triggers and their conditions (§4.3). `old_value` is `null` on
 * creation, `new_value` is `null` on deletion.
 */
export interface StateEventData<T = unknown> {
  type: 'state'
  message_type: 'state'
  event_type: StateEventType
  scope: string
  key: string
  old_value: T | null
  new_value: T | null
}
