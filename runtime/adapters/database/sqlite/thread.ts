/**
 * The worker thread of one SQLite database (builtins.md §10.1: statements run off the engine's
 * event loop, one thread per database, one statement at a time). Opened with `node:sqlite` in WAL
 * mode with the busy timeout; answers `run` and `transaction` requests from ./index.ts.
 */
import { DatabaseSync, type SQLInputValue } from 'node:sqlite'
import { parentPort, workerData } from 'node:worker_threads'
import { transactionEntryOf, type StatementOutcome } from '../results.ts'
import type { Statement, TransactionResult, TransactionStatementResult } from '../types.ts'
import { firstKeyword, isInsert, isoDateTime, mapRow } from '../values.ts'
import type { SqliteReply, SqliteRequest, SqliteThreadData } from './protocol.ts'

const { path, busyTimeoutMs } = workerData as SqliteThreadData
const port = parentPort!

/** Primary result codes by number (sqlite.org/rescode.html) and the common constraint subcodes. */
const CODE_NAMES: Record<number, string> = {
  1: 'SQLITE_ERROR', 2: 'SQLITE_INTERNAL', 3: 'SQLITE_PERM', 4: 'SQLITE_ABORT', 5: 'SQLITE_BUSY', 6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM', 8: 'SQLITE_READONLY', 9: 'SQLITE_INTERRUPT', 10: 'SQLITE_IOERR', 11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL', 14: 'SQLITE_CANTOPEN', 18: 'SQLITE_TOOBIG', 19: 'SQLITE_CONSTRAINT', 20: 'SQLITE_MISMATCH',
  21: 'SQLITE_MISUSE', 25: 'SQLITE_RANGE', 26: 'SQLITE_NOTADB',
  275: 'SQLITE_CONSTRAINT_CHECK', 787: 'SQLITE_CONSTRAINT_FOREIGNKEY', 1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY', 2067: 'SQLITE_CONSTRAINT_UNIQUE',
}

const DML = new Set(['INSERT', 'UPDATE', 'DELETE', 'REPLACE'])

let db: DatabaseSync
try {
  db = new DatabaseSync(path, { timeout: busyTimeoutMs, readBigInts: true })
  if (path !== ':memory:') db.exec('PRAGMA journal_mode=WAL')
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
    const result = request.type === 'run' ? run(request.statement) : transaction(request.statements)
    port.postMessage({ type: 'result', id: request.id, result } satisfies SqliteReply)
  } catch (error) {
    port.postMessage({ type: 'failed', id: request.id, ...failureOf(error) } satisfies SqliteReply)
  }
})

function run(statement: Statement): StatementOutcome {
  const prepared = db.prepare(statement.sql)
  const params = statement.params as SQLInputValue[]
  const columns = prepared.columns().map((c) => ({ name: c.name, type: c.type ?? null }))
  const insert = isInsert(statement.sql)
  if (columns.length === 0) {
    const { changes, lastInsertRowid } = prepared.run(...params)
    return { rows: [], columns, returnsRows: false, affected_rows: Number(changes), last_insert_id: insert ? String(lastInsertRowid) : null }
  }
  // SQLite keeps dates as text; columns declared as a date or time type read as ISO 8601 (§10.3).
  const dated = columns.filter((c) => c.type !== null && /DATE|TIME/i.test(c.type)).map((c) => c.name)
  const rows = prepared.all(...params).map((row) => {
    const record = row as Record<string, unknown>
    for (const name of dated) if (typeof record[name] === 'string') record[name] = isoDateTime(record[name] as string)
    return mapRow(record)
  })
  // A RETURNING clause: what the statement changed is read back from the connection.
  if (!DML.has(firstKeyword(statement.sql))) return { rows, columns, returnsRows: true, affected_rows: 0, last_insert_id: null }
  const last = db.prepare('SELECT changes() AS changes, last_insert_rowid() AS id').get() as { changes: bigint; id: bigint }
  return { rows, columns, returnsRows: true, affected_rows: Number(last.changes), last_insert_id: insert ? String(last.id) : null }
}

function transaction(statements: Statement[]): TransactionResult {
  db.exec('BEGIN IMMEDIATE')
  const results: TransactionStatementResult[] = []
  for (let index = 0; index <= statements.length; index++) {
    try {
      if (index === statements.length) {
        db.exec('COMMIT')
        break
      }
      results.push(transactionEntryOf(run(statements[index]!)))
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK')
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
  return { driverCode, message: typeof e?.message === 'string' ? e.message : String(error) }
}
