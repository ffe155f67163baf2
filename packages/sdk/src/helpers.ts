/**
 * `svc-sdk/helpers` (sdk.md §1, §9, §10): channels and the streams helper.
 *
 * @example
 * import { createChannel, isChannelRef } from 'svc-sdk/helpers'
 *
 * const { writer, readerRef } = await createChannel(client, 16)
 * isChannelRef(readerRef) // true: plain JSON, pass it in any payload or result
 */
import type { Channel } from './channel.ts'
import type { SvcClient } from './types.ts'

export { ChannelDirection, ChannelItem, extractChannelRefs, isChannelRef } from 'svc-protocol/client'
export { createStream } from './stream.ts'
export type { Channel } from './channel.ts'

/**
 * Creates a channel through `client` (`engine::channels::create {buffer_size}`, sdk.md §9): the
 * live writer and reader and their refs. Same as `client.createChannel(bufferSize)`.
 * @param bufferSize items the engine holds before it stops reading the writer: 1–1024, default 64.
 * @throws (rejects) InvocationError `INVALID_ARGUMENTS`, `TOO_MANY_CHANNELS`, or the call's own failures.
 * @example
 * const { reader, writerRef } = await createChannel(client)
 * void client.trigger({ function_id: 'logs::tail', payload: { out: writerRef } })
 * reader.onMessage((line) => console.log(line))
 */
export function createChannel(client: SvcClient, bufferSize?: number): Promise<Channel> {
  return client.createChannel(bufferSize)
}
