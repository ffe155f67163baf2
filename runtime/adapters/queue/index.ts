/**
 * Queue backends by name (builtins.md §2.9, §13.1): parsing of the queue worker's `adapter` entry
 * and opening the backend it names.
 */
import { parseAdapterEntry, parseNoAdapterConfig } from '../entry.ts'
import { describeRedis } from '../redis.ts'
import { openMemoryQueue } from './memory/memory.ts'
import { parseRedisQueueConfig, type RedisQueueConfig } from './redis/config.ts'
import { openSqliteQueue, sqliteQueuePath, type SqliteQueueConfig } from './sqlite/sqlite.ts'
import type { QueueAdapterContext, QueueBackend } from './types.ts'

export type * from './types.ts'
export { targetKey } from './types.ts'

/** A validated adapter entry of the queue worker, name canonical. */
export type QueueAdapterSpec =
  | { name: 'builtin'; config: SqliteQueueConfig }
  | { name: 'memory'; config: Record<string, never> }
  | { name: 'redis'; config: RedisQueueConfig }

export { parseRedisQueueConfig, DEFAULT_LEASE_MS } from './redis/config.ts'

/**
 * Validates the `adapter` entry; undefined or null means `{name: "builtin"}`.
 * @throws Error whose message starts with the key (`adapter.name 'x' is unknown; …`,
 *   `adapter.config.lease_ms must be …`).
 * @example parseQueueAdapterEntry({ name: 'in_memory' }) // { name: 'memory', config: {} }
 * @example parseQueueAdapterEntry({ name: 'redis', config: { url: 'redis://cache:6379' } }) // { name: 'redis', config: { url: 'redis://cache:6379', key_prefix: 'svc:', lease_ms: 30000 } }
 */
export function parseQueueAdapterEntry(entry: unknown): QueueAdapterSpec {
  return parseAdapterEntry<QueueAdapterSpec>(entry, {
    builtin: (config) => {
      const result: Record<string, unknown> = {}
      for (const [field, value] of Object.entries(config)) {
        if (field !== 'path' && field !== 'synchronous') throw new Error(`adapter.config.${field} is not a builtin adapter option (known: path, synchronous)`)
        if (value === null || value === undefined) continue
        if (field === 'synchronous') {
          if (value !== 'full' && value !== 'normal') throw new Error('adapter.config.synchronous must be "full" or "normal"')
          result.synchronous = value
          continue
        }
        if (typeof value !== 'string' || value === '') throw new Error('adapter.config.path must be a non-empty string')
        result.path = value
      }
      return { name: 'builtin', config: result as SqliteQueueConfig }
    },
    memory: (config) => ({ name: 'memory', config: parseNoAdapterConfig('memory')(config) }),
    redis: (config) => ({ name: 'redis', config: parseRedisQueueConfig(config) }),
  })
}

/**
 * How many messages of a queue whose `concurrency` is given the worker reserves ahead of its free
 * slots with the adapter `spec` (prefetch, as RabbitMQ's `prefetch_count`): redis' `prefetch`
 * (absent: `concurrency`), never more than `concurrency`; 0 for `builtin` and `memory`, whose
 * reserve is in process and costs no round trip. Not part of the identity: a change applies to the
 * next reserve without reopening the store.
 * @example queuePrefetch({ name: 'redis', config: { url: 'redis://cache:6379', key_prefix: 'svc:', lease_ms: 30000 } }, 10) // 10
 */
export function queuePrefetch(spec: QueueAdapterSpec, concurrency: number): number {
  if (spec.name !== 'redis') return 0
  return Math.min(spec.config.prefetch ?? concurrency, concurrency)
}

/** Equal for two specs exactly when they open the same store. */
export function queueAdapterIdentity(spec: QueueAdapterSpec, context: QueueAdapterContext): string {
  switch (spec.name) {
    case 'memory':
      return 'memory'
    case 'builtin':
      return `builtin:${sqliteQueuePath(spec.config, context)}`
    case 'redis':
      // The full URL (password included) decides identity; only the redacted form is ever shown.
      return `redis:${spec.config.url}#${spec.config.key_prefix}#lease=${spec.config.lease_ms}`
  }
}

/** How logs name an adapter: its identity, with a redis password hidden, and the opt-in `synchronous: normal` of builtin. */
export function describeQueueAdapter(spec: QueueAdapterSpec, context: QueueAdapterContext): string {
  if (spec.name === 'redis') return `${describeRedis(spec.config)} (lease ${spec.config.lease_ms} ms)`
  const identity = queueAdapterIdentity(spec, context)
  return spec.name === 'builtin' && spec.config.synchronous === 'normal' ? `${identity} (synchronous: normal, no wait for the disk)` : identity
}

/**
 * Opens the backend a spec names and loads what it holds; `redis` connects and subscribes first,
 * but resolves (warning through `context.log`) when Redis is unreachable (builtins.md §13.4).
 * @throws the store's error when it cannot open (an unreadable SQLite file).
 */
export async function openQueueBackend(spec: QueueAdapterSpec, context: QueueAdapterContext, now = Date.now()): Promise<QueueBackend> {
  switch (spec.name) {
    case 'memory':
      return openMemoryQueue()
    case 'builtin':
      return openSqliteQueue(spec.config, context, now)
    case 'redis':
      // The redis module (and ioredis) loads only when a worker uses it.
      return (await import('./redis/redis.ts')).RedisQueueBackend.open(spec.config, { log: context.log, dataDir: context.dataDir })
  }
}
