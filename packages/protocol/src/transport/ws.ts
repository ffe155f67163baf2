/**
 * The Node `ws` transport (protocol.md §2–§3): {@link wsServerTransport} wraps a socket the engine
 * accepted, {@link connectWebSocket} opens one as a client. Both coalesce writes: the frames sent
 * during one turn of the event loop leave in one TCP write (at most
 * {@link MAX_FRAMES_PER_WRITE} frames each) instead of one `writev` syscall per frame, which a
 * profile showed as the engine's largest cost under load. Where `ws` would write a text frame
 * synchronously and unmasked or with the zero key, the frames of a batch are built here (the bytes
 * `ws` would write, {@link textFrame}) into one buffer, one socket write per batch rather than a
 * buffer and a stream write per frame; `ws.send` otherwise. A batch is written before a binary
 * frame or a close frame sent through the transport; `ws`'s own pongs may pass it.
 *
 * @example
 * // engine side
 * wss.handleUpgrade(request, socket, head, (ws) => {
 *   const transport = wsServerTransport(ws, socket)
 *   accept(transport, peerInfoOf(request))
 * })
 * // client side
 * const transport = connectWebSocket('ws://127.0.0.1:49134', { handshakeTimeoutMs: 10000 })
 * transport.setHandlers({ open() { transport.send('{"type":"ping"}') }, message(data) {}, close(code) {} })
 */
import { randomFillSync } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import WebSocket from 'ws'
import { displayAddress } from '../client/addresses.ts'
import { Codes, SvcError } from '../errors.ts'
import { assertCloseArgs, assertText, parseWebSocketUrl, queryOf } from './frames.ts'
import { CpuContention } from './cpu-contention.ts'
import { isLoopbackAddress, isLoopbackUrl } from './loopback.ts'
import type { ConnectOptions, Connector, PeerInfo, Transport, TransportHandlers } from './types.ts'

/**
 * Frames coalesced into one TCP write at most. Past it the batch is written at once and a new one
 * starts, so the peer can start on the first frames while later ones are built: that keeps every
 * process of a caller → engine → callee pipeline busy.
 */
export const MAX_FRAMES_PER_WRITE = 16

/**
 * Frames in the first write of a turn, unless the previous turn filled whole batches or every CPU
 * of the machine has other work ({@link CpuContention}). The first frames leave at once so the
 * peer starts on them, on an idle CPU, while the rest of the turn is built: with 8 calls in
 * flight, three processes (caller, engine, callee) otherwise take turns on one batch. Measured on
 * 2 idle cores: 8 in flight 31,000/s → 47,000/s; 64 in flight unchanged. Under load the early
 * write would only add a syscall and a wake-up per turn, so a turn after a full one, or on a
 * machine with no idle CPU, starts with a full batch.
 */
export const FIRST_WRITE_FRAMES = 2

/** The machine's CPUs, read from `/proc/loadavg` at most every 100 ms while frames are sent. */
const machine = new CpuContention()
/** Whether the machine's CPUs are all busy (read once per turn): {@link machine} unless a test sets it. */
let contention: { readonly contended: boolean } = machine

/**
 * Internal (tests): replaces the contention signal every `ws` transport of this process reads
 * (`undefined`: back to the machine's, sampled from `/proc/loadavg`).
 */
export function setContentionProbe(probe: { readonly contended: boolean } | undefined): void {
  contention = probe ?? machine
}

/**
 * Frames one connection delivers before its reading pauses until the event loop's next turn (fair
 * reading). A peer that streams frames to the engine is otherwise read up to 2 MiB at a time (libuv
 * reads a socket that keeps filling 64 KiB chunks up to 32 times in a row) while every other
 * connection waits. Measured with a flood of 1 KiB calls on 2 cores: the engine's event-loop delay
 * p99 went from ~110 ms to ~55 ms. It costs one `setImmediate` per {@link READ_BUDGET_FRAMES} frames.
 */
export const READ_BUDGET_FRAMES = 256
/** Bytes of frames one connection delivers before its reading pauses until the next turn. */
export const READ_BUDGET_BYTES = 1024 * 1024

/** A writable stream that can hold writes back (`net.Socket`, `tls.TLSSocket`). */
interface Corkable {
  cork(): void
  uncork(): void
  write(chunk: Uint8Array): boolean
  /** `net.Socket`: bytes written, those still in its buffer included. */
  readonly bytesWritten?: number
  /** Bytes in the stream's buffer, the write in progress included. */
  readonly writableLength?: number
  /** False once the stream ended or was destroyed (`net.Socket`). */
  readonly writable?: boolean
}

function corkable(stream: unknown): Corkable | undefined {
  const s = stream as Partial<Corkable> | null | undefined
  return s != null && typeof s.cork === 'function' && typeof s.uncork === 'function' && typeof s.write === 'function' ? (s as Corkable) : undefined
}

/**
 * How {@link WsTransport.send} frames text: through `ws` (its `send`: an options object, a header
 * buffer and two socket writes per frame), or written here as one buffer per frame.
 */
const Framing = {
  /** `ws.send`: before the upgrade, with an extension negotiated, or with random masking keys. */
  Ws: 0,
  /** Server frames: unmasked (RFC 6455 §5.1). */
  Server: 1,
  /** Client frames to a loopback peer: masked with the zero key, so the payload is as it is (§5.3). */
  ZeroMask: 2,
} as const
type Framing = (typeof Framing)[keyof typeof Framing]

/**
 * One complete text frame (RFC 6455 §5.2) in one buffer: FIN and opcode 1, the payload length
 * (7 bits, or 126 and 16 bits, or 127 and 64 bits), for a client the zero masking key, then the
 * payload as UTF-8 (a lone surrogate as U+FFFD, as `ws` writes it). The bytes are those `ws`
 * writes for the same text, in one socket write instead of two.
 */
export function textFrame(text: string, zeroMask: boolean): Buffer {
  const length = Buffer.byteLength(text)
  const frame = Buffer.allocUnsafe(frameHeaderBytes(length, zeroMask) + length)
  writeTextFrame(frame, 0, text, length, zeroMask)
  return frame
}

/** Bytes of a text frame's header (RFC 6455 §5.2) for a payload of `length` bytes. */
function frameHeaderBytes(length: number, zeroMask: boolean): number {
  return 2 + (length < 126 ? 0 : length < 65536 ? 2 : 8) + (zeroMask ? 4 : 0)
}

/** Writes {@link textFrame}'s bytes for `text` (`length`: its UTF-8 bytes) into `into` at `at`; returns the end. */
function writeTextFrame(into: Buffer, at: number, text: string, length: number, zeroMask: boolean): number {
  const header = frameHeaderBytes(length, zeroMask)
  into[at] = 0x81
  const maskBit = zeroMask ? 0x80 : 0
  if (length < 126) into[at + 1] = maskBit | length
  else if (length < 65536) {
    into[at + 1] = maskBit | 126
    into.writeUInt16BE(length, at + 2)
  } else {
    into[at + 1] = maskBit | 127
    into.writeUInt32BE(Math.floor(length / 0x100000000), at + 2)
    into.writeUInt32BE(length >>> 0, at + 6)
  }
  if (zeroMask) into.writeUInt32BE(0, at + header - 4)
  into.write(text, at + header)
  return at + header + length
}

/** An event that arrived before the first `setHandlers`. */
type HeldEvent = (handlers: TransportHandlers) => void

class WsTransport implements Transport {
  readonly #ws: WebSocket
  /** The TCP (or TLS) socket under the WebSocket; undefined until a client's upgrade completes. */
  #tcp: Corkable | undefined
  #corked = false
  /** Frames written into the current cork. */
  #batch = 0
  /**
   * The current batch's frames not yet written (texts and their UTF-8 bytes), and their frames'
   * bytes: written to the socket as one buffer when the batch ends ({@link flush}), not one buffer
   * and one stream write per frame.
   */
  readonly #texts: string[] = []
  readonly #lengths: number[] = []
  #textBytes = 0
  #limit = 0
  /** Frames sent in the current turn, and in the previous one. */
  #turnFrames = 0
  #lastTurnFrames = 0
  #handlers: TransportHandlers | undefined = undefined
  /** Events held until handlers are set (then undefined). */
  #held: HeldEvent[] | undefined = []
  #closeFired = false
  /** Set by a local close()/terminate(): errors `ws` reports afterwards are their echo. */
  #ended = false
  #handshakeTimer: ReturnType<typeof setTimeout> | undefined = undefined
  /** Frames and bytes read since reading last yielded to other connections. */
  #readFrames = 0
  #readBytes = 0
  #framing: Framing = Framing.Ws
  /** A client's peer, once its address is known: loopback ones get zero masking keys. */
  #peer: { readonly loopback: boolean } | undefined

  /**
   * `server`: the accepting end (frames unmasked). `peer`: a client's zero-masking decision
   * ({@link loopbackMask}), read when the connection opens.
   */
  constructor(ws: WebSocket, tcp: Corkable | undefined, server: boolean, peer?: { readonly loopback: boolean }) {
    this.#ws = ws
    this.#tcp = tcp
    this.#peer = peer
    // Frames are written here only where `ws` would write the same bytes synchronously: no
    // extension (a deflating `ws` may queue a frame behind a compression still running).
    if (server && tcp !== undefined && ws.readyState === WebSocket.OPEN && ws.extensions === '') this.#framing = Framing.Server
    ws.binaryType = 'nodebuffer'
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      // binaryType 'nodebuffer': always one Buffer. ws has validated text frames as UTF-8.
      const buffer = data as Buffer
      if (++this.#readFrames >= READ_BUDGET_FRAMES || (this.#readBytes += buffer.length) >= READ_BUDGET_BYTES) this.#yieldReading()
      const payload: string | Uint8Array = isBinary ? buffer : buffer.toString()
      if (this.#held === undefined) this.#handlers!.message(payload, isBinary)
      else this.#held.push((h) => h.message(payload, isBinary))
    })
    ws.on('ping', () => this.#emit(fireAlive))
    ws.on('pong', () => this.#emit(fireAlive))
    ws.on('open', () => {
      clearTimeout(this.#handshakeTimer)
      if (this.#peer?.loopback === true && this.#tcp !== undefined && ws.extensions === '') this.#framing = Framing.ZeroMask
      this.#emit(fireOpen)
    })
    ws.on('upgrade', (response: IncomingMessage) => {
      this.#tcp = corkable(response.socket)
    })
    ws.on('error', (error: Error) => {
      if (!this.#ended) this.#emit((h) => h.error?.(error))
    })
    ws.on('close', (code: number, reason: Buffer) => this.#fireClose(code, reason.toString()))
    if (ws.readyState === WebSocket.CLOSED) this.#fireClose(1006, '')
  }

  /**
   * Pauses reading until the next turn of the event loop, so that other connections are read
   * meanwhile (fair reading, {@link READ_BUDGET_FRAMES}). Frames `ws` has already parsed from the
   * chunk in hand are still delivered.
   */
  #yieldReading(): void {
    this.#readFrames = 0
    this.#readBytes = 0
    this.#ws.pause()
    setImmediate(WsTransport.#resumeReading, this)
  }

  static #resumeReading(transport: WsTransport): void {
    transport.#ws.resume()
  }

  /** Starts the opening-handshake deadline of a client transport; `where` is the address as messages show it. */
  startHandshakeTimer(where: string, timeoutMs: number): void {
    this.#handshakeTimer = setTimeout(() => {
      this.#handshakeTimer = undefined
      if (this.#ws.readyState !== WebSocket.CONNECTING) return
      this.#emit((h) => h.error?.(new SvcError(Codes.Timeout, `handshake with ${where} timed out after ${timeoutMs}ms`)))
      this.terminate()
    }, timeoutMs)
  }

  get bufferedAmount(): number {
    return this.#ws.bufferedAmount + this.#textBytes
  }

  get writtenBytes(): number {
    // A socket's bytesWritten counts its buffered bytes too; what left the buffer is the rest.
    const tcp = this.#tcp
    if (tcp === undefined || tcp.bytesWritten === undefined || tcp.writableLength === undefined) return 0
    return tcp.bytesWritten - tcp.writableLength
  }

  get isOpen(): boolean {
    return this.#ws.readyState === WebSocket.OPEN
  }

  sendBinary(data: Uint8Array): void {
    if (!(data instanceof Uint8Array)) throw new TypeError('sendBinary expects a Uint8Array')
    if (this.#ws.readyState !== WebSocket.OPEN) return
    // Not coalesced: telemetry frames are batched already and leave at most a few per second.
    // After the text frames sent before it.
    this.#flush()
    this.#ws.send(data, { binary: true })
  }

  send(text: string): void {
    assertText(text)
    if (this.#ws.readyState !== WebSocket.OPEN) return
    const tcp = this.#tcp
    if (tcp !== undefined) {
      if (!this.#corked) {
        this.#corked = true
        this.#batch = 1
        this.#turnFrames = 1
        // Under load (full batches last turn, or no idle CPU for the peer to wake on) the early
        // write only adds a syscall and a wake-up per turn.
        this.#limit = this.#lastTurnFrames >= MAX_FRAMES_PER_WRITE || contention.contended ? MAX_FRAMES_PER_WRITE : FIRST_WRITE_FRAMES
        tcp.cork()
        process.nextTick(WsTransport.#uncork, this)
      } else if (this.#batch >= this.#limit) {
        this.#flush()
        tcp.uncork()
        tcp.cork()
        this.#batch = 1
        this.#turnFrames++
        this.#limit = MAX_FRAMES_PER_WRITE
      } else {
        this.#batch++
        this.#turnFrames++
      }
      // Into the batch, written to the corked socket before `ws` writes a close frame or a binary one.
      if (this.#framing !== Framing.Ws) {
        const length = Buffer.byteLength(text)
        this.#texts.push(text)
        this.#lengths.push(length)
        this.#textBytes += frameHeaderBytes(length, this.#framing === Framing.ZeroMask) + length
        return
      }
    }
    this.#ws.send(text)
  }

  /** Ends the turn's batch: everything corked leaves in one write. Static: no closure per turn. */
  static #uncork(transport: WsTransport): void {
    transport.#corked = false
    transport.#lastTurnFrames = transport.#turnFrames
    transport.#flush()
    transport.#tcp!.uncork()
  }

  /** Writes the batch's frames into the socket as one buffer (dropped if the socket can take no more writes). */
  #flush(): void {
    const texts = this.#texts
    if (texts.length === 0) return
    const lengths = this.#lengths
    const frames = Buffer.allocUnsafe(this.#textBytes)
    const zeroMask = this.#framing === Framing.ZeroMask
    let at = 0
    for (let i = 0; i < texts.length; i++) at = writeTextFrame(frames, at, texts[i]!, lengths[i]!, zeroMask)
    texts.length = 0
    lengths.length = 0
    this.#textBytes = 0
    const tcp = this.#tcp!
    if (tcp.writable !== false) tcp.write(frames)
  }

  close(code?: number, reason?: string): void {
    // Checked here: ws throws only after it has already moved to CLOSING.
    assertCloseArgs(code, reason)
    this.#ended = true
    clearTimeout(this.#handshakeTimer)
    // The frames sent before the close frame go before it.
    if (this.#ws.readyState === WebSocket.OPEN) this.#flush()
    this.#ws.close(code, code === undefined ? undefined : reason)
  }

  terminate(): void {
    this.#ended = true
    clearTimeout(this.#handshakeTimer)
    // The socket is destroyed: frames still in the batch are dropped with those in its buffer.
    this.#texts.length = 0
    this.#lengths.length = 0
    this.#textBytes = 0
    this.#ws.terminate()
  }

  ping(): void {
    if (this.#ws.readyState === WebSocket.OPEN) this.#ws.ping()
  }

  setHandlers(handlers: TransportHandlers): void {
    const first = this.#handlers === undefined
    this.#handlers = handlers
    const held = this.#held
    if (!first || held === undefined) return
    if (held.length === 0) {
      this.#held = undefined
      return
    }
    // Delivered after the caller returns, in arrival order, to the handlers set by then; events
    // arriving meanwhile queue behind them.
    queueMicrotask(() => {
      for (let i = 0; i < held.length; i++) held[i]!(this.#handlers!)
      this.#held = undefined
    })
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

const fireAlive: HeldEvent = (h) => h.alive?.()
const fireOpen: HeldEvent = (h) => h.open?.()

/**
 * Wraps a WebSocket the engine accepted as a server transport (already open; `open` never fires).
 *
 * `tcp` is the `socket` argument `WebSocketServer.handleUpgrade(request, socket, head, cb)` got:
 * the TCP (or TLS) socket under `ws`, corked and uncorked for write coalescing. A stream without
 * `cork`/`uncork` works too, with one write per frame.
 *
 * Set the handlers right away: events that arrive before the first `setHandlers` are held and
 * delivered, in order, just after it. Text frames arrive as strings (UTF-8 already validated by
 * `ws`), binary frames as `Uint8Array`s (Node Buffers); `alive` fires on every ping and pong. Errors
 * `ws` reports after a local `close()` or `terminate()` are not passed on.
 *
 * @example
 * wss.handleUpgrade(request, socket, head, (ws) => accept(wsServerTransport(ws, socket), peerInfoOf(request)))
 */
export function wsServerTransport(ws: WebSocket, tcp: Socket | Duplex): Transport {
  return new WsTransport(ws, corkable(tcp), true)
}

/**
 * The masking key of a frame a client sends to an engine whose URL names the loopback interface
 * (`isLoopbackUrl`). Zero when the socket really is connected to a loopback address: `ws` then
 * skips XOR-ing the payload on both ends (its Sender's `skipMasking`, its Receiver's zero-key check),
 * which a profile showed as a few percent of a worker's CPU per call. Masking exists for
 * intermediaries (RFC 6455 §5.3, §10.3: a proxy or cache a browser's script could feed chosen
 * bytes); the loopback interface has none. A name such as `localhost` that resolved elsewhere
 * gets a random key, as every non-loopback address does (those are left to `ws`'s own keys).
 */
function loopbackMask(peer: { readonly loopback: boolean }, mask: Buffer): void {
  if (peer.loopback) {
    mask[0] = 0
    mask[1] = 0
    mask[2] = 0
    mask[3] = 0
  } else randomFillSync(mask, 0, 4)
}

/**
 * Opens a client transport with Node `ws` (no per-message compression). Frames to a loopback
 * engine (127.0.0.0/8, ::1, `localhost`, checked again on the connected socket's address) carry a
 * zero masking key; to any other address, random keys (RFC 6455 §5.3). Headers of
 * `options.headers` go on the HTTP upgrade request. Past `options.handshakeTimeoutMs` (default:
 * none) without an open, `error` fires with an `SvcError` of code `TIMEOUT`
 * (`handshake with <address> timed out after <ms>ms`, the address without user, password, query
 * and fragment: `displayAddress`), then `close` with 1006. Network failures
 * (`ECONNREFUSED`, a non-101 answer) fire `error` with the socket's error, then `close` with 1006.
 *
 * @throws TypeError when `url` is not a `ws:` or `wss:` URL (its message shows the address as
 *   `displayAddress` does, never its credentials).
 * @example
 * const transport = connectWebSocket('ws://127.0.0.1:49134', { headers: { authorization: 'Bearer t' }, handshakeTimeoutMs: 10000 })
 */
export const connectWebSocket: Connector = (url: string, options: ConnectOptions = {}): Transport => {
  parseWebSocketUrl(url)
  const wsOptions: WebSocket.ClientOptions = { perMessageDeflate: false }
  if (options.headers !== undefined) wsOptions.headers = options.headers
  let peer: { loopback: boolean } | undefined
  if (isLoopbackUrl(url)) {
    // Zero masking key on loopback (see loopbackMask); `ws`'s own random keys anywhere else.
    const found = { loopback: false }
    peer = found
    wsOptions.generateMask = (mask) => loopbackMask(found, mask)
  }
  const ws = new WebSocket(url, wsOptions)
  if (peer !== undefined) {
    const found = peer
    ws.once('upgrade', (response: IncomingMessage) => {
      found.loopback = isLoopbackAddress(response.socket.remoteAddress)
    })
  }
  const transport = new WsTransport(ws, undefined, false, peer)
  if (options.handshakeTimeoutMs !== undefined) {
    // User, password and query may carry credentials: the message names the endpoint only.
    transport.startHandshakeTimer(displayAddress(url), options.handshakeTimeoutMs)
  }
  return transport
}

/**
 * What the engine learns about a client from its upgrade request (protocol.md §13.2): the remote
 * address (null when unknown), the headers with lower-cased names and repeated ones joined with
 * `, `, and the decoded query parameters of the URL (a key without `=` gives `[""]`).
 *
 * @example
 * peerInfoOf(request) // { ip: '127.0.0.1', headers: { host: '127.0.0.1:49134', … }, query: { token: ['abc'] } }
 */
export function peerInfoOf(request: IncomingMessage): PeerInfo {
  const headers: Array<[string, string]> = []
  for (const [name, values] of Object.entries(request.headersDistinct)) {
    if (values !== undefined) headers.push([name, values.join(', ')])
  }
  return {
    ip: request.socket?.remoteAddress ?? null,
    headers: Object.fromEntries(headers),
    query: queryOf(new URL(request.url ?? '/', 'http://upgrade.invalid').searchParams),
  }
}
