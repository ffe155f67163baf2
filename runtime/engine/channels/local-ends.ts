/**
 * Channel ends held in-process by a built-in worker (protocol.md §9; `LocalChannels` in
 * `types.ts`): a writer whose `write` waits for room, and a reader that is an async iterator
 * whose items count against the channel until taken.
 */
import { Errors, type SvcError } from 'svc-protocol'
import { Fifo } from '../../workers/shared/fifo.ts'
import type { Channel, Item, ReaderEnd, WriterEnd } from './channel.ts'
import { CloseCodes, type AttachedReader, type ChannelItem, type ChannelSink, type LocalChannelReader, type LocalChannelWriter } from './types.ts'

interface PendingWrite {
  item: Item
  resolve: () => void
  reject: (error: Error) => void
}

export class LocalWriter implements WriterEnd, LocalChannelWriter {
  readonly channelId: string
  private readonly channel: Channel
  private paused = false
  private readonly pending = new Fifo<PendingWrite>()
  /** Why writes fail from now on (the channel ended for this writer). */
  private failure: Error | undefined
  /** close() or abort() was called. */
  private closing = false
  /** A close() waiting for the pending writes. */
  private closeWhenFlushed = false

  constructor(channel: Channel) {
    this.channel = channel
    this.channelId = channel.id
  }

  write(data: Uint8Array): Promise<void> {
    if (!(data instanceof Uint8Array)) return Promise.reject(new TypeError('write expects a Uint8Array'))
    return this.offer({ binary: true, data: Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength) })
  }

  sendMessage(text: string): Promise<void> {
    if (typeof text !== 'string') return Promise.reject(new TypeError('sendMessage expects a string'))
    return this.offer({ binary: false, data: Buffer.from(text, 'utf8') })
  }

  close(): void {
    if (this.closing) return
    this.closing = true
    if (this.pending.length === 0) this.channel.writerClosed(true)
    else this.closeWhenFlushed = true
  }

  abort(): void {
    if (this.closing && !this.closeWhenFlushed) return
    this.closing = true
    this.closeWhenFlushed = false
    this.fail(Errors.channelClosed(this.channelId, 'the writer aborted'))
    this.channel.writerClosed(false)
  }

  // ---- WriterEnd -----------------------------------------------------------------------------

  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    while (!this.paused && this.pending.length > 0 && this.failure === undefined) {
      const write = this.pending.shift()!
      this.channel.push(write.item)
      write.resolve()
    }
    if (this.closeWhenFlushed && this.pending.length === 0) {
      this.closeWhenFlushed = false
      this.channel.writerClosed(true)
    }
  }

  end(_code: number, reason: string, error?: Error): void {
    this.fail(error ?? Errors.channelClosed(this.channelId, reason))
    this.closing = true
    this.closeWhenFlushed = false
    this.channel.writerClosed(false)
  }

  private offer(item: Item): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    if (this.closing) return Promise.reject(Errors.channelClosed(this.channelId, 'the writer closed'))
    if (!this.paused && this.pending.length === 0) {
      this.channel.push(item)
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => this.pending.push({ item, resolve, reject }))
  }

  private fail(error: Error): void {
    this.failure ??= error
    for (let write = this.pending.shift(); write !== undefined; write = this.pending.shift()) write.reject(this.failure)
  }
}

interface Waiter {
  resolve: (item: ChannelItem | undefined) => void
  reject: (error: SvcError) => void
}

export class LocalReader implements ReaderEnd, LocalChannelReader {
  readonly channelId: string
  readonly maxItemBytes = Number.POSITIVE_INFINITY
  private readonly channel: Channel
  private readonly items = new Fifo<{ item: Item; done: () => void }>()
  private readonly waiters = new Fifo<Waiter>()
  /** Set once the end is known: undefined for a normal end, the error otherwise. */
  private ended: { error: SvcError | undefined } | undefined

  constructor(channel: Channel) {
    this.channel = channel
    this.channelId = channel.id
  }

  next(): Promise<ChannelItem | undefined> {
    const entry = this.items.shift()
    if (entry !== undefined) {
      entry.done()
      return Promise.resolve(toChannelItem(entry.item))
    }
    if (this.ended !== undefined) return this.ended.error === undefined ? Promise.resolve(undefined) : Promise.reject(this.ended.error)
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }))
  }

  cancel(): void {
    if (this.ended !== undefined && this.items.length === 0) return
    this.items.clear()
    this.ended ??= { error: Errors.channelClosed(this.channelId, 'the reader cancelled') }
    this.settleWaiters()
    this.channel.readerClosed()
  }

  [Symbol.asyncIterator](): AsyncIterator<ChannelItem> {
    return {
      next: async () => {
        const item = await this.next()
        return item === undefined ? { done: true, value: undefined } : { done: false, value: item }
      },
      // An early exit (break, throw) leaves the channel: the writer is told the reader went away.
      return: async () => {
        this.cancel()
        return { done: true, value: undefined }
      },
    }
  }

  // ---- ReaderEnd -----------------------------------------------------------------------------

  deliver(item: Item, done: () => void): void {
    const waiter = this.waiters.shift()
    if (waiter === undefined) {
      this.items.push({ item, done })
      return
    }
    done()
    waiter.resolve(toChannelItem(item))
  }

  finish(code: number, reason: string): void {
    if (this.ended !== undefined) return
    this.ended = { error: code === CloseCodes.Normal ? undefined : Errors.channelClosed(this.channelId, reason) }
    if (this.items.length === 0) this.settleWaiters()
    // The items still here are this reader's to take; the channel is done with it.
    this.channel.readerClosed()
  }

  private settleWaiters(): void {
    const error = this.ended!.error
    for (let waiter = this.waiters.shift(); waiter !== undefined; waiter = this.waiters.shift()) {
      if (error === undefined) waiter.resolve(undefined)
      else waiter.reject(error)
    }
  }
}

/** The read end of a {@link ChannelSink}: items are pushed to it as the channel hands them over. */
export class SinkReader implements ReaderEnd, AttachedReader {
  readonly channelId: string
  readonly maxItemBytes = Number.POSITIVE_INFINITY
  private readonly channel: Channel
  private readonly sink: ChannelSink
  /** The end was reported, or the sink cancelled. */
  private ended = false

  constructor(channel: Channel, sink: ChannelSink) {
    this.channel = channel
    this.channelId = channel.id
    this.sink = sink
  }

  cancel(): void {
    if (this.ended) return
    this.ended = true
    this.channel.readerClosed()
  }

  // ---- ReaderEnd -----------------------------------------------------------------------------

  deliver(item: Item, done: () => void): void {
    if (this.ended) done()
    else this.sink.item(toChannelItem(item), done)
  }

  finish(code: number, reason: string): void {
    if (this.ended) return
    this.ended = true
    this.sink.end(code === CloseCodes.Normal, reason)
    this.channel.readerClosed()
  }
}

function toChannelItem(item: Item): ChannelItem {
  return item.binary ? { type: 'binary', data: item.data } : { type: 'text', text: item.data.toString('utf8') }
}
