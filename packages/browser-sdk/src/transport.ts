/**
 * The browser transport (protocol.md §2–§3): a {@link Transport} over the WHATWG `WebSocket` every
 * browser has (and Node ≥ 22, Deno, Bun, workers), so the client core speaks the protocol in a page
 * exactly as it does over Node's `ws`. What a browser's WebSocket cannot do shapes it:
 *
 * - no upgrade headers: {@link ConnectOptions.headers} is not used (credentials go in the address's
 *   query or in cookies, protocol.md §13.2);
 * - no ping frames and no pong events: `ping()` does nothing, `alive` never fires; the session runs
 *   its keepalive with JSON `ping` frames instead (`pingFrames: true`, protocol.md §3.3);
 * - close codes a page may send are 1000 and 3000–4999 only (WHATWG WebSockets, `close()`).
 *
 * Binary frames arrive as `Uint8Array` (`binaryType = 'arraybuffer'`); `bufferedAmount` is the
 * socket's own count of bytes queued by `send` and not yet handed to the network.
 *
 * @example
 * import { ClientSession } from 'svc-protocol/client'
 * const session = new ClientSession({ address: 'ws://127.0.0.1:49135/?token=t', connector: connectBrowserWebSocket, pingFrames: true, announce: { runtime: 'browser' } })
 */
import { displayAddress, type ConnectOptions, type Connector, type Transport, type TransportHandlers } from 'svc-protocol/client'
import { Codes, SvcError } from 'svc-protocol/errors'

/** The part of the WHATWG `WebSocket` this transport uses (structural: no DOM types needed). */
export interface WebSocketLike {
  readonly readyState: number
  readonly bufferedAmount: number
  binaryType: string
  onopen: ((event: unknown) => void) | null
  onmessage: ((event: { data: unknown }) => void) | null
  onerror: ((event: unknown) => void) | null
  onclose: ((event: { code: number; reason: string }) => void) | null
  send(data: string | ArrayBufferView | ArrayBuffer): void
  close(code?: number, reason?: string): void
}

/** A `WebSocket` constructor: the global one, or another implementation of the same interface. */
export type WebSocketConstructor = new (url: string) => WebSocketLike

// readyState values (WHATWG WebSockets).
const CONNECTING = 0
const OPEN = 1

/** Longest close reason, in bytes of UTF-8 (RFC 6455 §5.5: a control frame carries ≤ 125 bytes). */
const MAX_CLOSE_REASON_BYTES = 123

/**
 * Checks a close the page may send (WHATWG `WebSocket.close` allows 1000 and 3000–4999).
 * @throws TypeError for any other code; RangeError for a reason over 123 bytes of UTF-8.
 */
function assertCloseArgs(code: number | undefined, reason: string | undefined): void {
  if (code !== undefined && !(code === 1000 || (Number.isInteger(code) && code >= 3000 && code <= 4999))) {
    throw new TypeError(`close code ${String(code)} cannot be sent from a browser: use 1000 or 3000–4999`)
  }
  if (reason !== undefined && typeof reason !== 'string') throw new TypeError('close reason must be a string')
  if (reason !== undefined && new TextEncoder().encode(reason).length > MAX_CLOSE_REASON_BYTES) {
    throw new RangeError(`close reason is longer than ${MAX_CLOSE_REASON_BYTES} bytes of UTF-8`)
  }
}


type HeldEvent = (handlers: TransportHandlers) => void

class BrowserWebSocketTransport implements Transport {
  readonly #ws: WebSocketLike
  /** The address without user, password, query and fragment (`displayAddress`): what error messages name. */
  readonly #where: string
  #handlers: TransportHandlers | undefined = undefined
  /** Events held until the first `setHandlers` (then undefined). */
  #held: HeldEvent[] | undefined = []
  #closeFired = false
  /** Set by a local close()/terminate(): errors the socket reports afterwards are their echo. */
  #ended = false
  /** Set by terminate(): the socket's own events are detached, `close` is on its way. */
  #terminated = false
  #handshakeTimer: ReturnType<typeof setTimeout> | undefined = undefined

  constructor(ws: WebSocketLike, url: string) {
    this.#ws = ws
    this.#where = displayAddress(url)
    ws.binaryType = 'arraybuffer'
    ws.onopen = () => {
      clearTimeout(this.#handshakeTimer)
      this.#emit((h) => h.open?.())
    }
    ws.onmessage = (event) => {
      const data = event.data
      // Text frames arrive as strings; binary ones as ArrayBuffer (binaryType above).
      if (typeof data === 'string') this.#emit((h) => h.message(data, false))
      else if (data instanceof ArrayBuffer) {
        const bytes = new Uint8Array(data)
        this.#emit((h) => h.message(bytes, true))
      }
    }
    ws.onerror = () => {
      // Browsers say nothing about why (by design); `close` follows with 1006.
      if (!this.#ended) this.#emit((h) => h.error?.(new Error(`WebSocket connection to ${this.#where} failed`)))
    }
    ws.onclose = (event) => this.#fireClose(event.code, event.reason)
  }

  /** Starts the opening-handshake deadline: past it, `error` (TIMEOUT) then `close` (1006). */
  startHandshakeTimer(timeoutMs: number): void {
    this.#handshakeTimer = setTimeout(() => {
      this.#handshakeTimer = undefined
      if (this.#ws.readyState !== CONNECTING) return
      this.#emit((h) => h.error?.(new SvcError(Codes.Timeout, `handshake with ${this.#where} timed out after ${timeoutMs}ms`)))
      this.terminate()
    }, timeoutMs)
  }

  get bufferedAmount(): number {
    return this.#ws.bufferedAmount
  }

  get isOpen(): boolean {
    return this.#ws.readyState === OPEN && !this.#ended
  }

  send(text: string): void {
    if (typeof text !== 'string') throw new TypeError(`Transport.send takes a string (one text frame), got ${text === null ? 'null' : typeof text}`)
    if (this.isOpen) this.#ws.send(text)
  }

  sendBinary(data: Uint8Array): void {
    if (!(data instanceof Uint8Array)) throw new TypeError('sendBinary expects a Uint8Array')
    if (this.isOpen) this.#ws.send(data)
  }

  close(code?: number, reason?: string): void {
    assertCloseArgs(code, reason)
    if (this.#ended || this.#closeFired) return
    if (this.#ws.readyState === CONNECTING) {
      this.terminate()
      return
    }
    this.#ended = true
    clearTimeout(this.#handshakeTimer)
    this.#ws.close(code, code === undefined ? undefined : reason)
  }

  /**
   * Drops the connection without waiting for a closing handshake: nothing the socket reports
   * afterwards reaches the handlers, and `close` (1006) follows in a microtask (asynchronously, as
   * the other transports report it, so no caller sees its own close re-entrantly).
   */
  terminate(): void {
    if (this.#closeFired || this.#terminated) return
    this.#terminated = true
    this.#ended = true
    clearTimeout(this.#handshakeTimer)
    const ws = this.#ws
    ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null
    try {
      ws.close()
    } catch {
      // already closing
    }
    queueMicrotask(() => this.#fireClose(1006, ''))
  }

  /** Browsers cannot send ping frames; the session's JSON `ping` frames keep the connection alive. */
  ping(): void {}

  setHandlers(handlers: TransportHandlers): void {
    const first = this.#handlers === undefined
    this.#handlers = handlers
    const held = this.#held
    if (!first || held === undefined) return
    this.#held = undefined
    for (const event of held) event(handlers)
  }

  #emit(event: HeldEvent): void {
    if (this.#held === undefined) event(this.#handlers!)
    else this.#held.push(event)
  }

  #fireClose(code: number, reason: string): void {
    if (this.#closeFired) return
    this.#closeFired = true
    clearTimeout(this.#handshakeTimer)
    this.#emit((h) => h.close(code, reason))
  }
}

/**
 * A {@link Connector} over a WHATWG `WebSocket` constructor (default: the global `WebSocket`).
 * `options.headers` is not used: a browser cannot set upgrade headers. `handshakeTimeoutMs` is
 * honoured: past it the transport reports `error` with code `TIMEOUT`, then `close` with 1006.
 *
 * @throws TypeError when there is no `WebSocket` (neither given nor global); whatever the
 *   constructor throws for the URL (a `SyntaxError` for one that is not `ws:`/`wss:`).
 */
export function browserConnector(WebSocketImpl?: WebSocketConstructor): Connector {
  return (url: string, options: ConnectOptions): Transport => {
    const Impl = WebSocketImpl ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket
    if (Impl === undefined) throw new TypeError('no WebSocket on this platform: pass a WebSocket implementation')
    const transport = new BrowserWebSocketTransport(new Impl(url), url)
    if (options.handshakeTimeoutMs !== undefined) transport.startHandshakeTimer(options.handshakeTimeoutMs)
    return transport
  }
}

/** Opens a connection with the global `WebSocket` (see {@link browserConnector}). */
export const connectBrowserWebSocket: Connector = browserConnector()
