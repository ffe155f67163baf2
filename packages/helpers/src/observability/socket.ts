/**
 * The telemetry socket (protocol.md §10.2): one WebSocket per process at `<engine URL>/otel`
 * carrying binary frames — 4 ASCII prefix bytes (`OTLP`, `MTRC`, `LOGS`) then UTF-8 OTLP/JSON.
 * Reconnects with the worker's backoff (the client core's `backoffDelay`); while disconnected it queues at most
 * {@link MAX_QUEUED_FRAMES} frames and drops the oldest beyond that, counting drops. The engine
 * never answers frames, so nothing here waits on it: sending is fire-and-forget and bounded.
 */
import { backoffDelay } from 'svc-protocol/client'
import type { Connector, Transport } from 'svc-protocol/transport'

/** Frames kept while disconnected (protocol.md §10.2). */
export const MAX_QUEUED_FRAMES = 1000
/**
 * Bytes the socket may have buffered unsent before new frames are dropped (decision: the spec is
 * silent; an engine that stops reading must not grow the worker's memory without bound).
 */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024

/** The frame prefixes of protocol.md §10.2. */
export type FramePrefix = 'OTLP' | 'MTRC' | 'LOGS'

/** Backoff of the telemetry socket, as sdk.md §2 `ReconnectionConfig`. */
export interface SocketBackoff {
  initialDelayMs: number
  maxDelayMs: number
  backoffMultiplier: number
  jitterFactor: number
  /** -1 = unlimited. */
  maxRetries: number
}

/** Encodes one frame: the 4-byte ASCII prefix then `json` as UTF-8. */
export function encodeTelemetryFrame(prefix: FramePrefix, json: string | Uint8Array): Uint8Array {
  // One UTF-8 encoding pass and no second copy (frames of span batches are up to about 1 MiB).
  if (typeof json === 'string') return Buffer.from(prefix + json, 'utf8')
  const body = json
  const frame = new Uint8Array(4 + body.length)
  frame.set(Buffer.from(prefix, 'ascii'), 0)
  frame.set(body, 4)
  return frame
}

/**
 * `<engine URL>/otel`: the path of `url` with `/otel` appended after any trailing slash is
 * removed; the query string is kept (authentication, protocol.md §10.2).
 */
export function otelUrlOf(engineUrl: string): string {
  const url = new URL(engineUrl)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/otel`
  return url.toString()
}

/** Counters of a {@link TelemetrySocket}. */
export interface TelemetrySocketStats {
  sent: number
  /** Frames dropped: queue full while disconnected, socket backlog over the cap, or at shutdown. */
  dropped: number
  queued: number
  connected: boolean
}

/** Options of a {@link TelemetrySocket}. */
export interface TelemetrySocketOptions {
  url: string
  connector: Connector
  backoff: SocketBackoff
  headers?: Record<string, string>
}

/** The `/otel` connection with its bounded disconnected queue. */
export class TelemetrySocket {
  readonly #options: TelemetrySocketOptions
  #transport: Transport | undefined
  #queue: Uint8Array[] = []
  #attempt = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  #closed = false
  #sent = 0
  #dropped = 0

  constructor(options: TelemetrySocketOptions) {
    this.#options = options
    this.#connect()
  }

  get stats(): TelemetrySocketStats {
    return { sent: this.#sent, dropped: this.#dropped, queued: this.#queue.length, connected: this.#transport?.isOpen ?? false }
  }

  /** Sends (or queues) one frame: `prefix` then `json` (UTF-8). Never throws, never blocks. */
  send(prefix: FramePrefix, json: string | Uint8Array): void {
    if (this.#closed) {
      this.#dropped++
      return
    }
    this.sendFrame(encodeTelemetryFrame(prefix, json))
  }

  /**
   * Sends (or queues) one whole frame, its 4-byte prefix included (protocol.md §10.2), as given:
   * the bytes must not change afterwards. Never throws, never blocks.
   */
  sendFrame(frame: Uint8Array): void {
    if (this.#closed) {
      this.#dropped++
      return
    }
    const t = this.#transport
    if (t !== undefined && t.isOpen && t.sendBinary !== undefined) {
      if (t.bufferedAmount > MAX_BUFFERED_BYTES) {
        this.#dropped++
        return
      }
      t.sendBinary(frame)
      this.#sent++
      return
    }
    this.#queue.push(frame)
    if (this.#queue.length > MAX_QUEUED_FRAMES) {
      this.#queue.shift()
      this.#dropped++
    }
  }

  /** Closes the socket (1000) and stops reconnecting; frames still queued are dropped and counted. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#dropped += this.#queue.length
    this.#queue = []
    this.#transport?.close(1000, 'shutdown')
  }

  #connect(): void {
    if (this.#closed) return
    let transport: Transport
    try {
      const headers = this.#options.headers
      transport = this.#options.connector(this.#options.url, headers !== undefined ? { headers, handshakeTimeoutMs: 10000 } : { handshakeTimeoutMs: 10000 })
    } catch {
      this.#scheduleReconnect()
      return
    }
    this.#transport = transport
    transport.setHandlers({
      open: () => {
        this.#attempt = 0
        const queued = this.#queue
        this.#queue = []
        for (const frame of queued) {
          transport.sendBinary?.(frame)
          this.#sent++
        }
      },
      message: () => {
        // The engine sends nothing on /otel but pongs and a close (protocol.md §10.2).
      },
      error: () => {
        // `close` follows; reconnection happens there.
      },
      close: () => {
        if (this.#transport === transport) this.#transport = undefined
        this.#scheduleReconnect()
      },
    })
  }

  #scheduleReconnect(): void {
    if (this.#closed) return
    const b = this.#options.backoff
    if (b.maxRetries !== -1 && this.#attempt >= b.maxRetries) return
    const delay = backoffDelay(this.#attempt, b)
    this.#attempt++
    this.#timer = setTimeout(() => this.#connect(), delay)
    this.#timer.unref()
  }
}
