/**
 * Function payloads of the database worker (`database`, builtins.md §10): SQL against configured
 * SQLite, PostgreSQL and MySQL databases. Values follow §10.3 (integers beyond ±(2^53 − 1),
 * decimals, dates and bytes arrive as strings; json/jsonb parsed). Types only.
 *
 * @example
 * import type { DatabaseQueryInput, QueryResult } from 'svc-protocol'
 * const { rows } = await client.trigger<DatabaseQueryInput, QueryResult>({
 *   function_id: 'database::query', payload: { sql: 'SELECT id, email FROM users WHERE id = ?', params: [1] },
 * })
 */
import type { JsonValue } from '../messages.ts'

/** `params` of a statement: native placeholders (`?` SQLite/MySQL, `$1…` PostgreSQL); a string holding a JSON array is accepted. */
export type DatabaseParams = JsonValue[] | string

/** `database::query` and `database::execute` input (§10.2). */
export interface DatabaseStatementInput {
  /** The database's name; omitted: the only one configured, or `primary` (`MISSING_DB` otherwise). */
  db?: string
  /** One statement; transaction control (`BEGIN`, `COMMIT`…) is refused with `INVALID_ARGUMENTS`. */
  sql: string
  params?: DatabaseParams
  /** Bound of the call, ms; beyond it `QUERY_TIMEOUT`. Default the database's `statement_timeout_ms`. */
  timeout_ms?: number
}

/** `database::query` input. */
export type DatabaseQueryInput = DatabaseStatementInput
/** `database::execute` input. */
export type DatabaseExecuteInput = DatabaseStatementInput

/** Transaction isolation (§10.2); SQLite ignores it. */
export type Isolation = 'read_committed' | 'repeatable_read' | 'serializable'

/** `database::transaction` input: the statements run in order in one transaction. */
export interface DatabaseTransactionInput {
  db?: string
  statements: Array<{ sql: string; params?: DatabaseParams }>
  isolation?: Isolation
  timeout_ms?: number
}

/** `columns[]` of a query result: the driver-reported type name, or null when unknown (§10.2). */
export interface Column {
  name: string
  type: string | null
}

/** A result row: column name → JSON-ready value (§10.3). */
export type Row = Record<string, unknown>

/** Result of `database::query` (§10.2). */
export interface QueryResult {
  rows: Row[]
  row_count: number
  columns: Column[]
}

/** Result of `database::execute` (§10.2). */
export interface ExecuteResult {
  affected_rows: number
  /** The inserted row id (SQLite, MySQL), the first column of the first RETURNING row (PostgreSQL), else null. */
  last_insert_id: string | null
  /** Rows of a RETURNING clause, else []. */
  returned_rows: Row[]
}

/** One entry of a committed transaction's `results` (§10.2). */
export interface TransactionStatementResult {
  affected_rows: number
  last_insert_id: string | null
  /** Rows for statements that return rows, else []. */
  rows: Row[]
}

/** The error object of a rolled-back transaction (§10.2, §10.4). */
export interface TransactionError {
  code: string
  driver_code?: string
  message: string
}

/** Result of `database::transaction` (§10.2): a statement failure is a successful call. */
export type TransactionResult =
  | { committed: true; results: TransactionStatementResult[] }
  | { committed: false; failed_index: number; error: TransactionError }

/** An entry of `database::list_databases` (credentials removed from `url`). */
export interface DatabaseInfo {
  name: string
  driver: string
  url: string
  pool: unknown
  tls_mode: string
}

/** `database::list_databases` result. */
export interface DatabaseListResult {
  databases: DatabaseInfo[]
}
