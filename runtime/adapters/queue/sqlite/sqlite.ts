/**
 * The `builtin` queue backend: the in-process index (../indexed.ts) journaled to SQLite through
 * `node:sqlite` (builtins.md §13.2): `<dataDir>/queue.db` by default, WAL journal,
 * `synchronous=FULL` (a committed message survives a power loss). The changes of one event-loop
 * turn are written in one transaction, committed before any of their promises resolve, so a burst
 * of enqueues costs one fsync rather than one each.
 *
 * The transactions run on a writer thread with its own connection (started at the first write), so
 * the engine's event loop keeps serving frames while SQLite waits for the disk: one transaction is
 * with the writer at a time, and the changes of every turn that ends meanwhile go into the next one
 * (group commit across concurrent enqueues, deliveries and acknowledgements). The index already
 * reflects a change when its operation returns; only its promise waits for the commit. Profile of
 * `bench/queue.ts` before: the synchronous commit (its fsync) held the engine thread 36% of the time.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite'
import { Worker } from 'node:worker_threads'
import { IndexedQueueBackend, type IndexedMessage, type JournalChanges, type QueueJournal } from '../indexed.ts'
import type { QueueAdapterContext, SubscriberRecord } from '../types.ts'
import { jsonParse } from 'svc-protocol/json'

/** `adapter.config` of `builtin` for the queue worker. */
export interface SqliteQueueConfig {
  /** Database file; relative paths resolve against the data directory. Default `<dataDir>/queue.db`. */
  path?: string
  /**
   * `full` (default, builtins.md §13.2): every commit waits for the disk (fsync), so a stored
   * message, an attempt count, an acknowledgement survive a power loss; commits run on the writer
   * thread. `normal` (opt-in, relaxed): SQLite's `synchronous=NORMAL` in WAL mode, no wait for the
   * disk, commits on the engine thread: everything committed survives a crash or kill of the
   * engine process (the operating system has it), but a power loss or OS crash may lose the last
   * commits (acknowledged enqueues among them) until the next WAL checkpoint.
   */
  synchronous?: 'full' | 'normal'
}

export const DEFAULT_QUEUE_DB = 'queue.db'

/** The absolute database file for `config`. */
export function sqliteQueuePath(config: SqliteQueueConfig, context: QueueAdapterContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_QUEUE_DB)
}

/** The fields of a message that never change after enqueue, stored as one JSON column. */
const BODY_FIELDS = ['function_id', 'namespace', 'data', 'metadata', 'traceparent', 'baggage', 'group', 'key', 'enqueued_at', 'size_bytes'] as const

/** The schema of queue.db (created by the opening connection, before the writer starts). */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS queue_messages (
    id        TEXT PRIMARY KEY,
    seq       INTEGER NOT NULL,
    queue     TEXT NOT NULL,
    state     TEXT NOT NULL,
    attempts  INTEGER NOT NULL,
    ready_at  INTEGER NOT NULL,
    failed_at INTEGER,
    error     TEXT,
    body      TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS queue_idempotency (
    queue      TEXT NOT NULL,
    key        TEXT NOT NULL,
    id         TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (queue, key)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS queue_subscribers (
    queue  TEXT PRIMARY KEY,
    record TEXT NOT NULL
  ) WITHOUT ROWID;
`

/** Inserts a message row, or updates the fields that change after enqueue. */
const UPSERT_SQL =
  'INSERT INTO queue_messages (id, seq, queue, state, attempts, ready_at, failed_at, error, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (id) DO UPDATE SET state = excluded.state, attempts = excluded.attempts, ready_at = excluded.ready_at, failed_at = excluded.failed_at, error = excluded.error'

/** Values per upserted message row in a {@link Batch}: id, seq, queue, state, attempts, ready_at, failed_at, error JSON, body JSON. */
const ROW_FIELDS = 9

/** One transaction for the writer, as flat primitive arrays (structured clone copies those fastest). */
interface Batch {
  /** {@link ROW_FIELDS} values per message row to insert or update. */
  upserts: unknown[]
  /** Ids of message rows to delete. */
  deletes: string[]
  /** `queue, key, id, expires_at` per idempotency key. */
  idempotency: unknown[]
  /** `queue, record JSON` per subscriber saved; record null: deleted. */
  subscribers: Array<string | null>
}

/**
 * The writer thread: its own connection (WAL, `synchronous=FULL`, the 5 s busy timeout), the
 * prepared statements, one transaction per message `{seq, batch}`; posts `{seq}` when committed or
 * `{seq, error}` when the transaction failed and was rolled back. `{seq, close: true}` closes the
 * connection and answers `{seq}`.
 */
const WRITER = `
const { parentPort, workerData } = require('node:worker_threads')
const { DatabaseSync } = require('node:sqlite')
let db
let s
try {
  db = new DatabaseSync(workerData.path)
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;')
  s = {
    upsert: db.prepare(${JSON.stringify(UPSERT_SQL)}),
    delete: db.prepare('DELETE FROM queue_messages WHERE id = ?'),
    idem: db.prepare('INSERT OR REPLACE INTO queue_idempotency (queue, key, id, expires_at) VALUES (?, ?, ?, ?)'),
    subPut: db.prepare('INSERT OR REPLACE INTO queue_subscribers (queue, record) VALUES (?, ?)'),
    subDelete: db.prepare('DELETE FROM queue_subscribers WHERE queue = ?'),
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
  }
} catch (error) {
  s = undefined
  var opening = String(error && error.message || error)
}
parentPort.on('message', ({ seq, batch, close }) => {
  if (close) {
    try { db && db.close() } catch {}
    parentPort.postMessage({ seq })
    return
  }
  if (s === undefined) return parentPort.postMessage({ seq, error: 'opening the queue store failed: ' + opening })
  try {
    s.begin.run()
    try {
      const u = batch.upserts
      for (let i = 0; i < u.length; i += ${ROW_FIELDS}) s.upsert.run(u[i], u[i + 1], u[i + 2], u[i + 3], u[i + 4], u[i + 5], u[i + 6], u[i + 7], u[i + 8])
      for (const id of batch.deletes) s.delete.run(id)
      const k = batch.idempotency
      for (let i = 0; i < k.length; i += 4) s.idem.run(k[i], k[i + 1], k[i + 2], k[i + 3])
      const r = batch.subscribers
      for (let i = 0; i < r.length; i += 2) {
        if (r[i + 1] === null) s.subDelete.run(r[i])
        else s.subPut.run(r[i], r[i + 1])
      }
      s.commit.run()
    } catch (error) {
      try { s.rollback.run() } catch {}
      throw error
    }
    parentPort.postMessage({ seq })
  } catch (error) {
    parentPort.postMessage({ seq, error: String(error && error.message || error) })
  }
})
`

/** The rows of one turn's changes as a {@link Batch}, names encoded with {@link sqlText}. */
function batchOf(changes: JournalChanges): Batch {
  const batch: Batch = { upserts: [], deletes: [], idempotency: [], subscribers: [] }
  for (const [id, message] of changes.messages) {
    if (message === null) {
      batch.deletes.push(sqlText(id))
      continue
    }
    message.body ??= bodyOf(message)
    batch.upserts.push(
      sqlText(message.id),
      message.seq,
      sqlText(message.queue),
      message.state,
      message.attempts,
      message.ready_at,
      message.failed_at ?? null,
      message.error ? JSON.stringify(message.error) : null,
      message.body,
    )
  }
  for (const entry of changes.idempotency) batch.idempotency.push(sqlText(entry.queue), sqlText(entry.key), sqlText(entry.id), entry.expires_at)
  for (const [queue, record] of changes.subscribers) batch.subscribers.push(sqlText(queue), record === null ? null : JSON.stringify(record))
  return batch
}

/**
 * The journal of the `builtin` backend with `synchronous: full`: loads `queue.db` at open on the calling thread, then hands
 * each transaction to the writer thread ({@link WRITER}) and resolves when it committed.
 */
class SqliteJournal implements QueueJournal {
  private readonly path: string
  private writer: Worker | undefined
  private seq = 0
  /** Transactions with the writer, by sequence number. */
  private readonly calls = new Map<number, { resolve: () => void; reject: (error: Error) => void }>()
  /** Set when the writer thread died: every later write fails with it. */
  private broken: Error | undefined

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true })
    this.path = path
    // The schema, and a check that the file is a database, before the engine starts on it.
    const db = new DatabaseSync(path)
    try {
      db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;\n${SCHEMA}`)
    } finally {
      db.close()
    }
  }

  load(now: number): ReturnType<QueueJournal['load']> {
    const db = new DatabaseSync(this.path)
    try {
      db.exec('PRAGMA busy_timeout = 5000')
      return loadRows(db, now)
    } finally {
      db.close()
    }
  }

  write(changes: JournalChanges): Promise<void> {
    if (this.broken) return Promise.reject(this.broken)
    return this.send({ batch: batchOf(changes) })
  }

  async close(): Promise<void> {
    if (!this.writer) return
    const writer = this.writer
    try {
      await this.send({ close: true })
    } catch {
      /* the writer is gone already */
    }
    this.writer = undefined
    await writer.terminate()
  }

  /** Posts one message to the writer (started on first use) and waits for its answer. */
  private send(message: { batch?: Batch; close?: boolean }): Promise<void> {
    if (this.broken) return Promise.reject(this.broken)
    const writer = (this.writer ??= this.startWriter())
    const seq = ++this.seq
    return new Promise((resolve, reject) => {
      // Referenced while a transaction is with it: a caller awaiting a commit keeps the process alive.
      if (this.calls.size === 0) writer.ref()
      this.calls.set(seq, { resolve, reject })
      writer.postMessage({ seq, ...message })
    })
  }

  private startWriter(): Worker {
    const writer = new Worker(WRITER, { eval: true, workerData: { path: this.path } })
    writer.on('message', ({ seq, error }: { seq: number; error?: string }) => {
      const call = this.calls.get(seq)
      this.calls.delete(seq)
      if (this.calls.size === 0) writer.unref()
      if (error === undefined) call?.resolve()
      else call?.reject(new Error(error))
    })
    const fail = (error: Error) => {
      this.broken ??= error
      for (const call of this.calls.values()) call.reject(this.broken)
      this.calls.clear()
    }
    writer.on('error', (error) => fail(error instanceof Error ? error : new Error(String(error))))
    writer.on('exit', () => fail(new Error('the queue store writer stopped')))
    // Idle, the writer never keeps the process alive (the listeners ref the port again).
    writer.unref()
    return writer
  }
}

/**
 * A name (message id, queue, idempotency key) as a TEXT value SQLite keeps exactly: SQLite stores
 * text as UTF-8, which turns a lone surrogate into U+FFFD, so that `a\ud800` came back from the
 * file as `a\ufffd` (messages of such a durable-publish topic sat in a queue nobody reads after a
 * restart) and two such names shared one row. A string that is not well-formed, or starts with
 * NUL, is stored as NUL followed by its JSON (which escapes lone surrogates); any other as itself.
 * @example sqlText('a\ud800') // '\u0000"a\\ud800"'
 */
export function sqlText(name: string): string {
  return name.isWellFormed() && !name.startsWith('\u0000') ? name : `\u0000${JSON.stringify(name)}`
}

/** The name {@link sqlText} stored (a value it did not make is returned as it is). */
export function fromSqlText(value: string): string {
  if (!value.startsWith('\u0000')) return value
  try {
    const name: unknown = JSON.parse(value.slice(1))
    return typeof name === 'string' ? name : value
  } catch {
    return value
  }
}

/** The statements of one connection that writes queue.db. */
interface Statements {
  upsert: StatementSync
  delete: StatementSync
  idem: StatementSync
  subPut: StatementSync
  subDelete: StatementSync
  begin: StatementSync
  commit: StatementSync
  rollback: StatementSync
}

/**
 * The journal of `synchronous: normal`: commits on the engine thread (SQLite does not wait for the
 * disk, so a commit costs tens of µs, less than a hand-over to a thread).
 */
class InlineJournal implements QueueJournal {
  private readonly db: DatabaseSync
  private readonly s: Statements

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true })
    this.db = new DatabaseSync(path)
    try {
      this.db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;\n${SCHEMA}`)
      const prepare = (sql: string) => this.db.prepare(sql)
      this.s = {
        upsert: prepare(UPSERT_SQL),
        delete: prepare('DELETE FROM queue_messages WHERE id = ?'),
        idem: prepare('INSERT OR REPLACE INTO queue_idempotency (queue, key, id, expires_at) VALUES (?, ?, ?, ?)'),
        subPut: prepare('INSERT OR REPLACE INTO queue_subscribers (queue, record) VALUES (?, ?)'),
        subDelete: prepare('DELETE FROM queue_subscribers WHERE queue = ?'),
        begin: prepare('BEGIN IMMEDIATE'),
        commit: prepare('COMMIT'),
        rollback: prepare('ROLLBACK'),
      }
    } catch (error) {
      this.db.close()
      throw error
    }
  }

  load(now: number): ReturnType<QueueJournal['load']> {
    return loadRows(this.db, now)
  }

  write(changes: JournalChanges): void {
    const batch = batchOf(changes)
    const s = this.s
    s.begin.run()
    try {
      const u = batch.upserts
      for (let i = 0; i < u.length; i += ROW_FIELDS) s.upsert.run(...(u.slice(i, i + ROW_FIELDS) as SQLInputValue[]))
      for (const id of batch.deletes) s.delete.run(id)
      const k = batch.idempotency
      for (let i = 0; i < k.length; i += 4) s.idem.run(...(k.slice(i, i + 4) as SQLInputValue[]))
      const r = batch.subscribers
      for (let i = 0; i < r.length; i += 2) {
        if (r[i + 1] === null) s.subDelete.run(r[i]!)
        else s.subPut.run(r[i]!, r[i + 1]!)
      }
      s.commit.run()
    } catch (error) {
      try {
        s.rollback.run()
      } catch {
        /* the transaction is already gone */
      }
      throw error
    }
  }

  close(): void {
    this.db.close()
  }
}

/** Every stored message, idempotency key (expired ones deleted first) and subscriber of `db`. */
function loadRows(db: DatabaseSync, now: number): ReturnType<QueueJournal['load']> {
  db.prepare('DELETE FROM queue_idempotency WHERE expires_at <= ?').run(now)
  const rows = db.prepare('SELECT id, seq, queue, state, attempts, ready_at, failed_at, error, body FROM queue_messages').all() as Array<Record<string, unknown>>
  const messages: IndexedMessage[] = rows.map((row) => {
    const body = jsonParse(row.body as string) as Record<string, unknown>
    const message: IndexedMessage = {
      id: fromSqlText(row.id as string),
      queue: fromSqlText(row.queue as string),
      seq: Number(row.seq),
      state: row.state as IndexedMessage['state'],
      attempts: Number(row.attempts),
      ready_at: Number(row.ready_at),
      function_id: body.function_id as string,
      namespace: body.namespace as string,
      data: body.data,
      enqueued_at: body.enqueued_at as number,
      size_bytes: body.size_bytes as number,
      version: 0,
      body: row.body as string,
    }
    for (const field of ['metadata', 'traceparent', 'baggage', 'group', 'key'] as const) {
      if (body[field] !== undefined) (message as unknown as Record<string, unknown>)[field] = body[field]
    }
    if (row.failed_at !== null && row.failed_at !== undefined) message.failed_at = Number(row.failed_at)
    if (typeof row.error === 'string') message.error = jsonParse(row.error) as typeof message.error
    return message
  })
  const idempotency = (db.prepare('SELECT queue, key, id, expires_at FROM queue_idempotency').all() as Array<Record<string, unknown>>).map((r) => ({
    queue: fromSqlText(r.queue as string),
    key: fromSqlText(r.key as string),
    id: fromSqlText(r.id as string),
    expires_at: Number(r.expires_at),
  }))
  const subscribers = (db.prepare('SELECT record FROM queue_subscribers').all() as Array<{ record: string }>).map((r) => jsonParse(r.record) as SubscriberRecord)
  return { messages, idempotency, subscribers }
}

function bodyOf(message: IndexedMessage): string {
  const body: Record<string, unknown> = {}
  for (const field of BODY_FIELDS) if (message[field] !== undefined) body[field] = message[field]
  return JSON.stringify(body)
}

/**
 * Opens (creating if needed) `<dataDir>/queue.db` (or `config.path`) and loads it (builtins.md
 * §13.2, §7.8). `synchronous` `full` (default): commits on a writer thread, each waiting for the
 * disk; `normal` (opt-in): commits on the calling thread without that wait (see {@link SqliteQueueConfig}).
 * An operation's promise rejects with the SQLite error when its transaction failed (disk full, the
 * file locked beyond the 5 s busy timeout); the index keeps the change.
 * @throws the SQLite error when the file cannot be opened or is not a database.
 * @example const backend = openSqliteQueue({}, { dataDir: '/srv/app/.svc/data' })
 * @example const relaxed = openSqliteQueue({ synchronous: 'normal' }, { dataDir: '/srv/app/.svc/data' })
 */
export function openSqliteQueue(config: SqliteQueueConfig, context: QueueAdapterContext, now = Date.now()): IndexedQueueBackend {
  const path = sqliteQueuePath(config, context)
  return new IndexedQueueBackend('builtin', config.synchronous === 'normal' ? new InlineJournal(path) : new SqliteJournal(path), now)
}
