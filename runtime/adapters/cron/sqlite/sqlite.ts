/**
 * The `builtin` cron slot store (builtins.md §13.2): the last run slot of each schedule in SQLite
 * (`<data_dir>/cron.db` unless `path` is given), WAL journal, `synchronous=NORMAL` (durable across
 * process crashes). A claim is one conditional upsert, committed before it answers.
 */
import { resolve } from 'node:path'
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { openSqlite } from '../../sqlite.ts'
import type { CronSlotStore, CronStoreContext } from '../types.ts'

export const DEFAULT_CRON_DB = 'cron.db'

/** `adapter.config` of `builtin`. */
export interface SqliteCronConfig {
  /** Database file, relative to the data directory. */
  path?: string
}

/** The absolute database file for `config`. */
export function sqliteCronPath(config: SqliteCronConfig, context: CronStoreContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_CRON_DB)
}

/**
 * @example
 * const store = SqliteCronSlotStore.open({}, { dataDir: '/srv/app/.svc/data' })
 * await store.claim('9f2c…', Date.parse('2025-01-01T02:00:00Z')) // true once
 */
export class SqliteCronSlotStore implements CronSlotStore {
  readonly path: string
  private readonly db: DatabaseSync
  private readonly claimStatement: StatementSync
  private readonly lastStatement: StatementSync
  private closed = false

  /**
   * Opens (creating if needed) the database file and its directory.
   * @throws the SQLite error when the file cannot be opened or is not a database.
   */
  static open(config: SqliteCronConfig, context: CronStoreContext): SqliteCronSlotStore {
    return new SqliteCronSlotStore(sqliteCronPath(config, context))
  }

  constructor(path: string) {
    this.path = path
    const { db, statements } = openSqlite(
      path,
      'NORMAL',
      'CREATE TABLE IF NOT EXISTS cron_slots (schedule TEXT PRIMARY KEY, last_slot INTEGER NOT NULL) WITHOUT ROWID;',
      (db) => ({
        claim: db.prepare(
          'INSERT INTO cron_slots (schedule, last_slot) VALUES (?, ?) ' +
            'ON CONFLICT (schedule) DO UPDATE SET last_slot = excluded.last_slot WHERE last_slot < excluded.last_slot',
        ),
        last: db.prepare('SELECT last_slot FROM cron_slots WHERE schedule = ?'),
      }),
    )
    this.db = db
    this.claimStatement = statements.claim
    this.lastStatement = statements.last
  }

  async claim(schedule: string, slotMs: number): Promise<boolean> {
    this.assertOpen()
    return Number(this.claimStatement.run(schedule, slotMs).changes) === 1
  }

  /** One engine per store: the worker's own serialisation is the lock. */
  async lockRun(): Promise<() => Promise<void>> {
    return RELEASED
  }

  async lastSlot(schedule: string): Promise<number | undefined> {
    this.assertOpen()
    const row = this.lastStatement.get(schedule) as { last_slot: number } | undefined
    return row === undefined ? undefined : Number(row.last_slot)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.db.close()
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`cron store ${this.path} is closed`)
  }
}

const RELEASED = async (): Promise<void> => {}
