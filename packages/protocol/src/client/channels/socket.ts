/**
 * The channel-socket seam: the WebSocket of one channel end, as the platform provides it. The core
 * ends ({@link ChannelWriter}, {@link ChannelReader}) never know which WebSocket they have; svc-sdk
 * gives Node `ws` (with `pause`/`resume`), a browser SDK the global `WebSocket` through
 * {@link webSocketChannels}, tests a scripted fake.
 */

/** What a channel socket reports; each fires on the end that opened the socket. */
export interface ChannelSocketEvents {
  /** The upgrade completed; frames may be sent. */
  open(): void
  /** One frame: a string for a text frame, bytes for a binary frame. */
  message(data: string | Uint8Array): void
  /**
   * The socket ended, once (after `open` or instead of it): the close code received (1005 when
   * none came, 1006 for an abnormal end such as a refused upgrade) and its reason.
   */
  close(code: number, reason: string): void
  /** A socket-level error (a refused upgrade, a reset); `close` follows. */
  error(error: Error): void
}

/**
 * One channel end's WebSocket. A subset of the WHATWG `WebSocket` (so a browser's socket is one),
 * plus the optional `pause`/`resume` of Node's `ws`.
 */
export interface ChannelSocket {
  /** Bytes given to `send` and not yet written to the network (the writer's backpressure). */
  readonly bufferedAmount: number
  /** Sends one frame: text for a string, binary for bytes. Only called once `open` fired. */
  send(data: string | Uint8Array): void
  /** Starts the closing handshake (codes 1000 or 3000–4999 only, as browsers allow). */
  close(code: number, reason?: string): void
  /** Stops reading the socket (TCP backpressure to the engine); absent where the platform cannot. */
  pause?(): void
  /** Reads the socket again after `pause`. */
  resume?(): void
}

/**
 * Opens the WebSocket of one end: `url` is built by the core from the session's engine address
 * (protocol.md §9); events go to `events`, none of them before this call returned.
 */
export type ChannelSocketFactory = (url: string, events: ChannelSocketEvents) => ChannelSocket

/** What {@link webSocketChannels} uses of a WHATWG `WebSocket`. */
export interface WebSocketLike {
  binaryType: string
  readonly bufferedAmount: number
  send(data: string | ArrayBufferView | ArrayBuffer): void
  close(code?: number, reason?: string): void
  onopen: ((event: any) => void) | null
  onmessage: ((event: any) => void) | null
  onclose: ((event: any) => void) | null
  onerror: ((event: any) => void) | null
}

/** A WHATWG `WebSocket` constructor (browsers, Deno, Node's global `WebSocket`, `ws`). */
export type WebSocketConstructorLike = new (url: string) => WebSocketLike

/** True for an ArrayBuffer of any realm (a socket may live in another one, as in tests). */
function isArrayBuffer(value: unknown): value is ArrayBuffer {
  return Object.prototype.toString.call(value) === '[object ArrayBuffer]'
}

/**
 * A {@link ChannelSocketFactory} over a WHATWG `WebSocket` class: binary frames are read as
 * `ArrayBuffer`s (`binaryType = 'arraybuffer'`), no `pause` (browsers cannot stop reading one
 * socket, so a browser reader buffers what arrives).
 *
 * @example
 * const channels = new Channels({ address, socket: webSocketChannels(WebSocket) })
 */
export function webSocketChannels(WebSocketClass: WebSocketConstructorLike): ChannelSocketFactory {
  return (url, events) => {
    const socket = new WebSocketClass(url)
    socket.binaryType = 'arraybuffer'
    socket.onopen = () => events.open()
    socket.onmessage = (event: { data: unknown }) => {
      const data = event.data
      if (typeof data === 'string') events.message(data)
      else if (isArrayBuffer(data)) events.message(new Uint8Array(data))
      else if (ArrayBuffer.isView(data)) events.message(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
    }
    socket.onerror = (event: { message?: unknown }) => events.error(new Error(typeof event?.message === 'string' ? event.message : 'WebSocket error'))
    socket.onclose = (event: { code?: unknown; reason?: unknown }) => events.close(typeof event.code === 'number' ? event.code : 1006, typeof event.reason === 'string' ? event.reason : '')
    return socket
  }
}
