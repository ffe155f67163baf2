/**
 * One channel (protocol.md §9): the items on their way from the writer to the reader, the
 * backpressure between them and how each end learns of the other's end. It knows its ends only
 * through {@link WriterEnd} and {@link ReaderEnd}, so a WebSocket (`socket-ends.ts`) and an
 * in-process end (`local-ends.ts`) are one and the same to it.
 *
 * Items are *held* from the moment the writer's item arrives until it has left the engine (written
 * to the reader's socket, or taken by an in-process reader). While `buffer_size` items or
 * {@link CHANNEL_BUFFER_BYTES} bytes are held, the writer is paused (its socket is not read),
 * also before the reader connects. Held items wait in the channel only while no reader is
 * attached; once one is, each item is handed to it at once and counts until it has left, so the
 * reader's own buffer is bounded by the same numbers.
 */
import { Errors } from 'svc-protocol'
import { Fifo } from '../../workers/shared/fifo.ts'
import { CHANNEL_BUFFER_BYTES, CloseCodes } from './types.ts'

/** An item inside the engine: a text item as its UTF-8 bytes, so that it passes through unchanged. */
export interface Item {
  readonly binary: boolean
  readonly data: Buffer
}

export type Direction = 'read' | 'write'

/** What a channel needs of its write end. */
export interface WriterEnd {
  /** The channel holds as much as it may: take no more items until {@link resume}. */
  pause(): void
  resume(): void
  /**
   * The channel ended for the writer before the writer did: its reader went away (1011), an item
   * was too large for the reader (1009, `error` says so) or the channel was removed (1001). The end
   * must then report its close with {@link Channel.writerClosed}.
   */
  end(code: number, reason: string, error?: Error): void
}

/** What a channel needs of its read end. */
export interface ReaderEnd {
  /** Largest item the end can take (its connection's `max_message_bytes`), bytes. */
  readonly maxItemBytes: number
  /** Takes one item; calls `done` once it has left the engine. */
  deliver(item: Item, done: () => void): void
  /**
   * The end, after the items delivered so far: 1000 (the writer ended normally), 1011 (abnormally,
   * or an item was too large), 1001 (removed). The end must then report its close with
   * {@link Channel.readerClosed}.
   */
  finish(code: number, reason: string): void
}

/** How the writer ended, once it has. */
type WriterState = 'open' | 'normal' | 'abnormal'

export class Channel {
  readonly id: string
  readonly bufferSize: number
  /** Clock reading at creation (the registry's clock), ms. */
  readonly createdAtMs: number
  readonly writerKey: string
  readonly readerKey: string
  /** Who created it, when a built-in did: removed when that built-in stops. */
  readonly owner: object | undefined
  private writer: WriterEnd | undefined
  private reader: ReaderEnd | undefined
  private writerClaimed = false
  private readerClaimed = false
  /** Items waiting for a reader (only while none is attached). */
  private readonly queue = new Fifo<Item>()
  private held = 0
  private heldBytes = 0
  private writerPaused = false
  private writerState: WriterState = 'open'
  /** The channel told the reader its end (finish). */
  private readerFinished = false
  /** The reader went away before its end: items are dropped from then on. */
  private readerGone = false
  private writerSettled = false
  private readerSettled = false
  private removed = false
  private readonly onRemoved: (channel: Channel) => void

  constructor(options: { id: string; bufferSize: number; createdAtMs: number; writerKey: string; readerKey: string; owner?: object; onRemoved: (channel: Channel) => void }) {
    this.id = options.id
    this.bufferSize = options.bufferSize
    this.createdAtMs = options.createdAtMs
    this.writerKey = options.writerKey
    this.readerKey = options.readerKey
    this.owner = options.owner
    this.onRemoved = options.onRemoved
  }

  /** True while an end has never been claimed (the sweep removes such channels after 5 minutes). */
  get unclaimed(): boolean {
    return !this.writerClaimed || !this.readerClaimed
  }

  /** True once the channel is gone from its registry. */
  get isRemoved(): boolean {
    return this.removed
  }

  /** Items held (waiting, or on their way out to the reader): for tests and metrics. */
  get heldItems(): number {
    return this.held
  }

  /** Whether the writer is paused (backpressure): for tests. */
  get writerIsPaused(): boolean {
    return this.writerPaused
  }

  isClaimed(direction: Direction): boolean {
    return direction === 'write' ? this.writerClaimed : this.readerClaimed
  }

  /**
   * Attaches an end (each end once, protocol.md §9). Returns false when the end is claimed
   * already (the caller closes a socket with 1008) or the channel is removed.
   */
  claim(direction: Direction, end: WriterEnd | ReaderEnd): boolean {
    if (this.removed || this.isClaimed(direction)) return false
    if (direction === 'write') {
      this.writerClaimed = true
      this.writer = end as WriterEnd
      if (this.readerGone) this.writer.end(CloseCodes.InternalError, 'the reader went away')
      else if (!this.hasRoom()) this.pauseWriter()
      return true
    }
    this.readerClaimed = true
    const reader = end as ReaderEnd
    this.reader = reader
    while (this.queue.length > 0 && this.reader === reader && !this.readerGone) this.hand(this.queue.shift()!)
    if (this.writerState !== 'open' && !this.readerGone && !this.readerFinished) this.finishReader()
    return true
  }

  /** One item from the writer. Dropped once the reader went away or the channel ended. */
  push(item: Item): void {
    if (this.removed || this.readerGone || this.writerState !== 'open') return
    this.held++
    this.heldBytes += item.data.length
    if (this.reader === undefined) this.queue.push(item)
    else this.hand(item)
    if (!this.hasRoom()) this.pauseWriter()
  }

  /** The writer's end: its socket closed (1000 or 1005 is normal), or an in-process writer closed or aborted. */
  writerClosed(normal: boolean): void {
    if (this.removed || this.writerSettled) return
    this.writerSettled = true
    if (this.writerState === 'open') this.writerState = normal ? 'normal' : 'abnormal'
    if (this.reader !== undefined && this.queue.length === 0 && !this.readerGone && !this.readerFinished) this.finishReader()
    this.settle()
  }

  /**
   * The reader's end: after the end the channel gave it, this only settles it; before, the reader
   * went away: waiting items are dropped and the writer is closed with 1011 (protocol.md §9).
   */
  readerClosed(): void {
    if (this.removed || this.readerSettled) return
    this.readerSettled = true
    if (!this.readerFinished) {
      this.readerGone = true
      this.dropHeld()
      if (this.writer !== undefined && !this.writerSettled) this.writer.end(CloseCodes.InternalError, 'the reader went away')
    }
    this.settle()
  }

  /**
   * Removes the channel now: sockets still open are closed with 1001 and `reason`, in-process
   * ends see the end. Idempotent.
   */
  remove(reason: string): void {
    if (this.removed) return
    this.removed = true
    this.dropHeld()
    this.onRemoved(this)
    if (this.writer !== undefined && !this.writerSettled) this.writer.end(CloseCodes.GoingAway, reason)
    if (this.reader !== undefined && !this.readerSettled && !this.readerFinished) {
      this.readerFinished = true
      this.reader.finish(CloseCodes.GoingAway, reason)
    }
  }

  private hasRoom(): boolean {
    return this.held < this.bufferSize && this.heldBytes < CHANNEL_BUFFER_BYTES
  }

  private pauseWriter(): void {
    if (this.writerPaused || this.writer === undefined) return
    this.writerPaused = true
    this.writer.pause()
  }

  /** Hands an item to the attached reader, or ends the channel when it is too large for it. */
  private hand(item: Item): void {
    const reader = this.reader!
    if (item.data.length > reader.maxItemBytes) return this.tooLarge(item.data.length, reader.maxItemBytes)
    const bytes = item.data.length
    reader.deliver(item, () => this.left(bytes))
  }

  /** An item has left the engine. */
  private left(bytes: number): void {
    if (this.readerGone || this.removed) return
    this.held--
    this.heldBytes -= bytes
    if (this.writerPaused && this.hasRoom()) {
      this.writerPaused = false
      this.writer?.resume()
    }
  }

  /**
   * An item larger than the reader's connection takes (protocol.md §2: the engine never sends a
   * frame over a connection's `max_message_bytes`): the reader gets 1011, the writer 1009.
   */
  private tooLarge(bytes: number, limit: number): void {
    const reason = `an item of ${bytes} bytes exceeds max_message_bytes ${limit} of the reader`
    this.readerGone = true
    this.dropHeld()
    this.readerFinished = true
    this.reader!.finish(CloseCodes.InternalError, reason.slice(0, 123))
    if (this.writer !== undefined && !this.writerSettled) {
      this.writer.end(CloseCodes.MessageTooBig, reason.slice(0, 123), Errors.frameTooLarge('channel item', bytes, limit))
    }
  }

  private finishReader(): void {
    this.readerFinished = true
    if (this.writerState === 'normal') this.reader!.finish(CloseCodes.Normal, '')
    else this.reader!.finish(CloseCodes.InternalError, 'the writer ended abnormally')
  }

  private dropHeld(): void {
    this.queue.clear()
    this.held = 0
    this.heldBytes = 0
  }

  /** Both ends are done: the channel leaves its registry. */
  private settle(): void {
    if (this.removed || !this.writerSettled || !this.readerSettled) return
    this.removed = true
    this.dropHeld()
    this.onRemoved(this)
  }
}
