/**
 * SQLite driver of the database worker (builtins.md §10) over `node:sqlite`.
 *
 * Each database has one worker thread (./thread.ts) that runs one request at a time, so a long
 * statement never blocks the engine's event loop (§10.1). Requests wait in a queue here; a call
 * that exceeds its timeout is dropped from the queue, or, when it is the one running, the thread
 * is terminated (the statement stops, an open transaction is rolled back by SQLite) and a new one
 * opens the database again. `sqlite::memory:` databases live in their thread, so such a restart
 * empties them (docs/decisions.md).
 */
import { Worker } from 'node:worker_threads'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Errors, SvcError } from 'svc-protocol/errors'
import { driverError } from '../errors.ts'
import type { ResultLimits } from '../limits.ts'
import { executeResultOf, queryResultOf, type StatementOutcome } from '../results.ts'
import type { CallOptions, DatabaseDriver, ExecuteResult, QueryResult, Statement, TransactionOptions, TransactionResult } from '../types.ts'
import type { SqliteReply, SqliteRequest, SqliteThreadData } from './protocol.ts'

// The thread runs from the same tree as this module: `.ts` from source, `.js` from dist.
const THREAD_URL = new URL(`./thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url)

type Work = { type: 'run'; statement: Statement } | { type: 'transaction'; statements: Statement[] }

interface Pending {
  id: number
  work: Work
  resolve(value: unknown): void
  reject(error: unknown): void
  timer: NodeJS.Timeout
}

export interface SqliteDriverOptions {
  /** The database's name in the settings, for messages. */
  name: string
  /** Absolute path, or `:memory:`. */
  path: string
  /** SQLite busy timeout (`pool.acquire_timeout_ms`). */
  busyTimeoutMs: number
  /** Result limits of one call. */
  limits: ResultLimits
  /** ATTACH, DETACH and VACUUM INTO allowed (`allow_attach`). */
  allowAttach: boolean
}

/**
 * Opens a SQLite database in its own thread.
 * @throws SvcError `CONFIG_ERROR` when the file cannot be opened.
 */
export async function openSqliteDriver(options: SqliteDriverOptions): Promise<DatabaseDriver> {
  const driver = new SqliteDriver(options)
  await driver.open()
  return driver
}

class SqliteDriver implements DatabaseDriver {
  private readonly options: SqliteDriverOptions
  private thread: Worker | null = null
  private readonly queue: Pending[] = []
  private running: Pending | null = null
  private nextId = 1
  private closing: Promise<void> | null = null
  private drained: (() => void) | null = null

  constructor(options: SqliteDriverOptions) {
    this.options = options
  }

  /** Starts the thread and waits until the database is open. */
  open(): Promise<void> {
    const { name, path, busyTimeoutMs, limits, allowAttach } = this.options
    const data: SqliteThreadData = { name, path, busyTimeoutMs, limits, allowAttach }
    const thread = new Worker(THREAD_URL, { workerData: data })
    this.thread = thread
    return new Promise((resolve, reject) => {
      const onMessage = (reply: SqliteReply) => {
        if (reply.type === 'ready') {
          this.pump()
          resolve()
        } else if (reply.type === 'open-failed') {
          // The thread exits next; it must not be restarted.
          if (this.thread === thread) this.thread = null
          reject(Errors.configError(`databases.${this.options.name}.url: cannot open ${this.options.path}: ${reply.message}`))
        } else {
          this.settle(reply)
        }
      }
      thread.on('message', onMessage)
      thread.on('error', (error) => {
        reject(Errors.configError(`databases.${this.options.name}: the SQLite thread failed: ${error.message}`))
        this.onThreadLost(thread, error)
      })
      thread.on('exit', () => this.onThreadLost(thread, new Error('the SQLite thread exited')))
    })
  }

  async query(statement: Statement, options: CallOptions): Promise<QueryResult> {
    return queryResultOf((await this.submit({ type: 'run', statement }, options.timeoutMs)) as StatementOutcome)
  }

  async execute(statement: Statement, options: CallOptions): Promise<ExecuteResult> {
    return executeResultOf((await this.submit({ type: 'run', statement }, options.timeoutMs)) as StatementOutcome)
  }

  /** `isolation` is ignored: SQLite transactions are serializable. */
  async transaction(statements: Statement[], options: TransactionOptions): Promise<TransactionResult> {
    return (await this.submit({ type: 'transaction', statements }, options.timeoutMs)) as TransactionResult
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.running || this.queue.length > 0) await new Promise<void>((resolve) => (this.drained = resolve))
      const thread = this.thread
      this.thread = null
      if (!thread) return
      const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()))
      thread.ref()
      thread.postMessage({ type: 'close' } satisfies SqliteRequest)
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000).unref())])
      await thread.terminate()
    })()
    return this.closing
  }

  private submit(work: Work, timeoutMs: number): Promise<unknown> {
    if (this.closing) return Promise.reject(Errors.connectionFailed(this.options.name, 'network', 'the database was reconfigured or the worker stopped'))
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        id: this.nextId++,
        work,
        resolve,
        reject,
        timer: setTimeout(() => this.expire(pending, timeoutMs), timeoutMs),
      }
      this.queue.push(pending)
      this.pump()
    })
  }

  private pump(): void {
    if (this.running || !this.thread) return
    const next = this.queue.shift()
    if (!next) {
      // An idle database never keeps the process alive; one with work does.
      this.thread.unref()
      this.drained?.()
      return
    }
    this.thread.ref()
    this.running = next
    this.thread.postMessage({ ...next.work, id: next.id } satisfies SqliteRequest)
  }

  private settle(reply: SqliteReply): void {
    if (reply.type !== 'result' && reply.type !== 'failed' && reply.type !== 'refused') return
    const pending = this.running
    if (!pending || pending.id !== reply.id) return
    this.running = null
    clearTimeout(pending.timer)
    if (reply.type === 'result') pending.resolve(reply.result)
    else if (reply.type === 'refused') pending.reject(new SvcError(reply.code, reply.message))
    else pending.reject(driverError(reply.driverCode, reply.message))
    this.pump()
  }

  /** A call over its timeout: dropped if still queued; if running, the thread is replaced. */
  private expire(pending: Pending, timeoutMs: number): void {
    pending.reject(Errors.queryTimeout(this.options.name, timeoutMs))
    const index = this.queue.indexOf(pending)
    if (index >= 0) {
      this.queue.splice(index, 1)
      if (!this.running && this.queue.length === 0) this.drained?.()
      return
    }
    if (this.running !== pending) return
    this.running = null
    this.restart()
  }

  private restart(): void {
    const old = this.thread
    this.thread = null
    if (old) void old.terminate()
    this.open().catch((error: unknown) => this.failAll(error))
  }

  private onThreadLost(thread: Worker, error: Error): void {
    if (this.thread !== thread) return
    this.thread = null
    const running = this.running
    this.running = null
    if (running) {
      clearTimeout(running.timer)
      running.reject(driverError('SQLITE_ERROR', `the SQLite thread stopped: ${error.message}`))
    }
    if (!this.closing) this.restart()
  }

  private failAll(error: unknown): void {
    for (const pending of this.queue.splice(0)) {
      clearTimeout(pending.timer)
      pending.reject(error)
    }
    this.drained?.()
  }
}
