/**
 * The part of a {@link DatabaseDriver} that PostgreSQL and MySQL share: a pool with an acquire
 * timeout (`POOL_TIMEOUT`), a per-call timeout that cancels the running statement
 * (`QUERY_TIMEOUT`), statement-list transactions, and a close that waits for running calls.
 */
import { Errors } from 'svc-protocol/errors'
import { driverFailureOf, transactionErrorOf } from './errors.ts'
import { ResultBudget, type ResultLimits } from './limits.ts'
import { executeResultOf, queryResultOf, transactionEntryOf, type StatementOutcome } from './results.ts'
import type {
  CallOptions,
  DatabaseDriver,
  ExecuteResult,
  Isolation,
  QueryResult,
  Statement,
  TransactionOptions,
  TransactionResult,
  TransactionStatementResult,
} from './types.ts'

export type { StatementOutcome } from './results.ts'

/** One connection taken from a pool. */
export interface PooledConnection {
  /**
   * Runs a statement, counting its rows in `budget` as they arrive; rejects with an `SvcError`
   * (`DRIVER_ERROR`, `CONNECTION_FAILED`, or the budget's `QUERY_RESULT_TOO_LARGE`, after which the
   * connection is closed rather than reused).
   */
  run(statement: Statement, budget: ResultBudget): Promise<StatementOutcome>
  /** Asks the server to cancel the statement running on this connection (best effort). */
  cancel(): Promise<void>
  /** Gives the connection back; `broken` closes it instead (after a timeout or a lost connection). */
  release(broken: boolean): void
}

/** What an implementation supplies to {@link PooledDriver}. */
export interface ConnectionPool {
  /** Takes a connection, connecting if needed; rejects with `CONNECTION_FAILED`. */
  connect(): Promise<PooledConnection>
  /** The statements that open a transaction at `isolation`. */
  begin(isolation: Isolation | undefined): string[]
  /** Closes every connection (idle ones at once, the others when they are released). */
  end(): Promise<void>
}

const ISOLATION_SQL: Record<Isolation, string> = {
  read_committed: 'READ COMMITTED',
  repeatable_read: 'REPEATABLE READ',
  serializable: 'SERIALIZABLE',
}

/** `READ COMMITTED`, `REPEATABLE READ` or `SERIALIZABLE`. */
export function isolationSql(isolation: Isolation): string {
  return ISOLATION_SQL[isolation]
}

/** {@link DatabaseDriver} over a {@link ConnectionPool}. */
export class PooledDriver implements DatabaseDriver {
  private readonly name: string
  private readonly pool: ConnectionPool
  private readonly acquireTimeoutMs: number
  private readonly limits: ResultLimits
  private inFlight = 0
  private closing: Promise<void> | null = null
  private idle: (() => void) | null = null

  constructor(name: string, pool: ConnectionPool, acquireTimeoutMs: number, limits: ResultLimits) {
    this.name = name
    this.pool = pool
    this.acquireTimeoutMs = acquireTimeoutMs
    this.limits = limits
  }

  async query(statement: Statement, options: CallOptions): Promise<QueryResult> {
    return queryResultOf(await this.call(options.timeoutMs, (connection) => connection.run(statement, this.budget())))
  }

  async execute(statement: Statement, options: CallOptions): Promise<ExecuteResult> {
    return executeResultOf(await this.call(options.timeoutMs, (connection) => connection.run(statement, this.budget())))
  }

  /** A transaction's statements share one budget; hitting it fails the call, and the transaction is not committed. */
  transaction(statements: Statement[], options: TransactionOptions): Promise<TransactionResult> {
    const budget = this.budget()
    return this.call(options.timeoutMs, async (connection) => {
      for (const sql of this.pool.begin(options.isolation)) await connection.run({ sql, params: [] }, this.budget())
      const results: TransactionStatementResult[] = []
      for (let index = 0; index <= statements.length; index++) {
        try {
          if (index === statements.length) {
            await connection.run({ sql: 'COMMIT', params: [] }, budget)
            break
          }
          results.push(transactionEntryOf(await connection.run(statements[index]!, budget)))
        } catch (error) {
          if (!driverFailureOf(error)) throw error
          await connection.run({ sql: 'ROLLBACK', params: [] }, this.budget()).catch(() => {})
          // A failed COMMIT (a serialization failure) reports the index after the last statement.
          return { committed: false, failed_index: index, error: transactionErrorOf(error) }
        }
      }
      return { committed: true, results }
    })
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.inFlight > 0) await new Promise<void>((resolve) => (this.idle = resolve))
      await this.pool.end()
    })()
    return this.closing
  }

  /**
   * Takes a connection within `acquire_timeout_ms`, runs `work` on it within `timeoutMs` and gives
   * it back. On a timeout the statement is cancelled and the connection closed once `work` settles.
   */
  private async call<T>(timeoutMs: number, work: (connection: PooledConnection) => Promise<T>): Promise<T> {
    if (this.closing) throw Errors.connectionFailed(this.name, 'network', 'the database was reconfigured or the worker stopped')
    this.inFlight++
    let connection: PooledConnection
    try {
      connection = await this.acquire()
    } catch (error) {
      this.done()
      throw error
    }
    let timedOut = false
    let timer: NodeJS.Timeout | undefined
    const running = work(connection)
    // The connection goes back (or is closed) only once the statement is over, even after a timeout.
    void running
      .then(
        () => false,
        (error: unknown) => !driverFailureOf(error),
      )
      .then((broken) => {
        connection.release(timedOut || broken)
        this.done()
      })
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true
        reject(Errors.queryTimeout(this.name, timeoutMs))
        connection.cancel().catch(() => {})
      }, timeoutMs)
    })
    try {
      return await Promise.race([running, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  private budget(): ResultBudget {
    return new ResultBudget(this.name, this.limits)
  }

  private done(): void {
    if (--this.inFlight === 0) this.idle?.()
  }

  /** A connection within `acquire_timeout_ms`; one that arrives later goes straight back. */
  private acquire(): Promise<PooledConnection> {
    return new Promise((resolve, reject) => {
      let expired = false
      const timer = setTimeout(() => {
        expired = true
        reject(Errors.poolTimeout(this.name, this.acquireTimeoutMs))
      }, this.acquireTimeoutMs)
      this.pool.connect().then(
        (connection) => {
          clearTimeout(timer)
          if (expired) connection.release(false)
          else resolve(connection)
        },
        (error) => {
          clearTimeout(timer)
          if (!expired) reject(error)
        },
      )
    })
  }
}
