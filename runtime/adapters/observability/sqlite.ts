/**
 * The `builtin` store (builtins.md §12.3): the in-memory window of {@link MemoryStore} plus
 * `<data_dir>/observability.db` (SQLite, `node:sqlite`). Writes are queued and written in one
 * transaction at most 50 ms later (on the next event-loop turn once 2000 rows are pending), so the
 * invocation path never waits for SQLite and a span that starts and ends within that time is
 * written once (no synchronous I/O on the invocation path); at open the
 * window is reloaded with the newest records of the file. Span rows are appended, never updated
 * (no index to maintain on the write path): a span still unfinished when its turn's batch is
 * written gets a second, finished row later, and the later row wins on reload. The sweep deletes rows older than
 * `retention_seconds` and, while the used pages exceed `max_disk_bytes`, the oldest quarter of
 * the rows. Metric points stay in memory only (1 h).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { openSqlite } from '../sqlite.ts'
import type { LogRecord, SpanRecord } from './records.ts'
import { MemoryStore, type StoreLimits } from './store.ts'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL);
`

interface Statements {
  putSpan: StatementSync
  putLog: StatementSync
}

/** Pending rows are written at most this long after the first one, ms. */
const FLUSH_MS = 50
/** …or on the next turn once this many are pending. */
const FLUSH_ROWS = 2000
/** Rows written between two checks of the file size. */
const SIZE_CHECK_ROWS = 5000

/**
 * @example const store = new SqliteStore('/data/observability.db', limits) // throws if the file cannot be opened
 */
export class SqliteStore extends MemoryStore {
  override readonly kind = 'builtin' as const
  private readonly db: DatabaseSync
  private readonly st: Statements
  /** Spans to write, by `trace_id:span_id`: a span that started and ended in one turn is written once. */
  private pendingSpans = new Map<string, SpanRecord>()
  private pendingLogs: LogRecord[] = []
  private timer: NodeJS.Timeout | undefined
  private burst = false
  private sinceCheck = 0
  private closed = false

  /** @throws the SQLite error when the file cannot be opened or is not a database. */
  constructor(path: string, limits: StoreLimits) {
    super(limits)
    const { db, statements } = openSqlite(path, 'NORMAL', SCHEMA, (db) => ({
      putSpan: db.prepare('INSERT INTO spans (start_ns, body) VALUES (?, ?)'),
      putLog: db.prepare('INSERT INTO logs (ts_ns, body) VALUES (?, ?)'),
    }))
    this.db = db
    this.st = statements
    this.reload()
  }

  override putSpan(span: SpanRecord): void {
    super.putSpan(span)
    this.pendingSpans.set(span.trace_id + span.span_id, span)
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

  /** Writes what is pending, in one transaction. */
  override flush(): void {
    if (this.closed || (this.pendingSpans.size === 0 && this.pendingLogs.length === 0)) return
    const spans = this.pendingSpans
    const logs = this.pendingLogs
    this.pendingSpans = new Map()
    this.pendingLogs = []
    this.db.exec('BEGIN')
    try {
      for (const s of spans.values()) this.st.putSpan.run(s.start_time_unix_nano, JSON.stringify(s))
      for (const l of logs) this.st.putLog.run(l.observed_timestamp_unix_nano, JSON.stringify(l))
      this.db.exec('COMMIT')
    } catch (error) {
      this.db.exec('ROLLBACK')
      throw error
    }
    this.sinceCheck += spans.size + logs.length
    if (this.sinceCheck >= SIZE_CHECK_ROWS) {
      this.sinceCheck = 0
      this.enforceSize()
    }
  }

  override close(): void {
    if (this.closed) return
    clearTimeout(this.timer)
    this.flush()
    this.closed = true
    this.db.close()
  }

  private schedule(): void {
    if (this.pendingSpans.size + this.pendingLogs.length >= FLUSH_ROWS) {
      // A burst: write on the next turn rather than let the queue grow.
      if (this.burst) return
      this.burst = true
      setImmediate(() => {
        this.burst = false
        this.flushQuietly()
      })
      return
    }
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.flushQuietly()
    }, FLUSH_MS)
    this.timer.unref()
  }

  private flushQuietly(): void {
    try {
      this.flush()
    } catch {
      // A failed write (disk full) loses this batch only; the window still has the records.
    }
  }

  /** Deletes the oldest quarter of spans and logs while the used pages exceed the cap. */
  private enforceSize(): void {
    for (let round = 0; round < 8 && this.usedBytes() > this.limits.maxDiskBytes; round++) {
      this.db.exec(`DELETE FROM logs WHERE seq IN (SELECT seq FROM logs ORDER BY seq LIMIT (SELECT (COUNT(*) + 3) / 4 FROM logs));
        DELETE FROM spans WHERE seq IN (SELECT seq FROM spans ORDER BY seq LIMIT (SELECT (COUNT(*) + 3) / 4 FROM spans));`)
    }
  }

  /** Loads the newest records of the file into the window, oldest first. */
  private reload(): void {
    // Rows are appended (a span that was written unfinished has a later, finished row): later rows win.
    const spans = this.db.prepare('SELECT body FROM (SELECT body, seq FROM spans ORDER BY seq DESC LIMIT ?) ORDER BY seq').all(this.limits.maxSpans * 2)
    for (const row of spans) super.putSpan(JSON.parse(String(row.body)) as SpanRecord)
    const logs = this.db.prepare('SELECT body FROM (SELECT body, seq FROM logs ORDER BY seq DESC LIMIT ?) ORDER BY seq').all(this.limits.maxLogs)
    for (const row of logs) super.putLog(JSON.parse(String(row.body)) as LogRecord)
  }
}
