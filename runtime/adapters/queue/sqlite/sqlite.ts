/**
 * The `builtin` queue backend: the in-process index (../indexed.ts) journaled to SQLite through
 * `node:sqlite` (builtins.md §13.2): `<dataDir>/queue.db` by default, WAL journal, durable across a
 * power loss by default. The changes of one event-loop turn are written in one transaction before
 * any of their promises resolve.
 *
 * The default (`synchronous: full`) is SQLite's `synchronous=NORMAL` (the commit writes the WAL
 * frames, no fsync) followed by an `fdatasync` of the WAL file on libuv's thread pool: a promise
 * resolves only after the fsync that began after its commit, which is what SQLite's
 * `synchronous=FULL` guarantees in WAL mode (the WAL is synced after each commit; checkpoints sync
 * the WAL before and the database after in both modes). The engine thread goes on serving while the
 * disk syncs, and every commit made meanwhile shares the next fsync (group commit). SQLite's own
 * FULL waited for the disk on the engine thread: 42% of its busy time at concurrency 10 (session 29,
 * docs/benchmarks.md). A writer thread for the whole commit was tried before and dropped (session 28:
 * 25–50 µs of CPU per hand-over, 15 MiB of RSS); an fsync request costs the thread pool a wake-up.
 *
 * `synchronous: normal` (opt-in) skips the fsync: survives a crash of the engine, not a power loss.
 */
import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { IndexedQueueBackend, type IndexedMessage, type JournalChanges, type QueueJournal } from '../indexed.ts'
import type { QueueAdapterContext, SubscriberRecord } from '../types.ts'
import { jsonParse } from 'svc-protocol/json'

/** `adapter.config` of `builtin` for the queue worker. */
export interface SqliteQueueConfig {
  /** Database file; relative paths resolve against the data directory. Default `<dataDir>/queue.db`. */
  path?: string
  /**
   * `full` (default, builtins.md §13.2): nothing is answered before its commit is on disk (an
   * fsync of the WAL, shared by the commits made while the previous one ran), so a stored message,
   * an attempt count, an acknowledgement survive a power loss. `normal` (opt-in, relaxed):
   * SQLite's `synchronous=NORMAL` in WAL mode, no wait for the disk: everything committed survives a crash or kill of the
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

/** The schema of queue.db. */
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

/** How the WAL file reaches the disk: `fs.fdatasync`, or a stand-in in tests (one that holds or fails). */
export type FdatasyncFn = (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void

/**
 * Group fsync of one WAL file: one `fdatasync` at a time on libuv's thread pool; the requests made
 * while it runs wait for the next one, which starts when it ends and covers every write made before
 * they asked. Each request is answered once, with the error of its fsync (an `EIO`, `ENOSPC`) if any.
 */
class WalSync {
  private running = false
  private closing: (() => void) | undefined
  private waiting: Array<(error: Error | null) => void> = []

  private readonly fd: number
  private readonly fdatasync: FdatasyncFn

  constructor(fd: number, fdatasyncFn: FdatasyncFn) {
    this.fd = fd
    this.fdatasync = fdatasyncFn
  }

  request(done: (error: Error | null) => void): void {
    this.waiting.push(done)
    if (!this.running) this.start()
  }

  private start(): void {
    const batch = this.waiting
    this.waiting = []
    this.running = true
    this.fdatasync(this.fd, (error) => {
      this.running = false
      for (const done of batch) done(error)
      if (this.waiting.length > 0) this.start()
      else this.closing?.()
    })
  }

  /** Resolves once no fsync runs nor waits, then closes the file. */
  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.closing = () => {
        this.closing = undefined
        closeSync(this.fd)
        resolve()
      }
      if (!this.running) this.closing()
    })
  }
}

/**
 * The journal of the `builtin` backend: one connection on the engine thread, one transaction per
 * turn's changes. `full` (default): the transaction is written without waiting for the disk, then
 * the WAL file is synced off the engine thread ({@link WalSync}) before the promises resolve;
 * `normal` (opt-in): no sync.
 */
class SqliteJournal implements QueueJournal {
  private readonly db: DatabaseSync
  private readonly s: Statements
  private readonly wal: WalSync | undefined
  readonly sync: QueueJournal['sync']

  constructor(path: string, synchronous: 'full' | 'normal', fdatasyncFn: FdatasyncFn = fdatasync) {
    mkdirSync(dirname(path), { recursive: true })
    this.db = new DatabaseSync(path)
    try {
      // NORMAL in both modes: `full` syncs the WAL itself, after the commit, off the engine thread.
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
      if (synchronous === 'full') {
        this.wal = new WalSync(openWal(this.db, path), fdatasyncFn)
        const wal = this.wal
        this.sync = (done) => wal.request(done)
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
    const s = this.s
    s.begin.run()
    try {
      for (const [id, message] of changes.messages) {
        if (message === null) {
          s.delete.run(sqlText(id))
          continue
        }
        message.body ??= bodyOf(message)
        s.upsert.run(
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
      for (const entry of changes.idempotency) s.idem.run(sqlText(entry.queue), sqlText(entry.key), sqlText(entry.id), entry.expires_at)
      for (const [queue, record] of changes.subscribers) {
        if (record === null) s.subDelete.run(sqlText(queue))
        else s.subPut.run(sqlText(queue), JSON.stringify(record))
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

  async close(): Promise<void> {
    await this.wal?.close()
    this.db.close()
  }
}

/**
 * A descriptor of the WAL file of `db` (at `<path>-wal`), which stays the same file while the
 * connection is open (SQLite deletes it only when the last connection closes; a restart after a
 * checkpoint rewrites it in place). Its directory entry is synced once, as SQLite does for a new WAL.
 */
function openWal(db: DatabaseSync, path: string): number {
  // A read transaction makes SQLite create the WAL file if this connection has not yet.
  db.prepare('SELECT count(*) FROM queue_subscribers').get()
  const fd = openSync(`${path}-wal`, 'r')
  try {
    const dir = openSync(dirname(path), 'r')
    try {
      fsyncSync(dir)
    } finally {
      closeSync(dir)
    }
  } catch (error) {
    closeSync(fd)
    throw error
  }
  return fd
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
 * §13.2, §7.8). `synchronous` `full` (default): an operation's promise resolves once its commit is
 * on disk (the WAL file fsynced, off the engine thread, one fsync for every commit made while the
 * previous one ran); `normal` (opt-in): once committed, no wait (see {@link SqliteQueueConfig}).
 * An operation's promise rejects with the SQLite error when its transaction failed (disk full, the
 * file locked beyond the 5 s busy timeout), or with the fsync's error (`EIO`, `ENOSPC`) when the
 * disk did not take it; the index keeps the change either way.
 * `fdatasyncFn` replaces `fs.fdatasync` (tests hold or fail it).
 * @throws the SQLite error when the file cannot be opened or is not a database; the `open`/`fsync`
 *   error when its WAL file or directory cannot.
 * @example const backend = openSqliteQueue({}, { dataDir: '/srv/app/.svc/data' })
 * @example const relaxed = openSqliteQueue({ synchronous: 'normal' }, { dataDir: '/srv/app/.svc/data' })
 */
export function openSqliteQueue(config: SqliteQueueConfig, context: QueueAdapterContext, now = Date.now(), fdatasyncFn?: FdatasyncFn): IndexedQueueBackend {
  const path = sqliteQueuePath(config, context)
  return new IndexedQueueBackend('builtin', new SqliteJournal(path, config.synchronous === 'normal' ? 'normal' : 'full', fdatasyncFn), now)
}
