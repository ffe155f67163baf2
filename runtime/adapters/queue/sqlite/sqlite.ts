/**
 * The `builtin` queue backend: the in-process index (../indexed.ts) journaled to SQLite through
 * `node:sqlite` (builtins.md §13.2): `<dataDir>/queue.db` by default, WAL journal,
 * `synchronous=FULL` (a committed message survives a power loss). The changes of one event-loop
 * turn are written in one transaction, committed before any of their promises resolve, so a burst
 * of enqueues costs one fsync rather than one each.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { IndexedQueueBackend, type IndexedMessage, type JournalChanges, type QueueJournal } from '../indexed.ts'
import type { QueueAdapterContext, SubscriberRecord } from '../types.ts'
import { jsonParse } from 'svc-protocol/json'

/** `adapter.config` of `builtin` for the queue worker. */
export interface SqliteQueueConfig {
  /** Database file; relative paths resolve against the data directory. Default `<dataDir>/queue.db`. */
  path?: string
}

export const DEFAULT_QUEUE_DB = 'queue.db'

/** The absolute database file for `config`. */
export function sqliteQueuePath(config: SqliteQueueConfig, context: QueueAdapterContext): string {
  return resolve(context.dataDir, config.path ?? DEFAULT_QUEUE_DB)
}

/** The fields of a message that never change after enqueue, stored as one JSON column. */
const BODY_FIELDS = ['function_id', 'namespace', 'data', 'metadata', 'traceparent', 'baggage', 'group', 'key', 'enqueued_at', 'size_bytes'] as const

class SqliteJournal implements QueueJournal {
  private readonly db: DatabaseSync
  private readonly statements: Record<'upsert' | 'delete' | 'idem' | 'subPut' | 'subDelete' | 'begin' | 'commit' | 'rollback', StatementSync>

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true })
    this.db = new DatabaseSync(path)
    try {
      this.db.exec(`
        PRAGMA journal_mode = WAL;
        PRAGMA synchronous = FULL;
        PRAGMA busy_timeout = 5000;
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
      `)
      const prepare = (sql: string) => this.db.prepare(sql)
      this.statements = {
        upsert: prepare(
          'INSERT INTO queue_messages (id, seq, queue, state, attempts, ready_at, failed_at, error, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
            'ON CONFLICT (id) DO UPDATE SET state = excluded.state, attempts = excluded.attempts, ready_at = excluded.ready_at, failed_at = excluded.failed_at, error = excluded.error',
        ),
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
    this.db.prepare('DELETE FROM queue_idempotency WHERE expires_at <= ?').run(now)
    const rows = this.db.prepare('SELECT id, seq, queue, state, attempts, ready_at, failed_at, error, body FROM queue_messages').all() as Array<Record<string, unknown>>
    const messages: IndexedMessage[] = rows.map((row) => {
      const body = jsonParse(row.body as string) as Record<string, unknown>
      const message: IndexedMessage = {
        id: row.id as string,
        queue: row.queue as string,
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
    const idempotency = (this.db.prepare('SELECT queue, key, id, expires_at FROM queue_idempotency').all() as Array<Record<string, unknown>>).map((r) => ({
      queue: r.queue as string,
      key: r.key as string,
      id: r.id as string,
      expires_at: Number(r.expires_at),
    }))
    const subscribers = (this.db.prepare('SELECT record FROM queue_subscribers').all() as Array<{ record: string }>).map((r) => jsonParse(r.record) as SubscriberRecord)
    return { messages, idempotency, subscribers }
  }

  write(changes: JournalChanges): void {
    const s = this.statements
    s.begin.run()
    try {
      for (const [id, message] of changes.messages) {
        if (message === null) {
          s.delete.run(id)
          continue
        }
        message.body ??= bodyOf(message)
        s.upsert.run(
          message.id,
          message.seq,
          message.queue,
          message.state,
          message.attempts,
          message.ready_at,
          message.failed_at ?? null,
          message.error ? JSON.stringify(message.error) : null,
          message.body,
        )
      }
      for (const entry of changes.idempotency) s.idem.run(entry.queue, entry.key, entry.id, entry.expires_at)
      for (const [queue, record] of changes.subscribers) {
        if (record === null) s.subDelete.run(queue)
        else s.subPut.run(queue, JSON.stringify(record))
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

function bodyOf(message: IndexedMessage): string {
  const body: Record<string, unknown> = {}
  for (const field of BODY_FIELDS) if (message[field] !== undefined) body[field] = message[field]
  return JSON.stringify(body)
}

/**
 * Opens (creating if needed) `<dataDir>/queue.db` and loads it.
 * @throws the SQLite error when the file cannot be opened or is not a database.
 * @example const backend = openSqliteQueue({}, { dataDir: '/srv/app/.svc/data' })
 */
export function openSqliteQueue(config: SqliteQueueConfig, context: QueueAdapterContext, now = Date.now()): IndexedQueueBackend {
  return new IndexedQueueBackend('builtin', new SqliteJournal(sqliteQueuePath(config, context)), now)
}
