/**
 * The transport seam (NATS.js's `Transport` idea): the engine and the SDKs speak the protocol over
 * a {@link Transport} and never know what kind of connection carries it. Implementations: Node
 * `ws` (`svc-protocol/transport/ws`, with write coalescing) and in-memory
 * (`svc-protocol/transport/memory`, for tests and in-process workers); the browser one is
 * `svc-browser-sdk`'s (`packages/browser-sdk/src/transport.ts`, over the WHATWG `WebSocket`).
 */

/**
 * What a transport reports. Each `setHandlers` call replaces every handler; events that arrive
 * before the first call are held and delivered after it, in order.
 */
export interface TransportHandlers {
  /** The connection is open (client transports; server transports are open when handed over). */
  open?(): void
  /** One inbound frame: a string for text frames, bytes for binary ones. */
  message(data: string | Uint8Array, isBinary: boolean): void
  /** The connection ended, cleanly or not; fired once. 1005 when no code was received, 1006 for an abnormal end. */
  close(code: number, reason: string): void
  /** A ping or pong arrived: proof of life without a message (keepalive, protocol.md §3.3). */
  alive?(): void
  /** A connection-level error; `close` follows. */
  error?(error: Error): void
}

/**
 * One end of an ordered, message-framed, bidirectional connection.
 *
 * Frames sent keep their order. A transport may hold frames sent in one turn of the event loop
 * and write them together (write coalescing); they still leave before the next turn's frames.
 */
export interface Transport {
  /**
   * Sends one text frame. Dropped silently unless the transport is open (before `open`, once
   * closing or closed). A lone surrogate leaves as U+FFFD, as UTF-8 encoding makes it.
   * @throws TypeError when `text` is not a string.
   */
  send(text: string): void
  /**
   * Sends one binary frame (the `/otel` telemetry frames of protocol.md §10.2). Dropped silently
   * unless open, like `send`. Optional: transports without binary frames omit it.
   */
  sendBinary?(data: Uint8Array): void
  /** Bytes accepted by `send` and not yet written to the network (backpressure, protocol.md §3.5). */
  readonly bufferedAmount: number
  /**
   * Bytes written to the network so far (monotonic; frames leave {@link bufferedAmount} for the
   * operating system's socket, or the peer for in-memory ends). With `bufferedAmount` it tells a
   * slow peer (this still grows) from one that stopped reading (it stands still while bytes wait):
   * the engine's slow-consumer rule (protocol.md §3.5). Optional: a transport without it is judged
   * by `bufferedAmount` alone.
   */
  readonly writtenBytes?: number
  /** True between open and the start of closing. */
  readonly isOpen: boolean
  /**
   * Starts a clean close (close frame with `code` and `reason`); `close` fires when done, on both
   * ends with that code and reason (1005 and `""` without a code). Before `open` it drops the
   * connection instead (1006). Does nothing once closing or closed.
   * @throws TypeError for a code a close frame cannot carry (RFC 6455 §7.4: allowed are
   *   1000–1003, 1007–1014, 3000–4999); RangeError for a reason over 123 bytes of UTF-8.
   */
  close(code?: number, reason?: string): void
  /** Ends the connection at once, without a closing handshake: both ends see `close` with 1006. */
  terminate(): void
  /** Sends a keepalive ping (a WebSocket ping frame); does nothing where the transport has none. */
  ping(): void
  setHandlers(handlers: TransportHandlers): void
}

/** Options of a client connection. */
export interface ConnectOptions {
  /** Extra HTTP headers on the WebSocket upgrade (the auth function's input, protocol.md §13.2). */
  headers?: Record<string, string>
  /**
   * Deadline of the opening handshake, ms; past it the transport reports `error` with an
   * `SvcError` of code `TIMEOUT`, then closes with code 1006. Omitted: no deadline.
   */
  handshakeTimeoutMs?: number
}

/** Opens a client transport to `url` (a `ws:`/`wss:` URL); `open` or `close` follows. */
export type Connector = (url: string, options: ConnectOptions) => Transport

/** What the accepting side learns about a client when its transport is handed over. */
export interface PeerInfo {
  /** Client address, null when unknown. */
  ip: string | null
  /** Upgrade request headers, names lower-cased, repeated ones joined with `, ` (protocol.md §13.2). */
  headers: Record<string, string>
  /** Query parameters of the upgrade URL, decoded; a key without `=` gives `[""]`. */
  query: Record<string, string[]>
}
