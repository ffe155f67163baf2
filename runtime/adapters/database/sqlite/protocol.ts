/** Messages between the SQLite driver (./index.ts) and its worker thread (./thread.ts). */
import type { ResultLimits } from '../limits.ts'
import type { StatementOutcome } from '../results.ts'
import type { Statement, TransactionResult } from '../types.ts'

export interface SqliteThreadData {
  /** The database's name in the settings, for messages. */
  name: string
  /** Absolute file path or `:memory:`. */
  path: string
  busyTimeoutMs: number
  limits: ResultLimits
  /** ATTACH, DETACH and VACUUM INTO allowed. */
  allowAttach: boolean
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
  /** Refused before or while running with a catalogue code (`INVALID_ARGUMENTS`, `QUERY_RESULT_TOO_LARGE`). */
  | { type: 'refused'; id: number; code: string; message: string }
