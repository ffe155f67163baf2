/**
 * Input, result and event types of the state worker (`svc-state`, builtins.md §4) and the update
 * operations shared with streams and configuration (builtins.md §5, sdk.md §10). Types only.
 *
 * @example
 * import type { StateSetResult } from 'svc-sdk/state'
 * const r = await client.trigger<StateSetInput<User>, StateSetResult<User>>({
 *   function_id: 'state::set', payload: { scope: 'users', key: 'u1', value: user },
 * })
 */
import type { JsonValue } from '../messages.ts'

/**
 * Where an operation applies: a string is one first-level field (dots are ordinary characters);
 * an array is one literal segment per element; `''`, `[]` or omitted is the root.
 */
export type MergePath = string | string[]

/** One update operation (builtins.md §5.2). Operations apply in order; a failing one is skipped. */
export type UpdateOp =
  | { type: 'set'; path?: MergePath; value: JsonValue | null }
  | { type: 'merge'; path?: MergePath; value: Record<string, JsonValue> }
  /** `by` defaults to 1. */
  | { type: 'increment'; path?: MergePath; by?: number }
  /** `by` defaults to 1. */
  | { type: 'decrement'; path?: MergePath; by?: number }
  | { type: 'append'; path?: MergePath; value: JsonValue }
  | { type: 'remove'; path?: MergePath }

/** A skipped operation: `op_index` is its zero-based index in `ops`; `code` e.g. `increment.not_number`. */
export interface UpdateOpError {
  op_index: number
  code: string
  message: string
  doc_url?: string
}

/** `state::get` input; the result is the stored value, or none when the key is absent. */
export interface StateGetInput {
  scope: string
  key: string
}

/** `state::set` input. */
export interface StateSetInput<T = JsonValue> {
  scope: string
  key: string
  value: T
}

/** `state::set` result; `old_value` is `null` when the key was new. */
export interface StateSetResult<T = JsonValue> {
  old_value: T | null
  new_value: T
}

/** `state::delete` input. */
export interface StateDeleteInput {
  scope: string
  key: string
}

/** `state::delete` result; `old_value` is present when the key existed. */
export interface StateDeleteResult<T = JsonValue> {
  old_value?: T
}

/** `state::update` input. */
export interface StateUpdateInput {
  scope: string
  key: string
  ops: UpdateOp[]
}

/** `state::update` result; `errors` is omitted when every operation applied. */
export interface StateUpdateResult<T = JsonValue> {
  old_value: T | null
  new_value: T
  errors?: UpdateOpError[]
}

/** `state::list` input; the result (`T[]`) is the scope's values ordered by key. */
export interface StateListInput {
  scope: string
}

/** `state::list_groups` input. */
export type StateListGroupsInput = Record<string, never>

/** `state::list_groups` result: the scopes that hold at least one key, sorted. */
export interface StateListGroupsResult {
  groups: string[]
}

/** `state::list_keys` and `state::list_entries` input; `offset` default 0, `limit` default 100 (max 1000). */
export interface StateListKeysInput {
  scope: string
  prefix?: string
  offset?: number
  limit?: number
}
export type StateListEntriesInput = StateListKeysInput

/** `state::list_keys` result. */
export interface StateListKeysResult {
  keys: string[]
  total: number
  offset: number
  limit: number
}

/** `state::list_entries` result. */
export interface StateListEntriesResult<T = JsonValue> {
  entries: Array<{ key: string; value: T }>
  total: number
  offset: number
  limit: number
}

export type StateEventType = 'state:created' | 'state:updated' | 'state:deleted'

/** Payload a `state` trigger delivers (builtins.md §4.3). */
export interface StateEventData<T = JsonValue> {
  type: 'state'
  message_type: 'state'
  event_type: StateEventType
  scope: string
  key: string
  /** `null` for `state:created`. */
  old_value: T | null
  /** `null` for `state:deleted`. */
  new_value: T | null
}

/** Config of a `state` trigger (builtins.md §4.3); absent filters match everything. */
export interface StateTriggerConfig {
  scope?: string
  key?: string
  condition_function_id?: string
}
