/**
 * State adapters by name (builtins.md §2.9, §13.1): parsing of an `adapter: {name, config?}` entry
 * and opening the adapter it names.
 */
import { parseAdapterEntry } from '../entry.ts'
import { MemoryStateAdapter, parseMemoryStateConfig } from './memory/memory.ts'
import { parseRedisConfig, describeRedis, type RedisConfig } from '../redis.ts'
import { parseSqliteStateConfig, SqliteStateAdapter, sqliteStatePath, type SqliteStateConfig } from './sqlite/sqlite.ts'
import type { StateAdapter, StateAdapterContext } from './types.ts'

export type * from './types.ts'
export { compareUtf8 } from './types.ts'
export { MemoryStateAdapter } from './memory/memory.ts'
export { SqliteStateAdapter } from './sqlite/sqlite.ts'

/** Canonical adapter names of the state worker (builtins.md §13.1). */
export type StateAdapterName = 'builtin' | 'memory' | 'redis'

/** A validated adapter entry, name canonical. */
export type StateAdapterSpec =
  | { name: 'builtin'; config: SqliteStateConfig }
  | { name: 'memory'; config: Record<string, never> }
  | { name: 'redis'; config: RedisConfig }

/** The default entry, `{name: "builtin"}`. */
export const DEFAULT_STATE_ADAPTER: StateAdapterSpec = { name: 'builtin', config: {} }

/**
 * Validates an `adapter` settings entry. Undefined or null means the default.
 *
 * @throws Error with a message naming the field: unknown keys next to `name` and `config`, unknown
 *   names, and unknown or ill-typed keys inside `config`.
 * @example
 * parseStateAdapterEntry({ name: 'kv', config: { path: 'my.db' } }) // { name: 'builtin', config: { path: 'my.db' } }
 */
export function parseStateAdapterEntry(entry: unknown): StateAdapterSpec {
  return parseAdapterEntry<StateAdapterSpec>(entry, {
    builtin: (config) => ({ name: 'builtin', config: parseSqliteStateConfig(config) }),
    memory: (config) => ({ name: 'memory', config: parseMemoryStateConfig(config) }),
    redis: (config) => ({ name: 'redis', config: parseRedisConfig(config) }),
  })
}

/**
 * A string equal for two specs exactly when they open the same store, so that re-applying
 * equivalent settings keeps the running adapter (a `builtin` entry without `path` and one with the
 * default path are the same store).
 */
export function stateAdapterIdentity(spec: StateAdapterSpec, context: StateAdapterContext): string {
  switch (spec.name) {
    case 'builtin':
      return `builtin:${sqliteStatePath(spec.config, context)}`
    case 'memory':
      return 'memory'
    case 'redis':
      // The full URL (password included) decides identity; only the redacted form is ever shown.
      return `redis:${spec.config.url}#${spec.config.key_prefix}`
  }
}

/** How logs name an adapter: its identity, with a redis password hidden. */
export function describeStateAdapter(spec: StateAdapterSpec, context: StateAdapterContext): string {
  return spec.name === 'redis'
    ? describeRedis(spec.config)
    : stateAdapterIdentity(spec, context)
}

/**
 * Opens the adapter a spec names; `redis` connects and subscribes to the change channel first,
 * but resolves (logging a warning through `context.log`) when Redis is unreachable (§13.4).
 * @throws the adapter's own error when it cannot open (for example an unreadable SQLite file).
 */
export async function openStateAdapter(spec: StateAdapterSpec, context: StateAdapterContext): Promise<StateAdapter> {
  switch (spec.name) {
    case 'builtin':
      return SqliteStateAdapter.open(spec.config, context)
    case 'memory':
      return new MemoryStateAdapter()
    case 'redis':
      // The redis module (and ioredis) loads only when a worker uses it.
      return (await import('./redis/redis.ts')).RedisStateAdapter.open(spec.config, context)
  }
}
