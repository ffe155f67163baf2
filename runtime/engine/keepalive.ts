/**
 * Server keepalive and the slow-consumer rule of one listener (protocol.md §3.3, §3.5).
 *
 * Keepalive: the client core's {@link Heartbeat} (`svc-protocol/client`, the one implementation
 * SDK sessions use too) pings each tracked transport every `ping_interval_ms` and terminates one
 * from which nothing (message, ping or pong) arrived for `idle_timeout_ms`; its `close` then runs
 * the usual cleanup. Silence is measured at sweep granularity (a sweep per `ping_interval_ms`), so
 * a connection is terminated between `idle_timeout_ms` and `idle_timeout_ms + ping_interval_ms`
 * after its last frame; a sweep that runs late (a blocked event loop) counts at most two sweeps of
 * silence, so frames still waiting to be read never make a connection look silent.
 *
 * Slow consumers: a peer that stopped reading may still send (an SDK's own pings keep it "alive"),
 * so silence alone never catches it. A transport with bytes waiting to be sent
 * (`bufferedAmount > 0`) whose {@link Transport.writtenBytes} has not grown for `drain_timeout_ms`
 * is terminated the same way: its open calls then fail with `invocation_stopped` (§3.6 step 3)
 * instead of waiting for it forever. The other half of the rule, a buffer over
 * `max_outbound_bytes`, is checked on every send (`Session.send`). Stalls are measured at
 * {@link drainSweepMs} granularity.
 *
 * Channel sockets (protocol.md §9, `channels/`) are watched the same way; a channel writer whose
 * reading the engine paused on purpose (backpressure) cannot be heard meanwhile, so its silence is
 * not counted then (`readingPaused`).
 */
import type { Transport } from 'svc-protocol'
import { Heartbeat, systemTimers, type Timers } from 'svc-protocol/client'
import type { Logger } from './config.ts'

/** What the keepalive needs of a connection: a {@link Transport}, or a channel socket. */
export interface KeepaliveTarget extends Pick<Transport, 'bufferedAmount' | 'writtenBytes' | 'ping' | 'terminate'> {
  /** True while the engine does not read this connection on purpose: its silence does not count. */
  readonly readingPaused?: boolean
}

interface Drain {
  /** `writtenBytes` (or, without it, `bufferedAmount`) at the last drain sweep that saw progress. */
  written: number
  /** Since when bytes wait without progress; undefined while the transport drains. */
  stalledSinceMs: number | undefined
}

/** The platform's timers, which do not keep the process alive for a listener's sake. */
const unrefTimers: Timers = {
  ...systemTimers,
  setInterval: (callback, ms) => {
    const timer = setInterval(callback, ms)
    timer.unref()
    return timer
  },
}

/** How often the slow-consumer rule looks at the transports: a quarter of the timeout, 1 s at most. */
export function drainSweepMs(drainTimeoutMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(drainTimeoutMs / 4)))
}

export interface KeepaliveTimes {
  /** `ping_interval_ms` of the listener. */
  pingIntervalMs: number
  /** `idle_timeout_ms`: silence after which a connection is terminated. */
  idleTimeoutMs: number
  /** `drain_timeout_ms`: time bytes may wait without any leaving before a connection is terminated. */
  drainTimeoutMs: number
}

export class Keepalive {
  private readonly heartbeat: Heartbeat<KeepaliveTarget>
  private readonly draining = new Map<KeepaliveTarget, Drain>()
  private readonly drainTimer: NodeJS.Timeout
  private readonly times: KeepaliveTimes
  private readonly log: Logger

  constructor(times: KeepaliveTimes, log: Logger) {
    this.times = times
    this.log = log
    this.heartbeat = new Heartbeat<KeepaliveTarget>({
      pingIntervalMs: times.pingIntervalMs,
      idleTimeoutMs: times.idleTimeoutMs,
      tickMs: times.pingIntervalMs,
      timers: unrefTimers,
      onIdle: (transport) => {
        this.log.warn('closing a silent worker connection', { idle_timeout_ms: times.idleTimeoutMs })
        this.draining.delete(transport)
      },
    })
    this.drainTimer = setInterval(() => this.sweepDrain(), drainSweepMs(times.drainTimeoutMs))
    this.drainTimer.unref()
  }

  /** Starts watching `transport`; call the returned function whenever anything arrives on it. */
  track(transport: KeepaliveTarget): () => void {
    this.draining.set(transport, { written: 0, stalledSinceMs: undefined })
    return this.heartbeat.track(transport)
  }

  untrack(transport: KeepaliveTarget): void {
    this.heartbeat.untrack(transport)
    this.draining.delete(transport)
  }

  stop(): void {
    this.heartbeat.stop()
    clearInterval(this.drainTimer)
    this.draining.clear()
  }

  private sweepDrain(): void {
    let now: number | undefined
    const drainTimeoutMs = this.times.drainTimeoutMs
    for (const [transport, entry] of this.draining) {
      const buffered = transport.bufferedAmount
      if (buffered === 0) {
        entry.stalledSinceMs = undefined
        continue
      }
      now ??= Date.now()
      // Without writtenBytes, a shrinking buffer is the only sign of progress.
      const written = transport.writtenBytes ?? -buffered
      if (entry.stalledSinceMs === undefined || written > entry.written) {
        entry.written = written
        entry.stalledSinceMs = now
        continue
      }
      if (now - entry.stalledSinceMs >= drainTimeoutMs) {
        this.log.warn('closing a worker connection that stopped reading', { drain_timeout_ms: drainTimeoutMs, unsent_bytes: buffered })
        this.untrack(transport)
        transport.terminate()
      }
    }
  }
}
