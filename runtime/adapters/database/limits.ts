/**
 * Result limits of the SQL drivers (an svc addition to builtins.md §10, issue 16): a call's result
 * holds at most `maxRows` rows and `maxBytes` bytes of row JSON. A driver counts each row as it
 * reads it and stops reading at the first one beyond a limit, so an oversized query never builds
 * its whole result in memory, and the call fails with `QUERY_RESULT_TOO_LARGE` instead of a
 * result too large for the caller's connection.
 */
import { Errors } from 'svc-protocol/errors'
import type { Row } from './types.ts'

/** Limits of one database (`databases.<name>.max_rows`, `.max_result_bytes`). */
export interface ResultLimits {
  /** Most rows in one call's result (all statements of a transaction together), ≥ 1. */
  maxRows: number
  /** Most bytes of the rows' JSON (UTF-8) in one call's result, ≥ 1. */
  maxBytes: number
}

/**
 * 100,000 rows and 32 MiB: far above what a handler shows or pages through in one call, and half
 * of the engine's default frame limit (64 MiB), which leaves room for the columns, the envelope and
 * JSON escaping of the result on its way to the caller.
 */
export const RESULT_LIMIT_DEFAULTS: Readonly<ResultLimits> = Object.freeze({ maxRows: 100_000, maxBytes: 32 * 1024 * 1024 })

/**
 * Counts the rows of one call against its database's limits.
 * @example
 * const budget = new ResultBudget('primary', { maxRows: 2, maxBytes: 1024 })
 * budget.add({ id: 1 }); budget.add({ id: 2 }); budget.add({ id: 3 }) // throws QUERY_RESULT_TOO_LARGE
 */
export class ResultBudget {
  private readonly db: string
  private readonly limits: ResultLimits
  rows = 0
  bytes = 0

  constructor(db: string, limits: ResultLimits) {
    this.db = db
    this.limits = limits
  }

  /**
   * Counts one row, already mapped per §10.3.
   * @throws SvcError `QUERY_RESULT_TOO_LARGE` when the row is beyond `maxRows` or takes the JSON
   *   bytes beyond `maxBytes`.
   */
  add(row: Row): void {
    if (++this.rows > this.limits.maxRows) throw Errors.queryResultTooLarge(this.db, 'max_rows', this.limits.maxRows)
    // The row's JSON plus its separating comma: what it adds to the encoded result.
    this.bytes += Buffer.byteLength(JSON.stringify(row)) + 1
    if (this.bytes > this.limits.maxBytes) throw Errors.queryResultTooLarge(this.db, 'max_result_bytes', this.limits.maxBytes)
  }
}
