/**
 * The `builtin` state adapter: SQLite through `node:sqlite` (builtins.md §13.2).
 *
 * - WAL journal with `synchronous=NORMAL`: a committed write survives a crash of the process
 *   (kill -9), though not necessarily a power loss.
 * - Every write is its own transaction, committed before its promise resolves; `update` reads,
 *   applies the operations (runtime/update-ops) and writes inside one `BEGIN IMMEDIATE` transaction.
 * - Values are stored as JSON text. Keys use SQLite's default BINARY collation, which compares
 *   UTF-8 bytes, so `ORDER BY key` is the byte-wise order the spec asks for.
 *
 * `DatabaseSync` is synchronous, so every operation runs to completion inside one call: writes
 * cannot interleave, and changes are reported in commit order.
 */
import { resolve } from 'node:path'
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { openSqlite } from '../../sqlite.ts'
import { applyUpdateOps, assertUpdateOps } from '../../../update-ops/index.ts'
import { ChangeListeners } from '../../changes.ts'
import { checkValueSize, decodeStateValue as decode, encodeStateValue as encode } from '../codec.ts'
import type {
  StateAdapter,
  StateAdapterContext,
  StateChange,
  StateChangeListener,
  StateEntry,
  StatePage,
  StatePageRequest,
  StateUpdateResult,
  StateValue,
  StateWriteOptions,
  UpdateOp,
} from '../types.ts'

/** `adapter.config` of `builtin` (builtins.md §13.2). */
export interface SqliteStateConfig {
  /** Database file; relative paths are resolved against the data directory. Default `<dataDir>/state.db`. */
  path?: string
}

/** File name inside the data directory when `path` is not configured. */
export const DEFAULT_STATE_DB = 'state.db'

/**
 * Checks an `adapter.config` block for `builtin`.
 * @throws Error naming the offending field (`adapter.config.path must be a non-empty string`).
 */
export function parseSqliteStateConfig(config: Record<string, unknown>): SqliteStateConfig {
  const result: SqliteStateConfig = {}
  for (const [field, value] of Object.entries(config)) {
    if (field !== 'path') throw new Error(`adapter.config.${field} is not a builtin adapter option (known: path)`)
    if (value === null || value === undefined) continue
    if (typeof value !== 'string' || value === '') throw new Error('adapter.config.path must be a non-empty string')
    result.path = value
  }
  return result
}

/** The absolute database file for `config` (`<dataDir>/state.db` by default). */
export function sqliteStatePath(config: SqliteStateConfig, context: StateAdapterContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_STATE_DB)
}

/**
 * Upper bound for a prefix range: no valid UTF-8 text contains the byte 0xF5, so every key that
 * starts with the prefix sorts below `prefix || 0xF5` and every other key above the prefix sorts
 * above it. This keeps prefix scans on the primary-key index (LIKE would be case-insensitive and
 * treat `%` and `_` as wildcards).
 */
const PREFIX_RANGE = `key >= :prefix AND key < (:prefix || CAST(X'F5' AS TEXT))`

/**
 * @example
 * const adapter = SqliteStateAdapter.open({}, { dataDir: '/srv/app/.svc/data' })
 * await adapter.set('users', 'u1', { name: 'Alice' })
 */
export class SqliteStateAdapter implements StateAdapter {
  /** Absolute path of the database file. */
  readonly path: string
  private readonly db: DatabaseSync
  private readonly changes = new ChangeListeners<StateChange>()
  private closed = false
  private readonly statements: {
    get: StatementSync
    upsert: StatementSync
    delete: StatementSync
    list: StatementSync
    keys: StatementSync
    entries: StatementSync
    count: StatementSync
    groups: StatementSync
    begin: StatementSync
    commit: StatementSync
    rollback: StatementSync
  }

  /**
   * Opens (creating if needed) the database file and its directory.
   * @throws the SQLite error when the file cannot be opened or is not a database.
   */
  static open(config: SqliteStateConfig, context: StateAdapterContext): SqliteStateAdapter {
    return new SqliteStateAdapter(sqliteStatePath(config, context))
  }

  constructor(path: string) {
    this.path = path
    const opened = openSqlite(path, 'NORMAL', `
      CREATE TABLE IF NOT EXISTS state_values (
        scope TEXT NOT NULL,
        key   TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (scope, key)
      ) WITHOUT ROWID;
    `, (db) => {
      const prepare = (sql: string) => db.prepare(sql)
      return {
        get: prepare('SELECT value FROM state_values WHERE scope = ? AND key = ?'),
        upsert: prepare(
          'INSERT INTO state_values (scope, key, value) VALUES (?, ?, ?) ' +
            'ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value',
        ),
        delete: prepare('DELETE FROM state_values WHERE scope = ? AND key = ? RETURNING value'),
        list: prepare('SELECT value FROM state_values WHERE scope = ? ORDER BY key'),
        keys: prepare(
          `SELECT key FROM state_values WHERE scope = :scope AND ${PREFIX_RANGE} ORDER BY key LIMIT :limit OFFSET :offset`,
        ),
        entries: prepare(
          `SELECT key, value FROM state_values WHERE scope = :scope AND ${PREFIX_RANGE} ORDER BY key LIMIT :limit OFFSET :offset`,
        ),
        count: prepare(`SELECT count(*) AS total FROM state_values WHERE scope = :scope AND ${PREFIX_RANGE}`),
        groups: prepare('SELECT DISTINCT scope FROM state_values ORDER BY scope'),
        begin: prepare('BEGIN IMMEDIATE'),
        commit: prepare('COMMIT'),
        rollback: prepare('ROLLBACK'),
      }
    })
    this.db = opened.db
    this.statements = opened.statements
  }

  async get(scope: string, key: string): Promise<StateValue | undefined> {
    this.assertOpen()
    return this.read(scope, key)
  }

  async set(scope: string, key: string, value: StateValue, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    this.assertOpen()
    const text = encode(value)
    checkValueSize(text, options.maxValueBytes, options.maxValueSetting)
    const old_value = this.transaction(() => {
      const previous = this.read(scope, key)
      this.statements.upsert.run(scope, key, text)
      return previous
    })
    this.changes.emit({ scope, key, old_value, new_value: value, origin: options.origin })
    return old_value
  }

  async delete(scope: string, key: string, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    this.assertOpen()
    const row = this.statements.delete.get(scope, key) as { value: string } | undefined
    if (row === undefined) return undefined
    const old_value = decode(row.value)
    this.changes.emit({ scope, key, old_value, new_value: undefined, origin: options.origin })
    return old_value
  }

  /** Reads, applies the operations (runtime/update-ops) and writes inside one `BEGIN IMMEDIATE` transaction. */
  async update(scope: string, key: string, ops: UpdateOp[], options: StateWriteOptions = {}): Promise<StateUpdateResult> {
    this.assertOpen()
    assertUpdateOps(ops)
    const { old_value, text, errors } = this.transaction(() => {
      const current = this.read(scope, key)
      const { value, errors } = applyUpdateOps(current, ops)
      const next = encode(value)
      checkValueSize(next, options.maxValueBytes, options.maxValueSetting)
      this.statements.upsert.run(scope, key, next)
      return { old_value: current, text: next, errors }
    })
    // Decoded rather than taken from the operations, so the result is exactly what a later read returns.
    const new_value = decode(text)
    this.changes.emit({ scope, key, old_value, new_value, origin: options.origin })
    return { old_value, new_value, errors }
  }

  async list(scope: string): Promise<StateValue[]> {
    this.assertOpen()
    return (this.statements.list.all(scope) as Array<{ value: string }>).map((row) => decode(row.value))
  }

  async listKeys(scope: string, page: StatePageRequest): Promise<StatePage<string>> {
    this.assertOpen()
    const params = pageParams(scope, page)
    const rows = this.statements.keys.all(params) as Array<{ key: string }>
    return { items: rows.map((row) => row.key), total: this.count(scope, params.prefix) }
  }

  async listEntries(scope: string, page: StatePageRequest): Promise<StatePage<StateEntry>> {
    this.assertOpen()
    const params = pageParams(scope, page)
    const rows = this.statements.entries.all(params) as Array<{ key: string; value: string }>
    return {
      items: rows.map((row) => ({ key: row.key, value: decode(row.value) })),
      total: this.count(scope, params.prefix),
    }
  }

  async listGroups(): Promise<string[]> {
    this.assertOpen()
    return (this.statements.groups.all() as Array<{ scope: string }>).map((row) => row.scope)
  }

  subscribe(listener: StateChangeListener): () => void {
    return this.changes.subscribe(listener)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.changes.clear()
    this.db.close()
  }

  private read(scope: string, key: string): StateValue | undefined {
    const row = this.statements.get.get(scope, key) as { value: string } | undefined
    return row === undefined ? undefined : decode(row.value)
  }

  private count(scope: string, prefix: string): number {
    const row = this.statements.count.get({ scope, prefix }) as { total: number }
    return Number(row.total)
  }

  private transaction<T>(body: () => T): T {
    this.statements.begin.run()
    let result: T
    try {
      result = body()
    } catch (error) {
      this.statements.rollback.run()
      throw error
    }
    this.statements.commit.run()
    return result
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`state database ${this.path} is closed`)
  }
}

function pageParams(scope: string, page: StatePageRequest) {
  return { scope, prefix: page.prefix ?? '', limit: page.limit, offset: page.offset }
}
