/**
 * The `builtin` store (builtins.md §12.3): the in-memory window of {@link MemoryStore} plus
 * `<data_dir>/observability.db` (SQLite, `node:sqlite`).
 *
 * Every write to the file happens on a writer thread with its own connection, so the invocation
 * path never waits for SQLite. Records are gathered into batches of at most {@link BATCH_ROWS}
 * rows or {@link BATCH_BYTES} bytes, cut as soon as one is full or {@link FLUSH_MS} after the
 * first record; each batch is one transaction. Spans travel to the writer as their fields
 * ({@link SPAN_FIELDS} values each) and are serialised there: writing a span's JSON took more of
 * the engine thread than recording it (profile of `bench/tracing.ts`). An engine span that starts and finishes before its
 * batch is cut is written once. Span rows are appended, never updated (no index on the write
 * path): a span still unfinished when its batch was cut gets a second, finished row, and the later
 * row wins when the window is reloaded from the file at open.
 *
 * Bounded whatever the ingest rate (a flood faster than the disk):
 * - at most {@link MAX_IN_FLIGHT} batches are with the writer; the others wait on this side, at
 *   most {@link MAX_QUEUED_BYTES} (and {@link MAX_QUEUED_BATCHES}) of them: beyond that the oldest
 *   waiting batch is dropped from the file and counted in {@link SqliteStore.droppedRows} (the
 *   window still has the newest records);
 * - the file stays within `max_disk_bytes`: before writing a batch the writer deletes the oldest
 *   rows of both tables (a range delete by `seq`) until the batch fits, freeing 1/16 of the cap
 *   more so that this happens about once per 1/16 of the cap written. The WAL is checkpointed
 *   every 1/8 of the cap (at most 4 MB, SQLite's default of 1000 pages of 4 KiB) and truncated to that size.
 * - a new file has {@link PAGE_SIZE} pages.
 *
 * The sweep (retention, then the size cap; `VACUUM` when the file is still larger than the cap,
 * after the cap was lowered) and `clear` run on the writer too; the calling thread waits for them.
 * Metric points stay in memory (1 h).
 *
 * Durability: the writer runs with `synchronous = OFF` (WAL), never waiting for the disk. What it
 * committed survives a crash or kill of the engine process (the OS has it); a power loss or OS crash
 * may lose recent rows or damage the file. A damaged file found at open is moved aside
 * (`observability.db.damaged-<ms>`) and an empty one takes its place, so telemetry never stops the
 * engine from starting. The fsyncs of `NORMAL` (one per WAL checkpoint, every 1/8 of the cap) took
 * half of the writer's time in the 1,000,000-line flood test.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { Worker } from 'node:worker_threads'
import { DatabaseSync } from 'node:sqlite'
import { openSqlite } from '../sqlite.ts'
import { jsonOf, type LogRecord, type SpanRecord } from './records.ts'
import { MemoryStore, type StoreLimits } from './store.ts'
import { Fifo } from '../../workers/shared/fifo.ts'
import { jsonParse } from 'svc-protocol/json'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL);
`

/**
 * Page size of a new `observability.db`, bytes. SQLite's default (4 KiB) made the writer spend a
 * third of its CPU in page splits, WAL frames and checkpoints for rows of a few hundred bytes;
 * 16 KiB pages took about a quarter less CPU per row (docs/benchmarks.md, issue 20). SQLite fixes
 * the size when the file is first written: a file made before keeps its own.
 */
export const PAGE_SIZE = 16384
/** The WAL is checkpointed at 1/8 of `max_disk_bytes`, and at most at this many bytes (SQLite's default, 1000 pages of 4 KiB). */
const MAX_WAL_BYTES = 4_096_000

/** A batch is cut at most this long after its first record, ms. */
const FLUSH_MS = 50
/** …or as soon as it holds this many rows… */
export const BATCH_ROWS = 2000
/** …or this many bytes of serialised records (UTF-16 code units, about bytes for ASCII). */
export const BATCH_BYTES = 1 << 20
/** Batches handed to the writer and not yet written. */
export const MAX_IN_FLIGHT = 2
/** Serialised bytes of the batches waiting for the writer beyond which the oldest is dropped. */
export const MAX_QUEUED_BYTES = 16 << 20
/** …or the number of waiting batches (small ones, cut by the timer while the writer is stuck). */
export const MAX_QUEUED_BATCHES = 256

/** Rows per multi-row `INSERT` statement of the writer. */
const INSERT_ROWS = 50

/**
 * Values per span in a batch, in this order: start_time_unix_nano, trace_id, span_id,
 * parent_span_id, name, kind, service_name, end_time_unix_nano, duration_ms, status,
 * status_message (null when absent), then the JSON of attributes, resource, events and links,
 * then the dropped counts as JSON members (`,"dropped_attributes_count":2`, '' when none)
 * (primitives only: structured clone copies strings far faster than objects).
 */
export const SPAN_FIELDS = 16

/** A batch for the writer: spans as flat {@link SPAN_FIELDS} values each, logs as flat `[ns, json, …]`. */
interface Batch {
  spans: unknown[]
  logs: Array<number | string>
  rows: number
  /** Serialised size (estimated for spans: their fields' text plus room for keys and numbers). */
  bytes: number
}

/**
 * The writer thread. Messages: `{seq, op: 'write', spans, logs, maxBytes}` (spans as
 * {@link SPAN_FIELDS} values each, logs as flat `[ns, json, …]`), `{seq, op: 'sweep', cutoffNs, maxBytes}`, `{seq, op: 'clear', table}`,
 * `{seq, op: 'close'}`. After each one it adds the rows it failed to write to `done[1]`, stores
 * `seq` in `done[0]` and notifies (the owner reads both without waiting for an event, and can wait
 * for a `seq`), then posts `seq` back so that an idle owner hands over the next batch.
 */
const WRITER = `
const { parentPort, workerData } = require('node:worker_threads')
const { DatabaseSync } = require('node:sqlite')
const db = new DatabaseSync(workerData.path)
// synchronous = OFF: no fsync (telemetry; a process crash loses nothing, power loss may: see the class docs).
db.exec('PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;')
/** Inserts of one row and of ${INSERT_ROWS} rows per statement, by table (fewer statements, less binding overhead). */
const inserts = {}
for (const [t, ns] of [['spans', 'start_ns'], ['logs', 'ts_ns']]) {
  const sql = 'INSERT INTO ' + t + ' (' + ns + ', body) VALUES '
  inserts[t] = { one: db.prepare(sql + '(?, ?)'), many: db.prepare(sql + Array(${INSERT_ROWS}).fill('(?, ?)').join(', ')) }
}
/** Appends flat \`[ns, json, …]\` rows to table \`t\`; the last seq, 0 when none. */
function insert(t, rows) {
  const { one, many } = inserts[t]
  let i = 0, last = 0
  for (; i + ${INSERT_ROWS * 2} <= rows.length; i += ${INSERT_ROWS * 2}) last = many.run(...rows.slice(i, i + ${INSERT_ROWS * 2})).lastInsertRowid
  for (; i < rows.length; i += 2) last = one.run(rows[i], rows[i + 1]).lastInsertRowid
  return Number(last)
}
const pragma = (name) => { const s = db.prepare('PRAGMA ' + name); return () => Number(Object.values(s.get() ?? {})[0] ?? 0) }
const pageCount = pragma('page_count'), freePages = pragma('freelist_count')
const pageSize = pragma('page_size')()
const used = () => (pageCount() - freePages()) * pageSize
const done = new Int32Array(workerData.done)
/** Oldest and newest seq of each table (rows are appended, deleted oldest first). */
const tables = {}
for (const t of ['spans', 'logs']) tables[t] = { min: 0, max: 0, oldest: db.prepare('SELECT MIN(seq) AS a, MAX(seq) AS b FROM ' + t), drop: db.prepare('DELETE FROM ' + t + ' WHERE seq < ?') }
function recount() {
  for (const t of Object.values(tables)) { const r = t.oldest.get(); t.min = Number(r.a ?? 0); t.max = Number(r.b ?? 0) }
}
recount()
let walFor = -1
function limitWal(maxBytes) {
  if (maxBytes === walFor) return
  walFor = maxBytes
  const pages = Math.max(16, Math.floor(Math.min(${MAX_WAL_BYTES}, maxBytes / 8) / pageSize))
  db.exec('PRAGMA wal_autocheckpoint = ' + pages + '; PRAGMA journal_size_limit = ' + pages * pageSize)
}
/** Deletes the oldest rows until \`incoming\` more bytes fit under \`maxBytes\` (and 1/16 of it more). */
function fit(incoming, maxBytes) {
  for (let round = 0; round < 8; round++) {
    const now = used()
    const excess = now + incoming - maxBytes
    if (excess <= 0) return
    const fraction = Math.min(1, (excess + maxBytes / 16) / Math.max(now, 1))
    let deleted = 0
    for (const t of Object.values(tables)) {
      if (t.max < t.min || t.max === 0) continue
      const n = Math.ceil((t.max - t.min + 1) * fraction)
      t.drop.run(t.min + n)
      t.min += n
      deleted += n
    }
    if (deleted === 0) return
  }
}
const quote = JSON.stringify
const number = (x) => (x === null || !Number.isFinite(x) ? 'null' : String(x))
/** Span fields (${SPAN_FIELDS} per span) to flat \`[ns, json, …]\` rows: the JSON.stringify of the record, key for key. */
function spanRows(f) {
  const rows = []
  for (let i = 0; i < f.length; i += ${SPAN_FIELDS}) {
    const message = f[i + 10] === null ? '' : ',"status_message":' + quote(f[i + 10])
    // A non-finite start (a hostile OTLP frame) would fail the NOT NULL column and the whole batch.
    rows.push(Number.isFinite(f[i]) ? f[i] : 0, '{"trace_id":' + quote(f[i + 1]) + ',"span_id":' + quote(f[i + 2]) + ',"parent_span_id":' + (f[i + 3] === null ? 'null' : quote(f[i + 3])) +
      ',"name":' + quote(f[i + 4]) + ',"kind":' + quote(f[i + 5]) + ',"service_name":' + quote(f[i + 6]) + ',"start_time_unix_nano":' + number(f[i]) +
      ',"end_time_unix_nano":' + number(f[i + 7]) + ',"duration_ms":' + number(f[i + 8]) + ',"status":' + quote(f[i + 9]) + message +
      ',"attributes":' + f[i + 11] + ',"resource":' + f[i + 12] + ',"events":' + f[i + 13] + ',"links":' + f[i + 14] + f[i + 15] + '}')
  }
  return rows
}
const textBytes = (rows) => { let n = 0; for (let i = 1; i < rows.length; i += 2) n += rows[i].length; return n }
parentPort.on('message', (m) => {
  let failed = 0
  try {
    if (m.op === 'close') {
      db.close()
    } else if (m.op === 'clear') {
      db.exec(m.table === 'logs' ? 'DELETE FROM logs' : 'DELETE FROM spans')
      recount()
    } else if (m.op === 'sweep') {
      db.prepare('DELETE FROM spans WHERE start_ns < ?').run(m.cutoffNs)
      db.prepare('DELETE FROM logs WHERE ts_ns < ?').run(m.cutoffNs)
      recount()
      fit(0, m.maxBytes)
      if (pageCount() * pageSize > m.maxBytes) {
        db.exec('VACUUM; PRAGMA wal_checkpoint(TRUNCATE)')
      }
    } else {
      limitWal(m.maxBytes)
      const batch = { spans: spanRows(m.spans), logs: m.logs }
      db.exec('BEGIN IMMEDIATE')
      try {
        // Rows need a little more room than their text: record headers, cell pointers, page slack.
        const rowCount = (batch.spans.length + batch.logs.length) / 2
        fit(Math.ceil((textBytes(batch.spans) + textBytes(batch.logs)) * 1.1) + rowCount * 8 + 2 * pageSize, m.maxBytes)
        for (const t of ['spans', 'logs']) {
          const rows = batch[t]
          if (rows.length === 0) continue
          const last = insert(t, rows)
          tables[t].max = last
          if (tables[t].min === 0) tables[t].min = last - rows.length / 2 + 1
        }
        db.exec('COMMIT')
      } catch (error) {
        db.exec('ROLLBACK')
        recount()
        failed = m.spans.length / ${SPAN_FIELDS} + m.logs.length / 2
      }
    }
  } catch {
    // A failed write (disk full) loses this batch only; the window still has the records.
    if (m.op === 'write') failed = m.spans.length / ${SPAN_FIELDS} + m.logs.length / 2
  }
  if (failed > 0) Atomics.add(done, 1, failed)
  Atomics.store(done, 0, m.seq)
  Atomics.notify(done, 0)
  parentPort.postMessage(m.seq)
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
  /** `done[0]`: sequence number of the last message the writer finished; `done[1]`: rows it failed to write. */
  private readonly done = new Int32Array(new SharedArrayBuffer(8))
  /** Sequence number of the last message posted to the writer. */
  private seq = 0
  /** Spans of the batch being filled (by identity): an engine span that started and finished before the cut is written once. */
  private pendingSpans = new Set<SpanRecord>()
  /** Log rows of the batch being filled, serialised at once (a log record never changes): `[ns, json, …]`. */
  private pendingLogs: Array<number | string> = []
  private pendingBytes = 0
  /** Cut batches not yet handed to the writer, oldest first. */
  private readonly queue = new Fifo<Batch>()
  private queuedBytes = 0
  private timer: NodeJS.Timeout | undefined
  private closed = false
  /** Rows dropped from the queue (see {@link droppedRows}). */
  private dropped = 0

  /**
   * Where a damaged `observability.db` was moved before an empty one replaced it (undefined when the
   * file opened normally).
   */
  readonly movedAside: string | undefined

  /** @throws the SQLite error when the file cannot be opened for another reason than damage (permissions, a directory). */
  constructor(path: string, limits: StoreLimits) {
    super(limits)
    let db: DatabaseSync | undefined
    try {
      create(path)
      db = openSqlite(path, 'NORMAL', SCHEMA, () => ({})).db
      this.reload(db)
    } catch (error) {
      if (!isDamaged(error)) throw error
      // Telemetry is not worth refusing to start over: keep the damaged file for inspection, start empty.
      db?.close()
      super.clearLogs()
      super.clearSpans()
      this.movedAside = `${path}.damaged-${Date.now()}`
      renameSync(path, this.movedAside)
      for (const suffix of ['-wal', '-shm']) rmSync(path + suffix, { force: true })
      create(path)
      db = openSqlite(path, 'NORMAL', SCHEMA, () => ({})).db
    }
    this.db = db
    this.writer = new Worker(WRITER, { eval: true, workerData: { path, done: this.done.buffer } })
    this.writer.on('error', () => {})
    // One message finished (writes and operations alike post back): room for the next batch.
    this.writer.on('message', () => this.pump())
    // After the listeners, which ref the port again: the store never keeps a process alive.
    this.writer.unref()
  }

  /**
   * Rows never written to the file: their batch was the oldest waiting when {@link MAX_QUEUED_BYTES}
   * was exceeded, or its transaction failed (disk full). The window still had them.
   */
  get droppedRows(): number {
    return this.dropped + Atomics.load(this.done, 1)
  }

  override putSpan(span: SpanRecord, bytes?: number): void {
    super.putSpan(span, bytes)
    this.pendingSpans.add(span)
    this.added()
  }

  override updateSpan(span: SpanRecord, bytes?: number): void {
    super.updateSpan(span, bytes)
    this.pendingSpans.add(span)
    this.added()
  }

  override putLog(log: LogRecord, bytes?: number): void {
    // The file needs the JSON anyway: its length is the record's size when none is given.
    const json = JSON.stringify(log)
    super.putLog(log, bytes ?? json.length)
    const ns = log.observed_timestamp_unix_nano
    this.pendingLogs.push(Number.isFinite(ns) ? ns : 0, json)
    this.pendingBytes += json.length
    this.added()
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

  /** Writes everything pending (the batch being filled and those waiting) and waits until it is in the file. */
  override flush(): void {
    if (this.closed) return
    this.cut()
    let last: number | undefined
    for (let batch = this.queue.shift(); batch !== undefined; batch = this.queue.shift()) last = this.post(batch)
    this.queuedBytes = 0
    if (last !== undefined) this.wait(last)
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

  /** A record joined the batch being filled: cut it when full, else make sure a timer will. */
  private added(): void {
    if (this.pendingSpans.size + this.pendingLogs.length / 2 >= BATCH_ROWS || this.pendingBytes >= BATCH_BYTES) {
      this.cut()
      this.pump()
      return
    }
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.cut()
      this.pump()
    }, FLUSH_MS)
    this.timer.unref()
  }

  /** Serialises the batch being filled into the queue; drops the oldest waiting batches beyond {@link MAX_QUEUED_BYTES}. */
  private cut(): void {
    if (this.closed || (this.pendingSpans.size === 0 && this.pendingLogs.length === 0)) return
    clearTimeout(this.timer)
    this.timer = undefined
    const spans: unknown[] = []
    let bytes = this.pendingBytes
    // The spans of one frame share their resource object: its JSON is made once per batch.
    const resources = new Map<object, string>()
    for (const s of this.pendingSpans) {
      const attributes = JSON.stringify(s.attributes)
      let resource = resources.get(s.resource)
      if (resource === undefined) resources.set(s.resource, (resource = jsonOf(s.resource)))
      const events = s.events.length === 0 ? '[]' : JSON.stringify(s.events)
      const links = s.links.length === 0 ? '[]' : JSON.stringify(s.links)
      spans.push(s.start_time_unix_nano, s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.service_name, s.end_time_unix_nano, s.duration_ms, s.status, s.status_message ?? null, attributes, resource, events, links, droppedMembers(s))
      // Room for the keys, the three numbers and the escapes of ids and names.
      bytes += 320 + s.trace_id.length + s.span_id.length + s.name.length + s.service_name.length + (s.status_message?.length ?? 0) + attributes.length + resource.length + events.length + links.length
    }
    const batch: Batch = { spans, logs: this.pendingLogs, rows: spans.length / SPAN_FIELDS + this.pendingLogs.length / 2, bytes }
    this.pendingSpans = new Set()
    this.pendingLogs = []
    this.pendingBytes = 0
    this.queue.push(batch)
    this.queuedBytes += bytes
    while ((this.queuedBytes > MAX_QUEUED_BYTES || this.queue.length > MAX_QUEUED_BATCHES) && this.queue.length > 1) {
      // The disk cannot keep up (a flood): the file skips the oldest rows; the window keeps the newest.
      const oldest = this.queue.shift()!
      this.queuedBytes -= oldest.bytes
      this.dropped += oldest.rows
    }
  }

  /**
   * Hands waiting batches to the writer while fewer than {@link MAX_IN_FLIGHT} messages are with it.
   * Read from `done[0]` at every cut, not counted from the writer's events: during a flood the event
   * loop turns rarely, and one event per turn would starve a writer that is fast enough.
   */
  private pump(): void {
    while (!this.closed && this.seq - Atomics.load(this.done, 0) < MAX_IN_FLIGHT) {
      const batch = this.queue.shift()
      if (batch === undefined) return
      this.queuedBytes -= batch.bytes
      this.post(batch)
    }
  }

  /** Posts one batch; its sequence number. */
  private post(batch: Batch): number {
    const seq = ++this.seq
    this.writer.postMessage({ seq, op: 'write', spans: batch.spans, logs: batch.logs, maxBytes: this.limits.maxDiskBytes })
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

  /**
   * Loads the newest records of the file into the window, oldest first: rows are read newest first
   * and only as many as the window can hold (by count and by bytes, a row counting its JSON's
   * length), so that opening a large file never holds more than the window in memory.
   */
  private reload(db: DatabaseSync): void {
    // Rows are appended (a span that was written unfinished has a later, finished row): later rows win.
    const spans = newestRows(db, 'spans', this.limits.maxSpans * 2, this.limits.maxSpanBytes)
    for (let i = spans.length - 1; i >= 0; i--) super.putSpan(jsonParse(spans[i]!) as SpanRecord, spans[i]!.length)
    const logs = newestRows(db, 'logs', this.limits.maxLogs, this.limits.maxLogBytes)
    for (let i = logs.length - 1; i >= 0; i--) super.putLog(jsonParse(logs[i]!) as LogRecord, logs[i]!.length)
  }
}

/** Bodies of the newest rows of `table`, newest first: at most `maxRows`, and no more once their text reaches `maxBytes`. */
function newestRows(db: DatabaseSync, table: 'spans' | 'logs', maxRows: number, maxBytes: number): string[] {
  const out: string[] = []
  let bytes = 0
  for (const row of db.prepare(`SELECT body FROM ${table} ORDER BY seq DESC LIMIT ?`).iterate(maxRows)) {
    const body = String(row.body)
    bytes += body.length
    if (bytes > maxBytes && out.length > 0) break
    out.push(body)
  }
  return out
}

/** The dropped counts of a span as JSON members to append (`,"dropped_events_count":3`), '' when it lost nothing. */
function droppedMembers(s: SpanRecord): string {
  if (s.dropped_attributes_count === undefined && s.dropped_events_count === undefined && s.dropped_links_count === undefined) return ''
  let members = ''
  if (s.dropped_attributes_count !== undefined) members += ',"dropped_attributes_count":' + s.dropped_attributes_count
  if (s.dropped_events_count !== undefined) members += ',"dropped_events_count":' + s.dropped_events_count
  if (s.dropped_links_count !== undefined) members += ',"dropped_links_count":' + s.dropped_links_count
  return members
}

/** Creates `path` (and its directory) with {@link PAGE_SIZE} pages when there is no file yet: the page size must be set before the WAL journal. */
function create(path: string): void {
  if (existsSync(path)) return
  mkdirSync(dirname(path), { recursive: true })
  const db = new DatabaseSync(path)
  try {
    db.exec(`PRAGMA page_size = ${PAGE_SIZE}; PRAGMA journal_mode = WAL`)
  } finally {
    db.close()
  }
}

/** SQLite's "damaged file" errors: `SQLITE_CORRUPT` (11) and `SQLITE_NOTADB` (26), extended codes included. */
function isDamaged(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode
  return typeof code === 'number' && ((code & 0xff) === 11 || (code & 0xff) === 26)
}

