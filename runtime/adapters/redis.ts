/**
 * The one way svc's adapters talk to Redis (builtins.md §13.4): the `adapter.config` block every
 * `redis` adapter takes and how logs name it, the ioredis options of every connection, waiting for a connection at
 * open, and how a failed call becomes an error code. Every Redis adapter (state, stream, queue,
 * pub/sub, cron) uses it; the state and stream adapters hear each other's engines' changes through
 * ./redis-feed.ts.
 *
 * Availability, the same for every adapter: commands are never queued while disconnected
 * (`enableOfflineQueue: false`), an unanswered command fails after {@link CALL_TIMEOUT_MS}, the
 * client reconnects with backoff ({@link RECONNECT_MIN_MS} doubling to {@link RECONNECT_MAX_MS}),
 * and such failures are `ADAPTER_UNAVAILABLE` ({@link redisCallError}). Opening never fails because
 * Redis is down: the adapter logs a warning and works as soon as Redis is reachable.
 */
import type { Redis, RedisOptions } from 'ioredis'
import { Errors, SvcError } from 'svc-protocol/errors'
import { requireOptional } from './optional-package.ts'

/** `adapter.config` of a `redis` adapter (builtins.md §13.4), defaults applied. */
export interface RedisConfig {
  /** `redis://` or `rediss://` URL. Default {@link DEFAULT_REDIS_URL}. */
  url: string
  /** Prefix of every key and channel. Default {@link DEFAULT_KEY_PREFIX}. */
  key_prefix: string
}

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'
export const DEFAULT_KEY_PREFIX = 'svc:'
/** A call that Redis does not answer within this many ms fails (the spec's bound is 5 s). */
export const CALL_TIMEOUT_MS = 4000
/** First reconnect delay and its cap, in ms (doubling in between). */
export const RECONNECT_MIN_MS = 1000
export const RECONNECT_MAX_MS = 30_000

/**
 * Checks an `adapter.config` block for `redis`; `redis_url` is accepted for `url` (§13.1).
 * Placeholders are expanded by the configuration layer before this runs.
 * @throws Error naming the offending field, e.g. `adapter.config.url must be a redis:// or rediss:// URL`;
 *   a `key_prefix` with a lone surrogate is refused (UTF-8 would merge it with other prefixes).
 * @example parseRedisConfig({ redis_url: 'redis://cache:6379' }) // { url: 'redis://cache:6379', key_prefix: 'svc:' }
 */
export function parseRedisConfig(config: Record<string, unknown>): RedisConfig {
  for (const field of Object.keys(config)) {
    if (field !== 'url' && field !== 'redis_url' && field !== 'key_prefix') {
      throw new Error(`adapter.config.${field} is not a redis adapter option (known: url, key_prefix)`)
    }
  }
  const given = (field: string): unknown => (config[field] === null ? undefined : config[field])
  if (given('url') !== undefined && given('redis_url') !== undefined && given('url') !== given('redis_url')) {
    throw new Error('adapter.config.redis_url is another name for adapter.config.url; give only one of them')
  }
  const url = given('url') ?? given('redis_url') ?? DEFAULT_REDIS_URL
  const field = given('url') !== undefined ? 'url' : 'redis_url'
  if (typeof url !== 'string' || !/^rediss?:\/\/./.test(url)) {
    throw new Error(`adapter.config.${field} must be a redis:// or rediss:// URL`)
  }
  try {
    new URL(url)
  } catch {
    throw new Error(`adapter.config.${field} is not a valid URL`)
  }
  const prefix = given('key_prefix') ?? DEFAULT_KEY_PREFIX
  if (typeof prefix !== 'string') throw new Error('adapter.config.key_prefix must be a string')
  // Keys travel as UTF-8, where every lone surrogate becomes U+FFFD: two prefixes differing only
  // there would name one store (and one change channel) while svc took them for two.
  if (!prefix.isWellFormed()) throw new Error('adapter.config.key_prefix must be well-formed Unicode text (it has a lone surrogate)')
  return { url, key_prefix: prefix }
}

/** The URL without its password, for messages and logs. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString().replace(/\/$/, '')
  } catch {
    return 'redis'
  }
}

/** How logs and messages name a `redis` adapter entry: `redis:<URL without password>#<key prefix>`. */
export function describeRedis(config: RedisConfig): string {
  return `redis:${redactRedisUrl(config.url)}#${config.key_prefix}`
}

/**
 * ioredis options of every svc adapter (builtins.md §13.4): no command queue while disconnected,
 * calls fail after {@link CALL_TIMEOUT_MS}, reconnects back off from 1 s doubling to 30 s.
 * Subscriptions are not resubscribed by ioredis; adapters do it on 'ready'.
 */
export function redisClientOptions(): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    commandTimeout: CALL_TIMEOUT_MS,
    connectTimeout: CALL_TIMEOUT_MS,
    retryStrategy: (attempt: number) => Math.min(RECONNECT_MIN_MS * 2 ** Math.min(attempt - 1, 10), RECONNECT_MAX_MS),
  }
}

/**
 * A client with {@link redisClientOptions}, connecting at once. A `subscriber` connection has no
 * command timeout (it waits for messages). Connection errors surface through the calls (see
 * {@link redisCallError}); the client's 'error' events get a listener here so they are not thrown.
 */
export function connectRedis(url: string, role: 'commands' | 'subscriber' = 'commands'): Redis {
  const options = redisClientOptions()
  const client = new (ioredis())(url, role === 'subscriber' ? { ...options, commandTimeout: undefined } : options)
  client.on('error', () => {})
  OPEN.set(client, redactRedisUrl(url))
  client.once('end', () => OPEN.delete(client))
  return client
}

/**
 * ioredis's client class, loaded on the first connection (synchronously: ioredis is CommonJS), so
 * that parsing config.yaml or asking for health never loads it.
 */
function ioredis(): typeof Redis {
  return (IOREDIS ??= requireOptional<typeof import('ioredis')>('ioredis', 'Redis adapters').Redis)
}
let IOREDIS: typeof Redis | undefined

/** Every client {@link connectRedis} made that has not ended, with its URL without password. */
const OPEN = new Map<Redis, string>()

/**
 * The `redis` component of `engine::health::check`: `degraded` while a Redis client of this process
 * is not connected (it reconnects by itself, and calls on it answer `ADAPTER_UNAVAILABLE`);
 * undefined when no built-in uses Redis.
 */
export function redisHealth(): { status: 'healthy' | 'degraded'; detail: string } | undefined {
  if (OPEN.size === 0) return undefined
  const down = new Set<string>()
  for (const [client, url] of OPEN) if (client.status !== 'ready') down.add(url)
  if (down.size === 0) return { status: 'healthy', detail: `${OPEN.size} connection${OPEN.size === 1 ? '' : 's'}` }
  return { status: 'degraded', detail: `not connected to ${[...down].join(', ')}; reconnecting` }
}

/** Resolves true once `client` is ready, false after `ms` or at its first error. */
export function waitReady(client: Redis, ms: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true)
  return new Promise((resolve) => {
    const done = (ready: boolean) => {
      clearTimeout(timer)
      client.off('ready', onReady)
      client.off('error', onError)
      resolve(ready)
    }
    const onReady = () => done(true)
    const onError = () => done(false)
    const timer = setTimeout(() => done(false), ms)
    client.on('ready', onReady)
    client.on('error', onError)
  })
}

/**
 * The error a failed Redis call becomes (builtins.md §13.4): an error the adapter raised on purpose
 * (`SvcError`) as it is; a Redis error reply (`ReplyError`, other than `LOADING`, `MASTERDOWN`,
 * `BUSY`: a server not ready yet) is `STORAGE_ERROR`; anything else — no connection, the call
 * timeout, the connection lost — is `ADAPTER_UNAVAILABLE`.
 * @param where the redacted URL ({@link redactRedisUrl}).
 * @param operation what failed, e.g. `state get`, `pubsub publish`.
 * @example throw redisCallError(error, 'redis://127.0.0.1:6379', 'state get')
 */
export function redisCallError(error: unknown, where: string, operation: string): SvcError {
  if (error instanceof SvcError) return error
  const message = (error as Error)?.message ?? String(error)
  if ((error as Error)?.name === 'ReplyError' && !/^(LOADING|MASTERDOWN|BUSY)\b/.test(message)) {
    return Errors.storageError(`${operation} failed in redis at ${where}: ${message}`, error)
  }
  return Errors.adapterUnavailable(`redis at ${where} is unavailable (${operation}): ${message}`, error)
}
