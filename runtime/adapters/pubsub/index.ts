/**
 * Pub/sub adapters by name (builtins.md §8, §13.1): parsing of the `adapter` entry and opening the
 * adapter it names. `builtin` and `memory` are the same in-process adapter.
 */
import { parseAdapterEntry, parseNoAdapterConfig } from '../entry.ts'
import { parseRedisConfig, describeRedis, type RedisConfig } from '../redis.ts'
import { MemoryPubSubAdapter } from './memory/memory.ts'
import type { PubSubAdapter, PubSubAdapterContext } from './types.ts'

export type * from './types.ts'
export { MemoryPubSubAdapter } from './memory/memory.ts'

/** A validated adapter entry, name canonical. */
export type PubSubAdapterSpec =
  | { name: 'builtin'; config: Record<string, never> }
  | { name: 'memory'; config: Record<string, never> }
  | { name: 'redis'; config: RedisConfig }

/**
 * Validates an `adapter` settings entry; undefined or null means `{name: "builtin"}`.
 * @throws Error naming the field (unknown names, keys, or adapter options).
 * @example parsePubSubAdapterEntry({ name: 'in_memory' }) // { name: 'memory', config: {} }
 */
export function parsePubSubAdapterEntry(entry: unknown): PubSubAdapterSpec {
  return parseAdapterEntry<PubSubAdapterSpec>(entry, {
    builtin: (config) => ({ name: 'builtin', config: parseNoAdapterConfig('builtin')(config) }),
    memory: (config) => ({ name: 'memory', config: parseNoAdapterConfig('memory')(config) }),
    redis: (config) => ({ name: 'redis', config: parseRedisConfig(config) }),
  })
}

/** Equal for two specs exactly when they name the same transport (re-applying them keeps the adapter). */
export function pubSubAdapterIdentity(spec: PubSubAdapterSpec): string {
  return spec.name === 'redis' ? `redis:${spec.config.url}#${spec.config.key_prefix}` : spec.name
}

/** How logs name an adapter (a redis password hidden). */
export function describePubSubAdapter(spec: PubSubAdapterSpec): string {
  return spec.name === 'redis' ? describeRedis(spec.config) : spec.name
}

/**
 * Opens the adapter a spec names; `redis` connects first but resolves (logging a warning through
 * `context.log`) when Redis is unreachable (§13.4).
 */
export async function openPubSubAdapter(spec: PubSubAdapterSpec, context: PubSubAdapterContext): Promise<PubSubAdapter> {
  switch (spec.name) {
    case 'builtin':
    case 'memory':
      return new MemoryPubSubAdapter(context)
    case 'redis':
      // The redis module (and ioredis) loads only when a worker uses it.
      return (await import('./redis/redis.ts')).RedisPubSubAdapter.open(spec.config, context)
  }
}
