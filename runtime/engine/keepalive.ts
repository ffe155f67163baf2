/**
 * Server keepalive of one listener (protocol.md §3.3): every `ping_interval_ms` each tracked
 * transport is pinged, and one from which nothing (message, ping or pong) arrived for
 * `idle_timeout_ms` is terminated; its `close` then runs the usual cleanup. Silence is measured
 * at sweep granularity, so a connection is terminated between `idle_timeout_ms` and
 * `idle_timeout_ms + ping_interval_ms` after its last frame.
 */
import type { Transport } from 'svc-protocol'
import type { Logger } from './types.ts'

interface Tracked {
  lastSeenMs: number
  /** Set by every frame, ping or pong; the sweep turns it into `lastSeenMs` (no clock read per frame). */
  heard: boolean
}

export class Keepalive {
  private readonly tracked = new Map<Transport, Tracked>()
  private readonly timer: NodeJS.Timeout
  private readonly idleTimeoutMs: number
  private readonly log: Logger

  constructor(pingIntervalMs: number, idleTimeoutMs: number, log: Logger) {
    this.idleTimeoutMs = idleTimeoutMs
    this.log = log
    this.timer = setInterval(() => this.sweep(), pingIntervalMs)
    this.timer.unref()
  }

  /** Starts watching `transport`; call the returned function whenever anything arrives on it. */
  track(transport: Transport): () => void {
    const entry: Tracked = { lastSeenMs: Date.now(), heard: false }
    this.tracked.set(transport, entry)
    return () => {
      entry.heard = true
    }
  }

  untrack(transport: Transport): void {
    this.tracked.delete(transport)
  }

  stop(): void {
    clearInterval(this.timer)
    this.tracked.clear()
  }

  private sweep(): void {
    const now = Date.now()
    for (const [transport, entry] of this.tracked) {
      if (entry.heard) {
        entry.heard = false
        entry.lastSeenMs = now
      }
      if (now - entry.lastSeenMs > this.idleTimeoutMs) {
        this.log.warn('closing a silent worker connection', { idle_timeout_ms: this.idleTimeoutMs })
        this.tracked.delete(transport)
        transport.terminate()
      } else {
        transport.ping()
      }
    }
  }
}
