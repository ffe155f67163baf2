/**
 * `Channels`: turns channel refs into live ends for one session (sdk.md §9, protocol.md §9) —
 * the session's `materialize` hook — and `createChannel`.
 *
 * @example
 * // a facade (svc-sdk, svc-browser-sdk) wires it into its session
 * // `address` is read on every materialisation: ends connect to the engine the session is on now
 * let session: ClientSession
 * const channels = new Channels({ address: () => session.getAddress(), socket: webSocketChannels(WebSocket) })
 * session = new ClientSession({ address: [a, b], connector, announce, hooks: { materialize: channels.materialize } })
 * const { writer, readerRef } = await session.createChannel()
 */
import { EngineFunctions } from '../../ids.ts'
import type { ClientLog } from '../hooks.ts'
import { systemTimers, type Timers } from '../timers.ts'
import type { SvcClient } from '../types.ts'
import { DEFAULT_CHANNEL_LIMITS, type ChannelEnd, type ChannelLimits, type ChannelLink } from './end.ts'
import { ChannelReader } from './reader.ts'
import { channelBase, channelUrl, isChannelRef, type StreamChannelRef } from './refs.ts'
import type { ChannelSocketFactory } from './socket.ts'
import { ChannelWriter } from './writer.ts'

/** `buffer_size` a channel gets when `createChannel` is given none (sdk.md §9), items. */
export const DEFAULT_CHANNEL_BUFFER_SIZE = 64

/** A channel's two live ends and their refs (sdk.md §9). */
export interface Channel<R extends ChannelReader = ChannelReader, W extends ChannelWriter = ChannelWriter> {
  writer: W
  reader: R
  writerRef: StreamChannelRef
  readerRef: StreamChannelRef
}

/** Options of {@link Channels}. */
export interface ChannelsOptions<R extends ChannelReader = ChannelReader, W extends ChannelWriter = ChannelWriter> {
  /**
   * The session's engine address (`ws:`/`wss:`): ends connect to `<address without query>/ws/channels/…`.
   * A function is called for every end opened, so a session with several engine addresses
   * (issue 19 §3) gives `() => session.getAddress()`: a ref is materialised against the engine
   * the session is connected to when the ref arrives, the one that holds the channel.
   */
  address: string | (() => string)
  /** Opens each end's WebSocket (the platform's). */
  socket: ChannelSocketFactory
  /** The reader class (a facade's subclass, e.g. with a Node `Readable`); default {@link ChannelReader}. */
  reader?: new (ref: StreamChannelRef, link: ChannelLink) => R
  /** The writer class; default {@link ChannelWriter}. */
  writer?: new (ref: StreamChannelRef, link: ChannelLink) => W
  /** Where listener failures are reported; default `console.warn`. */
  log?: ClientLog
  /** Timers of the writers' backpressure polling; default the platform's. */
  timers?: Timers
  /** Merged over {@link DEFAULT_CHANNEL_LIMITS}; tests only. */
  limits?: Partial<ChannelLimits>
}

const consoleLog: ClientLog = { warn: (message) => console.warn(`[svc] ${message}`) }

/** Live channel ends for one session: from refs (materialisation) or from a new channel. */
export class Channels<R extends ChannelReader = ChannelReader, W extends ChannelWriter = ChannelWriter> {
  readonly #address: () => string
  /** `channelBase` of the last address seen, computed again only when the address changes. */
  #base: { address: string; base: string }
  readonly #socket: ChannelSocketFactory
  readonly #Reader: new (ref: StreamChannelRef, link: ChannelLink) => R
  readonly #Writer: new (ref: StreamChannelRef, link: ChannelLink) => W
  readonly #log: ClientLog
  readonly #timers: Timers
  readonly #limits: Readonly<ChannelLimits>
  readonly #live = new Set<ChannelEnd>()

  /** @throws TypeError when `address` (a string) is not a `ws:`/`wss:` URL. */
  constructor(options: ChannelsOptions<R, W>) {
    const address = options.address
    if (typeof address === 'string') {
      const base = { address, base: channelBase(address) }
      this.#address = () => address
      this.#base = base
    } else {
      this.#address = address
      this.#base = { address: '', base: '' }
    }
    this.#socket = options.socket
    this.#Reader = options.reader ?? (ChannelReader as unknown as new (ref: StreamChannelRef, link: ChannelLink) => R)
    this.#Writer = options.writer ?? (ChannelWriter as unknown as new (ref: StreamChannelRef, link: ChannelLink) => W)
    this.#log = options.log ?? consoleLog
    this.#timers = options.timers ?? systemTimers
    this.#limits = Object.freeze({ ...DEFAULT_CHANNEL_LIMITS, ...options.limits })
  }

  /**
   * A live end for `ref`: a reader for a read ref, a writer for a write ref. Its socket opens on
   * first use, at `<engine address>/ws/channels/<channel_id>?key=…&dir=…`.
   * @throws TypeError when `ref` fails {@link isChannelRef}.
   */
  open(ref: StreamChannelRef): R | W {
    if (!isChannelRef(ref)) throw new TypeError('not a channel ref: {channel_id, access_key, direction: "read" | "write"}')
    const link: ChannelLink = { url: channelUrl(this.#currentBase(), ref), socket: this.#socket, timers: this.#timers, log: this.#log, limits: this.#limits, live: this.#live }
    return ref.direction === 'read' ? new this.#Reader(ref, link) : new this.#Writer(ref, link)
  }

  #currentBase(): string {
    const address = this.#address()
    if (address !== this.#base.address || this.#base.base === '') this.#base = { address, base: channelBase(address) }
    return this.#base.base
  }

  /** Ends of this client with a socket (connecting or open). */
  get openEnds(): number {
    return this.#live.size
  }

  /**
   * Ends every end that has a socket, for a client's `shutdown()`: writers are aborted (their
   * readers get an error; a writer already closing finishes), readers closed. Unused ends are left
   * alone: their refs may live on elsewhere.
   */
  closeAll(reason = 'the worker shut down'): void {
    for (const end of [...this.#live]) {
      if (end instanceof ChannelWriter) end.abort(reason)
      else if (end instanceof ChannelReader) end.close()
    }
  }

  /**
   * The session's `materialize` hook (sdk.md §9): every channel ref anywhere in a decoded payload
   * or result becomes a live end ({@link open}); nothing else changes. Containers are updated in
   * place (they were just decoded); a ref at the top is returned as an end.
   */
  readonly materialize = (value: unknown): unknown => this.#materialize(value)

  #materialize(value: unknown): unknown {
    if (typeof value !== 'object' || value === null) return value
    if (isChannelRef(value)) return this.open(value)
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i]
        if (typeof item !== 'object' || item === null) continue
        const live = this.#materialize(item)
        if (live !== item) value[i] = live
      }
      return value
    }
    const object = value as Record<string, unknown>
    // for…in allocates no key array (payloads are walked on every invocation); own keys only.
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue
      const item = object[key]
      if (typeof item !== 'object' || item === null) continue
      const live = this.#materialize(item)
      // An own `__proto__` (JSON.parse makes one) is a data property: defined, never assigned through the setter.
      if (live !== item) Object.defineProperty(object, key, { value: live, writable: true, enumerable: true, configurable: true })
    }
    return value
  }
}

/**
 * Creates a channel (`engine::channels::create {buffer_size}`, sdk.md §9) and returns its live
 * ends and refs: keep one end, pass the other's ref in a payload or result. The client must turn
 * channel refs into ends (svc-sdk and svc-browser-sdk clients do; a bare `ClientSession` needs a
 * {@link Channels} as its `materialize` hook).
 *
 * @param bufferSize items the engine holds before it stops reading the writer: 1–1024, default 64.
 * @throws (rejects) InvocationError `INVALID_ARGUMENTS` for a `bufferSize` outside 1–1024,
 *   `TOO_MANY_CHANNELS`, or the call's own failures (`NOT_CONNECTED`, `TIMEOUT`…); TypeError when
 *   the client hands back plain refs.
 * @example
 * const { writer, readerRef } = await createChannel(client)
 * const done = client.trigger({ function_id: 'media::transcode', payload: { input: readerRef } })
 * await writer.write(bytes)
 * await writer.close()
 * await done
 */
export async function createChannel<R extends ChannelReader = ChannelReader, W extends ChannelWriter = ChannelWriter>(
  client: Pick<SvcClient, 'trigger'>,
  bufferSize?: number,
): Promise<Channel<R, W>> {
  const result = await client.trigger<{ buffer_size: number }, { writer?: unknown; reader?: unknown } | null>({
    function_id: EngineFunctions.CREATE_CHANNEL,
    payload: { buffer_size: bufferSize ?? DEFAULT_CHANNEL_BUFFER_SIZE },
  })
  const writer = result?.writer
  const reader = result?.reader
  if (!(writer instanceof ChannelWriter) || !(reader instanceof ChannelReader)) {
    throw new TypeError(`${EngineFunctions.CREATE_CHANNEL} answered no live ends: this client does not turn channel refs into ends (give its session a Channels materializer)`)
  }
  return { writer: writer as W, reader: reader as R, writerRef: writer.toJSON(), readerRef: reader.toJSON() }
}
