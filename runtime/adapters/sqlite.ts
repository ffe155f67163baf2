/**
 * Opening the SQLite files of the `builtin` adapters (builtins.md §13.2) in one way: the directory
 * created, WAL journal, the `synchronous` level of the store, a 5 s busy timeout, then the schema.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync } from 'node:sqlite'

/**
 * Opens (creating if needed) `path`, applies the pragmas and runs `schema`, then `prepare` (for the
 * statements the store keeps). The database is closed again when any step throws.
 * @param synchronous `NORMAL` (state, stream, cron: durable across process crashes) or `FULL` (queue: across power loss).
 * @throws the SQLite error when the file cannot be opened, is not a database, or the schema fails.
 * @example const { db } = openSqlite('/data/cron.db', 'NORMAL', 'CREATE TABLE IF NOT EXISTS t (k TEXT)', () => ({}))
 */
export function openSqlite<S>(path: string, synchronous: 'NORMAL' | 'FULL', schema: string, prepare: (db: DatabaseSync) => S): { db: DatabaseSync; statements: S } {
  mkdirSync(dirname(path), { recursive: true })
  const db = new DatabaseSync(path)
  try {
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 5000;\n${schema}`)
    return { db, statements: prepare(db) }
  } catch (error) {
    db.close()
    throw error
  }
}
