/**
 * The `builtin` store (builtins.md §12.3): the in-memory window of {@link MemoryStore} plus
 * `<data_dir>/observability.db` (SQLite, `node:sqlite`).
 *
 * Every write to the file happens on a writer thread with its own connection, so the invocation
 * path never waits for SQLite: records are queued, serialised and handed over at most 50 ms
 * later (on the next event-loop turn once 2000 are pending); each batch is one transaction. An
 * engine span that starts and finishes before its batch leaves is written once. Span rows are
 * appended, never updated (no index on the write path): a span still unfinished when its batch
 * left gets a second, finished row, and the later row wins when the window is reloaded from the
 * file at open. The sweep (retention, and the oldest quarter of the rows while the used pages
 * exceed `max_disk_bytes`) and `clear` run on the writer too; the calling thread waits for them.
 * The size cap is also checked by the writer every 5000 rows. When the writer is 32 batches
 * behind (a flood faster than the disk), further batches skip the file (the window keeps them). Metric points stay in memory (1 h).
 */
import { Worker } from 'node:worker_threads'
import type { DatabaseSync } from 'node:sqlite'
import { openSqlite } from '../sqlite.ts'
import { spanJson, type LogRecord, type SpanRecord } from './records.ts'
import { MemoryStore, type StoreLimits } from './store.ts'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL);
`

/** Pending rows are handed to the writer at most this long after the first one, ms. */
const FLUSH_MS = 50
/** …or on the next turn once this many are pending. */
const FLUSH_ROWS = 2000
/** Batches handed over and not yet written beyond which new batches are dropped from the file. */
const MAX_BACKLOG = 32
/** Rows written between two checks of the file size (by the writer). */
const SIZE_CHECK_ROWS = 5000

/**
 * The writer thread. Messages: `{seq, spans, logs, maxBytes}` (rows as flat `[ns, json, …]`),
 * `{seq, op: 'sweep', cutoffNs, maxBytes}`, `{seq, op: 'clear', table}`, `{seq, op: 'close'}`.
 * After each one it stores `seq` in `done[0]` and notifies, so that the owner can wait.
 */
const WRITER = `
const { parentPort, workerData } = require('node:worker_threads')
const { DatabaseSync } = require('node:sqlite')
const db = new DatabaseSync(workerData.path)
db.exec('PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;')
const putSpan = db.prepare('INSERT INTO spans (start_ns, body) VALUES (?, ?)')
const putLog = db.prepare('INSERT INTO logs (ts_ns, body) VALUES (?, ?)')
const done = new Int32Array(workerData.done)
let sinceCheck = 0
const one = (sql) => Number(Object.values(db.prepare(sql).get() ?? {})[0] ?? 0)
const used = () => (one('PRAGMA page_count') - one('PRAGMA freelist_count')) * one('PRAGMA page_size')
function enforceSize(maxBytes) {
  for (let round = 0; round < 8 && used() > maxBytes; round++) {
    db.exec('DELETE FROM logs WHERE seq IN (SELECT seq FROM logs ORDER BY seq LIMIT (SELECT (COUNT(*) + 3) / 4 FROM logs)); DELETE FROM spans WHERE seq IN (SELECT seq FROM spans ORDER BY seq LIMIT (SELECT (COUNT(*) + 3) / 4 FROM spans));')
  }
}
parentPort.on('message', (m) => {
  try {
    if (m.op === 'close') {
      db.close()
    } else if (m.op === 'clear') {
      db.exec(m.table === 'logs' ? 'DELETE FROM logs' : 'DELETE FROM spans')
    } else if (m.op === 'sweep') {
      db.prepare('DELETE FROM spans WHERE start_ns < ?').run(m.cutoffNs)
      db.prepare('DELETE FROM logs WHERE ts_ns < ?').run(m.cutoffNs)
      enforceSize(m.maxBytes)
    } else {
      db.exec('BEGIN')
      try {
        for (let i = 0; i < m.spans.length; i += 2) putSpan.run(m.spans[i], m.spans[i + 1])
        for (let i = 0; i < m.logs.length; i += 2) putLog.run(m.logs[i], m.logs[i + 1])
        db.exec('COMMIT')
      } catch (error) {
        db.exec('ROLLBACK')
      }
      sinceCheck += (m.spans.length + m.logs.length) / 2
      if (sinceCheck >= ${SIZE_CHECK_ROWS}) {
        sinceCheck = 0
        enforceSize(m.maxBytes)
      }
    }
  } catch {
    // A failed write (disk full) loses this batch only; the window still has the records.
  }
  Atomics.store(done, 0, m.seq)
  Atomics.notify(done, 0)
})
`

/**
 * @example const store = new SqliteStore('/data/observability.db', limits) // throws if the file cannot be opened
 */
export class SqliteStore extends MemoryStore {
  override readonly kind = 'builtin' as const
  /** The owner's connection: reads only (reload at open, {@link usedBytes}). */
  private readonly db: DatabaseSync
  private readonly writer: Worker
  /** `done[0]`: sequence number of the last message the writer finished. */
  private readonly done = new Int32Array(new SharedArrayBuffer(4))
  private seq = 0
  /** Spans to write (by identity): an engine span that started and finished before a flush is written once. */
  private pendingSpans = new Set<SpanRecord>()
  private pendingLogs: LogRecord[] = []
  private timer: NodeJS.Timeout | undefined
  private burst = false
  private closed = false
  /** Rows not written to the file because the writer was {@link MAX_BACKLOG} batches behind. */
  droppedRows = 0

  /** @throws the SQLite error when the file cannot be opened or is not a database. */
  constructor(path: string, limits: StoreLimits) {
    super(limits)
    this.db = openSqlite(path, 'NORMAL', SCHEMA, () => ({})).db
    this.reload()
    this.writer = new Worker(WRITER, { eval: true, workerData: { path, done: this.done.buffer } })
    this.writer.unref()
    this.writer.on('error', () => {})
  }

  override putSpan(span: SpanRecord): void {
    super.putSpan(span)
    this.pendingSpans.add(span)
    this.schedule()
  }

  override updateSpan(span: SpanRecord): void {
    this.pendingSpans.add(span)
    this.schedule()
  }

  override putLog(log: LogRecord): void {
    super.putLog(log)
    this.pendingLogs.push(log)
    this.schedule()
  }

  override clearLogs(): number {
    this.flush()
    this.call({ op: 'clear', table: 'logs' })
    return super.clearLogs()
  }

  override clearSpans(): number {
    this.flush()
    this.call({ op: 'clear', table: 'spans' })
    return super.clearSpans()
  }

  override sweep(nowMs: number): void {
    super.sweep(nowMs)
    this.flush()
    this.call({ op: 'sweep', cutoffNs: (nowMs - this.limits.retentionSeconds * 1000) * 1e6, maxBytes: this.limits.maxDiskBytes })
  }

  /** Bytes of the pages in use (file size less the free pages SQLite will reuse). */
  usedBytes(): number {
    const one = (sql: string): number => Number(Object.values(this.db.prepare(sql).get() ?? {})[0] ?? 0)
    return (one('PRAGMA page_count') - one('PRAGMA freelist_count')) * one('PRAGMA page_size')
  }

  /** Writes what is pending and waits until it is in the file. */
  override flush(): void {
    const seq = this.post()
    if (seq !== undefined) this.wait(seq)
  }

  override close(): void {
    if (this.closed) return
    clearTimeout(this.timer)
    this.flush()
    this.call({ op: 'close' })
    this.closed = true
    void this.writer.terminate()
    this.db.close()
  }

  /** Hands what is pending to the writer; its sequence number, undefined when nothing was pending. */
  private post(): number | undefined {
    if (this.closed || (this.pendingSpans.size === 0 && this.pendingLogs.length === 0)) return undefined
    if (this.seq - Atomics.load(this.done, 0) >= MAX_BACKLOG) {
      // The disk cannot keep up (a flood): the window keeps the records, the file skips them,
      // so the queue to the writer stays bounded.
      this.droppedRows += this.pendingSpans.size + this.pendingLogs.length
      this.pendingSpans = new Set()
      this.pendingLogs = []
      return undefined
    }
    const spans: unknown[] = []
    for (const s of this.pendingSpans) spans.push(s.start_time_unix_nano, spanJson(s))
    const logs: unknown[] = []
    for (const l of this.pendingLogs) logs.push(l.observed_timestamp_unix_nano, JSON.stringify(l))
    this.pendingSpans = new Set()
    this.pendingLogs = []
    const seq = ++this.seq
    this.writer.postMessage({ seq, spans, logs, maxBytes: this.limits.maxDiskBytes })
    return seq
  }

  /** Sends one operation to the writer and waits for it. */
  private call(message: Record<string, unknown>): void {
    if (this.closed) return
    const seq = ++this.seq
    this.writer.postMessage({ ...message, seq })
    this.wait(seq)
  }

  /** Blocks until the writer finished message `seq` (at most 10 s). */
  private wait(seq: number): void {
    let last = Atomics.load(this.done, 0)
    while (last < seq) {
      if (Atomics.wait(this.done, 0, last, 10_000) === 'timed-out') return
      last = Atomics.load(this.done, 0)
    }
  }

  private schedule(): void {
    if (this.pendingSpans.size + this.pendingLogs.length >= FLUSH_ROWS) {
      // A burst: hand over on the next turn rather than let the queue grow.
      if (this.burst) return
      this.burst = true
      setImmediate(() => {
        this.burst = false
        this.post()
      })
      return
    }
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.post()
    }, FLUSH_MS)
    this.timer.unref()
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
