/**
 * Cron slot stores by name (builtins.md §9, §13.1): parsing of the `adapter` entry and opening the
 * store it names.
 */
import { parseAdapterEntry, parseNoAdapterConfig } from '../entry.ts'
import { parseRedisConfig, describeRedis, type RedisConfig } from '../redis.ts'
import { parseSqliteStateConfig } from '../state/sqlite/sqlite.ts'
import { MemoryCronSlotStore } from './memory/memory.ts'
import { SqliteCronSlotStore, sqliteCronPath, type SqliteCronConfig } from './sqlite/sqlite.ts'
import type { CronSlotStore, CronStoreContext } from './types.ts'

export type * from './types.ts'
export { MemoryCronSlotStore } from './memory/memory.ts'
export { SqliteCronSlotStore } from './sqlite/sqlite.ts'

/** A validated adapter entry, name canonical. */
export type CronAdapterSpec =
  | { name: 'builtin'; config: SqliteCronConfig }
  | { name: 'memory'; config: Record<string, never> }
  | { name: 'redis'; config: RedisConfig }

/**
 * Validates an `adapter` settings entry; undefined or null means `{name: "builtin"}`.
 * @throws Error naming the field.
 * @example parseCronAdapterEntry({ name: 'kv', config: { path: 'c.db' } }) // { name: 'builtin', config: { path: 'c.db' } }
 */
export function parseCronAdapterEntry(entry: unknown): CronAdapterSpec {
  return parseAdapterEntry<CronAdapterSpec>(entry, {
    // The builtin options ({path}) are the same as the state worker's.
    builtin: (config) => ({ name: 'builtin', config: parseSqliteStateConfig(config) }),
    memory: (config) => ({ name: 'memory', config: parseNoAdapterConfig('memory')(config) }),
    redis: (config) => ({ name: 'redis', config: parseRedisConfig(config) }),
  })
}

/** Equal for two specs exactly when they open the same store. */
export function cronAdapterIdentity(spec: CronAdapterSpec, context: CronStoreContext): string {
  switch (spec.name) {
    case 'builtin':
      return `builtin:${sqliteCronPath(spec.config, context)}`
    case 'memory':
      return 'memory'
    case 'redis':
      return `redis:${spec.config.url}#${spec.config.key_prefix}`
  }
}

/** How logs name a store (a redis password hidden). */
export function describeCronAdapter(spec: CronAdapterSpec, context: CronStoreContext): string {
  return spec.name === 'redis' ? describeRedis(spec.config) : cronAdapterIdentity(spec, context)
}

/**
 * Opens the store a spec names; `redis` resolves (with a warning through `log`) when Redis is unreachable.
 * @throws the SQLite error for an unusable file.
 */
export async function openCronSlotStore(
  spec: CronAdapterSpec,
  context: CronStoreContext,
  log?: { warn(message: string, data?: Record<string, unknown>): void },
): Promise<CronSlotStore> {
  switch (spec.name) {
    case 'builtin':
      return SqliteCronSlotStore.open(spec.config, context)
    case 'memory':
      return new MemoryCronSlotStore()
    case 'redis':
      // The redis module (and ioredis) loads only when a worker uses it.
      return (await import('./redis/redis.ts')).RedisCronSlotStore.open(spec.config, log)
  }
}
