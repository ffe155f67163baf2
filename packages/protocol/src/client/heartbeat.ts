/**
 * Keepalive of WebSocket sessions (protocol.md §3.3), one implementation for both sides: the
 * client core watches its one connection with it, the engine every connection of a listener
 * (`runtime/engine/keepalive.ts`).
 *
 * Each tracked peer is pinged every `pingIntervalMs` and terminated once nothing (message, ping
 * or pong) has arrived from it for `idleTimeoutMs`. One timer sweeps every peer each `tickMs`;
 * arrivals only set a flag (no clock read per frame), which the sweep turns into silence measured
 * by the injected clock. A sweep counts at most two ticks of silence however late it runs, so an
 * event loop that was blocked (a long synchronous handler, a GC pause) does not terminate healthy
 * peers whose frames are still waiting to be read: a peer is terminated at the earliest
 * `idleTimeoutMs` after the last sweep that saw it alive, at the latest one tick later on a
 * punctual loop, and later still on a late one.
 *
 * The timer runs only while a peer is tracked.
 *
 * @example
 * const heartbeat = new Heartbeat({ pingIntervalMs: 20000, idleTimeoutMs: 60000, onIdle: () => log('silent') })
 * const heard = heartbeat.track(transport)
 * transport.setHandlers({ message: (data) => { heard(); … }, alive: heard, close: () => heartbeat.untrack(transport) })
 */
import { systemTimers, type TimerHandle, type Timers } from './timers.ts'

/** What a heartbeat needs of a connection; a {@link Transport} is one. */
export interface HeartbeatPeer {
  /** Sends a keepalive ping (a WebSocket ping frame, or the JSON `{"type":"ping"}`). */
  ping(): void
  /** Ends the connection at once; its close handling follows. */
  terminate(): void
  /**
   * True while its owner does not read this peer on purpose (backpressure: the engine pauses a
   * channel writer's socket): nothing can be heard from it then, so its silence does not count.
   */
  readonly readingPaused?: boolean
}

export interface HeartbeatOptions<P extends HeartbeatPeer> {
  /** Interval of pings to each peer, ms. */
  pingIntervalMs: number
  /** Silence after which a peer is terminated, ms. */
  idleTimeoutMs: number
  /** Sweep interval, ms. Default a quarter of the smaller of the two, at least 1. */
  tickMs?: number
  /** Clock and timers; default the platform's. */
  timers?: Timers
  /** Called just before a silent peer is terminated (it is no longer tracked then), with its silence in ms. */
  onIdle?(peer: P, silentMs: number): void
}

interface Entry {
  /** Set by every arrival; the sweep clears it. */
  heard: boolean
  /** Silence counted by the sweeps since the last one that found `heard`, ms. */
  quietMs: number
  /** Time counted since the last ping, ms. */
  sincePingMs: number
}

export class Heartbeat<P extends HeartbeatPeer = HeartbeatPeer> {
  readonly #peers = new Map<P, Entry>()
  readonly #pingIntervalMs: number
  readonly #idleTimeoutMs: number
  readonly #tickMs: number
  readonly #timers: Timers
  readonly #onIdle: ((peer: P, silentMs: number) => void) | undefined
  #timer: TimerHandle | undefined = undefined
  #lastSweepMs = 0

  /** @throws RangeError when an interval is not a positive number. */
  constructor(options: HeartbeatOptions<P>) {
    for (const name of ['pingIntervalMs', 'idleTimeoutMs'] as const) {
      const value = options[name]
      if (typeof value !== 'number' || !(value > 0)) throw new RangeError(`${name} must be a positive number of ms, got ${String(value)}`)
    }
    this.#pingIntervalMs = options.pingIntervalMs
    this.#idleTimeoutMs = options.idleTimeoutMs
    this.#tickMs = options.tickMs ?? Math.max(1, Math.min(options.pingIntervalMs, options.idleTimeoutMs) / 4)
    if (!(this.#tickMs > 0)) throw new RangeError(`tickMs must be a positive number of ms, got ${String(options.tickMs)}`)
    this.#timers = options.timers ?? systemTimers
    this.#onIdle = options.onIdle
  }

  /** Peers tracked now. */
  get size(): number {
    return this.#peers.size
  }

  /**
   * Starts watching `peer` (counted as heard now) and returns the function to call whenever
   * anything arrives from it. Tracking a peer again restarts its count.
   */
  track(peer: P): () => void {
    const entry: Entry = { heard: true, quietMs: 0, sincePingMs: 0 }
    this.#peers.set(peer, entry)
    if (this.#timer === undefined) {
      this.#lastSweepMs = this.#timers.now()
      this.#timer = this.#timers.setInterval(() => this.sweep(), this.#tickMs)
    }
    return () => {
      entry.heard = true
    }
  }

  /** Stops watching `peer` (its close is being handled). */
  untrack(peer: P): void {
    if (this.#peers.delete(peer) && this.#peers.size === 0) this.#stopTimer()
  }

  /** Stops watching every peer; nothing is terminated. */
  stop(): void {
    this.#peers.clear()
    this.#stopTimer()
  }

  /** One sweep: what the timer runs every `tickMs` (public so a test can drive it with a manual clock). */
  sweep(): void {
    const now = this.#timers.now()
    // A late sweep counts at most two ticks: the loop, not the peer, was silent meanwhile.
    const elapsed = Math.min(Math.max(0, now - this.#lastSweepMs), 2 * this.#tickMs)
    this.#lastSweepMs = now
    // A ping may leave half a tick early, so a sweep that runs a little early still sends it.
    const pingDue = this.#pingIntervalMs - this.#tickMs / 2
    for (const [peer, entry] of this.#peers) {
      if (entry.heard || peer.readingPaused === true) {
        entry.heard = false
        entry.quietMs = 0
      } else {
        entry.quietMs += elapsed
        if (entry.quietMs >= this.#idleTimeoutMs) {
          this.untrack(peer)
          this.#onIdle?.(peer, entry.quietMs)
          peer.terminate()
          continue
        }
      }
      entry.sincePingMs += elapsed
      if (entry.sincePingMs >= pingDue) {
        entry.sincePingMs = 0
        peer.ping()
      }
    }
  }

  #stopTimer(): void {
    if (this.#timer === undefined) return
    this.#timers.clearInterval(this.#timer)
    this.#timer = undefined
  }
}
