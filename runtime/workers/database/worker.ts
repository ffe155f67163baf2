/**
 * The built-in database worker `database` (builtins.md §10): SQL access to the databases named in
 * its settings, through `database::query`, `database::execute`, `database::transaction` and
 * `database::list_databases`. It registers no trigger types. The standard shape of a built-in:
 * ./descriptor.ts, ./settings.ts, ./functions.ts (with ./payload.ts and ./formats.ts), and this
 * file, the lifecycle: start, settings, drivers, stop.
 *
 * Each database has a driver (runtime/adapters/database/) that owns its connections. A settings
 * change opens the drivers of new and changed databases first; if one cannot be opened the
 * previous settings stay (§2.7, §2.9). Otherwise calls move to the new drivers at once, and the
 * replaced ones close after their running calls finish (§10.1): each database's drivers are the
 * kit's {@link AdapterSlots}, and a call holds the driver it started on. Removed databases answer
 * `UNKNOWN_DB`.
 */
import { Errors } from 'svc-protocol/errors'
import { openDatabaseDriver, redactUrl, type DatabaseDriver } from '../../adapters/database/index.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { registerDatabaseFunctions, type OpenDatabase } from './functions.ts'
import { dbOf, type Payload } from './payload.ts'
import { parseDatabaseSettings, type DatabaseSettings } from './settings.ts'

export const DATABASE_WORKER_NAME = 'database'


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
    registerDatabaseFunctions(context.worker, { onDatabase: (p, call) => this.onDatabase(p, call), databases: () => this.openDatabases() })
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

  /** The databases in use, in settings order. */
  private openDatabases(): OpenDatabase[] {
    return [...this.databases.values()].map((slots) => slots.current!.adapter)
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
}
