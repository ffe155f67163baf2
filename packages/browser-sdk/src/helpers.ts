/**
 * `svc-browser-sdk/helpers` (sdk.md §1, §13): the helpers that build on a client — the streams
 * helper {@link createStream} (sdk.md §10).
 *
 * Channels (sdk.md §9, §13): `createChannel`, `ChannelReader` (`onMessage`, `onBinary`, `next`,
 * `readAll`, `close`), `ChannelWriter` (`sendBinary`, `sendMessage`, `close`), `ChannelItem`,
 * `isChannelRef`, `extractChannelRefs` are re-exported here from the client core once it has them.
 *
 * @example
 * import { createStream } from 'svc-browser-sdk/helpers'
 * createStream(svc, 'drafts', { get: async ({ item_id }) => drafts.get(item_id), … })
 */
export { createStream } from 'svc-protocol/client'
export type { IStream } from 'svc-protocol/client'
