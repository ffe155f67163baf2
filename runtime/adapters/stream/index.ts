/**
 * Stream adapters by name (builtins.md §2.9, §13.1): parsing of an `adapter: {name, config?}`
 * entry and opening the adapter it names. `builtin` is SQLite `<data_dir>/stream.db` and `memory`
 * in-process maps, both through the state stores (./state-backed.ts); `redis` (§13.4) is
 * ./redis.ts, shared by every engine pointing at the same Redis and key prefix.
 */
import { resolve } from 'node:path'
import { describeRedis, type RedisConfig } from '../redis.ts'
import { parseStateAdapterEntry } from '../state/index.ts'
import { MemoryStateAdapter } from '../state/memory/memory.ts'
import { SqliteStateAdapter } from '../state/sqlite/sqlite.ts'
import { StateBackedStreamAdapter } from './state-backed.ts'
import type { StreamAdapter, StreamAdapterContext } from './types.ts'

export type * from './types.ts'
export { StateBackedStreamAdapter } from './state-backed.ts'

/** Default database file of `builtin`, relative to the data directory (§13.2). */
export const DEFAULT_STREAM_DB = 'stream.db'

/** A validated adapter entry, name canonical. */
export type StreamAdapterSpec =
  | { name: 'builtin'; config: { path?: string } }
  | { name: 'memory'; config: Record<string, never> }
  | { name: 'redis'; config: RedisConfig }

export const DEFAULT_STREAM_ADAPTER: StreamAdapterSpec = { name: 'builtin', config: {} }

/**
 * Validates an `adapter` settings entry (aliases of §13.1 accepted, `redis_url` for `url`).
 * Undefined or null: the default.
 * @throws Error naming the field, e.g. `adapter.config.url must be a redis:// or rediss:// URL`.
 * @example parseStreamAdapterEntry({ name: 'in_memory' }) // { name: 'memory', config: {} }
 * @example parseStreamAdapterEntry({ name: 'redis', config: { url: 'redis://cache:6379' } }) // { name: 'redis', config: { url: 'redis://cache:6379', key_prefix: 'svc:' } }
 */
export function parseStreamAdapterEntry(entry: unknown): StreamAdapterSpec {
  // The same names and config blocks as the state worker's (§13.1).
  return parseStateAdapterEntry(entry)
}

/** The absolute database file of a `builtin` spec. */
export function streamDatabasePath(config: { path?: string }, context: StreamAdapterContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_STREAM_DB)
}

/** A string equal for two specs exactly when they open the same store. */
export function streamAdapterIdentity(spec: StreamAdapterSpec, context: StreamAdapterContext): string {
  switch (spec.name) {
    case 'builtin':
      return `builtin:${streamDatabasePath(spec.config, context)}`
    case 'memory':
      return 'memory'
    case 'redis':
      // The full URL (password included) decides identity; only the redacted form is ever shown.
      return `redis:${spec.config.url}#${spec.config.key_prefix}`
  }
}

/** How logs name an adapter: its identity, with a redis password hidden. */
export function describeStreamAdapter(spec: StreamAdapterSpec, context: StreamAdapterContext): string {
  return spec.name === 'redis' ? describeRedis(spec.config) : streamAdapterIdentity(spec, context)
}

/**
 * Opens the adapter a spec names; `redis` connects and subscribes to `<prefix>stream:events`
 * first, but resolves (logging a warning through `context.log`) when Redis is unreachable (§13.4).
 * @throws the SQLite error when the database cannot be opened.
 */
export async function openStreamAdapter(spec: StreamAdapterSpec, context: StreamAdapterContext): Promise<StreamAdapter> {
  switch (spec.name) {
    case 'builtin':
      return new StateBackedStreamAdapter(new SqliteStateAdapter(streamDatabasePath(spec.config, context)))
    case 'memory':
      return new StateBackedStreamAdapter(new MemoryStateAdapter())
    case 'redis':
      // The redis module (and ioredis) loads only when a worker uses it.
      return (await import('./redis.ts')).RedisStreamAdapter.open(spec.config, { log: context.log })
  }
}
