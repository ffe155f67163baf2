/**
 * The functions of the database worker (builtins.md §10.2): `database::query`,
 * `database::execute`, `database::transaction` and `database::list_databases`. They reach the
 * databases only through {@link DatabaseHost}; the worker (./worker.ts) owns the drivers.
 */
import type { DatabaseListResult } from 'svc-protocol'
import { redactUrl, type DatabaseDriver, type ExecuteResult, type QueryResult, type TransactionResult } from '../../adapters/database/index.ts'
import type { LocalFunctionOptions, LocalWorker } from '../../engine/types.ts'
import { DATABASE_RESULTS } from './formats.ts'
import { isolationOf, payloadOf, statementOf, statementsOf, timeoutOf, type Payload } from './payload.ts'
import type { DatabaseConfig } from './settings.ts'

/** One database as opened from its settings: a driver goes with the settings it was opened with. */
export interface OpenDatabase {
  readonly name: string
  readonly config: DatabaseConfig
  readonly driver: DatabaseDriver
  close(): Promise<void>
}

/** What the functions need of the worker. */
export interface DatabaseHost {
  /**
   * Runs `call` on the database a payload names (§10.2: `db`, else the only one, else `primary`),
   * holding its driver until the call is done.
   * @throws SvcError `UNKNOWN_DB` (lists the configured names) or `MISSING_DB`.
   */
  onDatabase<T>(p: Payload, call: (database: OpenDatabase) => Promise<T>): Promise<T>
  /** The databases in use, in settings order. */
  databases(): OpenDatabase[]
}

/**
 * Registers the database functions on `worker`.
 * @example registerDatabaseFunctions(context.worker, { onDatabase, databases })
 */
export function registerDatabaseFunctions(worker: LocalWorker, host: DatabaseHost): void {
  const register = (id: string, handler: (p: Payload) => unknown, options: LocalFunctionOptions) =>
    worker.registerFunction(id, (data) => handler(payloadOf(data)), { ...options, response_format: DATABASE_RESULTS[id] })
  const call = {
    db: { type: 'string', description: 'database name; default: the only one, or primary' },
    sql: { type: 'string', description: 'one statement; placeholders ? (SQLite, MySQL) or $1 (PostgreSQL)' },
    params: { type: 'array', description: 'positional parameters' },
    timeout_ms: { type: 'integer', minimum: 1, description: 'default statement_timeout_ms' },
  }
  register('database::query', (p) => query(host, p), {
    description: 'Run a statement and return its rows: {rows, row_count, columns}',
    request_format: { type: 'object', required: ['sql'], properties: call },
  })
  register('database::execute', (p) => execute(host, p), {
    description: 'Run a statement and return what it changed: {affected_rows, last_insert_id, returned_rows}',
    request_format: { type: 'object', required: ['sql'], properties: call },
  })
  register('database::transaction', (p) => transaction(host, p), {
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
  register('database::list_databases', () => listDatabases(host), {
    description: 'The configured databases, credentials removed: {databases: [{name, driver, url, pool, tls_mode}]}',
    request_format: { type: 'object', properties: {} },
  })
}

function query(host: DatabaseHost, p: Payload): Promise<QueryResult> {
  return host.onDatabase(p, ({ config, driver }) => {
    const statement = statementOf(p, config.driver, 'database::query')
    return driver.query(statement, { timeoutMs: timeoutOf(p) ?? config.statement_timeout_ms })
  })
}

function execute(host: DatabaseHost, p: Payload): Promise<ExecuteResult> {
  return host.onDatabase(p, ({ config, driver }) => {
    const statement = statementOf(p, config.driver, 'database::execute')
    return driver.execute(statement, { timeoutMs: timeoutOf(p) ?? config.statement_timeout_ms })
  })
}

function transaction(host: DatabaseHost, p: Payload): Promise<TransactionResult> {
  return host.onDatabase(p, ({ config, driver }) => {
    const statements = statementsOf(p, config.driver)
    const isolation = isolationOf(p)
    const options = { timeoutMs: timeoutOf(p) ?? config.statement_timeout_ms, ...(isolation ? { isolation } : {}) }
    return driver.transaction(statements, options)
  })
}

function listDatabases(host: DatabaseHost): DatabaseListResult {
  return {
    databases: host.databases().map(({ name, config }) => ({
      name,
      driver: config.driver,
      url: redactUrl(config.url),
      pool: config.pool,
      tls_mode: config.tls.mode,
    })),
  }
}
