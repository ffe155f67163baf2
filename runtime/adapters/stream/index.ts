/**
 * Stream adapters by name (builtins.md §2.9, §13.1): parsing of an `adapter: {name, config?}`
 * entry and opening the adapter it names. `builtin` is SQLite `<data_dir>/stream.db` and `memory`
 * in-process maps, both through the state stores (./state-backed.ts). `redis` is not available for
 * streams yet: choosing it fails the settings apply.
 */
import { resolve } from 'node:path'
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
export type StreamAdapterSpec = { name: 'builtin'; config: { path?: string } } | { name: 'memory'; config: Record<string, never> }

export const DEFAULT_STREAM_ADAPTER: StreamAdapterSpec = { name: 'builtin', config: {} }

/**
 * Validates an `adapter` settings entry (aliases of §13.1 accepted). Undefined or null: the default.
 * @throws Error naming the field; `redis` is refused with `adapter.name 'redis' is not available for svc-stream yet; use builtin or memory`.
 * @example parseStreamAdapterEntry({ name: 'in_memory' }) // { name: 'memory', config: {} }
 */
export function parseStreamAdapterEntry(entry: unknown): StreamAdapterSpec {
  const spec = parseStateAdapterEntry(entry)
  if (spec.name === 'redis') throw new Error(`adapter.name 'redis' is not available for svc-stream yet; use builtin or memory`)
  return spec
}

/** The absolute database file of a `builtin` spec. */
export function streamDatabasePath(config: { path?: string }, context: StreamAdapterContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_STREAM_DB)
}

/** A string equal for two specs exactly when they open the same store. */
export function streamAdapterIdentity(spec: StreamAdapterSpec, context: StreamAdapterContext): string {
  return spec.name === 'builtin' ? `builtin:${streamDatabasePath(spec.config, context)}` : 'memory'
}

/**
 * Opens the adapter a spec names.
 * @throws the SQLite error when the database cannot be opened.
 */
export async function openStreamAdapter(spec: StreamAdapterSpec, context: StreamAdapterContext): Promise<StreamAdapter> {
  const store = spec.name === 'builtin' ? new SqliteStateAdapter(streamDatabasePath(spec.config, context)) : new MemoryStateAdapter()
  return new StateBackedStreamAdapter(store)
}
