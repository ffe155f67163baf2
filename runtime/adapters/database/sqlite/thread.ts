/**
 * The worker thread of one SQLite database (builtins.md §10.1: statements run off the engine's
 * event loop, one thread per database, one statement at a time). Opened with `node:sqlite` in WAL
 * mode with the busy timeout; answers `run` and `transaction` requests from ./index.ts.
 *
 * What a caller may not do here: run more than one statement per `sql` (the rest would be dropped
 * silently), load extensions, or — unless the database allows it — `ATTACH`, `DETACH` and
 * `VACUUM INTO`, which open or create files anywhere the engine may write (SQLite's authorizer
 * refuses them). Rows are read one at a time and counted against the result limits, so neither
 * this thread nor the transfer of the result to the engine's thread grows beyond them.
 */
import { constants, DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite'
import { parentPort, workerData } from 'node:worker_threads'
import { Errors, SvcError } from 'svc-protocol/errors'
import { ResultBudget } from '../limits.ts'
import { transactionEntryOf, type StatementOutcome } from '../results.ts'
import type { Statement, TransactionResult, TransactionStatementResult } from '../types.ts'
import { firstKeyword, isInsert, isoDateTime, mapRow } from '../values.ts'
import type { SqliteReply, SqliteRequest, SqliteThreadData } from './protocol.ts'

const { name, path, busyTimeoutMs, limits, allowAttach } = workerData as SqliteThreadData
const port = parentPort!

/** Primary result codes by number (sqlite.org/rescode.html) and the common constraint subcodes. */
const CODE_NAMES: Record<number, string> = {
  1: 'SQLITE_ERROR', 2: 'SQLITE_INTERNAL', 3: 'SQLITE_PERM', 4: 'SQLITE_ABORT', 5: 'SQLITE_BUSY', 6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM', 8: 'SQLITE_READONLY', 9: 'SQLITE_INTERRUPT', 10: 'SQLITE_IOERR', 11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL', 14: 'SQLITE_CANTOPEN', 18: 'SQLITE_TOOBIG', 19: 'SQLITE_CONSTRAINT', 20: 'SQLITE_MISMATCH',
  21: 'SQLITE_MISUSE', 23: 'SQLITE_AUTH', 25: 'SQLITE_RANGE', 26: 'SQLITE_NOTADB',
  275: 'SQLITE_CONSTRAINT_CHECK', 787: 'SQLITE_CONSTRAINT_FOREIGNKEY', 1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY', 2067: 'SQLITE_CONSTRAINT_UNIQUE',
}
const SQLITE_AUTH = 23
/** Set by the authorizer when it refused an ATTACH or DETACH of the statement being prepared. */
let refusedAttach = false

const DML = new Set(['INSERT', 'UPDATE', 'DELETE', 'REPLACE'])

let db: DatabaseSync
try {
  // allowExtension false (node:sqlite's default, stated): load_extension() is refused.
  db = new DatabaseSync(path, { timeout: busyTimeoutMs, readBigInts: true, allowExtension: false })
  if (path !== ':memory:') db.exec('PRAGMA journal_mode=WAL')
  if (!allowAttach) {
    // VACUUM INTO attaches its target too, so it is refused with ATTACH.
    db.setAuthorizer((action) => {
      if (action !== constants.SQLITE_ATTACH && action !== constants.SQLITE_DETACH) return constants.SQLITE_OK
      refusedAttach = true
      return constants.SQLITE_DENY
    })
  }
  port.postMessage({ type: 'ready' } satisfies SqliteReply)
} catch (error) {
  port.postMessage({ type: 'open-failed', message: (error as Error).message } satisfies SqliteReply)
  process.exit(0)
}

port.on('message', (request: SqliteRequest) => {
  if (request.type === 'close') {
    db.close()
    port.close()
    return
  }
  try {
    const budget = new ResultBudget(name, limits)
    const result = request.type === 'run' ? run(request.statement, budget) : transaction(request.statements, budget)
    port.postMessage({ type: 'result', id: request.id, result } satisfies SqliteReply)
  } catch (error) {
    if (error instanceof SvcError) port.postMessage({ type: 'refused', id: request.id, code: error.code, message: error.message } satisfies SqliteReply)
    else port.postMessage({ type: 'failed', id: request.id, ...failureOf(error) } satisfies SqliteReply)
  }
})

/**
 * Prepares the one statement of `sql`.
 * @throws SvcError `INVALID_ARGUMENTS` when more than comments, spaces and semicolons follow it
 *   (SQLite itself would prepare the first statement and ignore the rest).
 */
function prepareOne(sql: string): StatementSync {
  refusedAttach = false
  const prepared = db.prepare(sql)
  // sourceSQL is the text SQLite compiled: `sql` up to the end of its first statement.
  const rest = sql.slice(prepared.sourceSQL.length)
  if (rest.trim() === '') return prepared
  try {
    db.prepare(rest)
  } catch (error) {
    // node:sqlite's answer for text that holds no statement (only comments and semicolons).
    if ((error as { code?: unknown }).code === 'ERR_INVALID_ARG_VALUE') return prepared
  }
  throw Errors.invalidArguments('sql holds more than one statement; send one statement per call, or a list of them to database::transaction')
}

function run(statement: Statement, budget: ResultBudget): StatementOutcome {
  const prepared = prepareOne(statement.sql)
  const params = statement.params as SQLInputValue[]
  const columns = prepared.columns().map((c) => ({ name: c.name, type: c.type ?? null }))
  const insert = isInsert(statement.sql)
  if (columns.length === 0) {
    const { changes, lastInsertRowid } = prepared.run(...params)
    return { rows: [], columns, returnsRows: false, affected_rows: Number(changes), last_insert_id: insert ? String(lastInsertRowid) : null }
  }
  // SQLite keeps dates as text; columns declared as a date or time type read as ISO 8601 (§10.3).
  const dated = columns.filter((c) => c.type !== null && /DATE|TIME/i.test(c.type)).map((c) => c.name)
  // Row by row: reading stops at the first row beyond a limit (the iterator is reset then).
  const rows = []
  for (const row of prepared.iterate(...params)) {
    const record = row as Record<string, unknown>
    for (const column of dated) if (typeof record[column] === 'string') record[column] = isoDateTime(record[column] as string)
    const mapped = mapRow(record)
    budget.add(mapped)
    rows.push(mapped)
  }
  // A RETURNING clause: what the statement changed is read back from the connection.
  if (!DML.has(firstKeyword(statement.sql))) return { rows, columns, returnsRows: true, affected_rows: 0, last_insert_id: null }
  const last = db.prepare('SELECT changes() AS changes, last_insert_rowid() AS id').get() as { changes: bigint; id: bigint }
  return { rows, columns, returnsRows: true, affected_rows: Number(last.changes), last_insert_id: insert ? String(last.id) : null }
}

function transaction(statements: Statement[], budget: ResultBudget): TransactionResult {
  db.exec('BEGIN IMMEDIATE')
  const results: TransactionStatementResult[] = []
  for (let index = 0; index <= statements.length; index++) {
    try {
      if (index === statements.length) {
        db.exec('COMMIT')
        break
      }
      results.push(transactionEntryOf(run(statements[index]!, budget)))
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK')
      // Refusals fail the call (rolled back), as they do outside a transaction.
      if (error instanceof SvcError) throw error
      const { driverCode, message } = failureOf(error)
      return { committed: false, failed_index: index, error: { code: 'DRIVER_ERROR', driver_code: driverCode, message } }
    }
  }
  return { committed: true, results }
}

function failureOf(error: unknown): { driverCode: string; message: string } {
  const e = error as { errcode?: unknown; code?: unknown; message?: unknown }
  const errcode = typeof e?.errcode === 'number' ? e.errcode : undefined
  const driverCode = errcode === undefined ? (typeof e?.code === 'string' ? e.code : 'SQLITE_ERROR') : (CODE_NAMES[errcode] ?? CODE_NAMES[errcode & 0xff] ?? `SQLITE_${errcode}`)
  if (errcode === SQLITE_AUTH && refusedAttach) {
    return { driverCode, message: `ATTACH, DETACH and VACUUM INTO are not allowed on database '${name}'; set databases.${name}.allow_attach: true to allow them` }
  }
  return { driverCode, message: typeof e?.message === 'string' ? e.message : String(error) }
}
