/**
 * What one statement produced, and the §10.2 result shapes built from it (shared by every driver).
 */
import type { Column, ExecuteResult, QueryResult, Row, TransactionStatementResult } from './types.ts'

/** One statement's outcome, values already mapped per §10.3. */
export interface StatementOutcome {
  rows: Row[]
  columns: Column[]
  /** True when the statement returns rows (a SELECT, a RETURNING clause). */
  returnsRows: boolean
  affected_rows: number
  last_insert_id: string | null
}

/** `{rows, row_count, columns}` of `database::query`. */
export function queryResultOf(outcome: StatementOutcome): QueryResult {
  return { rows: outcome.rows, row_count: outcome.rows.length, columns: outcome.columns }
}

/** `{affected_rows, last_insert_id, returned_rows}` of `database::execute`. */
export function executeResultOf(outcome: StatementOutcome): ExecuteResult {
  return { affected_rows: outcome.affected_rows, last_insert_id: outcome.last_insert_id, returned_rows: outcome.returnsRows ? outcome.rows : [] }
}

/** One `results[]` entry of a committed transaction. */
export function transactionEntryOf(outcome: StatementOutcome): TransactionStatementResult {
  return { affected_rows: outcome.affected_rows, last_insert_id: outcome.last_insert_id, rows: outcome.returnsRows ? outcome.rows : [] }
}
