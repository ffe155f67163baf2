/**
 * The `adapter.config` block of the redis queue backend, parsed without loading the backend (and
 * ioredis): config.yaml is checked at load, the backend opens only when a queue worker uses it.
 */
import { parseRedisConfig, type RedisConfig } from '../../redis.ts'

/** Default lease of an in-flight message, ms (renewed every third of it while delivered). */
export const DEFAULT_LEASE_MS = 30_000
export const MIN_LEASE_MS = 1_000
export const MAX_LEASE_MS = 3_600_000
/** Most `prefetch` (a queue's buffer is also capped at its `concurrency`, at most 1024). */
export const MAX_PREFETCH = 1024

/** `adapter.config` of the redis queue backend: the shared redis block plus `lease_ms` and `prefetch`. */
export interface RedisQueueConfig extends RedisConfig {
  /** Lease of an in-flight message, ms ({@link MIN_LEASE_MS}–{@link MAX_LEASE_MS}); default {@link DEFAULT_LEASE_MS}. */
  lease_ms: number
  /**
   * Messages per queue the queue worker reserves ahead of its free slots (0–{@link MAX_PREFETCH},
   * capped at the queue's `concurrency`; 0: none), as RabbitMQ's `prefetch_count`: a slot that
   * frees starts the next one without a Redis round trip. Absent: each queue's `concurrency`.
   * A prefetched message waits for a slot of this engine (up to one handler's time) where an idle
   * engine of the fleet might have started it: fleets with long handlers may want it small or 0.
   */
  prefetch?: number
}

/**
 * Checks the `adapter.config` block of `{name: redis}` for the queue worker: `url` (or
 * `redis_url`), `key_prefix` (../../redis.ts), `lease_ms` and `prefetch`.
 * @throws Error naming the field, e.g. `adapter.config.lease_ms must be an integer from 1000 to 3600000`.
 * @example parseRedisQueueConfig({ url: 'redis://cache:6379', lease_ms: 10000 }) // { url, key_prefix: 'svc:', lease_ms: 10000 }
 */
export function parseRedisQueueConfig(config: Record<string, unknown>): RedisQueueConfig {
  const { lease_ms: lease, prefetch, ...rest } = config
  for (const field of Object.keys(rest)) {
    if (field !== 'url' && field !== 'redis_url' && field !== 'key_prefix') {
      throw new Error(`adapter.config.${field} is not a redis queue adapter option (known: url, key_prefix, lease_ms, prefetch)`)
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
  if (prefetch === undefined || prefetch === null) return { ...base, lease_ms }
  if (typeof prefetch !== 'number' || !Number.isSafeInteger(prefetch) || prefetch < 0 || prefetch > MAX_PREFETCH) {
    throw new Error(`adapter.config.prefetch must be an integer from 0 to ${MAX_PREFETCH}`)
  }
  return { ...base, lease_ms, prefetch }
}
