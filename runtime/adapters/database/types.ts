/**
 * The SQL driver seam of the database worker (builtins.md §10).
 *
 * A driver owns its connections (a pool for PostgreSQL and MySQL, a worker thread for SQLite);
 * the worker never touches a database client. What belongs in the contract:
 * - statements run with positional, native placeholders (`?` or `$n`) and parameters that are
 *   already mapped by {@link toParameter}; SQL text is never built from parameters;
 * - every value in a result is JSON-ready per §10.3 (see ./values.ts);
 * - failures are `SvcError`s with the §10.4 codes: `DRIVER_ERROR` (`<driver code>: <message>`,
 *   with {@link DriverFailure} details), `POOL_TIMEOUT`, `QUERY_TIMEOUT`, `CONNECTION_FAILED`;
 * - `sql` holding more than one statement is refused with `INVALID_ARGUMENTS` (§10.2: one
 *   statement), never run in part;
 * - a result is bounded by the database's {@link ResultLimits}: rows are counted as they are read,
 *   and reading stops with `QUERY_RESULT_TOO_LARGE` at the first row beyond a limit (a transaction
 *   that hits it is rolled back);
 * - `close()` lets calls already running finish, then releases everything.
 * What does not: choosing a database by name, payload validation, the transaction-control check —
 * the worker does those.
 */

import type { ExecuteResult, Isolation, QueryResult, TransactionResult } from 'svc-protocol'
import type { ResultLimits } from './limits.ts'

/** A positional parameter after the §10.3 mapping. */
export type Parameter = null | boolean | number | bigint | string

/** One statement in the driver's dialect. */
export interface Statement {
  sql: string
  params: Parameter[]
}

// The results callers receive (§10.2) are svc-protocol's (payloads/database.ts): one definition
// for the drivers, the worker and every caller.
export type { Column, ExecuteResult, Isolation, QueryResult, Row, TransactionError, TransactionResult, TransactionStatementResult } from 'svc-protocol'

/** Per-call options. */
export interface CallOptions {
  /** The call's timeout in ms (`timeout_ms`, default `statement_timeout_ms`); beyond it `QUERY_TIMEOUT`. */
  timeoutMs: number
}

export interface TransactionOptions extends CallOptions {
  /** Ignored by SQLite. Default: the server's. */
  isolation?: Isolation
}

/** A database driver (one configured database). */
export interface DatabaseDriver {
  /** Runs a statement and returns its rows. */
  query(statement: Statement, options: CallOptions): Promise<QueryResult>
  /** Runs a statement and returns what it changed. */
  execute(statement: Statement, options: CallOptions): Promise<ExecuteResult>
  /**
   * Runs the statements in order in one transaction on one connection. The first statement that
   * the database rejects rolls the transaction back and is reported in the result, not thrown;
   * timeouts and connection failures are thrown.
   */
  transaction(statements: Statement[], options: TransactionOptions): Promise<TransactionResult>
  /** Waits for calls already running, then closes every connection. Idempotent. */
  close(): Promise<void>
}

/** `databases.<name>.pool` with every default applied (§10.1). */
export interface PoolSettings {
  /** Connections (PostgreSQL, MySQL), 1–1000. */
  max: number
  /** Wait for a free connection in ms; SQLite: the busy (lock) timeout. */
  acquire_timeout_ms: number
  /** Idle connections are closed after this many ms; 0 keeps them. */
  idle_timeout_ms: number
}

export type TlsMode = 'disable' | 'require' | 'verify-full'

/** What a driver is opened with. */
export interface DriverOptions {
  /** The database's name in the settings, for messages. */
  name: string
  url: string
  pool: PoolSettings
  tls: { mode: TlsMode; ca_file?: string }
  /** Result limits of one call (./limits.ts); default {@link RESULT_LIMIT_DEFAULTS}. */
  limits?: ResultLimits
  /**
   * SQLite only: allow `ATTACH`, `DETACH` and `VACUUM INTO`, which open or create database files
   * anywhere the engine may write. Default false: they fail with `DRIVER_ERROR` `SQLITE_AUTH`.
   */
  allowAttach?: boolean
}

/** Details of a `DRIVER_ERROR`, kept on the error for the transaction result (§10.2). */
export interface DriverFailure {
  driverCode: string
  driverMessage: string
}
