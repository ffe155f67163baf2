/**
 * The change feed the `redis` state and stream adapters share (builtins.md §13.4): several engines
 * write through one Redis, and each hears every committed change, its own included, on one
 * channel.
 *
 * A write is a Lua script that INCRs a counter and PUBLISHes a message carrying that number as
 * `seq` (JSON text), so messages are published in commit order. The feed listens on its own
 * subscriber connection and reports each message once and in order: anything not newer than the
 * last one reported is dropped. The numbering restarts with each subscription (a restarted Redis
 * may have reset its counter), and changes committed while the subscription was down are lost to
 * this engine, as they are for every engine: the feed warns when it subscribes again.
 *
 * ioredis does not resubscribe after a reconnection: the feed subscribes at {@link RedisChangeFeed.open}
 * and again on every later 'ready'.
 */
import type { Redis } from 'ioredis'
import { jsonParse } from 'svc-protocol/json'
import { CALL_TIMEOUT_MS, connectRedis, waitReady } from './redis.ts'

/** Where a feed warns: an adapter's logger (`warn` with a message and fields). */
export interface RedisFeedLogger {
  warn(message: string, fields?: Record<string, unknown>): void
}

/** What {@link RedisChangeFeed} needs to know of the adapter that owns it. */
export interface RedisChangeFeedOptions<M extends { seq: number }> {
  /** The Redis URL (the subscriber connection's own). */
  url: string
  /** The redacted URL, for logs. */
  where: string
  /** The channel the adapter's scripts PUBLISH on, e.g. `svc:state:events`. */
  channel: string
  /** The adapter's kind in warnings: `redis <kind> adapter: …`. */
  kind: string
  /** The sentence of the reconnection warning after the URL, e.g. `state changes committed while disconnected were not reported to triggers`. */
  missed: string
  log: RedisFeedLogger
  /** Called once per new message, in `seq` order, with the parsed JSON. */
  onMessage(message: M): void
}

/**
 * @example
 * const feed = new RedisChangeFeed<{ seq: number; key: string }>({ url, where, channel: 'svc:state:events', kind: 'state',
 *   missed: 'state changes committed while disconnected were not reported to triggers', log, onMessage: (m) => report(m) })
 * const listening = await feed.open()   // false: Redis unreachable for now; the feed keeps trying
 * const seq = await scriptThatPublishes()
 * await feed.reported(seq)              // this engine's listeners have heard of the change
 */
export class RedisChangeFeed<M extends { seq: number }> {
  readonly #options: RedisChangeFeedOptions<M>
  readonly #subscriber: Redis
  /** `seq` of the last message reported; reset when the subscription is made again. */
  #lastSeq = 0
  /** Calls waiting for the message they published to be reported. */
  #waiters: Array<{ seq: number; done: () => void }> = []
  #subscribedOnce = false
  /** True while the channel subscription is in place (so that a call's own message can come back). */
  #listening = false
  /** Set once open() made its own attempt; from then on every 'ready' subscribes again. */
  #opened = false
  #closed = false

  constructor(options: RedisChangeFeedOptions<M>) {
    this.#options = options
    this.#subscriber = connectRedis(options.url, 'subscriber')
    this.#subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => this.#receive(message))
    this.#subscriber.on('ready', () => {
      if (this.#opened && !this.#closed) void this.#subscribe()
    })
    this.#subscriber.on('close', () => {
      // Messages published from now on are lost to this engine; nobody waits for them.
      this.#listening = false
      this.#releaseWaiters()
    })
  }

  /**
   * Waits for the connection (at most {@link CALL_TIMEOUT_MS}) and subscribes. Never throws.
   * @returns false when Redis could not be reached; the feed subscribes once it can.
   */
  async open(): Promise<boolean> {
    const ready = await waitReady(this.#subscriber, CALL_TIMEOUT_MS)
    this.#opened = true
    return ready && this.#subscriber.status === 'ready' && (await this.#subscribe())
  }

  /**
   * Resolves once the message numbered `seq` has been reported, at once when the subscription is
   * down (or lost meanwhile), and after {@link CALL_TIMEOUT_MS} at the latest: the write has
   * committed either way.
   */
  reported(seq: number): Promise<void> {
    if (this.#closed || seq <= this.#lastSeq || !this.#listening) return Promise.resolve()
    return new Promise((resolve) => {
      const waiter = {
        seq,
        done: () => {
          clearTimeout(timer)
          resolve()
        },
      }
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter)
        resolve()
      }, CALL_TIMEOUT_MS)
      this.#waiters.push(waiter)
    })
  }

  /** Disconnects; waiting calls resolve and no message is reported any more. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#releaseWaiters()
    this.#subscriber.disconnect()
  }

  /** Subscribes the connection; false when Redis could not be reached. */
  async #subscribe(): Promise<boolean> {
    // Numbers restart with the subscription, and a call waiting for a message from before the
    // break will not see it.
    this.#lastSeq = 0
    this.#listening = false
    this.#releaseWaiters()
    try {
      await this.#subscriber.subscribe(this.#options.channel)
    } catch {
      return false
    }
    this.#listening = !this.#closed
    if (this.#subscribedOnce) {
      const { kind, where, missed, log } = this.#options
      log.warn(`redis ${kind} adapter: reconnected to ${where}; ${missed}`, { url: where })
    }
    this.#subscribedOnce = true
    return true
  }

  #receive(message: Buffer): void {
    if (this.#closed) return
    let parsed: M
    try {
      parsed = jsonParse(message.toString('utf8')) as M
    } catch {
      this.#options.log.warn(`redis ${this.#options.kind} adapter: ignored a malformed change message`, { url: this.#options.where })
      return
    }
    if (typeof parsed?.seq !== 'number' || !(parsed.seq > this.#lastSeq)) return
    this.#lastSeq = parsed.seq
    try {
      this.#options.onMessage(parsed)
    } finally {
      this.#releaseWaiters(parsed.seq)
    }
  }

  #releaseWaiters(upTo = Infinity): void {
    if (this.#waiters.length === 0) return
    const ready = this.#waiters.filter((w) => w.seq <= upTo)
    this.#waiters = this.#waiters.filter((w) => w.seq > upTo)
    for (const waiter of ready) waiter.done()
  }
}
