/**
 * The in-memory transport, for tests and in-process workers: two connected ends that behave like
 * the two ends of a WebSocket (RFC 6455) without a socket.
 *
 * - Frames are delivered asynchronously (a later macrotask, never inside `send`'s call stack) and
 *   in order; `bufferedAmount` counts the UTF-8 bytes sent and not yet delivered, `writtenBytes`
 *   those delivered.
 * - Text frames are checked and encoded as a WebSocket would: `send` throws a TypeError for a
 *   non-string, and a lone surrogate arrives as U+FFFD (what UTF-8 encoding in `ws` makes of it),
 *   so the receiver always gets well-formed text.
 * - `close(code, reason)` is a closing handshake: frames already sent both ways are delivered,
 *   then both ends see `close` with that code and reason (1005 and `""` without a code).
 * - `terminate()` drops undelivered frames both ways and closes both ends with 1006.
 * - `ping()` makes the other end's `alive` fire, and its automatic pong this end's.
 * - Sends, pings and closes on an end that is not open are ignored.
 *
 * @example
 * const [a, b] = memoryPair()
 * b.setHandlers({ message: (data) => console.log(data), close: (code) => console.log('closed', code) })
 * a.send('{"type":"ping"}')
 * a.close(1000)
 */
import { asSentText, assertCloseArgs, assertText, parseWebSocketUrl, queryOf } from './frames.ts'
import type { Connector, ConnectOptions, PeerInfo, Transport, TransportHandlers } from './types.ts'

/** An end of an in-memory connection. */
export interface MemoryTransport extends Transport {
  /**
   * Sends one binary frame (a copy of `bytes`); it arrives as a `Uint8Array` with `isBinary` true.
   * The engine reads binary frames as telemetry or UTF-8 JSON (protocol.md §3.5).
   * @throws TypeError when `bytes` is not a Uint8Array.
   */
  sendBinary(bytes: Uint8Array): void
}

/** What travels from one end to the other. */
type Item =
  | { readonly kind: 'text'; readonly data: string; readonly bytes: number }
  | { readonly kind: 'binary'; readonly data: Uint8Array; readonly bytes: number }
  | { readonly kind: 'open' }
  | { readonly kind: 'ping' }
  | { readonly kind: 'pong' }
  /** A close frame. */
  | { readonly kind: 'close'; readonly code: number; readonly reason: string }
  /** The connection is gone: the receiver reports `close` (with `code`, or the close frame it got). */
  | { readonly kind: 'end'; readonly code?: number; readonly reason?: string }
  | { readonly kind: 'error'; readonly error: Error }

const OPEN_ITEM: Item = { kind: 'open' }
const PING_ITEM: Item = { kind: 'ping' }
const PONG_ITEM: Item = { kind: 'pong' }
const END_ITEM: Item = { kind: 'end' }
const ABNORMAL_END: Item = { kind: 'end', code: 1006, reason: '' }

/**
 * `connecting` until a connector's client end opens; `closing` once this end sent or received a
 * close frame (it still receives); `closed` when the connection is gone.
 */
type State = 'connecting' | 'open' | 'closing' | 'closed'

class MemoryEnd implements MemoryTransport {
  #peer!: MemoryEnd
  #state: State
  #handlers: TransportHandlers | undefined = undefined
  /** Items sent to this end and not yet delivered. */
  #inbox: Item[] = []
  #scheduled = false
  /** Bytes this end sent that the peer has not received yet. */
  #buffered = 0
  /** Bytes this end sent that the peer has received. */
  #written = 0
  /** The close frame this end received. */
  #received: { code: number; reason: string } | undefined = undefined
  #closeFired = false
  /** Largest message this end accepts, bytes (a WebSocket server's `maxPayload`). */
  #maxMessageBytes = Infinity

  constructor(state: State, maxMessageBytes = Infinity) {
    this.#state = state
    this.#maxMessageBytes = maxMessageBytes
  }

  static link(a: MemoryEnd, b: MemoryEnd): void {
    a.#peer = b
    b.#peer = a
  }

  get bufferedAmount(): number {
    return this.#buffered
  }

  get writtenBytes(): number {
    return this.#written
  }

  get isOpen(): boolean {
    return this.#state === 'open'
  }

  send(text: string): void {
    assertText(text)
    if (this.#state !== 'open') return
    const data = asSentText(text)
    const bytes = Buffer.byteLength(data)
    // Like `ws` on the receiving side: a message over the limit closes the connection with 1009.
    if (bytes > this.#peer.#maxMessageBytes) return this.#peer.close(1009, 'Max payload size exceeded')
    this.#buffered += bytes
    this.#peer.#push({ kind: 'text', data, bytes })
  }

  sendBinary(bytes: Uint8Array): void {
    if (!(bytes instanceof Uint8Array)) throw new TypeError('sendBinary takes a Uint8Array')
    if (this.#state !== 'open') return
    if (bytes.byteLength > this.#peer.#maxMessageBytes) return this.#peer.close(1009, 'Max payload size exceeded')
    this.#buffered += bytes.byteLength
    this.#peer.#push({ kind: 'binary', data: new Uint8Array(bytes), bytes: bytes.byteLength })
  }

  ping(): void {
    if (this.#state === 'open') this.#peer.#push(PING_ITEM)
  }

  close(code?: number, reason?: string): void {
    assertCloseArgs(code, reason)
    if (this.#state === 'connecting') {
      // Like a WebSocket closed during its handshake: no close frame, the connection is dropped.
      this.terminate()
      return
    }
    if (this.#state !== 'open') return
    this.#state = 'closing'
    this.#peer.#push({ kind: 'close', code: code ?? 1005, reason: code === undefined ? '' : (reason ?? '') })
  }

  terminate(): void {
    this.#abort(undefined)
  }

  setHandlers(handlers: TransportHandlers): void {
    this.#handlers = handlers
    if (this.#inbox.length > 0) this.#schedule()
  }

  /** Opens a connector's client end (asynchronously, before anything the server sent). */
  startOpening(): void {
    this.#push(OPEN_ITEM)
  }

  /**
   * Drops both ends at once: undelivered frames are lost and each end reports `close` with 1006,
   * this one after `error` when one is given.
   */
  abort(error: Error): void {
    this.#abort(error)
  }

  #abort(error: Error | undefined): void {
    for (const end of [this, this.#peer]) {
      if (end.#state === 'closed') continue
      end.#state = 'closed'
      end.#inbox = []
      end.#buffered = 0
      if (error !== undefined && end === this) end.#push({ kind: 'error', error })
      end.#push(ABNORMAL_END)
    }
  }

  #push(item: Item): void {
    this.#inbox.push(item)
    this.#schedule()
  }

  #schedule(): void {
    if (this.#scheduled || this.#handlers === undefined || this.#closeFired) return
    this.#scheduled = true
    setImmediate(MemoryEnd.#deliver, this)
  }

  /** Delivers what the inbox holds now; items pushed meanwhile wait for the next macrotask. */
  static #deliver(end: MemoryEnd): void {
    end.#scheduled = false
    const batch = end.#inbox
    end.#inbox = []
    for (let i = 0; i < batch.length; i++) {
      // terminate() during this batch replaced the inbox: the rest of the batch is lost.
      if (end.#closeFired || (end.#state === 'closed' && batch[i]!.kind !== 'end' && batch[i]!.kind !== 'error')) break
      end.#handle(batch[i]!)
    }
    if (end.#inbox.length > 0) end.#schedule()
  }

  #handle(item: Item): void {
    const handlers = this.#handlers!
    switch (item.kind) {
      case 'text':
      case 'binary':
        this.#peer.#buffered = Math.max(0, this.#peer.#buffered - item.bytes)
        this.#peer.#written += item.bytes
        handlers.message(item.data, item.kind === 'binary')
        return
      case 'open':
        if (this.#state !== 'connecting') return
        this.#state = 'open'
        handlers.open?.()
        return
      case 'ping':
        // The automatic pong goes out only from an open end, as in `ws`.
        if (this.#state === 'open') this.#peer.#push(PONG_ITEM)
        handlers.alive?.()
        return
      case 'pong':
        handlers.alive?.()
        return
      case 'close':
        this.#received = { code: item.code, reason: item.reason }
        if (this.#state === 'open') {
          // Echo the close frame; this end reports `close` once the peer got the echo.
          this.#state = 'closing'
          this.#peer.#push(item)
        } else {
          // Our own close frame was answered (or both ends closed at once): done.
          this.#state = 'closed'
          this.#peer.#push(END_ITEM)
          this.#fireClose(item.code, item.reason)
        }
        return
      case 'end':
        this.#state = 'closed'
        this.#fireClose(item.code ?? this.#received?.code ?? 1006, item.reason ?? this.#received?.reason ?? '')
        return
      case 'error':
        handlers.error?.(item.error)
        return
    }
  }

  #fireClose(code: number, reason: string): void {
    if (this.#closeFired) return
    this.#closeFired = true
    this.#inbox = []
    this.#handlers!.close(code, reason)
  }
}

/**
 * Two connected ends, both open.
 *
 * @example
 * const [client, server] = memoryPair()
 */
export function memoryPair(): [MemoryTransport, MemoryTransport] {
  const a = new MemoryEnd('open')
  const b = new MemoryEnd('open')
  MemoryEnd.link(a, b)
  return [a, b]
}

/**
 * A {@link Connector} that connects in memory: each call makes a pair, hands the server end to
 * `accept` (synchronously, inside the connector call) and returns the client end, whose `open`
 * fires asynchronously, before any frame the server end sent. The engine passes its accept
 * function; an SDK client created with this connector talks to that engine without a socket.
 *
 * `accept` gets a {@link PeerInfo}: `ip` from `info` (default null); `headers` from `info`, then
 * `ConnectOptions.headers`, names lower-cased and repeated names joined with `, `; `query` from
 * `info`, then the query parameters of the URL. When `accept` throws, the client end reports that
 * error, then `close` with 1006. `handshakeTimeoutMs` is not needed: the handshake cannot stall.
 * `maxMessageBytes` is the server end's limit: a larger message closes the connection with 1009,
 * as a WebSocket server with that `maxPayload` does.
 *
 * @throws TypeError (from the connector) when the URL is not a `ws:` or `wss:` URL.
 * @example
 * const connector = memoryConnector((server, info) => engine.accept(server, info), { ip: '127.0.0.1' })
 * const client = new WorkerClient('ws://engine.local/?token=t', resolveOptions({}), { connector })
 */
export function memoryConnector(
  accept: (server: Transport, info: PeerInfo) => void,
  info: Partial<PeerInfo> = {},
  maxMessageBytes = Infinity,
): Connector {
  return (url: string, options: ConnectOptions = {}): Transport => {
    const parsed = parseWebSocketUrl(url)
    const client = new MemoryEnd('connecting')
    const server = new MemoryEnd('open', maxMessageBytes)
    MemoryEnd.link(client, server)
    client.startOpening()
    const peer: PeerInfo = {
      ip: info.ip ?? null,
      headers: mergeHeaders(info.headers, options.headers),
      query: mergeQuery(info.query, queryOf(parsed.searchParams)),
    }
    try {
      accept(server, peer)
    } catch (err) {
      client.abort(err instanceof Error ? err : new Error(String(err)))
    }
    return client
  }
}

function mergeHeaders(...sources: Array<Record<string, string> | undefined>): Record<string, string> {
  const headers = new Map<string, string>()
  for (const source of sources) {
    if (source === undefined) continue
    for (const [name, value] of Object.entries(source)) {
      const key = name.toLowerCase()
      const previous = headers.get(key)
      headers.set(key, previous === undefined ? value : `${previous}, ${value}`)
    }
  }
  return Object.fromEntries(headers)
}

function mergeQuery(...sources: Array<Record<string, string[]> | undefined>): Record<string, string[]> {
  const query = new Map<string, string[]>()
  for (const source of sources) {
    if (source === undefined) continue
    for (const [key, values] of Object.entries(source)) query.set(key, [...(query.get(key) ?? []), ...values])
  }
  return Object.fromEntries(query)
}
