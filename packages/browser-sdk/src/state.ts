/**
 * `svc-browser-sdk/state` (sdk.md §10, §13): input, result and event types of the state worker
 * (`svc-state`, builtins.md §4) and the update operations (builtins.md §5). Types only.
 *
 * @example
 * import type { StateSetInput, StateSetResult } from 'svc-browser-sdk/state'
 * const r = await svc.trigger<StateSetInput<Draft>, StateSetResult<Draft>>({
 *   function_id: 'drafts::save', payload: { scope: 'drafts', key: 'd1', value: draft },
 * })
 */
export type * from 'svc-protocol/payloads/state'
