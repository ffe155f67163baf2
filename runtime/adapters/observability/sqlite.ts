/**
 * The `builtin` store (builtins.md §12.3): the in-memory window of {@link MemoryStore} plus
 * `<data_dir>/observability.db` (SQLite, `node:sqlite`). Writes are queued and written once per
 * event-loop turn in one transaction (no synchronous I/O on the invocation path); at open the
 * window is reloaded with the newest records of the file. The sweep deletes rows older than
 * `retention_seconds` and, while the used pages exceed `max_disk_bytes`, the oldest quarter of
 * the rows. Metric points stay in memory only (1 h).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { openSqlite } from '../sqlite.ts'
import type { LogRecord, SpanRecord } from './records.ts'
import { MemoryStore, type StoreLimits } from './store.ts'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS spans (trace_id TEXT NOT NULL, span_id TEXT NOT NULL, start_ns INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (trace_id, span_id));
CREATE INDEX IF NOT EXISTS spans_start ON spans (start_ns);
CREATE TABLE IF NOT EXISTS logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL);
`

interface Statements {
  putSpan: StatementSync
  putLog: StatementSync
}

/** Rows written between two checks of the file size. */
const SIZE_CHECK_ROWS = 5000

/**
 * @example const store = new SqliteStore('/data/observability.db', limits) // throws if the file cannot be opened
 */
export class SqliteStore extends MemoryStore {
  override readonly kind = 'builtin' as const
  private readonly db: DatabaseSync
  private readonly st: Statements
  private pendingSpans: SpanRecord[] = []
  private pendingLogs: LogRecord[] = []
  private scheduled = false
  private sinceCheck = 0
  private closed = false

  /** @throws the SQLite error when the file cannot be opened or is not a database. */
  constructor(path: string, limits: StoreLimits) {
    super(limits)
    const { db, statements } = openSqlite(path, 'NORMAL', SCHEMA, (db) => ({
      putSpan: db.prepare('INSERT OR REPLACE INTO spans (trace_id, span_id, start_ns, body) VALUES (?, ?, ?, ?)'),
      putLog: db.prepare('INSERT INTO logs (ts_ns, body) VALUES (?, ?)'),
    }))
    this.db = db
    this.st = statements
    this.reload()
  }

  override putSpan(span: SpanRecord): void {
    super.putSpan(span)
    this.pendingSpans.push(span)
    this.schedule()
  }

  override putLog(log: LogRecord): void {
    super.putLog(log)
    this.pendingLogs.push(log)
    this.schedule()
  }

  override clearLogs(): number {
    this.flush()
    this.db.exec('DELETE FROM logs')
    return super.clearLogs()
  }

  override clearSpans(): number {
    this.flush()
    this.db.exec('DELETE FROM spans')
    return super.clearSpans()
  }

  override sweep(nowMs: number): void {
    super.sweep(nowMs)
    if (this.closed) return
    this.flush()
    const cutoffNs = (nowMs - this.limits.retentionSeconds * 1000) * 1e6
    this.db.prepare('DELETE FROM spans WHERE start_ns < ?').run(cutoffNs)
    this.db.prepare('DELETE FROM logs WHERE ts_ns < ?').run(cutoffNs)
    this.enforceSize()
  }

  /** Bytes of the pages in use (file size less the free pages SQLite will reuse). */
  usedBytes(): number {
    const one = (sql: string): number => Number(Object.values(this.db.prepare(sql).get() ?? {})[0] ?? 0)
    return (one('PRAGMA page_count') - one('PRAGMA freelist_count')) * one('PRAGMA page_size')
  }

  override flush(): void {
    if (this.closed || (this.pendingSpans.length === 0 && this.pendingLogs.length === 0)) return
    const spans = this.pendingSpans
    const logs = this.pendingLogs
    this.pendingSpans = []
    this.pendingLogs = []
    this.db.exec('BEGIN')
    try {
      for (const s of spans) this.st.putSpan.run(s.trace_id, s.span_id, s.start_time_unix_nano, JSON.stringify(s))
      for (const l of logs) this.st.putLog.run(l.observed_timestamp_unix_nano, JSON.stringify(l))
      this.db.exec('COMMIT')
    } catch (error) {
      this.db.exec('ROLLBACK')
      throw error
    }
    this.sinceCheck += spans.length + logs.length
    if (this.sinceCheck >= SIZE_CHECK_ROWS) {
      this.sinceCheck = 0
      this.enforceSize()
    }
  }

  override close(): void {
    if (this.closed) return
    this.flush()
    this.closed = true
    this.db.close()
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      try {
        this.flush()
      } catch {
        // A failed write (disk full) loses this batch only; the window still has the records.
      }
    })
  }

  /** Deletes the oldest quarter of spans and logs while the used pages exceed the cap. */
  private enforceSize(): void {
    for (let round = 0; round < 8 && this.usedBytes() > this.limits.maxDiskBytes; round++) {
      this.db.exec(`DELETE FROM logs WHERE seq IN (SELECT seq FROM logs ORDER BY seq LIMIT (SELECT (COUNT(*) + 3) / 4 FROM logs));
        DELETE FROM spans WHERE rowid IN (SELECT rowid FROM spans ORDER BY start_ns LIMIT (SELECT (COUNT(*) + 3) / 4 FROM spans));`)
    }
  }

  /** Loads the newest records of the file into the window, oldest first. */
  private reload(): void {
    const spans = this.db.prepare('SELECT body FROM (SELECT body, start_ns FROM spans ORDER BY start_ns DESC LIMIT ?) ORDER BY start_ns').all(this.limits.maxSpans)
    for (const row of spans) super.putSpan(JSON.parse(String(row.body)) as SpanRecord)
    const logs = this.db.prepare('SELECT body FROM (SELECT body, seq FROM logs ORDER BY seq DESC LIMIT ?) ORDER BY seq').all(this.limits.maxLogs)
    for (const row of logs) super.putLog(JSON.parse(String(row.body)) as LogRecord)
  }
}
