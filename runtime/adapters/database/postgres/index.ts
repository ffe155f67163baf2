/**
 * PostgreSQL driver of the database worker (builtins.md §10) over a `pg` pool.
 *
 * - Statements always use the extended protocol through a cursor (`pg-cursor`): `$1, $2, …`
 *   placeholders bound by the server, a statement with several commands refused by PostgreSQL,
 *   and rows read a batch at a time, counted against the result limits: a statement whose result
 *   is too large stops at the first row beyond them (the portal is closed).
 * - Column values are mapped per §10.3 by type parsers: int8 → number or string, numeric → string,
 *   date and time texts as they are, timestamps as RFC 3339, bytea → base64, json → parsed.
 * - A timed-out call is cancelled with `pg_cancel_backend` from a separate connection.
 */
import pg from 'pg'
import Cursor, { type CursorResult } from 'pg-cursor'
import { Errors, SvcError } from 'svc-protocol/errors'
import { connectionCause, driverError, isNetworkError, messageOf } from '../errors.ts'
import { RESULT_LIMIT_DEFAULTS, ResultBudget } from '../limits.ts'
import { isolationSql, PooledDriver, type ConnectionPool, type PooledConnection, type StatementOutcome } from '../pooled.ts'
import { tlsOptions } from '../tls.ts'
import type { Column, DatabaseDriver, DriverOptions, Isolation, Row, Statement } from '../types.ts'
import { fromColumn, isoDateTime, rowOf } from '../values.ts'

/** Rows fetched per round trip: one batch is parsed in one turn of the event loop. */
const BATCH_ROWS = 500

const AUTH_CODES = new Set(['28P01', '28000'])

/** Type names of the built-in types (pg_type.typname); others are looked up once per pool. */
const TYPE_NAMES: Record<number, string> = {
  16: 'bool', 17: 'bytea', 18: 'char', 19: 'name', 20: 'int8', 21: 'int2', 23: 'int4', 25: 'text', 26: 'oid',
  114: 'json', 700: 'float4', 701: 'float8', 1042: 'bpchar', 1043: 'varchar', 1082: 'date', 1083: 'time',
  1114: 'timestamp', 1184: 'timestamptz', 1186: 'interval', 1266: 'timetz', 1700: 'numeric', 2950: 'uuid',
  3802: 'jsonb', 1000: '_bool', 1001: '_bytea', 1005: '_int2', 1007: '_int4', 1009: '_text', 1016: '_int8',
  1015: '_varchar', 1021: '_float4', 1022: '_float8', 1115: '_timestamp', 1182: '_date', 1185: '_timestamptz',
  1231: '_numeric', 2951: '_uuid', 199: '_json', 3807: '_jsonb', 705: 'unknown', 2278: 'void',
}

const textArray = pg.types.getTypeParser(1009 as never, 'text') as (value: string) => Array<string | null>
const int8 = (text: string) => fromColumn(BigInt(text))
const eachOf = (map: (text: string) => unknown) => (value: string) => textArray(value).map((x) => (x === null ? null : map(x)))
const asText = (value: string) => value

/** Text-format parsers of §10.3; anything else uses pg's defaults. */
const PARSERS: Record<number, (value: string) => unknown> = {
  20: int8,
  1016: eachOf(int8),
  1700: asText, 1231: textArray,
  1082: asText, 1182: textArray,
  1083: asText, 1183: textArray,
  1266: asText, 1270: textArray,
  1186: asText, 1187: textArray,
  1114: isoDateTime, 1115: eachOf(isoDateTime),
  1184: isoDateTime, 1185: eachOf(isoDateTime),
}

const types = {
  getTypeParser: (oid: number, format?: string) => PARSERS[oid] ?? pg.types.getTypeParser(oid as never, (format ?? 'text') as 'text'),
}

/**
 * Opens a PostgreSQL pool (connections are made on first use).
 * @throws SvcError `CONFIG_ERROR` when the TLS CA file cannot be read.
 */
export function openPostgresDriver(options: DriverOptions): DatabaseDriver {
  const config: pg.PoolConfig = {
    connectionString: options.url,
    max: options.pool.max,
    idleTimeoutMillis: options.pool.idle_timeout_ms,
    // Our own acquire timer answers POOL_TIMEOUT first; this only bounds a connect that hangs.
    connectionTimeoutMillis: options.pool.acquire_timeout_ms + 1000,
    application_name: 'svc',
  }
  const ssl = tlsOptions(options)
  config.ssl = ssl ?? false
  const pool = new pg.Pool({ ...config, types } as pg.PoolConfig)
  // An idle connection that breaks is dropped by the pool; without a listener it would throw.
  pool.on('error', () => {})
  const typeNames = new Map<number, string | null>(Object.entries(TYPE_NAMES).map(([oid, name]) => [Number(oid), name]))

  const connectionPool: ConnectionPool = {
    async connect(): Promise<PooledConnection> {
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (error) {
        throw Errors.connectionFailed(options.name, connectionCause(error, AUTH_CODES), messageOf(error), error)
      }
      if (client.listenerCount('error') === 0) client.on('error', () => {})
      const pid = (client as unknown as { processID: number | null }).processID
      return {
        run: (statement, budget) => run(client, statement, budget),
        async cancel() {
          if (pid === null) return
          const canceller = new pg.Client({ ...config, ssl: config.ssl, connectionTimeoutMillis: 5000 } as pg.ClientConfig)
          canceller.on('error', () => {})
          try {
            await canceller.connect()
            await canceller.query('SELECT pg_cancel_backend($1)', [pid])
          } finally {
            await canceller.end().catch(() => {})
          }
        },
        release: (broken) => client.release(broken),
      }
    },
    begin: (isolation: Isolation | undefined) => [isolation ? `BEGIN ISOLATION LEVEL ${isolationSql(isolation)}` : 'BEGIN'],
    end: () => pool.end(),
  }

  async function run(client: pg.PoolClient, statement: Statement, budget: ResultBudget): Promise<StatementOutcome> {
    const cursor = client.query(new Cursor(statement.sql, statement.params, { rowMode: 'array', types }))
    const rows: Row[] = []
    let result: CursorResult
    try {
      for (;;) {
        const batch = await read(cursor)
        result = batch.result
        const names = result.fields.map((f) => f.name)
        for (const values of batch.rows) {
          const row = rowOf(names, values)
          budget.add(row)
          rows.push(row)
        }
        if (batch.rows.length < BATCH_ROWS) break
      }
    } catch (error) {
      if (!(error instanceof SvcError)) throw failure(error)
      // Over a result limit: the rest of the rows are never fetched.
      await cursor.close().catch(() => {})
      throw error
    }
    const fields = result.fields ?? []
    await resolveTypeNames(client, fields.map((f) => f.dataTypeID))
    const columns: Column[] = fields.map((f) => ({ name: f.name, type: typeNames.get(f.dataTypeID) ?? null }))
    const first = rows[0] !== undefined && fields[0] !== undefined ? rows[0][fields[0].name] : null
    const changes = /^(INSERT|UPDATE|DELETE|MERGE|COPY)$/.test(result.command ?? '')
    return {
      rows,
      columns,
      returnsRows: fields.length > 0,
      affected_rows: changes ? (result.rowCount ?? 0) : 0,
      last_insert_id: first === null || first === undefined ? null : typeof first === 'object' ? JSON.stringify(first) : String(first),
    }
  }

  /** The next batch of a cursor, with its result so far (columns; command and row count at the end). */
  function read(cursor: Cursor): Promise<{ rows: unknown[][]; result: CursorResult }> {
    return new Promise((resolve, reject) => cursor.read(BATCH_ROWS, (error, rows, result) => (error ? reject(error) : resolve({ rows, result }))))
  }

  /** Looks up type names not seen yet (enums, domains, extensions); unknown ones stay null. */
  async function resolveTypeNames(client: pg.PoolClient, oids: number[]): Promise<void> {
    const missing = [...new Set(oids.filter((oid) => !typeNames.has(oid)))]
    if (missing.length === 0) return
    for (const oid of missing) typeNames.set(oid, null)
    try {
      const found = await client.query({ text: 'SELECT oid::int AS oid, typname FROM pg_type WHERE oid = ANY($1::oid[])', values: [missing] })
      for (const row of found.rows as Array<{ oid: number; typname: string }>) typeNames.set(row.oid, row.typname)
    } catch {
      // Inside a failed transaction the lookup fails; the names stay unknown.
    }
  }

  function failure(error: unknown): SvcError {
    const e = error as { code?: unknown; message?: unknown }
    if (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return driverError(e.code, messageOf(error))
    if (isNetworkError(error) || /Connection terminated/i.test(messageOf(error))) {
      return Errors.connectionFailed(options.name, 'network', messageOf(error), error)
    }
    return driverError('UNKNOWN', messageOf(error))
  }

  return new PooledDriver(options.name, connectionPool, options.pool.acquire_timeout_ms, options.limits ?? RESULT_LIMIT_DEFAULTS)
}
