/**
 * `svc-browser-sdk/stream` (sdk.md §10, §13): the streams helper {@link createStream} (the client
 * core's, the same as `svc-sdk/stream`'s), the input, result and event types of the stream worker
 * (`svc-stream`, builtins.md §6) and the typed trigger inputs of `stream`, `stream:join` and
 * `stream:leave`.
 *
 * @example
 * import { registerWorker } from 'svc-browser-sdk'
 * import type { StreamChangeEvent, StreamTriggerInput } from 'svc-browser-sdk/stream'
 *
 * svc.registerFunction('browser::on-chat', (event: StreamChangeEvent<Message>) => render(event))
 * svc.registerTrigger({ type: 'stream', function_id: 'browser::on-chat', config: { stream_name: 'chat', group_id: 'room-1' } } satisfies StreamTriggerInput)
 */
import type { StreamJoinLeaveTriggerConfig, StreamTriggerConfig } from 'svc-protocol/payloads/stream'
import type { RegisterTriggerInput } from 'svc-protocol/client'

export type * from 'svc-protocol/payloads/stream'
export type { MergePath, UpdateOp, UpdateOpError } from 'svc-protocol/payloads/state'
export { createStream } from 'svc-protocol/client'
export type { IStream } from 'svc-protocol/client'

/** `registerTrigger` input of a `stream` trigger (builtins.md §6.4). */
export type StreamTriggerInput = RegisterTriggerInput<StreamTriggerConfig> & { type: 'stream' }
/** `registerTrigger` input of a `stream:join` hook (builtins.md §6.5). */
export type StreamJoinTriggerInput = RegisterTriggerInput<StreamJoinLeaveTriggerConfig> & { type: 'stream:join' }
/** `registerTrigger` input of a `stream:leave` hook (builtins.md §6.5). */
export type StreamLeaveTriggerInput = RegisterTriggerInput<StreamJoinLeaveTriggerConfig> & { type: 'stream:leave' }
