/**
 * The `adapter.config` block of the redis queue backend, parsed without loading the backend (and
 * ioredis): config.yaml is checked at load, the backend opens only when a queue worker uses it.
 */
import { parseRedisConfig, type RedisConfig } from '../../redis.ts'

/** Default lease of an in-flight message, ms (renewed every third of it while delivered). */
export const DEFAULT_LEASE_MS = 30_000
export const MIN_LEASE_MS = 1_000
export const MAX_LEASE_MS = 3_600_000

/** `adapter.config` of the redis queue backend: the shared redis block plus `lease_ms`. */
export interface RedisQueueConfig extends RedisConfig {
  /** Lease of an in-flight message, ms ({@link MIN_LEASE_MS}–{@link MAX_LEASE_MS}); default {@link DEFAULT_LEASE_MS}. */
  lease_ms: number
}

/**
 * Checks the `adapter.config` block of `{name: redis}` for the queue worker: `url` (or
 * `redis_url`), `key_prefix` (../../redis.ts) and `lease_ms`.
 * @throws Error naming the field, e.g. `adapter.config.lease_ms must be an integer from 1000 to 3600000`.
 * @example parseRedisQueueConfig({ url: 'redis://cache:6379', lease_ms: 10000 }) // { url, key_prefix: 'svc:', lease_ms: 10000 }
 */
export function parseRedisQueueConfig(config: Record<string, unknown>): RedisQueueConfig {
  const { lease_ms: lease, ...rest } = config
  for (const field of Object.keys(rest)) {
    if (field !== 'url' && field !== 'redis_url' && field !== 'key_prefix') {
      throw new Error(`adapter.config.${field} is not a redis queue adapter option (known: url, key_prefix, lease_ms)`)
    }
  }
  const base = parseRedisConfig(rest)
  let lease_ms = DEFAULT_LEASE_MS
  if (lease !== undefined && lease !== null) {
    if (typeof lease !== 'number' || !Number.isSafeInteger(lease) || lease < MIN_LEASE_MS || lease > MAX_LEASE_MS) {
      throw new Error(`adapter.config.lease_ms must be an integer from ${MIN_LEASE_MS} to ${MAX_LEASE_MS}`)
    }
    lease_ms = lease
  }
  return { ...base, lease_ms }
}
