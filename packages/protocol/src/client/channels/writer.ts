/**
 * `ChannelWriter` (sdk.md §9, §13): the write end of a channel. Text items with `sendMessage`,
 * Binary items with `write`/`sendBinary` (split into frames of at most 64 KiB), in the order they
 * were called; `close()` ends the channel normally (1000) after them, `abort()` abnormally.
 */
import { Errors } from '../../errors.ts'
import type { ChannelError } from '../errors.ts'
import type { TimerHandle } from '../timers.ts'
import { ChannelCloseCodes, ChannelEnd, type ChannelLink } from './end.ts'
import type { StreamChannelRef } from './refs.ts'
import type { ChannelSocket } from './socket.ts'

interface Settle {
  resolve(): void
  reject(error: Error): void
}

/** One frame waiting for room in the socket; `done` settles the `write` it ends. */
interface Outgoing {
  data: string | Uint8Array
  done: Settle | undefined
}

/** Marks where `close()` was called in the queue. */
const CLOSE: unique symbol = Symbol('close')

const RESOLVED: Promise<void> = Promise.resolve()
const encoder = new TextEncoder()

/** A byte view of any ArrayBufferView (of any realm); undefined for anything else. */
function bytesOf(value: unknown): Uint8Array | undefined {
  if (!ArrayBuffer.isView(value)) return undefined
  if (Object.prototype.toString.call(value) === '[object Uint8Array]') return value as Uint8Array
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
}

/**
 * The write end of a channel (sdk.md §9). Made by the SDK from a write ref (a payload, a result,
 * `createChannel`); its WebSocket opens on the first `write`, `sendMessage` or `close`.
 *
 * Backpressure: frames are handed to the socket while fewer than 1 MiB wait in it
 * (`bufferedAmount`); `write` resolves once its last frame was handed over, so a writer that
 * awaits each `write` holds at most about 1 MiB plus one write, however slow the reader is (the
 * engine stops reading the socket while the channel's buffer is full, protocol.md §9).
 *
 * @example
 * const { writer, readerRef } = await client.createChannel()
 * void client.trigger({ function_id: 'files::store', payload: { name: 'a.bin', body: readerRef } })
 * writer.sendMessage(JSON.stringify({ type: 'meta', size: data.byteLength }))
 * await writer.write(data)          // split into 64 KiB Binary items
 * await writer.close()              // the reader sees the end (1000) after every item
 */
export class ChannelWriter extends ChannelEnd {
  readonly #queue: Array<Outgoing | typeof CLOSE> = []
  #head = 0
  /** Bytes (text: UTF-16 units) queued and not yet handed to the socket. */
  #queuedBytes = 0
  /** Why every further call fails: the channel ended under this writer, or `abort()`. */
  #error: ChannelError | undefined = undefined
  /** Set by `close()`: settles when the closing handshake completed. */
  #closed: { promise: Promise<void>; settle: Settle } | undefined = undefined
  #closeSent = false
  #aborted = false
  #poll: TimerHandle | undefined = undefined
  readonly #onPoll = (): void => {
    this.#poll = undefined
    this.#pump()
  }

  /** @throws TypeError when `ref` is not a well-formed write ref. */
  constructor(ref: StreamChannelRef, link: ChannelLink) {
    super(ref, link, 'write')
  }

  /**
   * Bytes written and not yet on the network: queued in this writer plus the socket's
   * `bufferedAmount` (text counted in UTF-16 units).
   */
  get bufferedAmount(): number {
    return this.#queuedBytes + (this.socket?.bufferedAmount ?? 0)
  }

  /**
   * Sends `chunk` as Binary items (a string as its UTF-8 bytes), split into frames of at most
   * 64 KiB: the reader receives a 150 KiB write as three items of 64, 64 and 22 KiB. An empty
   * chunk sends nothing. Resolves once the last frame was handed to the socket with room in it;
   * until then keep `chunk` unchanged.
   * @throws (rejects) TypeError for anything but a string or an ArrayBufferView; ChannelError
   *   `CHANNEL_CLOSED` after `close()`/`abort()` or once the channel ended (the reader went away,
   *   a second claim, removal), `NOT_FOUND` when the engine does not know the channel or key.
   */
  write(chunk: Uint8Array | string): Promise<void> {
    const bytes = typeof chunk === 'string' ? encoder.encode(chunk) : bytesOf(chunk)
    if (bytes === undefined) return Promise.reject(new TypeError('ChannelWriter.write expects a Uint8Array or a string'))
    const refused = this.#refusal()
    if (refused !== undefined) return Promise.reject(refused)
    if (bytes.byteLength === 0) return RESOLVED
    return new Promise<void>((resolve, reject) => {
      const max = this.link.limits.maxFrameBytes
      const length = bytes.byteLength
      if (length <= max) {
        this.#queue.push({ data: bytes, done: { resolve, reject } })
      } else {
        for (let offset = 0; offset < length; offset += max) {
          const end = Math.min(offset + max, length)
          this.#queue.push({ data: bytes.subarray(offset, end), done: end === length ? { resolve, reject } : undefined })
        }
      }
      this.#queuedBytes += length
      this.#pump()
    })
  }

  /**
   * Sends `data` as Binary items, as {@link write} does (the browser SDK's name, sdk.md §13).
   * @throws (rejects) as {@link write}.
   */
  sendBinary(data: Uint8Array): Promise<void> {
    if (typeof data === 'string') return Promise.reject(new TypeError('sendBinary expects a Uint8Array; use sendMessage for text'))
    return this.write(data)
  }

  /**
   * Sends one Text item, in order with the writes before and after it (it waits behind them).
   * @throws TypeError when `text` is not a string; ChannelError as {@link write} rejects with.
   */
  sendMessage(text: string): void {
    if (typeof text !== 'string') throw new TypeError('ChannelWriter.sendMessage expects a string')
    const refused = this.#refusal()
    if (refused !== undefined) throw refused
    this.#queue.push({ data: text, done: undefined })
    this.#queuedBytes += text.length
    this.#pump()
  }

  /**
   * Ends the channel normally: after every item sent before, the reader sees the end (close code
   * 1000). Resolves when the engine confirmed the close (it then holds every item); idempotent.
   * An unused writer connects to close, so its reader is not left waiting.
   * @throws (rejects) ChannelError `CHANNEL_CLOSED` when the channel ended first (the reader went
   *   away, removal) or the writer was aborted.
   */
  close(): Promise<void> {
    if (this.#closed !== undefined) return this.#closed.promise
    let settle!: Settle
    const promise = new Promise<void>((resolve, reject) => (settle = { resolve, reject }))
    this.#closed = { promise, settle }
    if (this.#error !== undefined) {
      settle.reject(this.#error)
    } else {
      this.#queue.push(CLOSE)
      this.#pump()
    }
    return promise
  }

  /**
   * Ends the channel abnormally (close code 4000): the reader gets an error after the items the
   * engine already holds; what is still queued here is dropped and pending writes reject.
   * Does nothing once the channel ended.
   */
  abort(reason = 'the writer aborted'): void {
    if (this.#aborted || this.#error !== undefined || this.#closeSent) return
    this.#aborted = true
    this.#fail(this.ownError(Errors.channelClosed(this.channelId, reason)))
    this.#closed?.settle.reject(this.#error!)
    this.connect()
    this.closeSocket(ChannelCloseCodes.Aborted, truncateReason(reason))
  }

  #refusal(): ChannelError | undefined {
    if (this.#error !== undefined) return this.#error
    if (this.#closed !== undefined) return this.ownError(Errors.channelClosed(this.channelId, 'the writer closed it'))
    return undefined
  }

  /** Hands queued frames to the socket while it has room; opens it on first use. */
  #pump(): void {
    if (this.#poll !== undefined) return
    if (!this.started) {
      this.connect()
      return
    }
    const socket = this.socket
    if (socket === undefined) return
    const queue = this.#queue
    const highWaterMark = this.link.limits.writerHighWaterMark
    try {
      while (this.#head < queue.length) {
        const item = queue[this.#head]!
        if (item === CLOSE) {
          this.#head++
          this.#closeSent = true
          socket.close(ChannelCloseCodes.Normal)
          break
        }
        if (socket.bufferedAmount >= highWaterMark) {
          // No drain event on a WebSocket: look again shortly.
          this.#poll = this.link.timers.setTimeout(this.#onPoll, this.link.limits.drainPollMs)
          break
        }
        this.#head++
        this.#queuedBytes -= typeof item.data === 'string' ? item.data.length : item.data.byteLength
        socket.send(item.data)
        item.done?.resolve()
      }
    } catch (error) {
      this.#fail(this.ownError(Errors.channelClosed(this.channelId, `its socket refused a frame: ${(error as Error)?.message ?? String(error)}`)))
      this.closeSocket(ChannelCloseCodes.Aborted, 'send failed')
    }
    this.#compact()
  }

  #compact(): void {
    const queue = this.#queue
    if (this.#head === queue.length) {
      queue.length = 0
      this.#head = 0
    } else if (this.#head >= 1024 && this.#head * 2 >= queue.length) {
      queue.splice(0, this.#head)
      this.#head = 0
    }
  }

  /** Fails the writer: every queued write rejects with `error`, and so does every later call. */
  #fail(error: ChannelError): void {
    this.#error ??= error
    const queue = this.#queue
    for (let i = this.#head; i < queue.length; i++) {
      const item = queue[i]!
      if (item !== CLOSE) item.done?.reject(this.#error)
    }
    queue.length = 0
    this.#head = 0
    this.#queuedBytes = 0
  }

  protected override onOpen(_socket: ChannelSocket): void {
    this.#pump()
  }

  protected override onFrame(_data: string | Uint8Array): void {
    // A reader's engine sends a writer nothing but pings; nothing to do.
  }

  protected override onEnd(code: number, reason: string, opened: boolean, detail: string | undefined): void {
    if (this.#poll !== undefined) {
      this.link.timers.clearTimeout(this.#poll)
      this.#poll = undefined
    }
    if (this.#aborted) return
    if (this.#closeSent && (code === ChannelCloseCodes.Normal || code === ChannelCloseCodes.NoStatus)) {
      this.#closed!.settle.resolve()
      return
    }
    this.#fail(this.closeError(code, reason, opened, detail))
    this.#closed?.settle.reject(this.#error!)
  }
}

/** A close reason fits in 123 bytes of UTF-8 (RFC 6455 §5.5). */
export function truncateReason(reason: string): string {
  let text = reason
  while (encoder.encode(text).byteLength > 123) text = text.slice(0, -1)
  return text
}
