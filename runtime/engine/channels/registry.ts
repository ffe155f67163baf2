/**
 * The engine's channels (protocol.md §9, §11.3): creation, claims of ends by WebSocket or
 * in-process, and the sweep of channels left unclaimed. Ids and keys are `crypto.randomUUID()`s;
 * an end's key is its only credential, compared in constant time.
 *
 * @example
 * const channels = new ChannelRegistry({ log })
 * channels.start()
 * const { writer, reader } = channels.create(16)
 * // a socket upgrade to /ws/channels/<id>?key=…&dir=write:
 * const ticket = channels.find(id, key, 'write')   // undefined: answer 404 `Channel not found`
 * channels.attachSocket(ticket, ws, tcp, { maxMessageBytes })
 */
import { randomUUID, timingSafeEqual } from 'node:crypto'
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import { Errors } from 'svc-protocol'
import { CallIndex } from '../call-index.ts'
import { systemClock, type CancelTimer, type Clock } from '../../workers/shared/clock.ts'
import type { Logger } from '../config.ts'
import { Channel, type Direction } from './channel.ts'
import { LocalReader, LocalWriter, SinkReader } from './local-ends.ts'
import { SocketReader, SocketWriter, type SocketWatch } from './socket-ends.ts'
import {
  CloseCodes,
  DEFAULT_BUFFER_SIZE,
  MAX_BUFFER_SIZE,
  MAX_CHANNELS,
  MIN_BUFFER_SIZE,
  SWEEP_INTERVAL_MS,
  UNCLAIMED_TTL_MS,
  type AttachedReader,
  type ChannelRef,
  type ChannelSink,
  type CreateChannelResult,
  type LocalChannelReader,
  type LocalChannels,
  type LocalChannelWriter,
} from './types.ts'

/** An end found for an upgrade (protocol.md §9), to attach once the upgrade completed. */
export interface ChannelTicket {
  readonly channel: Channel
  readonly direction: Direction
}

export interface ChannelRegistryOptions {
  /** Time of creation and of the sweep (default the real clock); tests move a manual one. */
  clock?: Clock
  log?: Logger
  /** Channels held at most (default {@link MAX_CHANNELS}). */
  maxChannels?: number
}

/** Options of one socket end. */
export interface SocketEndOptions {
  /** `max_message_bytes` of the socket's listener: a reader is never sent a larger item. */
  maxMessageBytes: number
  /** The listener's keepalive and slow-consumer rule. */
  watch?: SocketWatch
}

export class ChannelRegistry {
  /**
   * Open channels by id. A `CallIndex`, not a `Map`: svc-http opens two channels per request, and
   * a `Map`'s replaced hash tables kept every request's objects alive until promoted (~4.4 KB per
   * request; call-index.ts says why).
   */
  private readonly channels = new CallIndex<Channel>()
  private readonly clock: Clock
  private readonly log: Logger | undefined
  private readonly maxChannels: number
  private cancelSweep: CancelTimer | undefined

  constructor(options: ChannelRegistryOptions = {}) {
    this.clock = options.clock ?? systemClock
    this.log = options.log
    this.maxChannels = options.maxChannels ?? MAX_CHANNELS
  }

  /** Channels held (unclaimed, open, or ending). */
  get size(): number {
    return this.channels.size
  }

  /** The channel of an id, for tests and introspection. */
  get(channelId: string): Channel | undefined {
    return this.channels.get(channelId)
  }

  /** Starts the sweep: every 60 s, channels with an end unclaimed 5 minutes after creation are removed. */
  start(): void {
    if (this.cancelSweep !== undefined) return
    const arm = () => {
      this.cancelSweep = this.clock.setTimeout(() => {
        this.sweep()
        arm()
      }, SWEEP_INTERVAL_MS)
    }
    arm()
  }

  /** Stops the sweep and removes every channel (sockets closed with 1001). */
  stop(reason = 'engine shutting down'): void {
    this.cancelSweep?.()
    this.cancelSweep = undefined
    for (const channel of [...this.channels.values()]) channel.remove(reason)
  }

  /**
   * Creates a channel of `bufferSize` items (protocol.md §9: default 64, 1–1024). `owner`: a
   * built-in whose channels go when it stops ({@link removeOwnedBy}).
   * @throws SvcError `INVALID_ARGUMENTS` for another size; `TOO_MANY_CHANNELS` at the limit.
   */
  create(bufferSize: number = DEFAULT_BUFFER_SIZE, owner?: object): CreateChannelResult {
    if (!Number.isInteger(bufferSize) || bufferSize < MIN_BUFFER_SIZE || bufferSize > MAX_BUFFER_SIZE) {
      throw Errors.invalidArguments(`buffer_size must be an integer from ${MIN_BUFFER_SIZE} to ${MAX_BUFFER_SIZE}`)
    }
    if (this.channels.size >= this.maxChannels) throw Errors.tooManyChannels(this.maxChannels)
    const options = {
      id: randomUUID(),
      bufferSize,
      createdAtMs: this.clock.now(),
      writerKey: randomUUID(),
      readerKey: randomUUID(),
      onRemoved: (channel: Channel) => this.forget(channel),
      ...(owner === undefined ? {} : { owner }),
    }
    const channel = new Channel(options)
    this.channels.set(channel.id, channel)
    return {
      writer: { channel_id: channel.id, access_key: channel.writerKey, direction: 'write' },
      reader: { channel_id: channel.id, access_key: channel.readerKey, direction: 'read' },
    }
  }

  /**
   * The end `key` opens, when `direction` is that end's (protocol.md §9); undefined for an
   * unknown channel, a wrong key or a mismatched direction: all three answer 404
   * `Channel not found`. A claimed end is still found: its second claim is closed with 1008.
   */
  find(channelId: string, key: string, direction: string): ChannelTicket | undefined {
    const channel = this.channels.get(channelId)
    if (channel === undefined || (direction !== 'read' && direction !== 'write')) return undefined
    return sameKey(key, direction === 'write' ? channel.writerKey : channel.readerKey) ? { channel, direction } : undefined
  }

  /**
   * Attaches an upgraded WebSocket to the end a ticket names. A second claim is closed with 1008,
   * an end of a channel removed since {@link find} with 1001.
   */
  attachSocket(ticket: ChannelTicket, ws: WebSocket, tcp: Duplex, options: SocketEndOptions): void {
    const { channel, direction } = ticket
    if (channel.isRemoved || channel.isClaimed(direction)) ws.on('error', () => {})
    if (channel.isRemoved) {
      ws.close(CloseCodes.GoingAway, 'channel removed')
      return
    }
    if (channel.isClaimed(direction)) {
      ws.close(CloseCodes.PolicyViolation, `the ${direction} end is claimed already`)
      return
    }
    const end = direction === 'write' ? new SocketWriter(ws, tcp, channel, options.watch) : new SocketReader(ws, tcp, channel, options.maxMessageBytes, options.watch)
    channel.claim(direction, end)
  }

  /** Claims the read end `ref` names in-process; errors of {@link LocalChannels.openReader}. */
  openReader(ref: ChannelRef): LocalChannelReader {
    const channel = this.claimable(ref, 'read')
    const reader = new LocalReader(channel)
    channel.claim('read', reader)
    return reader
  }

  /** Claims the read end `ref` names in-process for a sink; errors of {@link LocalChannels.openReader}. */
  attachReader(ref: ChannelRef, sink: ChannelSink): AttachedReader {
    const channel = this.claimable(ref, 'read')
    const reader = new SinkReader(channel, sink)
    channel.claim('read', reader)
    return reader
  }

  /** Claims the write end `ref` names in-process; errors of {@link LocalChannels.openWriter}. */
  openWriter(ref: ChannelRef): LocalChannelWriter {
    const channel = this.claimable(ref, 'write')
    const writer = new LocalWriter(channel)
    channel.claim('write', writer)
    return writer
  }

  /** Removes a channel now (sockets closed with 1001 and `reason`). Unknown ids are ignored. */
  remove(channelId: string, reason = 'channel removed'): void {
    this.channels.get(channelId)?.remove(reason)
  }

  /** Removes the channels `owner` created (a built-in that stops). */
  removeOwnedBy(owner: object): void {
    for (const channel of [...this.channels.values()]) if (channel.owner === owner) channel.remove('its creator stopped')
  }

  /** {@link LocalChannels} for a built-in: what it creates is owned by `owner`. */
  localFor(owner: object): LocalChannels {
    return {
      create: (bufferSize?: number) => this.create(bufferSize, owner),
      openReader: (ref) => this.openReader(ref),
      attachReader: (ref, sink) => this.attachReader(ref, sink),
      openWriter: (ref) => this.openWriter(ref),
      remove: (channelId) => this.remove(channelId),
    }
  }

  /**
   * Removes every channel with an end still unclaimed {@link UNCLAIMED_TTL_MS} after its
   * creation (protocol.md §9); open sockets are closed with 1001. Runs every 60 s once started;
   * returns how many were removed.
   */
  sweep(): number {
    const now = this.clock.now()
    let removed = 0
    for (const channel of [...this.channels.values()]) {
      if (channel.unclaimed && now - channel.createdAtMs >= UNCLAIMED_TTL_MS) {
        channel.remove('channel unclaimed for 5 minutes')
        removed++
      }
    }
    if (removed > 0) this.log?.debug('removed unclaimed channels', { count: removed })
    return removed
  }

  private claimable(ref: ChannelRef, direction: Direction): Channel {
    const ticket = ref !== null && typeof ref === 'object' && typeof ref.channel_id === 'string' && typeof ref.access_key === 'string' && ref.direction === direction ? this.find(ref.channel_id, ref.access_key, direction) : undefined
    if (ticket === undefined) throw Errors.channelNotFound()
    if (ticket.channel.isClaimed(direction)) throw Errors.channelClaimed(ticket.channel.id, direction)
    return ticket.channel
  }

  private forget(channel: Channel): void {
    if (this.channels.get(channel.id) === channel) this.channels.delete(channel.id)
  }
}

/** Constant-time comparison of an access key (keys are UUIDs: their length is no secret). */
function sameKey(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8')
  const b = Buffer.from(expected, 'utf8')
  return a.length === b.length && timingSafeEqual(a, b)
}
