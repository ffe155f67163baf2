/**
 * Channel ends over a WebSocket of a worker listener (protocol.md §9). Items are the frames
 * themselves: a writer's text and binary frames are passed on as they came (text stays UTF-8
 * bytes, already validated by `ws`), never decoded as protocol messages.
 *
 * The writer's backpressure is `ws`'s `pause()`: the TCP socket is no longer read, so the kernel
 * buffers fill and the writer's own sends stall. Frames `ws` had already parsed from the chunk in
 * hand are still taken (at most one socket read, 64 KiB).
 */
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import type { KeepaliveTarget } from '../keepalive.ts'
import type { Channel, Item, ReaderEnd, WriterEnd } from './channel.ts'

/** How the engine watches a channel socket: the listener's keepalive and slow-consumer rule. */
export interface SocketWatch {
  /** Starts watching; call `heard` whenever anything arrives, `forget` when the socket closed. */
  (target: KeepaliveTarget): { heard: () => void; forget: () => void }
}

/** The TCP socket under a `ws` socket, for the bytes it has written (the slow-consumer rule). */
interface WrittenCounter {
  readonly bytesWritten?: number
  readonly writableLength?: number
}

const noop = () => {}
const unwatched: SocketWatch = () => ({ heard: noop, forget: noop })

/** Base of both ends: keepalive and slow-consumer bookkeeping over one `ws` socket. */
abstract class SocketEnd implements KeepaliveTarget {
  protected readonly ws: WebSocket
  private readonly tcp: WrittenCounter

  constructor(ws: WebSocket, tcp: Duplex) {
    this.ws = ws
    this.tcp = tcp as WrittenCounter
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount
  }

  get writtenBytes(): number {
    const { bytesWritten, writableLength } = this.tcp
    return bytesWritten === undefined || writableLength === undefined ? 0 : bytesWritten - writableLength
  }

  ping(): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.ping()
  }

  terminate(): void {
    this.ws.terminate()
  }
}

/** The write end: frames in, the close code tells a normal end (1000, or none) from an abnormal one. */
export class SocketWriter extends SocketEnd implements WriterEnd {
  private paused = false
  /** The channel ended this writer: frames still arriving are dropped. */
  private ending = false

  constructor(ws: WebSocket, tcp: Duplex, channel: Channel, watch: SocketWatch = unwatched) {
    super(ws, tcp)
    const { heard, forget } = watch(this)
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      heard()
      if (!this.ending) channel.push({ binary: isBinary, data })
    })
    ws.on('ping', heard)
    ws.on('pong', heard)
    ws.on('error', noop)
    ws.on('close', (code: number) => {
      forget()
      channel.writerClosed(code === 1000 || code === 1005)
    })
  }

  /** While true nothing can be heard from the writer: the keepalive does not count its silence. */
  get readingPaused(): boolean {
    return this.paused
  }

  pause(): void {
    if (this.ending) return
    this.paused = true
    this.ws.pause()
  }

  resume(): void {
    if (!this.paused) return
    this.paused = false
    this.ws.resume()
  }

  end(code: number, reason: string): void {
    this.ending = true
    // Read again, so that the closing handshake completes (what still arrives is dropped).
    this.resume()
    this.ws.close(code, reason)
  }
}

/** The read end: items out as frames, each counting until written to the network. */
export class SocketReader extends SocketEnd implements ReaderEnd {
  readonly maxItemBytes: number

  constructor(ws: WebSocket, tcp: Duplex, channel: Channel, maxItemBytes: number, watch: SocketWatch = unwatched) {
    super(ws, tcp)
    this.maxItemBytes = maxItemBytes
    const { heard, forget } = watch(this)
    // A reader has nothing to say; what it sends anyway is only proof of life.
    ws.on('message', heard)
    ws.on('ping', heard)
    ws.on('pong', heard)
    ws.on('error', noop)
    ws.on('close', () => {
      forget()
      channel.readerClosed()
    })
  }

  deliver(item: Item, done: () => void): void {
    // The callback runs once the frame is written to the socket. A failed write makes no room: the
    // socket's close follows, and an in-process writer looping on writes that resolve at once
    // (the failure is reported on the next tick) would never let that close be read.
    this.ws.send(item.data, { binary: item.binary, compress: false, fin: true }, (err) => {
      if (err === undefined || err === null) done()
    })
  }

  finish(code: number, reason: string): void {
    this.ws.close(code, reason)
  }
}
