/**
 * Streamed HTTP bodies of svc-http (builtins.md §3.4, §3.5, §3.7; protocol.md §9 "HTTP bodies").
 * Every handler gets two channels; svc-http holds the engine's end of each in-process
 * (`LocalWorker.channels`) and the handler the other:
 *
 * - `request_body`: {@link RequestBodyPump} writes the raw request bytes into it, from the buffer
 *   of a buffered route or straight from the socket of a streamed one;
 * - `response`: {@link ResponseStream} reads the control items (`set_status`, `set_headers`) and
 *   body items and writes them to the client as they come.
 *
 * Memory stays bounded by backpressure end to end: the request is paused while its channel holds
 * `buffer_size` items or 1 MiB, and the response channel is not read while the client's socket
 * has more than its high-water mark waiting. What happens around them (which answer wins, the
 * timeout, removing the channels) is the worker's ({@link HttpWorker}).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { parseJson } from 'svc-protocol/json'
import type { AttachedReader, ChannelItem, ChannelSink, LocalChannelWriter } from '../../engine/channels/types.ts'
import { collectResponseHeaders } from './response.ts'

/**
 * Largest item svc-http writes into a `request_body` channel, bytes: the SDKs' own frame size
 * (sdk.md §9), far below any listener's `max_message_bytes`, so a reader never refuses an item.
 */
export const BODY_ITEM_BYTES = 64 * 1024

/** A control item of the response channel (builtins.md §3.7), validated. */
export type ControlItem =
  | { type: 'set_status'; status: number }
  /** `headers` as a flat `[name, value, …]` list, by the rules of §3.6. */
  | { type: 'set_headers'; headers: string[] }

/** Why a text item is not a control item: it is ignored (§3.7), and the reason logged. */
export interface IgnoredItem {
  ignored: string
}

/**
 * Reads one text item of a response channel (builtins.md §3.7): `{"type":"set_status",
 * "status_code":201}` (an integer 200–599) or `{"type":"set_headers","headers":{"k":"v"}}`
 * (values as in §3.6: strings, numbers, arrays of them; or an array of `"Name: value"` lines).
 * Anything else is an {@link IgnoredItem} naming the problem; never throws.
 *
 * @example parseControlItem('{"type":"set_status","status_code":201}') // { type: 'set_status', status: 201 }
 * @example parseControlItem('hello') // { ignored: 'not JSON' }
 */
export function parseControlItem(text: string): ControlItem | IgnoredItem {
  let value: unknown
  try {
    value = parseJson(text)
  } catch {
    return { ignored: 'not JSON' }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ignored: 'not a JSON object' }
  const item = value as { type?: unknown; status_code?: unknown; headers?: unknown }
  if (item.type === 'set_status') {
    const code = item.status_code
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 200 || code > 599) {
      return { ignored: 'set_status needs status_code, an integer from 200 to 599' }
    }
    return { type: 'set_status', status: code }
  }
  if (item.type === 'set_headers') {
    if (typeof item.headers !== 'object' || item.headers === null) return { ignored: 'set_headers needs headers, an object' }
    const headers: string[] = []
    collectResponseHeaders(item.headers, headers)
    return { type: 'set_headers', headers }
  }
  return { ignored: typeof item.type === 'string' ? `unknown type ${JSON.stringify(item.type.slice(0, 40))}` : 'no type' }
}

/**
 * Merges `incoming` header lines into `current` (both flat `[name, value, …]` lists): a name set
 * again replaces every earlier line of that name (case-insensitive); repeated lines within one
 * `set_headers` stay (`set-cookie`).
 */
export function mergeHeaders(current: string[], incoming: readonly string[]): string[] {
  if (incoming.length === 0) return current
  const names = new Set<string>()
  for (let i = 0; i < incoming.length; i += 2) names.add(incoming[i]!.toLowerCase())
  const out: string[] = []
  for (let i = 0; i < current.length; i += 2) if (!names.has(current[i]!.toLowerCase())) out.push(current[i]!, current[i + 1]!)
  for (let i = 0; i < incoming.length; i++) out.push(incoming[i]!)
  return out
}

// ---- request_body ------------------------------------------------------------------------------

/**
 * How a {@link RequestBodyPump} ended: every byte written and the channel closed (`complete`), the
 * route's limit passed (`too_large`), the client went away before the end (`client_gone`), or the
 * handler stopped reading (`reader_gone`: the channel's reader went away or it was removed). All
 * but `complete` end the channel abnormally (the reader sees close code 1011).
 */
export type PumpEnd = 'complete' | 'too_large' | 'client_gone' | 'reader_gone'

const noop = () => {}

/**
 * Writes the raw request body into the `request_body` channel (builtins.md §3.4) through an
 * in-process writer, in items of at most {@link BODY_ITEM_BYTES}, then closes it (1000).
 *
 * Backpressure: each item is written only once the previous one is in the channel, which waits
 * while the channel holds `buffer_size` items or 1 MiB; meanwhile the request is paused, so Node
 * stops reading its socket and the client's sends stall. The engine holds at most those 1 MiB and
 * one socket read per streamed request, whatever the body's size.
 */
export class RequestBodyPump {
  private readonly writer: LocalChannelWriter
  private readonly onEnd: (end: PumpEnd) => void
  private state: 'running' | 'stopped' | PumpEnd = 'running'
  private detach: () => void = noop
  /** Bytes taken from the request so far. */
  bytes = 0

  /** `onEnd` is told how the pump ended, once; not after {@link stop}. */
  constructor(writer: LocalChannelWriter, onEnd: (end: PumpEnd) => void) {
    this.writer = writer
    this.onEnd = onEnd
  }

  /** True while bytes may still go into the channel. */
  get running(): boolean {
    return this.state === 'running'
  }

  /** A body read already (a buffered route): written item by item, then the channel closed. */
  fromBuffer(raw: Buffer): void {
    if (raw.length === 0) {
      this.end('complete')
      return
    }
    void (async () => {
      try {
        for (let offset = 0; offset < raw.length && this.running; offset += BODY_ITEM_BYTES) {
          const item = raw.subarray(offset, offset + BODY_ITEM_BYTES)
          await this.writer.write(item)
          this.bytes += item.length
        }
      } catch {
        this.end('reader_gone')
        return
      }
      this.end('complete')
    })()
  }

  /**
   * The body of `req` as it arrives (a streamed route); more than `limit` bytes end the pump with
   * `too_large` (`Infinity`: no limit). The caller must not read `req` otherwise.
   */
  fromRequest(req: IncomingMessage, limit: number): void {
    const onData = (chunk: Buffer) => {
      if (!this.running) return
      this.bytes += chunk.length
      if (this.bytes > limit) {
        this.end('too_large', req)
        return
      }
      req.pause()
      writeItems(this.writer, chunk).then(
        () => {
          if (this.running) req.resume()
        },
        () => this.end('reader_gone', req),
      )
    }
    // 'end' comes only after every chunk's write resolved: each one paused the request until then.
    const onEnd = () => this.end('complete')
    const onClose = () => this.end('client_gone')
    req.on('data', onData)
    req.once('end', onEnd)
    // A client that goes away shows as 'close' before 'end'. (No 'error' listener: without one, Node
    // does not emit the request's `aborted` error at all, IncomingMessage#_destroy.)
    req.once('close', onClose)
    this.detach = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('close', onClose)
    }
    req.resume()
  }

  /** The exchange ended first: the channel ends abnormally if it was still being written. */
  stop(): void {
    if (!this.running) return
    this.state = 'stopped'
    this.detach()
    this.writer.abort()
  }

  private end(how: PumpEnd, req?: IncomingMessage): void {
    if (!this.running) return
    this.state = how
    this.detach()
    if (how === 'complete') {
      this.writer.close()
    } else {
      // Stop reading what nobody will take; the answer then closes the connection.
      req?.pause()
      this.writer.abort()
    }
    this.onEnd(how)
  }
}

/** Writes `chunk` as items of at most {@link BODY_ITEM_BYTES}; resolves once the last is in the channel. */
function writeItems(writer: LocalChannelWriter, chunk: Buffer): Promise<void> {
  if (chunk.length <= BODY_ITEM_BYTES) return writer.write(chunk)
  return (async () => {
    for (let offset = 0; offset < chunk.length; offset += BODY_ITEM_BYTES) await writer.write(chunk.subarray(offset, offset + BODY_ITEM_BYTES))
  })()
}

// ---- response ----------------------------------------------------------------------------------

/** What a {@link ResponseStream} asks of the exchange it serves. */
export interface ResponseStreamHost {
  /**
   * The first body item arrived: write the response head now (status, headers). `'write'`: body
   * bytes go out; `'discard'`: the response has no body (HEAD, 204, 304), items are taken and
   * dropped; `false`: the exchange was answered another way, the stream stops.
   */
  start(stream: ResponseStream): 'write' | 'discard' | false
  /** The writer ended, after every item was taken: normally (`error` undefined) or abnormally. */
  end(stream: ResponseStream, error: Error | undefined): void
  /** A text item was ignored: not a control item (`reason` says why), or one after the body started. */
  ignored(reason: string): void
}

/**
 * Takes the items of a `response` channel (builtins.md §3.7) as they arrive — the channel's
 * {@link ChannelSink} — and writes them to the client: text items are control items that set
 * {@link status} and merge {@link headers} until the body starts; the first binary item starts the
 * body (the host writes the head) and every binary item is written as it comes — chunked
 * transfer, no buffering or compression in between, so each item of a `text/event-stream` reaches
 * the client at once. An item counts against the channel until the client's socket took it
 * (`drain`), so a slow client pauses the handler's writer: the engine holds at most the channel's
 * `buffer_size` items or 1 MiB per response.
 */
export class ResponseStream implements ChannelSink {
  /** Status so far (`set_status`), default 200. */
  status = 200
  /** Header lines so far (`set_headers`), `[name, value, …]`. */
  headers: string[] = []
  /** The first body item arrived and the head was written. */
  started = false
  private readonly res: ServerResponse
  private readonly host: ResponseStreamHost
  private mode: 'write' | 'discard' | 'stopped' = 'write'
  private reader: AttachedReader | null = null
  /** `done` callbacks of items written while the socket was over its high-water mark. */
  private unflushed: Array<() => void> = []

  constructor(res: ServerResponse, host: ResponseStreamHost) {
    this.res = res
    this.host = host
  }

  /** The channel end this stream is attached as (to {@link cancel} it). */
  attached(reader: AttachedReader): void {
    this.reader = reader
    if (this.mode === 'stopped') reader.cancel()
  }

  item(item: ChannelItem, done: () => void): void {
    if (this.mode === 'stopped') return done()
    if (item.type === 'text') {
      this.control(item.text)
      return done()
    }
    if (!this.started) {
      const how = this.host.start(this)
      if (how === false) {
        done()
        // Not from inside the channel's hand-over: it goes on with its own bookkeeping first.
        queueMicrotask(() => this.cancel())
        return
      }
      this.started = true
      this.mode = how
    }
    const res = this.res
    // Gone, or nothing to write: the item has left. (A client that went away ends the exchange, which cancels.)
    if (this.mode !== 'write' || item.data.length === 0 || res.destroyed || res.writableEnded) return done()
    if (this.unflushed.length > 0) {
      // Still waiting for the socket: this item goes out behind the others and leaves with them.
      res.write(item.data)
      this.unflushed.push(done)
      return
    }
    if (res.write(item.data)) return done()
    this.unflushed.push(done)
    res.once('drain', this.flushed)
    res.once('close', this.flushed)
  }

  end(normal: boolean, reason: string): void {
    if (this.mode === 'stopped') return
    this.mode = 'stopped'
    this.host.end(this, normal ? undefined : new Error(reason))
  }

  /** The exchange ended: stop taking items; a writer still open is closed with 1011 (§9: the reader went away). */
  cancel(): void {
    this.mode = 'stopped'
    this.reader?.cancel()
  }

  /** The socket took what was written (or is gone): the items waiting for it have left. */
  private readonly flushed = (): void => {
    this.res.off('drain', this.flushed)
    this.res.off('close', this.flushed)
    const dones = this.unflushed
    this.unflushed = []
    for (const done of dones) done()
  }

  private control(text: string): void {
    if (this.started) {
      this.host.ignored('a text item after the body started')
      return
    }
    const control = parseControlItem(text)
    if ('ignored' in control) this.host.ignored(`a text item that is not a control item (${control.ignored})`)
    else if (control.type === 'set_status') this.status = control.status
    else this.headers = mergeHeaders(this.headers, control.headers)
  }
}
