/**
 * The built-in database worker `database` (builtins.md §10): SQL access to the databases named in
 * its settings, through `database::query`, `database::execute`, `database::transaction` and
 * `database::list_databases`. It registers no trigger types.
 *
 * Each database has a driver (runtime/adapters/database/) that owns its connections. A settings
 * change opens the drivers of new and changed databases first; if one cannot be opened the
 * previous settings stay (§2.7, §2.9). Otherwise calls move to the new drivers at once, and the
 * replaced ones close after their running calls finish (§10.1): each database's drivers are the
 * kit's {@link AdapterSlots}, and a call holds the driver it started on. Removed databases answer
 * `UNKNOWN_DB`.
 */
import { Errors } from 'svc-protocol/errors'
import {
  openDatabaseDriver,
  redactUrl,
  type DatabaseDriver,
  type ExecuteResult,
  type QueryResult,
  type TransactionResult,
} from '../../adapters/database/index.ts'
import type { BuiltinContext, BuiltinWorker, LocalFunctionOptions } from '../../engine/types.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { DATABASE_RESULTS } from './formats.ts'
import { dbOf, isolationOf, payloadOf, statementOf, statementsOf, timeoutOf, type Payload } from './payload.ts'
import { parseDatabaseSettings, type DatabaseConfig, type DatabaseSettings } from './settings.ts'

export const DATABASE_WORKER_NAME = 'database'

/** One database as opened from its settings: a driver goes with the settings it was opened with. */
interface OpenDatabase {
  readonly name: string
  readonly config: DatabaseConfig
  readonly driver: DatabaseDriver
  close(): Promise<void>
}

export interface DatabaseWorkerOptions {
  /** Directory relative `sqlite:` paths resolve against (§10.1: the project root). Default: the data directory. */
  root?: string
}

/**
 * `database`. Settings (§10.1) take effect only through {@link DatabaseWorker.applySettings}.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new DatabaseWorker({ root: projectRoot })] })
 * await engine.start()
 * await engine.inject({ function_id: 'database::query', data: { sql: 'SELECT ? AS n', params: [1] } })
 */
export class DatabaseWorker implements BuiltinWorker {
  readonly name = DATABASE_WORKER_NAME
  private readonly options: DatabaseWorkerOptions
  private context: BuiltinContext | null = null
  /** Configured databases in settings order, each with its driver in use and replaced ones still running calls. */
  private databases = new Map<string, AdapterSlots<OpenDatabase>>()
  private applier: SettingsApplier<DatabaseSettings> | null = null

  constructor(options: DatabaseWorkerOptions = {}) {
    this.options = options
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.applier = createSettingsApplier<DatabaseSettings>({
      worker: DATABASE_WORKER_NAME,
      log: context.log,
      parse: parseDatabaseSettings,
      apply: (next) => this.apply(next),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    // Invalid seed settings leave the worker running without databases (its functions answer UNKNOWN_DB).
    await this.applySettings(settings).catch(() => {})
    this.registerFunctions()
  }

  /**
   * Validates and applies settings (§10.1), serialised with other applies.
   * @throws SvcError `INVALID_ARGUMENTS` for invalid settings, `CONFIG_ERROR` for a URL that cannot
   *   be used or a database that cannot be opened; the previous settings stay in effect.
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${DATABASE_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    const databases = [...this.databases.values()]
    this.databases = new Map()
    await Promise.all(databases.map((slots) => slots.close()))
  }

  private async apply(next: DatabaseSettings): Promise<void> {
    const context = this.context!
    const root = this.options.root ?? context.dataDir
    const opened: Array<{ identity: string; database: OpenDatabase }> = []
    try {
      for (const [name, config] of Object.entries(next.databases)) {
        const identity = JSON.stringify(config)
        if (this.databases.get(name)?.identity === identity) continue
        let driver: DatabaseDriver
        try {
          const limits = { maxRows: config.max_rows, maxBytes: config.max_result_bytes }
          driver = await openDatabaseDriver({ name, url: config.url, pool: config.pool, tls: config.tls, limits, allowAttach: config.allow_attach }, root)
        } catch (error) {
          throw withSettingsKey(error, `databases.${name}`)
        }
        opened.push({ identity, database: { name, config, driver, close: () => driver.close() } })
      }
    } catch (error) {
      await Promise.all(opened.map(({ database }) => this.closeUnused(database)))
      throw error
    }
    const previous = this.databases
    this.databases = new Map()
    for (const name of Object.keys(next.databases)) {
      this.databases.set(name, previous.get(name) ?? new AdapterSlots<OpenDatabase>(`${DATABASE_WORKER_NAME} ${name}`, context.log))
    }
    for (const { identity, database } of opened) this.databases.get(database.name)!.install(database, identity)
    // A removed database closes once its running calls are done (the driver waits for them).
    for (const [name, slots] of previous) if (!this.databases.has(name)) void slots.close()
    for (const { database } of opened) context.log.info(`${DATABASE_WORKER_NAME}: database ${database.name} uses ${redactUrl(database.config.url)}`)
  }

  /** Closes a driver that was opened for settings that were not applied. */
  private async closeUnused(database: OpenDatabase): Promise<void> {
    try {
      await database.close()
    } catch (error) {
      this.context?.log.warn(`${DATABASE_WORKER_NAME}: closing database ${database.name} failed`, { error: String(error) })
    }
  }

  /**
   * The database a call names (§10.2): `db`, else the only one, else `primary`.
   * @throws SvcError `UNKNOWN_DB` (lists the configured names) or `MISSING_DB`.
   */
  private slotsOf(p: Payload): AdapterSlots<OpenDatabase> {
    const db = dbOf(p)
    const names = [...this.databases.keys()]
    if (db !== undefined) {
      const slots = this.databases.get(db)
      if (!slots) throw Errors.unknownDb(db, names)
      return slots
    }
    const only = names.length === 1 ? this.databases.get(names[0]!) : this.databases.get('primary')
    if (!only) throw Errors.missingDb(names)
    return only
  }

  /**
   * Runs one call on the database a payload names, holding its driver until the call is done, so a
   * settings change closes a replaced driver only after it (§10.1). The driver's errors pass as
   * they are (§10.4).
   */
  private async onDatabase<T>(p: Payload, call: (database: OpenDatabase) => Promise<T>): Promise<T> {
    const slots = this.slotsOf(p)
    const held = slots.hold()
    if (!held) throw Errors.unknownDb(dbOf(p) ?? 'primary', [...this.databases.keys()])
    try {
      return await call(held.adapter)
    } finally {
      slots.release(held)
    }
  }

  private registerFunctions(): void {
    const worker = this.context!.worker
    const register = (id: string, handler: (p: Payload) => unknown, options: LocalFunctionOptions) =>
      worker.registerFunction(id, (data) => handler(payloadOf(data)), { ...options, response_format: DATABASE_RESULTS[id] })
    const call = {
      db: { type: 'string', description: 'database name; default: the only one, or primary' },
      sql: { type: 'string', description: 'one statement; placeholders ? (SQLite, MySQL) or $1 (PostgreSQL)' },
      params: { type: 'array', description: 'positional parameters' },
      timeout_ms: { type: 'integer', minimum: 1, description: 'default statement_timeout_ms' },
    }
    register('database::query', (p) => this.query(p), {
      description: 'Run a statement and return its rows: {rows, row_count, columns}',
      request_format: { type: 'object', required: ['sql'], properties: call },
    })
    register('database::execute', (p) => this.execute(p), {
      description: 'Run a statement and return what it changed: {affected_rows, last_insert_id, returned_rows}',
      request_format: { type: 'object', required: ['sql'], properties: call },
    })
    register('database::transaction', (p) => this.transaction(p), {
      description: 'Run statements in one transaction: {committed, results} or {committed: false, failed_index, error}',
      request_format: {
        type: 'object',
        required: ['statements'],
        properties: {
          db: call.db,
          statements: { type: 'array', items: { type: 'object', required: ['sql'], properties: { sql: call.sql, params: call.params } } },
          isolation: { type: 'string', enum: ['read_committed', 'repeatable_read', 'serializable'] },
          timeout_ms: call.timeout_ms,
        },
      },
    })
    register('database::list_databases', () => this.listDatabases(), {
      description: 'The configured databases, credentials removed: {databases: [{name, driver, url, pool, tls_mode}]}',
      request_format: { type: 'object', properties: {} },
    })
  }

  private query(p: Payload): Promise<QueryResult> {
    return this.onDatabase(p, ({ config, driver }) => {
      const statement = statementOf(p, config.driver, 'database::query')
      return driver.query(statement, { timeoutMs: timeoutOf(p) ?? config.statement_timeout_ms })
    })
  }

  private execute(p: Payload): Promise<ExecuteResult> {
    return this.onDatabase(p, ({ config, driver }) => {
      const statement = statementOf(p, config.driver, 'database::execute')
      return driver.execute(statement, { timeoutMs: timeoutOf(p) ?? config.statement_timeout_ms })
    })
  }

  private transaction(p: Payload): Promise<TransactionResult> {
    return this.onDatabase(p, ({ config, driver }) => {
      const statements = statementsOf(p, config.driver)
      const isolation = isolationOf(p)
      const options = { timeoutMs: timeoutOf(p) ?? config.statement_timeout_ms, ...(isolation ? { isolation } : {}) }
      return driver.transaction(statements, options)
    })
  }

  private listDatabases(): { databases: Array<{ name: string; driver: string; url: string; pool: unknown; tls_mode: string }> } {
    return {
      databases: [...this.databases.values()].map((slots) => {
        const { name, config } = slots.current!.adapter
        return { name, driver: config.driver, url: redactUrl(config.url), pool: config.pool, tls_mode: config.tls.mode }
      }),
    }
  }
}
