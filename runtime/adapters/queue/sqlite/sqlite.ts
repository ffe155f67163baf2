/**
 * The `builtin` queue backend: the in-process index (../indexed.ts) journaled to SQLite through
 * `node:sqlite` (builtins.md §13.2): `<dataDir>/queue.db` by default, WAL journal. The changes of
 * one event-loop turn are written in one transaction, committed before any of their promises
 * resolve, so a burst of enqueues costs one fsync rather than one each.
 *
 * Per commit, by what it answers (`synchronous: full`, the default): a transaction holding an
 * enqueue, a durable publish, a redrive, a discard or a subscriber record commits with
 * `PRAGMA synchronous=FULL` (an fsync of the WAL: it survives a power loss, §7.8 "durably stored
 * before its receipt id is returned"); one holding only the delivery chain's bookkeeping (an
 * attempt's start, its ack, retry or dead-letter, recovery at open) commits with `NORMAL`: written
 * to the WAL, no fsync — it survives a crash or `kill -9` of the engine (§7.8 on in-flight messages);
 * a power loss can roll back only the newest of these (WAL frames are replayed as a checksummed
 * prefix, and any later FULL commit's fsync makes every earlier frame durable), so a message is at
 * worst delivered again or one attempt counted less, never lost. SQLite takes the level per
 * connection at each commit; it may not change inside a transaction, so it is set before `BEGIN`.
 *
 * `synchronous: normal` (opt-in) commits everything with `NORMAL`. A writer thread for the commits
 * was tried (session s28, docs/benchmarks.md): it took the fsync wait off the engine thread but cost
 * 25–50 µs of CPU per commit and 15 MiB of RSS, and did not raise the rate reliably.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { IndexedQueueBackend, type IndexedMessage, type JournalChanges, type QueueJournal } from '../indexed.ts'
import type { QueueAdapterContext, SubscriberRecord } from '../types.ts'
import { jsonParse } from 'svc-protocol/json'
import { decodeBody, encodeBody } from '../body.ts'

/** `adapter.config` of `builtin` for the queue worker. */
export interface SqliteQueueConfig {
  /** Database file; relative paths resolve against the data directory. Default `<dataDir>/queue.db`. */
  path?: string
  /**
   * `full` (default, builtins.md §13.2): every commit that answers a caller (enqueue, durable
   * publish, redrive, discard) waits for the disk (fsync), so an answered message survives a power
   * loss; the delivery bookkeeping (attempt starts, acks, retries) does not wait: it survives a
   * crash or kill of the engine, and after a power loss a message may be delivered again or one
   * attempt counted less. `normal` (opt-in, relaxed): SQLite's `synchronous=NORMAL` in WAL mode for
   * every commit, no wait for the disk: everything committed survives a crash or kill of the engine
   * process (the operating system has it), but a power loss or OS crash may lose the last commits
   * (acknowledged enqueues among them) until the next WAL checkpoint.
   */
  synchronous?: 'full' | 'normal'
}

export const DEFAULT_QUEUE_DB = 'queue.db'

/** The absolute database file for `config`. */
export function sqliteQueuePath(config: SqliteQueueConfig, context: QueueAdapterContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_QUEUE_DB)
}

/**
 * The fields of a message that never change after enqueue, stored with its payload as one JSON
 * column (../body.ts: the payload's text spliced in as it arrived).
 */
const BODY_FIELDS = ['function_id', 'namespace', 'metadata', 'traceparent', 'baggage', 'group', 'key', 'enqueued_at', 'size_bytes'] as const

/**
 * The schema of queue.db. A message's row is keyed by its `seq` (the table's rowid: unique among
 * stored messages, never changed), with no index on `id` (the in-process index finds messages by
 * id; the file is read back only at open), so a commit writes one b-tree page per changed row
 * rather than two (issue 20). Databases made before keep `id TEXT PRIMARY KEY`; {@link migrate}
 * rewrites them at open.
 */
const MESSAGES_TABLE = (name: string) => `
  CREATE TABLE IF NOT EXISTS ${name} (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL,
    queue     TEXT NOT NULL,
    state     TEXT NOT NULL,
    attempts  INTEGER NOT NULL,
    ready_at  INTEGER NOT NULL,
    failed_at INTEGER,
    error     TEXT,
    body      TEXT NOT NULL
  );`
const SCHEMA = `${MESSAGES_TABLE('queue_messages')}
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

/**
 * Rewrites a `queue_messages` table of the schema before issue 20 (`id TEXT PRIMARY KEY`, `seq` a
 * plain column, so an index on `id` beside the rowid table) into the current one keyed by `seq`,
 * in one transaction: every row kept, columns unchanged. Rows sharing a `seq` (never written by
 * this backend, which numbers messages above every stored one) keep their order, the later ones
 * renumbered after the highest. Nothing when the table is already current or absent.
 * @throws the SQLite error when the file cannot be rewritten (the transaction is rolled back).
 */
function migrate(db: DatabaseSync): void {
  const columns = db.prepare('PRAGMA table_info(queue_messages)').all() as Array<{ name: string; pk: number }>
  if (columns.length === 0 || columns.some((c) => c.name === 'seq' && c.pk === 1)) return
  db.exec('BEGIN IMMEDIATE')
  try {
    db.exec(`DROP TABLE IF EXISTS queue_messages_v2; ${MESSAGES_TABLE('queue_messages_v2')}`)
    const insert = db.prepare('INSERT INTO queue_messages_v2 (seq, id, queue, state, attempts, ready_at, failed_at, error, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
    const max = Number((db.prepare('SELECT max(seq) AS m FROM queue_messages').get() as { m: number | null }).m ?? 0)
    let next = max
    let last: number | undefined
    const rows = db.prepare('SELECT seq, id, queue, state, attempts, ready_at, failed_at, error, body FROM queue_messages ORDER BY seq, rowid').iterate() as Iterable<Record<string, number | string | null>>
    for (const row of rows) {
      const seq = Number(row.seq)
      insert.run(seq === last ? ++next : seq, row.id!, row.queue!, row.state!, row.attempts!, row.ready_at!, row.failed_at ?? null, row.error ?? null, row.body!)
      last = seq
    }
    db.exec('DROP TABLE queue_messages; ALTER TABLE queue_messages_v2 RENAME TO queue_messages; COMMIT')
  } catch (error) {
    try {
      db.exec('ROLLBACK')
    } catch {
      /* the transaction is already gone */
    }
    throw error
  }
}

/** Inserts a message row, or updates the fields that change after enqueue. */
const UPSERT_SQL =
  'INSERT INTO queue_messages (seq, id, queue, state, attempts, ready_at, failed_at, error, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
  'ON CONFLICT (seq) DO UPDATE SET state = excluded.state, attempts = excluded.attempts, ready_at = excluded.ready_at, failed_at = excluded.failed_at, error = excluded.error'

/** Rewrites the fields of a stored message's row that change after enqueue (nothing when the row is missing). */
const UPDATE_SQL = 'UPDATE queue_messages SET state = ?, attempts = ?, ready_at = ?, failed_at = ?, error = ? WHERE seq = ?'

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
  update: StatementSync
  delete: StatementSync
  idem: StatementSync
  subPut: StatementSync
  subDelete: StatementSync
  begin: StatementSync
  commit: StatementSync
  rollback: StatementSync
}

/**
 * The journal of the `builtin` backend: one connection on the engine thread, one transaction per
 * turn's changes. With `synchronous` `FULL` (default) a transaction whose changes are
 * {@link JournalChanges.durable} waits for the disk and the others do not; with `NORMAL` (opt-in)
 * none does.
 */
export class SqliteJournal implements QueueJournal {
  protected readonly db: DatabaseSync
  private readonly s: Statements
  /** False with the opt-in `NORMAL`: no commit waits for the disk. */
  private readonly fsyncDurable: boolean
  /** The connection's `PRAGMA synchronous` now (it is set only when a commit needs another). */
  private level: 'FULL' | 'NORMAL'

  /**
   * Opens (creating if needed) the database file at `path` and its schema.
   * @param synchronous `FULL`: commits answering a caller are fsynced, the others not; `NORMAL`: none are.
   * @throws the SQLite error when the file cannot be opened or is not a database.
   */
  constructor(path: string, synchronous: 'FULL' | 'NORMAL') {
    this.fsyncDurable = synchronous === 'FULL'
    this.level = synchronous
    mkdirSync(dirname(path), { recursive: true })
    this.db = new DatabaseSync(path)
    try {
      this.db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 5000;`)
      migrate(this.db)
      this.db.exec(SCHEMA)
      const prepare = (sql: string) => this.db.prepare(sql)
      this.s = {
        upsert: prepare(UPSERT_SQL),
        update: prepare(UPDATE_SQL),
        delete: prepare('DELETE FROM queue_messages WHERE seq = ?'),
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
    const s = this.s
    const level = this.fsyncDurable && changes.durable ? 'FULL' : 'NORMAL'
    if (level !== this.level) {
      // exec, not a prepared statement: SQLite applies `PRAGMA synchronous = x` when it compiles
      // it, so preparing both levels up front would leave the connection at the second one.
      this.db.exec(level === 'FULL' ? 'PRAGMA synchronous = FULL' : 'PRAGMA synchronous = NORMAL')
      this.level = level
    }
    s.begin.run()
    try {
      // forEach, not for…of with destructuring: no [seq, message] pair per changed row.
      changes.messages.forEach((message, seq) => {
        if (message === null) {
          s.delete.run(seq)
          return
        }
        const error = message.error ? JSON.stringify(message.error) : null
        // A row written before (its transaction may have failed since: then the full row again).
        if (message.stored === true && Number(s.update.run(message.state, message.attempts, message.ready_at, message.failed_at ?? null, error, seq).changes) > 0) return
        s.upsert.run(seq, sqlText(message.id), sqlText(message.queue), message.state, message.attempts, message.ready_at, message.failed_at ?? null, error, bodyOf(message))
        message.stored = true
      })
      for (const entry of changes.idempotency) s.idem.run(sqlText(entry.queue), sqlText(entry.key), sqlText(entry.id), entry.expires_at)
      for (const [queue, record] of changes.subscribers) {
        if (record === null) s.subDelete.run(sqlText(queue))
        else s.subPut.run(sqlText(queue), JSON.stringify(record))
      }
      this.beforeCommit()
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

  /** Runs inside each transaction right before `COMMIT` (nothing here; a test reads the connection's state). */
  protected beforeCommit(): void {}

  close(): void {
    this.db.close()
  }
}

/** Every stored message, idempotency key (expired ones deleted first) and subscriber of `db`. */
function loadRows(db: DatabaseSync, now: number): ReturnType<QueueJournal['load']> {
  db.prepare('DELETE FROM queue_idempotency WHERE expires_at <= ?').run(now)
  const rows = db.prepare('SELECT id, seq, queue, state, attempts, ready_at, failed_at, error, body FROM queue_messages').all() as Array<Record<string, unknown>>
  const messages: IndexedMessage[] = rows.map((row) => {
    const { fields: body, data } = decodeBody(row.body as string)
    const message: IndexedMessage = {
      id: fromSqlText(row.id as string),
      queue: fromSqlText(row.queue as string),
      seq: Number(row.seq),
      state: row.state as IndexedMessage['state'],
      attempts: Number(row.attempts),
      ready_at: Number(row.ready_at),
      function_id: body.function_id as string,
      namespace: body.namespace as string,
      data,
      enqueued_at: body.enqueued_at as number,
      size_bytes: body.size_bytes as number,
      version: 0,
      stored: true,
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
  for (let i = 0; i < BODY_FIELDS.length; i++) {
    const field = BODY_FIELDS[i]!
    if (message[field] !== undefined) body[field] = message[field]
  }
  return encodeBody(body, message.data)
}

/**
 * Opens (creating if needed) `<dataDir>/queue.db` (or `config.path`) and loads it (builtins.md
 * §13.2, §7.8). `synchronous` `full` (default): each commit answering a caller waits for the disk,
 * the delivery bookkeeping does not; `normal` (opt-in): no commit waits (see {@link SqliteQueueConfig}).
 * An operation's promise rejects with the SQLite error when its transaction failed (disk full, the
 * file locked beyond the 5 s busy timeout); the index keeps the change.
 * @throws the SQLite error when the file cannot be opened or is not a database.
 * @example const backend = openSqliteQueue({}, { dataDir: '/srv/app/.svc/data' })
 * @example const relaxed = openSqliteQueue({ synchronous: 'normal' }, { dataDir: '/srv/app/.svc/data' })
 */
export function openSqliteQueue(config: SqliteQueueConfig, context: QueueAdapterContext, now = Date.now()): IndexedQueueBackend {
  const path = sqliteQueuePath(config, context)
  return new IndexedQueueBackend('builtin', new SqliteJournal(path, config.synchronous === 'normal' ? 'NORMAL' : 'FULL'), now)
}
