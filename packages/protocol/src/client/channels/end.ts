/**
 * What both channel ends share (protocol.md §9, sdk.md §9): the ref, the lazily opened socket,
 * serialisation back to the ref, and the error a close code means.
 */
import { Errors, type SvcError } from '../../errors.ts'
import { ChannelError, errorMessage } from '../errors.ts'
import type { ClientLog } from '../hooks.ts'
import type { Timers } from '../timers.ts'
import { isChannelRef, refOf, type StreamChannelRef } from './refs.ts'
import type { ChannelSocket, ChannelSocketFactory } from './socket.ts'

/** Byte bounds and timings of channel ends; only tests change them. */
export interface ChannelLimits {
  /**
   * A writer hands frames to its socket while fewer than this many bytes wait in it
   * (`bufferedAmount`); past it `write` waits. Default 1 MiB (the engine holds at most 1 MiB per
   * channel too).
   */
  writerHighWaterMark: number
  /**
   * A reader whose unread Binary items reach this many bytes stops reading its socket where the
   * platform can (`pause`), and reads again below half of it. Default 1 MiB.
   */
  readerHighWaterMark: number
  /** Largest binary frame a writer sends; longer writes are split (sdk.md §9: 64 KiB). */
  maxFrameBytes: number
  /** Default `maxBytes` of `readAll()`: 64 MiB (a listener's default `max_message_bytes`). */
  readAllMaxBytes: number
  /** How often a writer held back by `bufferedAmount` looks again, ms. Default 2. */
  drainPollMs: number
}

export const DEFAULT_CHANNEL_LIMITS: Readonly<ChannelLimits> = Object.freeze({
  writerHighWaterMark: 1024 * 1024,
  readerHighWaterMark: 1024 * 1024,
  maxFrameBytes: 64 * 1024,
  readAllMaxBytes: 64 * 1024 * 1024,
  drainPollMs: 2,
})

/** What an end needs to open its socket: given by {@link Channels}, never by a payload. */
export interface ChannelLink {
  /** The URL of this end, built from the session's engine address (protocol.md §9). */
  readonly url: string
  readonly socket: ChannelSocketFactory
  readonly timers: Timers
  readonly log: ClientLog
  readonly limits: Readonly<ChannelLimits>
  /** Ends whose socket was asked for and has not ended yet (so a client's shutdown can end them). */
  readonly live?: Set<ChannelEnd>
}

/** Close codes of protocol.md §9 as an end receives them. */
export const ChannelCloseCodes = Object.freeze({
  Normal: 1000,
  GoingAway: 1001,
  NoStatus: 1005,
  Abnormal: 1006,
  PolicyViolation: 1008,
  MessageTooBig: 1009,
  InternalError: 1011,
  /** What a writer's `abort()` closes with (any code but 1000 ends a writer abnormally). */
  Aborted: 4000,
})

type EndState = 'idle' | 'connecting' | 'open' | 'closed'

/** Base of {@link ChannelReader} and {@link ChannelWriter}: one ref, at most one socket, opened on first use. */
export abstract class ChannelEnd {
  /** The ref this end was made from (its three fields only). */
  readonly ref: Readonly<StreamChannelRef>
  readonly #link: ChannelLink
  #socket: ChannelSocket | undefined = undefined
  #state: EndState = 'idle'
  /** What a socket error said before the close (the reason of a refused upgrade). */
  #detail: string | undefined = undefined
  /** Set by `closeSocket` while connecting. */
  #closeOnOpen: { code: number; reason: string | undefined } | undefined = undefined

  /** @throws TypeError when `ref` is not a well-formed ref of `direction` ({@link isChannelRef}). */
  constructor(ref: StreamChannelRef, link: ChannelLink, direction: 'read' | 'write') {
    if (!isChannelRef(ref) || ref.direction !== direction) throw new TypeError(`not a channel ref of direction '${direction}'`)
    this.ref = Object.freeze(refOf(ref))
    this.#link = link
  }

  /** The channel's id (both ends share it). */
  get channelId(): string {
    return this.ref.channel_id
  }

  /** The ref, so a live end passed in a payload or result travels as the ref it came from. */
  toJSON(): StreamChannelRef {
    return refOf(this.ref)
  }

  protected get link(): ChannelLink {
    return this.#link
  }

  /** The open socket; undefined before `onOpen` and after `onEnd`. */
  protected get socket(): ChannelSocket | undefined {
    return this.#state === 'open' ? this.#socket : undefined
  }

  /** True once the socket was asked for (it may have ended since). */
  protected get started(): boolean {
    return this.#state !== 'idle'
  }

  /** Opens the socket unless it was opened already (lazy connect, sdk.md §9). */
  protected connect(): void {
    if (this.#state !== 'idle') return
    this.#state = 'connecting'
    this.#link.live?.add(this)
    try {
      this.#socket = this.#link.socket(this.#link.url, {
        open: () => {
          if (this.#state !== 'connecting') return
          this.#state = 'open'
          // A WebSocket cannot be closed cleanly before its upgrade completes: closed now instead.
          const closing = this.#closeOnOpen
          if (closing === undefined) this.onOpen(this.#socket!)
          else this.#socket!.close(closing.code, closing.reason)
        },
        message: (data) => {
          if (this.#state === 'open') this.onFrame(data)
        },
        error: (error) => {
          this.#detail ??= errorMessage(error)
        },
        close: (code, reason) => {
          if (this.#state === 'closed') return
          const opened = this.#state === 'open'
          this.#state = 'closed'
          this.#socket = undefined
          this.#link.live?.delete(this)
          this.onEnd(code, reason, opened, this.#detail)
        },
      })
    } catch (error) {
      this.#state = 'closed'
      this.#link.live?.delete(this)
      const detail = errorMessage(error)
      // Reported like any refused socket, after the caller's turn.
      void Promise.resolve().then(() => this.onEnd(ChannelCloseCodes.Abnormal, '', false, detail))
    }
  }

  /** Closes the socket if open; an end still connecting is closed as soon as it opens (`onOpen` is then not called). */
  protected closeSocket(code: number, reason?: string): void {
    if (this.#state === 'open') this.#socket!.close(code, reason)
    else if (this.#state === 'connecting') this.#closeOnOpen = { code, reason }
  }

  /** The socket opened. */
  protected abstract onOpen(socket: ChannelSocket): void
  /** A frame arrived on the open socket. */
  protected abstract onFrame(data: string | Uint8Array): void
  /** The socket ended (`opened`: after `onOpen`); `detail` is what a socket error said before. */
  protected abstract onEnd(code: number, reason: string, opened: boolean, detail: string | undefined): void

  /** The error of this end for a close code it did not ask for (protocol.md §9 codes). */
  protected closeError(code: number, reason: string, opened: boolean, detail: string | undefined): ChannelError {
    const id = this.ref.channel_id
    const direction = this.ref.direction
    const end = direction === 'read' ? 'reader' : 'writer'
    let error: SvcError
    if (!opened) {
      // A refused upgrade: `ws` names the status, a browser says nothing.
      if (detail !== undefined && /\b404\b/.test(detail)) error = Errors.notFound(`Channel not found: channel ${id} (unknown id, wrong key, or removed)`)
      else error = Errors.channelClosed(id, `its ${end} could not connect${detail === undefined ? ` (close code ${code})` : `: ${detail}`}`)
    } else {
      switch (code) {
        case ChannelCloseCodes.PolicyViolation:
          error = Errors.channelClaimed(id, direction)
          break
        case ChannelCloseCodes.InternalError:
          error = Errors.channelClosed(id, reason || (direction === 'read' ? 'the writer ended abnormally' : 'the reader went away'))
          break
        case ChannelCloseCodes.GoingAway:
          error = Errors.channelClosed(id, reason || 'it was removed by the engine')
          break
        case ChannelCloseCodes.MessageTooBig:
          error = Errors.channelClosed(id, reason || 'an item exceeds max_message_bytes of the engine listener')
          break
        case ChannelCloseCodes.Abnormal:
          error = Errors.channelClosed(id, `the connection of its ${end} was lost${detail === undefined ? '' : `: ${detail}`}`)
          break
        default:
          error = Errors.channelClosed(id, `its ${end} was closed with code ${code}${reason ? ` (${reason})` : ''}`)
      }
    }
    const init = { code: error.code, message: error.message, channel_id: id, direction, close_code: code }
    return new ChannelError(init)
  }

  /** An error of this end's own (a bad call, `readAll` over its bound). */
  protected ownError(error: SvcError): ChannelError {
    return new ChannelError({ code: error.code, message: error.message, channel_id: this.ref.channel_id, direction: this.ref.direction })
  }
}
