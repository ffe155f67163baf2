/**
 * The Redis store the `redis` state and stream adapters share (builtins.md §13.4): scopes (a state
 * scope; a stream's group) of keys holding JSON text, written by Lua scripts that publish every
 * committed change on one channel, which every engine hears through its {@link RedisChangeFeed}.
 *
 * Key layout, for prefix `P` (default `svc:`) and kind `K` (`state` or `stream`):
 * - `P K:h:<scope>`: hash, key → value as JSON text (one hash per scope, §13.1);
 * - `P K:k:<scope>`: sorted set of the scope's keys, every score 0, so that Redis orders them by
 *   their bytes (ZRANGEBYLEX/ZLEXCOUNT give ordered, prefix-filtered pages without reading the
 *   whole scope);
 * - `P K:groups`: sorted set (scores 0) of the scopes holding at least one key;
 * - `P K:seq`: counter of published changes;
 * - channel `P K:events`: one message per committed change, in commit order.
 *
 * Availability (../redis.ts): commands are never queued while disconnected, an unanswered command
 * fails after {@link CALL_TIMEOUT_MS}, and the clients reconnect with backoff; such failures reject
 * with `ADAPTER_UNAVAILABLE`. Opening never fails because Redis is down: a warning is logged and
 * the store works as soon as Redis is reachable.
 */
import type { Redis } from 'ioredis'
import { PAGE_SCRIPT } from './state/redis/scripts.ts'
import { CALL_TIMEOUT_MS, connectRedis, redactRedisUrl, redisCallError, waitReady, type RedisConfig } from './redis.ts'
import { RedisChangeFeed, type RedisFeedLogger } from './redis-feed.ts'

/** The two scripts every store defines on its client. */
interface ScopeScripts {
  svcScopeWrite(...args: Array<string | Buffer | number>): Promise<unknown>
  svcScopePage(...args: Array<string | Buffer | number>): Promise<[number, string[], Array<string | null>]>
}

/** What a store needs besides its kind and config block. */
export interface RedisScopesOptions<Message extends { seq: number }> {
  /** The write script (state/redis/scripts.ts): KEYS hash, index, groups, counter; ARGV mode, scope, key, channel, origin, then the mode's own. */
  writeScript: string
  log: RedisFeedLogger
  /** The feed's reconnection warning after the URL (`RedisChangeFeedOptions.missed`). */
  missed: string
  /** Each message of the channel, once and in `seq` order. */
  onMessage(message: Message): void
}

/**
 * @example
 * const store = new RedisScopes<ChangeMessage>('state', { url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' }, { writeScript: WRITE_SCRIPT, log, missed: '…', onMessage: report })
 * await store.open()                       // resolves when Redis is unreachable too (a warning is logged)
 * const old = await store.call('set', () => store.write('set', 'users', 'u1', undefined, '{"name":"Ada"}'))
 */
export class RedisScopes<Message extends { seq: number }> {
  readonly config: RedisConfig
  /** The commands connection: an adapter defines its own further scripts on it. */
  readonly client: Redis
  readonly feed: RedisChangeFeed<Message>
  /** The redacted URL, for messages. */
  readonly where: string
  readonly keys: { readonly groups: string; readonly seq: string; readonly channel: string }
  readonly #kind: 'state' | 'stream'
  /** `<key_prefix><kind>:`, the start of every key. */
  readonly #prefix: string
  readonly #log: RedisFeedLogger
  readonly #scripts: ScopeScripts
  #closed = false

  constructor(kind: 'state' | 'stream', config: RedisConfig, options: RedisScopesOptions<Message>) {
    this.config = config
    this.#kind = kind
    this.#log = options.log
    this.where = redactRedisUrl(config.url)
    const prefix = (this.#prefix = `${config.key_prefix}${kind}:`)
    this.keys = { groups: `${prefix}groups`, seq: `${prefix}seq`, channel: `${prefix}events` }
    this.client = connectRedis(config.url)
    this.client.defineCommand('svcScopeWrite', { numberOfKeys: 4, lua: options.writeScript })
    this.client.defineCommand('svcScopePage', { numberOfKeys: 2, lua: PAGE_SCRIPT })
    this.#scripts = this.client as Redis & ScopeScripts
    this.feed = new RedisChangeFeed<Message>({
      url: config.url,
      where: this.where,
      channel: this.keys.channel,
      kind,
      missed: options.missed,
      log: options.log,
      onMessage: options.onMessage,
    })
  }

  /**
   * Connects (waiting at most {@link CALL_TIMEOUT_MS}) and subscribes to the channel. Resolves
   * even when Redis is unreachable: a warning is logged and the clients keep trying.
   */
  async open(): Promise<void> {
    const [commands, subscribed] = await Promise.all([waitReady(this.client, CALL_TIMEOUT_MS), this.feed.open()])
    if (!commands || !subscribed) {
      this.#log.warn(
        `redis ${this.#kind} adapter: ${this.where} is unreachable; ${this.#kind} calls fail with ADAPTER_UNAVAILABLE until it is back`,
        { url: this.where },
      )
    }
  }

  get closed(): boolean {
    return this.#closed
  }

  /** The hash of a scope's values. */
  hashKey(scope: string): string {
    return `${this.#prefix}h:${scope}`
  }

  /** The sorted set of a scope's keys. */
  indexKey(scope: string): string {
    return `${this.#prefix}k:${scope}`
  }

  /**
   * Runs the write script on `key` of `scope`: `origin` (trace context of the write) travels with
   * the published change; `rest` are the mode's own arguments. Resolves with the script's reply.
   */
  write(mode: 'set' | 'delete' | 'update', scope: string, key: string, origin: { traceparent?: string; baggage?: string } | undefined, ...rest: string[]): Promise<unknown> {
    const originText = origin && (origin.traceparent !== undefined || origin.baggage !== undefined) ? JSON.stringify(origin) : ''
    return this.#scripts.svcScopeWrite(this.hashKey(scope), this.indexKey(scope), this.keys.groups, this.keys.seq, mode, scope, key, this.keys.channel, originText, ...rest)
  }

  /**
   * One page of a scope, keys in byte order: `[total, keys, values]` (values only when asked for).
   * `limit` -1 reads to the end.
   */
  page(scope: string, prefix: string, offset: number, limit: number, values: boolean): Promise<[number, string[], Array<string | null>]> {
    // Valid UTF-8 never contains the byte 0xFF, so `prefix + 0xFF` bounds every key with the prefix.
    const min = prefix === '' ? '-' : `[${prefix}`
    const max = prefix === '' ? '+' : Buffer.concat([Buffer.from(`(${prefix}`), Buffer.from([0xff])])
    return this.#scripts.svcScopePage(this.hashKey(scope), this.indexKey(scope), min, max, String(offset), String(limit), values ? '1' : '0')
  }

  /**
   * Runs one Redis call.
   * @throws `STORAGE_ERROR` or `ADAPTER_UNAVAILABLE` for a failed call ({@link redisCallError}); an
   *   `Error` once the store is closed.
   */
  async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    this.assertOpen()
    try {
      return await run()
    } catch (error) {
      throw redisCallError(error, this.where, `${this.#kind} ${operation}`)
    }
  }

  /** @throws an `Error` once the store is closed. */
  assertOpen(): void {
    if (this.#closed) throw new Error(`redis ${this.#kind} adapter for ${this.where} is closed`)
  }

  /** Closes both connections; false when it was closed already. */
  close(): boolean {
    if (this.#closed) return false
    this.#closed = true
    this.client.disconnect()
    this.feed.close()
    return true
  }
}
