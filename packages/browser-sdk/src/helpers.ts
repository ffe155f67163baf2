/**
 * `svc-browser-sdk/helpers` (sdk.md §1, §9, §10, §13): channels and the streams helper.
 *
 * Channels: `ChannelReader` (`onMessage`, `onBinary`, `next`, `readAll`, `close`), `ChannelWriter`
 * (`sendBinary`, `sendMessage`, `close`) — the client core's ends; no Node streams in a browser.
 *
 * @example
 * import { createChannel, createStream } from 'svc-browser-sdk/helpers'
 * const { reader, writerRef } = await createChannel(svc)
 * createStream(svc, 'drafts', { get: async ({ item_id }) => drafts.get(item_id), … })
 */
import type { Channel } from 'svc-protocol/client'
import type { SvcClient } from './types.ts'

export { ChannelDirection, ChannelError, ChannelItem, ChannelReader, ChannelWriter, extractChannelRefs, isChannelRef } from 'svc-protocol/client'
export type { Channel, ReadAllOptions, StreamChannelRef } from 'svc-protocol/client'
export { createStream } from 'svc-protocol/client'
export type { IStream } from 'svc-protocol/client'

/**
 * Creates a channel through `client` (`engine::channels::create {buffer_size}`, sdk.md §9): the
 * live writer and reader and their refs. Same as `client.createChannel(bufferSize)`.
 * @param bufferSize items the engine holds before it stops reading the writer: 1–1024, default 64.
 * @throws (rejects) InvocationError `INVALID_ARGUMENTS`, `TOO_MANY_CHANNELS`, or the call's own failures.
 * @example
 * const { writer, readerRef } = await createChannel(svc)
 * await svc.trigger({ function_id: 'files::store', payload: { body: readerRef } })
 */
export function createChannel(client: SvcClient, bufferSize?: number): Promise<Channel> {
  return client.createChannel(bufferSize)
}
