/**
 * `ChannelReader` (sdk.md §9, §13): the read end of a channel. Binary items by pull (`next`,
 * `for await`, `readAll`) or push (`onBinary`), Text items by push (`onMessage`); the end of the
 * channel as `undefined` (normal, close code 1000) or a {@link ChannelError} (anything else).
 */
import { Errors } from '../../errors.ts'
import { errorMessage, type ChannelError } from '../errors.ts'
import { ChannelCloseCodes, ChannelEnd, type ChannelLink } from './end.ts'
import type { StreamChannelRef } from './refs.ts'
import type { ChannelSocket } from './socket.ts'

interface Waiter {
  resolve(item: Uint8Array | undefined): void
  reject(error: Error): void
}

/** Options of {@link ChannelReader.readAll}. */
export interface ReadAllOptions {
  /** Most bytes accepted; past it the reader closes and `readAll` rejects. Default 64 MiB. */
  maxBytes?: number
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined })
const RESOLVED_END: Promise<undefined> = Promise.resolve(undefined)

/**
 * The read end of a channel (sdk.md §9). Made by the SDK from a read ref (a payload, a result,
 * `createChannel`); its WebSocket opens on the first `next`, `readAll`, iteration, `onMessage`,
 * `onBinary` or `close` — so an unused reader costs no socket.
 *
 * - Binary items arrive as the writer's frames: a large write comes as items of at most 64 KiB.
 * - Text items go to `onMessage` listeners, in order; one that arrives while no listener is
 *   registered is dropped, so register before reading.
 * - While an `onBinary` listener is registered, Binary items go to it instead of `next()`.
 * - Unread Binary items are held up to 1 MiB; past it the socket is no longer read where the
 *   platform can stop it (Node), so the writer waits. (A listener's slow-consumer rule,
 *   `drain_timeout_ms`, drops a reader that stops reading for long; its writer then fails.)
 * - A normal end (1000) makes `next()` resolve `undefined` after the held items; any other end
 *   rejects with a {@link ChannelError} (`CHANNEL_CLOSED`, or `NOT_FOUND` for an unknown channel).
 *
 * @example
 * client.registerFunction('files::store', async ({ name, body }: { name: string; body: ChannelReader }) => {
 *   body.onMessage((text) => console.log('meta', JSON.parse(text)))
 *   let size = 0
 *   for await (const chunk of body) size += chunk.byteLength
 *   return { name, size }
 * })
 */
export class ChannelReader extends ChannelEnd implements AsyncIterable<Uint8Array> {
  readonly #items: Array<Uint8Array | undefined> = []
  #head = 0
  /** Bytes of the held items. */
  #heldBytes = 0
  readonly #waiters: Waiter[] = []
  /** Set once the channel ended for this reader: `error` undefined for a normal end. */
  #end: { error: ChannelError | undefined } | undefined = undefined
  readonly #messageListeners = new Set<(text: string) => void>()
  readonly #binaryListeners = new Set<(data: Uint8Array) => void>()
  #paused = false

  /** @throws TypeError when `ref` is not a well-formed read ref. */
  constructor(ref: StreamChannelRef, link: ChannelLink) {
    super(ref, link, 'read')
  }

  /** True once the channel ended for this reader (normally, with an error, or by `close()`). */
  get ended(): boolean {
    return this.#end !== undefined
  }

  /**
   * The next Binary item; `undefined` once the channel ended normally or the reader was closed.
   * Items already held are returned first, also after an abnormal end.
   * @throws (rejects) ChannelError `CHANNEL_CLOSED` when the writer ended abnormally (1011), the
   *   end was claimed already (1008), the channel was removed (1001) or the connection was lost;
   *   `NOT_FOUND` when the engine does not know the channel or key.
   */
  next(): Promise<Uint8Array | undefined> {
    if (this.#head < this.#items.length) return Promise.resolve(this.#take())
    const end = this.#end
    if (end !== undefined) return end.error === undefined ? RESOLVED_END : Promise.reject(end.error)
    this.connect()
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }))
  }

  /**
   * Every Binary item until the end, joined. Rejects as {@link next} does; with ChannelError
   * `CHANNEL_DATA_TOO_LARGE` (after closing the reader, so the writer fails too) once more than
   * `maxBytes` (default 64 MiB) arrived.
   * @throws RangeError (rejects) for a `maxBytes` that is not a number ≥ 0.
   */
  async readAll(options: ReadAllOptions = {}): Promise<Uint8Array> {
    const maxBytes = options.maxBytes ?? this.link.limits.readAllMaxBytes
    if (typeof maxBytes !== 'number' || !(maxBytes >= 0)) throw new RangeError(`maxBytes must be a number >= 0, got ${String(maxBytes)}`)
    const chunks: Uint8Array[] = []
    let total = 0
    for (;;) {
      const chunk = await this.next()
      if (chunk === undefined) break
      total += chunk.byteLength
      if (total > maxBytes) {
        const error = this.ownError(Errors.channelDataTooLarge(this.channelId, maxBytes))
        this.close()
        throw error
      }
      chunks.push(chunk)
    }
    if (chunks.length === 1) return chunks[0]!
    const all = new Uint8Array(total)
    let offset = 0
    for (const chunk of chunks) {
      all.set(chunk, offset)
      offset += chunk.byteLength
    }
    return all
  }

  /**
   * Calls `callback` with every Text item from now on, in order. Returns the remover.
   * A listener that throws is reported to the client's log; the reader goes on.
   * @throws TypeError when `callback` is not a function.
   */
  onMessage(callback: (text: string) => void): () => void {
    return this.#listen(this.#messageListeners, callback)
  }

  /**
   * Calls `callback` with every Binary item from now on, in order; while one is registered,
   * Binary items no longer go to `next()`/iteration (sdk.md §13). Returns the remover.
   * @throws TypeError when `callback` is not a function.
   */
  onBinary(callback: (data: Uint8Array) => void): () => void {
    return this.#listen(this.#binaryListeners, callback)
  }

  /**
   * Stops reading: held items are dropped, pending and later `next()` calls resolve `undefined`.
   * If the writer is still writing, the engine closes it with an error (the reader went away). An
   * unused reader connects to close, so its writer is not left waiting. Idempotent.
   */
  close(): void {
    if (this.#end !== undefined) return
    this.#finish(undefined)
    this.#items.length = 0
    this.#head = 0
    this.#heldBytes = 0
    // A paused socket would never read the engine's answer to the close.
    this.#resume()
    this.connect()
    this.closeSocket(ChannelCloseCodes.Normal)
  }

  /** Binary items until the end; leaving the loop early (`break`, a throw) closes the reader. */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array, undefined> {
    return {
      next: () => this.next().then((value) => (value === undefined ? DONE : { done: false, value })),
      return: () => {
        this.close()
        return Promise.resolve(DONE)
      },
    }
  }

  #listen<T>(listeners: Set<T>, callback: T): () => void {
    if (typeof callback !== 'function') throw new TypeError('the listener must be a function')
    listeners.add(callback)
    this.connect()
    return () => {
      listeners.delete(callback)
    }
  }

  #take(): Uint8Array {
    const item = this.#items[this.#head]!
    this.#items[this.#head++] = undefined
    this.#heldBytes -= item.byteLength
    if (this.#head === this.#items.length) {
      this.#items.length = 0
      this.#head = 0
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items.splice(0, this.#head)
      this.#head = 0
    }
    if (this.#paused && this.#heldBytes < this.link.limits.readerHighWaterMark / 2) this.#resume()
    return item
  }

  #resume(): void {
    if (!this.#paused) return
    this.#paused = false
    this.socket?.resume?.()
  }

  #emit<T>(listeners: Set<(value: T) => void>, value: T, kind: string): void {
    for (const listener of listeners) {
      try {
        listener(value)
      } catch (error) {
        this.link.log.warn(`channel ${this.channelId}: ${kind} listener threw: ${errorMessage(error)}`)
      }
    }
  }

  /** Ends the reader: waiters get the end (the held items are empty whenever someone waits). */
  #finish(error: ChannelError | undefined): void {
    this.#end = { error }
    const waiters = this.#waiters.splice(0)
    for (const waiter of waiters) {
      if (error === undefined) waiter.resolve(undefined)
      else waiter.reject(error)
    }
  }

  protected override onOpen(_socket: ChannelSocket): void {}

  protected override onFrame(data: string | Uint8Array): void {
    if (this.#end !== undefined) return
    if (typeof data === 'string') {
      if (this.#messageListeners.size > 0) this.#emit(this.#messageListeners, data, 'onMessage')
      return
    }
    if (this.#binaryListeners.size > 0) {
      this.#emit(this.#binaryListeners, data, 'onBinary')
      return
    }
    const waiter = this.#waiters.shift()
    if (waiter !== undefined) {
      waiter.resolve(data)
      return
    }
    this.#items.push(data)
    this.#heldBytes += data.byteLength
    if (!this.#paused && this.#heldBytes >= this.link.limits.readerHighWaterMark) {
      const socket = this.socket
      if (socket?.pause !== undefined) {
        this.#paused = true
        socket.pause()
      }
    }
  }

  protected override onEnd(code: number, reason: string, opened: boolean, detail: string | undefined): void {
    this.#paused = false
    if (this.#end !== undefined) return // closed by this reader
    this.#finish(code === ChannelCloseCodes.Normal ? undefined : this.closeError(code, reason, opened, detail))
  }
}
