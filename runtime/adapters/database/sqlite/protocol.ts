/** Messages between the SQLite driver (./index.ts) and its worker thread (./thread.ts). */
import type { StatementOutcome } from '../results.ts'
import type { Statement, TransactionResult } from '../types.ts'

export interface SqliteThreadData {
  /** Absolute file path or `:memory:`. */
  path: string
  busyTimeoutMs: number
}

export type SqliteRequest =
  | { type: 'run'; id: number; statement: Statement }
  | { type: 'transaction'; id: number; statements: Statement[] }
  | { type: 'close' }

export type SqliteReply =
  | { type: 'ready' }
  | { type: 'open-failed'; message: string }
  | { type: 'result'; id: number; result: StatementOutcome | TransactionResult }
  | { type: 'failed'; id: number; driverCode: string; message: string }
