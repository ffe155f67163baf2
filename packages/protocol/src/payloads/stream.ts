/**
 * Input, result and event types of the stream worker (`svc-stream`, builtins.md §6; sdk.md §10).
 * Types only.
 *
 * @example
 * import type { StreamSetInput, StreamSetResult } from 'svc-sdk/stream'
 * const r = await client.trigger<StreamSetInput<Presence>, StreamSetResult<Presence>>({
 *   function_id: 'stream::set', payload: { stream_name: 'presence', group_id: 'room-1', item_id: 'u1', data: { online: true } },
 * })
 */
import type { JsonValue } from '../messages.ts'
import type { UpdateOp, UpdateOpError } from './state.ts'

/** Address of one item: `stream::get` and `stream::delete` input (§6.2). */
export interface ItemKey {
  stream_name: string
  group_id: string
  item_id: string
}
export type StreamGetInput = ItemKey
export type StreamDeleteInput = ItemKey

/** `stream::set` input. */
export interface StreamSetInput<T = JsonValue> extends ItemKey {
  data: T
}

/** `stream::set` result; `old_value` is `null` when the item was new. */
export interface StreamSetResult<T = JsonValue> {
  old_value: T | null
  new_value: T
}

/** `stream::delete` result; `old_value` is present when the item existed. */
export interface StreamDeleteResult<T = JsonValue> {
  old_value?: T
}

/** `stream::update` input (operations of builtins.md §5). */
export interface StreamUpdateInput extends ItemKey {
  ops: UpdateOp[]
}

/** `stream::update` result; `errors` is omitted when every operation applied. */
export interface StreamUpdateResult<T = JsonValue> {
  old_value: T | null
  new_value: T
  errors?: UpdateOpError[]
}

/** `stream::list` input; the result is the data of the group's items ordered by `item_id`. */
export interface StreamListInput {
  stream_name: string
  group_id: string
}

/** `stream::list_groups` input; the result is the sorted array of group ids. */
export interface StreamListGroupsInput {
  stream_name: string
}

/** `stream::list_all` result, sorted by stream name. */
export interface StreamListAllResult {
  streams: Array<{ stream_name: string; groups: string[] }>
  count: number
}

/** `stream::send` input: a transient event, nothing stored; no result. */
export interface StreamSendInput<T = JsonValue> {
  stream_name: string
  group_id: string
  /** The custom event type, delivered as `event.event.type`. */
  type: string
  data: T
  /** Item id the event concerns; without it only subscriptions without an id receive it (§6.6). */
  id?: string
}

/** The `event` of a change (§6.3). */
export type StreamChange<T = JsonValue> =
  | { type: 'create' | 'update' | 'delete'; data: T }
  | { type: 'event'; event: { type: string; data: T } }

/**
 * A change event (§6.3): the `stream` trigger payload and the WebSocket frame (frames also carry
 * `subscriptionId`). `timestamp` is Unix ms; `id` is the item id, or the send `id` / `null`.
 */
export interface StreamChangeEvent<T = JsonValue> {
  type: 'stream'
  timestamp: number
  streamName: string
  groupId: string
  id?: string | null
  event: StreamChange<T>
}

/** Payload of `stream:join` and `stream:leave` hooks (§6.5); `id` and `context` are `null` when absent. */
export interface StreamJoinLeaveEvent<C = JsonValue> {
  subscription_id: string
  stream_name: string
  group_id: string
  id: string | null
  context: C | null
}

/** Result of a join hook: `{unauthorized: true}` refuses the join (§6.5). */
export interface StreamJoinResult {
  unauthorized?: boolean
}

/** Input of the `auth_function` of the client WebSocket (§6.6); query values are always arrays. */
export interface StreamAuthInput {
  /** `ip:port` of the client. */
  addr: string
  headers: Record<string, string | string[] | undefined>
  path: string
  query_params: Record<string, string[]>
}

/** Result of the auth function: an object accepts the connection, `context` is attached to it. */
export interface StreamAuthResult<C = JsonValue> {
  context?: C
}

/** Config of a `stream` trigger (§6.4); empty `group_id` / `item_id` match everything. */
export interface StreamTriggerConfig {
  stream_name: string
  group_id?: string
  item_id?: string
  condition_function_id?: string
}

/** Config of `stream:join` / `stream:leave` triggers (§6.5); absent filters match everything. */
export interface StreamJoinLeaveTriggerConfig {
  stream_name?: string
  group_id?: string
  condition_function_id?: string
}
