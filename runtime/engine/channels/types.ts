/**
 * Shapes and limits of the engine's channels (protocol.md §9, §11.3): ordered text and binary
 * items from one writer to one reader through the engine. An end is a WebSocket on
 * `/ws/channels/<channel_id>?key=…&dir=…` of any worker listener, or held in-process by a built-in
 * worker ({@link LocalChannels}, e.g. svc-http's streamed request and response bodies).
 */
import type { ChannelRef, CreateChannelResult } from 'svc-protocol'

export type { ChannelRef, CreateChannelResult }

/** `buffer_size` when `engine::channels::create` gets none (protocol.md §9). */
export const DEFAULT_BUFFER_SIZE = 64
/** Smallest and largest `buffer_size` (protocol.md §9); others are refused with `INVALID_ARGUMENTS`. */
export const MIN_BUFFER_SIZE = 1
export const MAX_BUFFER_SIZE = 1024

/**
 * Bytes of items a channel holds (waiting for a reader, or handed to the reader's socket and not
 * yet written to the network) before it stops reading its writer, whatever `buffer_size` says.
 * `buffer_size` counts items, and a raw client may send items up to its listener's
 * `max_message_bytes` (64 MiB by default): 64 such items would be 4 GiB. 1 MiB holds 16 frames of
 * the SDKs' 64 KiB, enough to keep a fast reader busy; a single item larger than this is still
 * taken (reading stops after it), so any item the listener accepts gets through.
 */
export const CHANNEL_BUFFER_BYTES = 1024 * 1024

/** A channel with an end still unclaimed this long after creation is removed (protocol.md §9), ms. */
export const UNCLAIMED_TTL_MS = 5 * 60 * 1000
/** How often unclaimed channels are looked for (protocol.md §9), ms. */
export const SWEEP_INTERVAL_MS = 60 * 1000

/**
 * Channels the engine holds at most; `engine::channels::create` past it fails with
 * `TOO_MANY_CHANNELS`. A channel costs little, but creation is open to every session (RBAC's
 * infrastructure set) and an unclaimed one lives 5 minutes: this bounds what a loop of creates holds.
 */
export const MAX_CHANNELS = 100_000

/** WebSocket close codes of channel sockets (protocol.md §9; RFC 6455 §7.4.1). */
export const CloseCodes = {
  /** The writer ended normally, after the remaining items (to the reader). */
  Normal: 1000,
  /** The channel was removed: unclaimed for 5 minutes, by its owner, or at engine shutdown. */
  GoingAway: 1001,
  /** A second claim of an end. */
  PolicyViolation: 1008,
  /** An item larger than the reader's connection takes (`max_message_bytes`), to the writer. */
  MessageTooBig: 1009,
  /** The writer ended abnormally (to the reader), or the reader went away (to the writer). */
  InternalError: 1011,
} as const

/**
 * One item as an in-process end sees it (the `ChannelItem` of sdk.md §9): a text frame's text, or
 * a binary frame's bytes.
 */
export type ChannelItem = { type: 'text'; text: string } | { type: 'binary'; data: Uint8Array }

/**
 * The write end of a channel held in-process. Items are not copied: do not change the bytes of a
 * `write` after the call.
 *
 * @example
 * const pair = worker.channels.create()
 * const writer = worker.channels.openWriter(pair.writer)
 * // hand pair.reader to a worker, then:
 * for await (const chunk of request) await writer.write(chunk)
 * writer.close()
 */
export interface LocalChannelWriter {
  readonly channelId: string
  /**
   * Sends one Binary item. Resolves once the item is in the channel, which waits while the
   * channel holds `buffer_size` items or {@link CHANNEL_BUFFER_BYTES} bytes (backpressure: a writer
   * that awaits every write holds at most that much in the engine). Writes that wait keep their order.
   * @throws SvcError `CHANNEL_CLOSED` (rejection) once the reader went away or the channel was
   *   removed, or after `close`/`abort`; `PAYLOAD_TOO_LARGE` when an item was larger than the
   *   reader's connection takes (`max_message_bytes`).
   */
  write(data: Uint8Array): Promise<void>
  /** Sends one Text item, with the backpressure and errors of {@link write}. */
  sendMessage(text: string): Promise<void>
  /** Ends normally: the reader gets the items still waiting, then the end (close code 1000). Idempotent. */
  close(): void
  /** Ends abnormally: the reader gets the items still waiting, then close code 1011 (an error). Idempotent. */
  abort(): void
}

/**
 * The read end of a channel held in-process: an async iterator of {@link ChannelItem}s. An item
 * counts against the channel's `buffer_size` until it is taken with `next()`, so a reader that
 * stops taking stops the writer (backpressure).
 *
 * @example
 * const reader = worker.channels.openReader(ref)
 * for await (const item of reader) if (item.type === 'binary') body.push(item.data)
 */
export interface LocalChannelReader extends AsyncIterable<ChannelItem> {
  readonly channelId: string
  /**
   * The next item; undefined once the writer ended normally and every item was taken.
   * @throws SvcError `CHANNEL_CLOSED` (rejection) when the writer ended abnormally (after the
   *   items before it), the channel was removed, or after {@link cancel}.
   */
  next(): Promise<ChannelItem | undefined>
  /** Goes away: waiting items are dropped and the writer is closed with 1011. Idempotent. */
  cancel(): void
}

/**
 * A read end held in-process that is handed each item as it arrives ({@link LocalChannels.attachReader}),
 * for a built-in that forwards items elsewhere as they come (svc-http's streamed response, a
 * socket). An item counts against the channel's `buffer_size` (and {@link CHANNEL_BUFFER_BYTES})
 * until its `done` is called: a sink that calls it once the item has left — written to a socket
 * that took it — passes its destination's backpressure on to the writer. No promise or error object
 * is made per item or at the end, unlike {@link LocalChannelReader}.
 */
export interface ChannelSink {
  /** One item, in order. Call `done` once it has left (at once when it goes nowhere); once each. */
  item(item: ChannelItem, done: () => void): void
  /**
   * The end, after every item: `normal` when the writer closed normally (1000); otherwise the
   * writer ended abnormally, an item was too large, or the channel was removed (`reason` says which).
   * Not called after {@link AttachedReader.cancel}.
   */
  end(normal: boolean, reason: string): void
}

/** A {@link ChannelSink} attached to its channel. */
export interface AttachedReader {
  readonly channelId: string
  /** Goes away: items not yet done are dropped and the writer is closed with 1011. Idempotent. */
  cancel(): void
}

/**
 * Channels for a built-in worker (`LocalWorker.channels`): create one, hold an end in-process,
 * hand the other end's ref to a worker. Channels created here are removed when the built-in stops.
 *
 * @example
 * // svc-http, per request (builtins.md §3.4): request_body is read by the handler, written here
 * const body = worker.channels.create()
 * const writer = worker.channels.openWriter(body.writer)
 * invoke({ ..., request_body: body.reader })
 * // when the exchange ends, whether or not the handler used it:
 * worker.channels.remove(body.writer.channel_id)
 */
export interface LocalChannels {
  /**
   * A new channel (protocol.md §9); `bufferSize` items, default 64, 1–1024.
   * @throws SvcError `INVALID_ARGUMENTS` for another `bufferSize`; `TOO_MANY_CHANNELS` when the
   *   engine holds {@link MAX_CHANNELS}.
   */
  create(bufferSize?: number): CreateChannelResult
  /**
   * Claims the read end `ref` names, in-process.
   * @throws SvcError `NOT_FOUND` (`Channel not found`) for an unknown channel, a wrong key or a
   *   `direction` other than `read`; `CHANNEL_CLOSED` when the end is claimed already.
   */
  openReader(ref: ChannelRef): LocalChannelReader
  /**
   * Claims the read end `ref` names, in-process, for a sink that is handed each item as it arrives
   * (items already waiting are handed at once, before this returns); errors as {@link openReader}.
   */
  attachReader(ref: ChannelRef, sink: ChannelSink): AttachedReader
  /** Claims the write end `ref` names, in-process; errors as {@link openReader}. */
  openWriter(ref: ChannelRef): LocalChannelWriter
  /**
   * Removes a channel at once (its exchange ended): open sockets are closed with 1001, in-process
   * ends see `CHANNEL_CLOSED`. Unknown ids are ignored.
   */
  remove(channelId: string): void
}
