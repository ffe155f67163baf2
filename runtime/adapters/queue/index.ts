/**
 * Queue backends by name (builtins.md §2.9, §13.1): parsing of the queue worker's `adapter` entry
 * and opening the backend it names.
 */
import { parseAdapterEntry, parseNoAdapterConfig } from '../entry.ts'
import { openMemoryQueue } from './memory/memory.ts'
import { openSqliteQueue, sqliteQueuePath, type SqliteQueueConfig } from './sqlite/sqlite.ts'
import type { QueueAdapterContext, QueueBackend } from './types.ts'

export type * from './types.ts'
export { targetKey } from './types.ts'

/** A validated adapter entry of the queue worker, name canonical. */
export type QueueAdapterSpec = { name: 'builtin'; config: SqliteQueueConfig } | { name: 'memory'; config: Record<string, never> }

/**
 * Validates the `adapter` entry; undefined or null means `{name: "builtin"}`.
 * @throws Error whose message starts with the key (`adapter.name 'x' is unknown; …`). `redis` is
 *   refused until its backend exists (docs/decisions.md).
 * @example parseQueueAdapterEntry({ name: 'in_memory' }) // { name: 'memory', config: {} }
 */
export function parseQueueAdapterEntry(entry: unknown): QueueAdapterSpec {
  return parseAdapterEntry<QueueAdapterSpec>(entry, {
    builtin: (config) => {
      const result: Record<string, unknown> = {}
      for (const [field, value] of Object.entries(config)) {
        if (field !== 'path') throw new Error(`adapter.config.${field} is not a builtin adapter option (known: path)`)
        if (value === null || value === undefined) continue
        if (typeof value !== 'string' || value === '') throw new Error('adapter.config.path must be a non-empty string')
        result.path = value
      }
      return { name: 'builtin', config: result as SqliteQueueConfig }
    },
    memory: (config) => ({ name: 'memory', config: parseNoAdapterConfig('memory')(config) }),
    redis: () => {
      throw new Error('adapter.name redis is not available for the queue worker yet; use builtin or memory')
    },
  })
}

/** Equal for two specs exactly when they open the same store. */
export function queueAdapterIdentity(spec: QueueAdapterSpec, context: QueueAdapterContext): string {
  return spec.name === 'memory' ? 'memory' : `builtin:${sqliteQueuePath(spec.config, context)}`
}

/**
 * Opens the backend a spec names and loads what it holds.
 * @throws the store's error when it cannot open (an unreadable SQLite file).
 */
export function openQueueBackend(spec: QueueAdapterSpec, context: QueueAdapterContext, now = Date.now()): QueueBackend {
  return spec.name === 'memory' ? openMemoryQueue() : openSqliteQueue(spec.config, context, now)
}
