/**
 * `svc-sdk/stream` (sdk.md §10): the streams helper {@link createStream}, the input, result and
 * event types of the stream worker (`svc-stream`, builtins.md §6), and the typed trigger configs of
 * `stream`, `stream:join` and `stream:leave` (sdk.md §5).
 *
 * @example
 * import { createStream, type StreamChangeEvent, type StreamTriggerConfig } from 'svc-sdk/stream'
 * client.registerTrigger<StreamTriggerConfig>({ type: 'stream', function_id: 'chat::on-message', config: { stream_name: 'chat' } })
 */
import type { StreamJoinLeaveTriggerConfig, StreamTriggerConfig } from 'svc-protocol'
import type { RegisterTriggerInput } from './types.ts'

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
