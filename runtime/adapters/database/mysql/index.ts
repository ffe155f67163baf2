/**
 * MySQL / MariaDB driver of the database worker (builtins.md §10) over a `mysql2` pool.
 *
 * - Statements run as server-side prepared statements (`?` placeholders bound by the server,
 *   never interpolated); a statement the server cannot prepare runs as plain text when it has no
 *   parameters. Several statements in one `sql` are refused by the server (`multipleStatements`
 *   stays off).
 * - Rows are streamed and counted against the result limits as they arrive; a result too large
 *   stops at the first row beyond them and its connection is closed (the server stops sending).
 * - Column values per §10.3: BIGINT → number or string, DECIMAL → string, DATETIME and TIMESTAMP
 *   as ISO 8601 without an offset, DATE and TIME as their text, binary → base64, JSON → parsed.
 * - A timed-out call is cancelled with `KILL QUERY` from a separate connection.
 * - `DRIVER_ERROR` carries mysql2's symbolic code (`ER_DUP_ENTRY`) as the driver code.
 */
import mysql from 'mysql2'
import type { FieldPacket, PoolConnection, ResultSetHeader } from 'mysql2/promise'
import mysqlPromise from 'mysql2/promise'
import { Errors, SvcError } from 'svc-protocol/errors'
import { connectionCause, driverError, isNetworkError, messageOf } from '../errors.ts'
import { RESULT_LIMIT_DEFAULTS, type ResultBudget } from '../limits.ts'
import { isolationSql, PooledDriver, type ConnectionPool, type PooledConnection, type StatementOutcome } from '../pooled.ts'
import { tlsOptions } from '../tls.ts'
import type { DatabaseDriver, DriverOptions, Isolation, Row, Statement } from '../types.ts'
import { firstKeyword, isInsert, isoDateTime, rowOf } from '../values.ts'

/** What a streamed statement produced: rows and their columns, or the header of a statement without rows. */
type Streamed = { rows: Row[]; fields: FieldPacket[] } | { header: ResultSetHeader }

const AUTH_CODES = new Set(['ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR'])
const TYPES = mysql.Types as unknown as Record<string, number>
const TYPE_NAMES = new Map<number, string>(Object.entries(TYPES).map(([name, code]) => [code, name]))
const DATETIME_TYPES = new Set(['DATETIME', 'TIMESTAMP', 'DATETIME2', 'TIMESTAMP2'].map((name) => TYPES[name]).filter((t) => t !== undefined))
const ER_UNSUPPORTED_PS = 1295
const DML = new Set(['INSERT', 'UPDATE', 'DELETE', 'REPLACE'])

/**
 * Opens a MySQL pool (connections are made on first use).
 * @throws SvcError `CONFIG_ERROR` when the URL cannot be read or the TLS CA file cannot be read.
 */
export function openMysqlDriver(options: DriverOptions): DatabaseDriver {
  const ssl = tlsOptions(options)
  const base: mysqlPromise.PoolOptions = {
    uri: options.url,
    supportBigNumbers: true,
    bigNumberStrings: false,
    decimalNumbers: false,
    dateStrings: true,
    connectTimeout: options.pool.acquire_timeout_ms + 1000,
    maxPreparedStatements: 256,
    // Rows as arrays through mysql2's static parsers: a column named by the statement (`AS
    // "__proto__"`) is never an object key inside mysql2 (its generated parsers refuse such names
    // with an error that leaves the call hanging); rowOf names the values.
    disableEval: true,
  }
  if (ssl) base.ssl = ssl as mysqlPromise.SslOptions
  let pool: mysqlPromise.Pool
  try {
    pool = mysqlPromise.createPool({
      ...base,
      connectionLimit: options.pool.max,
      maxIdle: options.pool.max,
      // mysql2 reads 0 as "close at once"; §10.1's 0 keeps idle connections (as pg does).
      idleTimeout: options.pool.idle_timeout_ms === 0 ? 2_147_483_647 : options.pool.idle_timeout_ms,
      waitForConnections: true,
      queueLimit: 0,
    })
  } catch (error) {
    throw Errors.configError(`databases.${options.name}.url is not a valid MySQL URL: ${messageOf(error)}`)
  }
  // Errors of idle connections are the pool's business; without a listener they would throw.
  pool.pool.on('error' as never, () => {})

  const connectionPool: ConnectionPool = {
    async connect(): Promise<PooledConnection> {
      let connection: PoolConnection
      try {
        connection = await pool.getConnection()
      } catch (error) {
        throw Errors.connectionFailed(options.name, connectionCause(error, AUTH_CODES), messageOf(error), error)
      }
      const threadId = connection.threadId
      return {
        run: (statement, budget) => run(connection, statement, budget),
        async cancel() {
          const killer = await mysqlPromise.createConnection({ ...base, connectTimeout: 5000 })
          killer.on('error', () => {})
          try {
            await killer.query(`KILL QUERY ${Number(threadId)}`)
          } finally {
            await killer.end().catch(() => {})
          }
        },
        release(broken) {
          if (broken) connection.destroy()
          else connection.release()
        },
      }
    },
    begin: (isolation: Isolation | undefined) => [...(isolation ? [`SET TRANSACTION ISOLATION LEVEL ${isolationSql(isolation)}`] : []), 'START TRANSACTION'],
    end: () => pool.end(),
  }

  async function run(connection: PoolConnection, statement: Statement, budget: ResultBudget): Promise<StatementOutcome> {
    let result: Streamed
    try {
      try {
        result = await stream(connection, statement, true, budget)
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== ER_UNSUPPORTED_PS || statement.params.length > 0) throw error
        result = await stream(connection, statement, false, budget)
      }
    } catch (error) {
      if (error instanceof SvcError) throw error
      throw failure(error)
    }
    if ('header' in result) {
      const header = result.header
      return {
        rows: [],
        columns: [],
        returnsRows: false,
        affected_rows: header.affectedRows ?? 0,
        last_insert_id: isInsert(statement.sql) && header.insertId ? String(header.insertId) : null,
      }
    }
    const { rows, fields: list } = result
    // A RETURNING clause (MariaDB): the statement changed the rows it returned.
    const changes = DML.has(firstKeyword(statement.sql))
    let lastInsertId: string | null = null
    if (isInsert(statement.sql)) {
      const [found] = await connection.query('SELECT LAST_INSERT_ID() AS id').catch(() => [[]])
      const id = (found as Array<{ id?: unknown }>)[0]?.id
      if (id !== undefined && id !== null && String(id) !== '0') lastInsertId = String(id)
    }
    return {
      rows,
      columns: list.map((f) => ({ name: f.name, type: (f.type !== undefined ? TYPE_NAMES.get(f.type) : undefined) ?? null })),
      returnsRows: true,
      affected_rows: changes ? rows.length : 0,
      last_insert_id: lastInsertId,
    }
  }

  /**
   * Runs a statement (prepared, or as text) and reads its rows as they arrive, each counted in
   * `budget`. Over a limit it rejects at once and ignores the rest; the caller closes the
   * connection, which stops the server.
   */
  function stream(connection: PoolConnection, statement: Statement, prepared: boolean, budget: ResultBudget): Promise<Streamed> {
    // The promise wrapper's underlying connection emits rows one by one when given no callback.
    const core = (connection as unknown as { connection: mysql.Connection }).connection
    return new Promise((resolve, reject) => {
      const options = { sql: statement.sql, rowsAsArray: true }
      const command = prepared ? core.execute(options, statement.params) : core.query(options)
      const rows: Row[] = []
      let fields: FieldPacket[] = []
      let names: string[] = []
      let dated: number[] = []
      let header: ResultSetHeader | undefined
      let settled = false
      command.on('fields', (list: FieldPacket[]) => {
        fields = list ?? []
        names = fields.map((f) => f.name)
        dated = fields.flatMap((f, i) => (f.type !== undefined && DATETIME_TYPES.has(f.type) ? [i] : []))
      })
      command.on('result', (item: unknown) => {
        if (settled) return
        if (!Array.isArray(item)) {
          header = item as ResultSetHeader
          return
        }
        for (const i of dated) if (typeof item[i] === 'string') item[i] = isoDateTime(item[i] as string)
        const row = rowOf(names, item)
        try {
          budget.add(row)
        } catch (error) {
          settled = true
          return reject(error)
        }
        rows.push(row)
      })
      command.on('error', (error: unknown) => {
        if (settled) return
        settled = true
        reject(error)
      })
      command.on('end', () => {
        if (settled) return
        settled = true
        resolve(header !== undefined && fields.length === 0 ? { header } : { rows, fields })
      })
    })
  }

  function failure(error: unknown): SvcError {
    const e = error as { code?: unknown; errno?: unknown; sqlMessage?: unknown; fatal?: unknown }
    if (isNetworkError(error) || (e.fatal === true && typeof e.errno !== 'number')) {
      return Errors.connectionFailed(options.name, 'network', messageOf(error), error)
    }
    const code = typeof e.code === 'string' ? e.code : typeof e.errno === 'number' ? String(e.errno) : 'UNKNOWN'
    return driverError(code, typeof e.sqlMessage === 'string' ? e.sqlMessage : messageOf(error))
  }

  return new PooledDriver(options.name, connectionPool, options.pool.acquire_timeout_ms, options.limits ?? RESULT_LIMIT_DEFAULTS)
}
