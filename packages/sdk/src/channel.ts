/**
 * `svc-sdk/channel` (sdk.md §9): the Node channel ends — the client core's {@link CoreReader} and
 * {@link CoreWriter} with a Node `stream` each (`Readable` / `Writable`, honouring backpressure),
 * `readAll()` as a `Buffer` — and the `ws` socket they open.
 *
 * Channel refs in a payload or result reach a handler (or a `trigger` caller) as these ends;
 * `client.createChannel()` makes a new pair.
 *
 * @example
 * import { pipeline } from 'node:stream/promises'
 * import { createReadStream } from 'node:fs'
 *
 * const { writer, readerRef } = await client.createChannel()
 * const stored = client.trigger({ function_id: 'files::store', payload: { name: 'video.mp4', body: readerRef } })
 * await pipeline(createReadStream('video.mp4'), writer.stream)   // waits while the reader is slow
 * console.log(await stored)
 */
import { Readable, Writable } from 'node:stream'
import {
  ChannelReader as CoreReader,
  ChannelWriter as CoreWriter,
  type Channel as CoreChannel,
  type ChannelSocketFactory,
  type ReadAllOptions,
} from 'svc-protocol/client'
import WebSocket from 'ws'

export { ChannelError } from 'svc-protocol/client'
export type { ChannelErrorInit, ReadAllOptions, StreamChannelRef } from 'svc-protocol/client'

/** Deadline of a channel end's WebSocket upgrade, ms (the session's handshake timeout). */
export const CHANNEL_HANDSHAKE_TIMEOUT_MS = 10000

/** Node's `highWaterMark` of the `stream` of either end, bytes: one 64 KiB frame. */
const STREAM_HIGH_WATER_MARK = 64 * 1024

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * The read end of a channel (sdk.md §9), with a Node `Readable` of its Binary items.
 * Read it one way: `stream`, or `next`/`for await`/`readAll`, or `onBinary`.
 */
export class ChannelReader extends CoreReader {
  #stream: Readable | undefined = undefined

  /**
   * The Binary items as a `Readable` of Buffers (created on first access; reading it opens the
   * socket). Ends after a normal end; emits `error` (a ChannelError) after an abnormal one.
   * Destroying it closes the reader. Items are pulled one at a time, so a slow consumer holds
   * back the writer (sdk.md §9).
   */
  get stream(): Readable {
    if (this.#stream !== undefined) return this.#stream
    const stream: Readable = new Readable({
      highWaterMark: STREAM_HIGH_WATER_MARK,
      read: () => {
        this.next().then(
          (chunk) => stream.push(chunk === undefined ? null : asBuffer(chunk)),
          (error: Error) => stream.destroy(error),
        )
      },
      destroy: (error, callback) => {
        this.close()
        callback(error)
      },
    })
    this.#stream = stream
    return stream
  }

  /**
   * Every Binary item until the end, as one Buffer (sdk.md §9).
   * @throws (rejects) as the client core's `readAll`: ChannelError `CHANNEL_CLOSED`, `NOT_FOUND`,
   *   `CHANNEL_DATA_TOO_LARGE` past `maxBytes` (default 64 MiB).
   */
  override async readAll(options?: ReadAllOptions): Promise<Buffer> {
    return asBuffer(await super.readAll(options))
  }
}

/**
 * The write end of a channel (sdk.md §9), with a Node `Writable` of its Binary items.
 */
export class ChannelWriter extends CoreWriter {
  #stream: Writable | undefined = undefined

  /**
   * A `Writable` of Binary items (created on first access): each chunk becomes items of at most
   * 64 KiB; its write callback runs once the chunk was handed to the socket with room in it, so
   * `pipeline()` and `write()`'s return value follow the reader's pace. `end()` closes the channel
   * normally (its `finish` after the engine confirmed); `destroy()` before that aborts it (the
   * reader gets an error). A failed channel makes it emit `error` (a ChannelError).
   */
  get stream(): Writable {
    if (this.#stream !== undefined) return this.#stream
    const stream: Writable = new Writable({
      highWaterMark: STREAM_HIGH_WATER_MARK,
      write: (chunk: Buffer, _encoding, callback) => {
        this.write(chunk).then(() => callback(), callback)
      },
      writev: (chunks, callback) => {
        Promise.all(chunks.map(({ chunk }) => this.write(chunk as Buffer))).then(() => callback(), callback)
      },
      final: (callback) => {
        this.close().then(() => callback(), callback)
      },
      destroy: (error, callback) => {
        if (error !== null || !stream.writableFinished) this.abort(error === null ? 'the writer stream was destroyed' : `the writer stream failed: ${error.message}`)
        callback(error)
      },
    })
    this.#stream = stream
    return stream
  }
}

/** A channel's Node ends and their refs (sdk.md §9). */
export type Channel = CoreChannel<ChannelReader, ChannelWriter>

/**
 * Opens channel ends with Node `ws` (protocol.md §9): no compression, the upgrade bounded by
 * {@link CHANNEL_HANDSHAKE_TIMEOUT_MS}, no headers (the access key in the URL is the credential,
 * so the session's auth headers are not sent along), `pause`/`resume` for the reader's
 * backpressure.
 */
export const nodeChannelSocket: ChannelSocketFactory = (url, events) => {
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: CHANNEL_HANDSHAKE_TIMEOUT_MS })
  ws.binaryType = 'nodebuffer'
  ws.on('open', () => events.open())
  ws.on('message', (data: Buffer, isBinary: boolean) => events.message(isBinary ? data : data.toString('utf8')))
  ws.on('error', (error: Error) => events.error(error))
  ws.on('close', (code: number, reason: Buffer) => events.close(code, reason.toString('utf8')))
  return {
    get bufferedAmount() {
      return ws.bufferedAmount
    },
    send: (data) => ws.send(data, { binary: typeof data !== 'string' }),
    close: (code, reason) => ws.close(code, reason),
    pause: () => ws.pause(),
    resume: () => ws.resume(),
  }
}
