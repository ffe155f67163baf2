/**
 * Input, result and event types of the state worker (`svc-state`, builtins.md §4) and the update
 * operations shared with streams and configuration (builtins.md §5, sdk.md §10), re-exported from
 * `svc-protocol`. Types only.
 *
 * @example
 * import type { StateSetInput, StateSetResult } from 'svc-sdk/state'
 * const r = await client.trigger<StateSetInput<User>, StateSetResult<User>>({
 *   function_id: 'state::set', payload: { scope: 'users', key: 'u1', value: user },
 * })
 */
export type * from 'svc-protocol/payloads/state'
