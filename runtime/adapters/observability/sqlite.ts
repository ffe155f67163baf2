/**
 * The `builtin` store (builtins.md §12.3): the in-memory window of {@link MemoryStore} plus
 * `<data_dir>/observability.db` (SQLite, `node:sqlite`).
 *
 * Every write to the file happens on a writer thread with its own connection, so the invocation
 * path never waits for SQLite. Records are gathered into batches of at most {@link BATCH_ROWS}
 * rows or {@link BATCH_BYTES} bytes, cut as soon as one is full or {@link FLUSH_MS} after the
 * first record; each batch is one transaction. Spans and log records travel to the writer as rows
 * of their JSON (without the resource; a log record's as UTF-8 bytes, see {@link LOG_FIELDS}, written
 * to the file as it came, in blocks of records, see {@link SCHEMA}): a span put sealed (from an `/otel` frame) is serialised
 * once, at ingest, and the window keeps that same text ({@link PackedSpan}) as UTF-8 in shared
 * chunks ({@link SpanTexts}) that the writer reads in place (its row names the chunk and the
 * bytes, not a copy of the text; the batch holds the chunk until the writer is done with it, so
 * that it is not reused before); a span object (an
 * engine span, which may still finish in place) is serialised at the cut, and one that starts and
 * finishes before its batch is cut is written once. Span rows are appended, never updated (no index on the write
 * path): a span still unfinished when its batch was cut gets a second, finished row, and the later
 * row wins when the window is reloaded from the file at open.
 *
 * A record's resource (the same few hundred bytes to kilobytes for every record of a worker) is
 * not repeated in its row: it is a row of the `resources` table, written the first time a record
 * names it and deleted with the last row that does (see {@link SCHEMA}); each batch carries the
 * JSON of its resources once. Writing it in every row made it about a third of the bytes the
 * writer wrote for an SDK's log line.
 *
 * Bounded whatever the ingest rate (a flood faster than the disk):
 * - at most {@link MAX_IN_FLIGHT} batches are with the writer; the others wait on this side, at
 *   most {@link MAX_QUEUED_BYTES} (and {@link MAX_QUEUED_BATCHES}) of them: beyond that the oldest
 *   waiting batch is dropped from the file and counted in {@link SqliteStore.droppedRows} (the
 *   window still has the newest records);
 * - the file stays within `max_disk_bytes`: before writing a batch the writer deletes the oldest
 *   rows of each table (a range delete by `seq`) until the batch fits, freeing 1/16 of the cap
 *   more so that this happens about once per 1/16 of the cap written. The WAL is checkpointed
 *   every 1/8 of the cap (at most 4 MB, SQLite's default of 1000 pages of 4 KiB) and truncated to that size.
 * - a new file has {@link PAGE_SIZE} pages.
 *
 * The sweep (retention, then the size cap; `VACUUM` when the file is still larger than the cap,
 * after the cap was lowered) and `clear` run on the writer too, in order with the batches; the
 * calling thread waits for `clear` (and `close`), not for the sweep.
 * Metric points stay in memory (1 h).
 *
 * Priority: on Linux the writer runs as `SCHED_IDLE` (set with util-linux's `chrt` when it
 * starts; nothing changes where that fails): it uses CPU the invocation path leaves idle, and the
 * bounds above decide what happens when there is none. A caller that waits for it (`flush`,
 * `clear`, `close`) gives it the normal policy after {@link BOOST_AFTER_MS} and idle priority again
 * once done: the engine's event loop is stopped meanwhile.
 *
 * Durability: the writer runs with `synchronous = OFF` (WAL), never waiting for the disk. What it
 * committed survives a crash or kill of the engine process (the OS has it); a power loss or OS crash
 * may lose recent rows or damage the file. A damaged file found at open is moved aside
 * (`observability.db.damaged-<ms>`) and an empty one takes its place, so telemetry never stops the
 * engine from starting. The fsyncs of `NORMAL` (one per WAL checkpoint, every 1/8 of the cap) took
 * half of the writer's time in the 1,000,000-line flood test.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { Worker } from 'node:worker_threads'
import { DatabaseSync } from 'node:sqlite'
import { openSqlite } from '../sqlite.ts'
import { jsonOf, PAYLOAD_EVENT_BYTES, PAYLOAD_EVENTS_HEAD, spanSize, type LogRecord, type SpanRecord } from './records.ts'
import { MemoryStore, spanBody, type SpanTexts, type StoreLimits, type TextChunk } from './store.ts'
import { Fifo } from '../../workers/shared/fifo.ts'
import { jsonParse } from 'svc-protocol/json'

/**
 * A row's `body` is its record's JSON without `resource` when `resource` names a row of
 * `resources` (the resource's JSON, stored once however many records share it); with `resource`
 * NULL (rows written before the column existed) the body holds the whole record. `last_span` and
 * `last_log` are the newest seq of each table whose rows name the resource: a resource whose
 * rows are all deleted is deleted with them.
 *
 * A log row's `ts_ns` is its record's `observed_timestamp_unix_nano` (what retention deletes by;
 * 0 when not finite). With `time_ns` not NULL, that column is the record's `timestamp_unix_nano`
 * and neither time is in `body`: printing the two 19-digit numbers was about a third of the
 * `JSON.stringify` of an SDK's log line on the engine's thread (docs/benchmarks.md, issue 20,
 * session 31). Rows with `time_ns` NULL (written before the column existed, or with a time that
 * is not a finite number) have both times in `body`.
 *
 * A log row's `body` is an array when `time_ns` is not NULL: the record's fields by position
 * ({@link LOG_ROW_FIELDS}), not an object that names them. The names were a third of the row's
 * JSON: writing them cost the engine's thread a third of the row's `JSON.stringify`, and the writer
 * (and the file) as many bytes again (docs/benchmarks.md, issue 20, session 32). Rows whose body is
 * an object (written before, or with a time that is not finite) are read as before.
 *
 * Log records are written as `log_blocks`, not as `logs` rows (which files of earlier versions
 * hold, and which are read as before): a block holds up to {@link BLOCK_LINES} records of one
 * batch, oldest first. Its `body` is their rows' JSON (as a `logs` row's `body` would hold each,
 * see above), UTF-8, back to back; its `lines` is, per record, four little-endian float64s:
 * observed ns, the end of its JSON in `body` (bytes), the id of its resource, and its timestamp
 * ns, or NaN when its JSON holds both times (a `logs` row's `ts_ns`, `resource` and `time_ns`). Its
 * `ts_ns` is the newest observed ns of its records (retention deletes a block once its newest
 * record is past it). One SQLite row per record (an index entry, a record header, a bound value
 * each) was most of the writer's CPU per log line (docs/benchmarks.md, issue 20, session 34): a
 * block costs about what one row did. `resources.last_block` is the newest block naming it.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL, resource INTEGER);
CREATE TABLE IF NOT EXISTS logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL, resource INTEGER, time_ns INTEGER);
CREATE TABLE IF NOT EXISTS log_blocks (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, lines BLOB NOT NULL, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS resources (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL UNIQUE, last_span INTEGER NOT NULL DEFAULT 0, last_log INTEGER NOT NULL DEFAULT 0, last_block INTEGER NOT NULL DEFAULT 0);
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

/** Log records per `log_blocks` row at most (see {@link SCHEMA}). */
const BLOCK_LINES = 512
/** Rows per multi-row `INSERT` statement of the writer. */
const INSERT_ROWS = 50
/**
 * …and first, this many (then {@link INSERT_ROWS}, then one at a time), for span and log rows: a
 * statement of 200 rows took about a sixth less of the writer's CPU per log row than four of 50,
 * and `INSERT OR FAIL` (no statement journal) a fifth less again (docs/benchmarks.md, issue 20,
 * session 32).
 */
const WIDE_INSERT_ROWS = 200

/**
 * How long a caller waiting for the writer (`flush`, `clear`, `close`) lets it run at idle priority
 * before giving it the normal policy for the rest of the wait, ms.
 */
const BOOST_AFTER_MS = 20
/**
 * What a log record's two times add to its JSON, bytes (`"timestamp_unix_nano":` and
 * `"observed_timestamp_unix_nano":` with 19 digits each, and their commas): counted in its size
 * when the row holds them in columns and the size is estimated from the row.
 */
const TIMES_BYTES = 96

/**
 * The fields of a log record in the array a row's `body` holds (see {@link SCHEMA}), in this
 * order; the last three, optional in a record, only when one of them is there (null for one that is
 * not). The record's resource and times are columns.
 */
const LOG_ROW_FIELDS = ['severity_number', 'severity_text', 'body', 'attributes', 'service_name', 'trace_id', 'span_id', 'instrumentation_scope_name', 'instrumentation_scope_version', 'dropped_attributes_count'] as const
/** Fields always in a log row's array (the others are optional). */
const LOG_ROW_FIXED = 7
/** Bytes of `"<name>":` of each of {@link LOG_ROW_FIELDS}: what the record's JSON as an object adds to its row. */
const LOG_KEY_BYTES = LOG_ROW_FIELDS.map((name) => name.length + 3)
/** …of the fixed ones together. */
const LOG_FIXED_KEY_BYTES = LOG_KEY_BYTES.slice(0, LOG_ROW_FIXED).reduce((a, b) => a + b, 0)

/**
 * What the body of a log row whose times are columns holds: the record's fields by position
 * ({@link LOG_ROW_FIELDS}), without its resource and times; its JSON is the body. A value JSON
 * cannot hold becomes null, as in an object (an `undefined` one too, which an object leaves out).
 */
function logRow(log: LogRecord): unknown[] {
  const name = log.instrumentation_scope_name
  const version = log.instrumentation_scope_version
  const dropped = log.dropped_attributes_count
  return name === undefined && version === undefined && dropped === undefined
    ? [log.severity_number, log.severity_text, log.body, log.attributes, log.service_name, log.trace_id, log.span_id]
    : [log.severity_number, log.severity_text, log.body, log.attributes, log.service_name, log.trace_id, log.span_id, name ?? null, version ?? null, dropped ?? null]
}

/** Bytes the record of a row's array ({@link logRow}) would take as a JSON object: the array's JSON `length`, the names of its fields added. */
function logObjectBytes(fields: unknown[], length: number): number {
  let bytes = length + LOG_FIXED_KEY_BYTES
  for (let i = LOG_ROW_FIXED; i < fields.length; i++) bytes += fields[i] === null ? -5 : LOG_KEY_BYTES[i]!
  return bytes
}

/** The record of a row's array ({@link logRow}): its fields in the order of a record that was put, the times and resource joined. */
function logOfRow(fields: unknown[], time: number, observed: number, resource: Record<string, string>): LogRecord {
  const record = {
    timestamp_unix_nano: time,
    observed_timestamp_unix_nano: observed,
    severity_number: fields[0],
    severity_text: fields[1],
    body: fields[2],
    attributes: fields[3],
    resource,
    service_name: fields[4],
    trace_id: fields[5],
    span_id: fields[6],
  } as LogRecord
  if (fields.length > LOG_ROW_FIXED) {
    if (fields[7] !== null) record.instrumentation_scope_name = fields[7] as string
    if (fields[8] !== null) record.instrumentation_scope_version = fields[8] as string
    if (fields[9] !== null) record.dropped_attributes_count = fields[9] as number
  }
  return record
}

/**
 * Numbers per span row in a batch (a `Float64Array`): `[start ns, where the span's JSON without its
 * resource is, index of the resource in the batch's resources]`. Where the JSON is: for a packed
 * span the index of its `[chunk id, offset, length]` in the batch's `packed` (its UTF-8 bytes in
 * that {@link TextChunk}, shared with the window: the writer is sent each chunk once); for a span
 * object `-1 - i`, its JSON being the batch's `bodies[i]` (strings: structured clone copies them
 * far faster than objects).
 */
const SPAN_FIELDS = 3
/**
 * Numbers per log row in a batch's `logs`: `[observed ns, end of the row's JSON in the batch's
 * `logText`, index of the resource, timestamp ns or NaN]` (NaN: the times are in the JSON); the
 * writer stores them, the index replaced by the resource's id and the end made relative to its
 * block, as a `log_blocks` row's `lines` ({@link SCHEMA}). The rows' JSON (the
 * record without its resource, and without its times when they are columns) travels as UTF-8
 * bytes, back to back, in one buffer that is shared or transferred, not copied: a row's string dies
 * young instead of waiting on the heap for its batch's cut (V8 promoted most of them to the old
 * generation, where its helper threads marked them), and the writer makes no strings of them.
 * About 0.35 µs of engine CPU per log line less, on the GC helper threads and the writer
 * (docs/benchmarks.md, issue 20, session 31).
 */
const LOG_FIELDS = 4
/** Bytes of the buffer the log rows' JSON is written into (grown for a batch that needs more, e.g. non-ASCII text). */
const LOG_TEXT_BYTES = BATCH_BYTES + (BATCH_BYTES >> 2)
/**
 * A batch with at least this many bytes of log text hands the writer the buffer it was written
 * into (a `SharedArrayBuffer`, back in {@link SqliteStore}'s pool once the writer is done with the
 * batch); a smaller one, a copy as long as its text (a waiting batch holds no more than its rows).
 * A new 1.25 MiB `ArrayBuffer` per batch, transferred, cost the engine's thread the copy and both
 * threads collections of their external memory (docs/benchmarks.md, issue 20, session 34).
 */
const SHARED_TEXT_BYTES = LOG_TEXT_BYTES >> 3
/** Free buffers of {@link LOG_TEXT_BYTES} the pool keeps at most. */
const TEXT_POOL = MAX_IN_FLIGHT + 2

/** A buffer of {@link LOG_TEXT_BYTES} for log text, shared with the writer thread. */
function sharedText(): Buffer {
  return Buffer.from(new SharedArrayBuffer(LOG_TEXT_BYTES))
}
/** The first `bytes` of `text` in an `ArrayBuffer` of their own (transferable, where a slice of a shared buffer is shared). */
function copyOf(text: Buffer, bytes: number): ArrayBuffer {
  const copy = new ArrayBuffer(bytes)
  new Uint8Array(copy).set(text.subarray(0, bytes))
  return copy
}
/** No buffer yet: the next log record takes one from the pool. */
const EMPTY_TEXT = Buffer.alloc(0)

/** `array` copied into one twice as long. */
function grown(array: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const next = new Float64Array(array.length * 2)
  next.set(array)
  return next
}

/**
 * A batch for the writer: span rows as flat {@link SPAN_FIELDS} values each, log rows as
 * {@link LOG_FIELDS} numbers each and their JSON in `logText`, and the JSON of the resources they
 * name (by index), each once.
 */
interface Batch {
  /** {@link SPAN_FIELDS} numbers per span row (transferred): a span object's JSON is `-1 - i`, its index in {@link bodies}. */
  spans: Float64Array
  /** The JSON of the batch's span objects, serialised at the cut. */
  bodies: string[]
  logs: Float64Array
  /** The log rows' JSON, UTF-8, back to back from its start: a copy exactly as long as they are, or the pooled buffer they were written into ({@link pooled}). */
  logText: ArrayBuffer | SharedArrayBuffer
  /** The pooled buffer {@link logText} is, held until the writer is done with the batch. */
  pooled: Buffer | undefined
  resources: string[]
  /** `[chunk id, offset, length]` per packed span, bytes (transferred). */
  packed: Float64Array
  /** The {@link SpanTexts} chunks the packed spans are in, held ({@link TextChunk}) until the writer is done with the batch. */
  held: TextChunk[]
  rows: number
  /** Serialised size (estimated for spans: their fields' text plus room for keys and numbers). */
  bytes: number
}

/**
 * The writer thread. Messages: `{seq, op: 'write', spans, bodies, logs, logText, resources, packed, chunks, forget, maxBytes}` (see {@link Batch}, its typed arrays and log buffer transferred; `chunks`:
 * `[id, SharedArrayBuffer]` of the span text chunks it does not know yet, kept until `forget` names their id), `{seq, op: 'sweep', cutoffNs, maxBytes}`, `{seq, op: 'clear', table}`,
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
/** Inserts of span rows (${SPAN_FIELDS} values each, see SPAN_FIELDS), largest first: \`[statement, rows it inserts]\` of ${WIDE_INSERT_ROWS} rows, then ${INSERT_ROWS}, then one (fewer statements, less binding overhead). */
// A packed span's JSON is bound as the bytes of its UTF-8 (a BLOB): CAST stores them as the same TEXT a string makes.
// OR FAIL, so that a statement of many rows needs no statement journal (SQLite copies pages into one
// for a statement that may have to undo its own rows; a failed batch is rolled back whole). The
// table has no constraint a row could break but NOT NULL, so OR FAIL changes no outcome.
const spanInserts = [${WIDE_INSERT_ROWS}, ${INSERT_ROWS}, 1].map((n) => [db.prepare('INSERT OR FAIL INTO spans (start_ns, body, resource) VALUES ' + Array(n).fill('(?, CAST(? AS TEXT), ?)').join(', ')), n])
/** Appends flat span rows (\`[ns, json, resource id, …]\`); the last seq, 0 when none. */
function insertSpans(rows) {
  let i = 0, last = 0
  for (const [statement, n] of spanInserts) {
    const block = n * ${SPAN_FIELDS}
    for (; i + block <= rows.length; i += block) last = statement.run(...rows.slice(i, i + block)).lastInsertRowid
  }
  return Number(last)
}
/** Ids of resources by their JSON, as the file has them (cleared whenever resources are deleted or a write rolled back). */
let resourceIds = new Map()
const findResource = db.prepare('SELECT id FROM resources WHERE body = ?')
const addResource = db.prepare('INSERT INTO resources (body) VALUES (?)')
const lastUse = { spans: db.prepare('UPDATE resources SET last_span = ? WHERE id = ?'), log_blocks: db.prepare('UPDATE resources SET last_block = ? WHERE id = ?') }
const pruneResources = db.prepare('DELETE FROM resources WHERE last_span < ? AND last_log < ? AND last_block < ?')
/** The ids of a batch's resources (by index), added to the file when new. */
function resourceIdsOf(texts) {
  if (resourceIds.size > 4096) resourceIds = new Map()
  return texts.map((text) => {
    let id = resourceIds.get(text)
    if (id === undefined) {
      const found = findResource.get(text)
      id = found === undefined ? Number(addResource.run(text).lastInsertRowid) : Number(found.id)
      resourceIds.set(text, id)
    }
    return id
  })
}
/** Deletes the resources no row names any more (every row up to their last use is gone). */
function prune() {
  const oldest = (t) => (t.max === 0 || t.max < t.min ? Number.MAX_SAFE_INTEGER : t.min)
  if (pruneResources.run(oldest(tables.spans), oldest(tables.logs), oldest(tables.log_blocks)).changes > 0) resourceIds = new Map()
}
const pragma = (name) => { const s = db.prepare('PRAGMA ' + name); return () => Number(Object.values(s.get() ?? {})[0] ?? 0) }
const pageCount = pragma('page_count'), freePages = pragma('freelist_count')
const pageSize = pragma('page_size')()
const used = () => (pageCount() - freePages()) * pageSize
const done = new Int32Array(workerData.done)
// Idle priority (Linux): the writer yields its core to the engine's main thread and the workers.
// Run at normal priority, its bursts took a core the three busy processes of a routed call needed
// on a two-core machine; nice does not help, as a niced thread still makes the core look busy to the
// scheduler's wake-up placement, where SCHED_IDLE does not (docs/decisions.md). Its thread id in
// done[2] says which thread it is.
if (process.platform === 'linux') {
  try {
    const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop())
    Atomics.store(done, 2, tid)
    require('node:child_process').execFile('chrt', ['--idle', '--pid', '0', String(tid)], { timeout: 10000 }, () => {})
  } catch {}
}
/** Oldest and newest seq of each table (rows are appended, deleted oldest first). */
const tables = {}
for (const t of ['spans', 'logs', 'log_blocks']) tables[t] = { min: 0, max: 0, oldest: db.prepare('SELECT MIN(seq) AS a, MAX(seq) AS b FROM ' + t), drop: db.prepare('DELETE FROM ' + t + ' WHERE seq < ?') }
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
    prune()
  }
}
const textBytes = (rows) => { let n = 0; for (let i = 1; i < rows.length; i += ${SPAN_FIELDS}) n += rows[i].length; return n }
/** The text chunks shared with the owner, by id. */
const chunks = new Map()
/** A write message's span rows as the insert takes them: each body a packed span's bytes in the shared chunks (a view) or a span object's JSON. */
function spanRows(m) {
  const spans = m.spans, packed = m.packed, rows = new Array(spans.length)
  for (let i = 0; i < spans.length; i += ${SPAN_FIELDS}) {
    const k = spans[i + 1]
    rows[i] = spans[i]
    rows[i + 1] = k >= 0 ? new Uint8Array(chunks.get(packed[k * 3]), packed[k * 3 + 1], packed[k * 3 + 2]) : m.bodies[-1 - k]
    rows[i + 2] = spans[i + 2]
  }
  return rows
}
/** Span rows as the insert takes them: the batch's resource indexes replaced by the file's ids. */
function withIds(rows, ids) {
  for (let i = 2; i < rows.length; i += ${SPAN_FIELDS}) rows[i] = ids[rows[i]]
}
const insertBlock = db.prepare('INSERT OR FAIL INTO log_blocks (ts_ns, lines, body) VALUES (?, ?, ?)')
const bigEndian = require('node:os').endianness() === 'BE'
/**
 * Appends a batch's log records (\`m.logs\`, ${LOG_FIELDS} numbers each, their JSON in \`m.logText\`) as
 * blocks of at most ${BLOCK_LINES} (see SCHEMA): each record's numbers rewritten in place to its block's
 * (the end of its JSON from the block's start, the file's id of its resource), written as they are.
 */
function writeBlocks(m, ids) {
  const meta = m.logs
  const lines = meta.length / ${LOG_FIELDS}
  const lastBlock = new Map()
  let start = 0
  for (let first = 0; first < lines; first += ${BLOCK_LINES}) {
    const end = Math.min(lines, first + ${BLOCK_LINES})
    const textEnd = meta[(end - 1) * ${LOG_FIELDS} + 1]
    let newest = 0
    for (let i = first * ${LOG_FIELDS}; i < end * ${LOG_FIELDS}; i += ${LOG_FIELDS}) {
      if (meta[i] > newest) newest = meta[i]
      meta[i + 1] -= start
      meta[i + 2] = ids[meta[i + 2]]
    }
    const numbers = new Uint8Array(meta.buffer, first * ${LOG_FIELDS * 8}, (end - first) * ${LOG_FIELDS * 8})
    if (bigEndian) Buffer.from(numbers.buffer, numbers.byteOffset, numbers.byteLength).swap64()
    const seq = Number(insertBlock.run(newest, numbers, new Uint8Array(m.logText, start, textEnd - start)).lastInsertRowid)
    for (let i = first * ${LOG_FIELDS} + 2; i < end * ${LOG_FIELDS}; i += ${LOG_FIELDS}) lastBlock.set(meta[i], seq)
    if (tables.log_blocks.min === 0) tables.log_blocks.min = seq
    tables.log_blocks.max = seq
    start = textEnd
  }
  for (const [id, seq] of lastBlock) lastUse.log_blocks.run(seq, id)
}
/** Rows of a write message. */
const rowsOf = (m) => m.spans.length / ${SPAN_FIELDS} + m.logs.length / ${LOG_FIELDS}
parentPort.on('message', (m) => {
  let failed = 0
  try {
    if (m.op === 'close') {
      db.close()
    } else if (m.op === 'clear') {
      db.exec(m.table === 'logs' ? 'DELETE FROM logs; DELETE FROM log_blocks' : 'DELETE FROM spans')
      recount()
      prune()
    } else if (m.op === 'sweep') {
      db.prepare('DELETE FROM spans WHERE start_ns < ?').run(m.cutoffNs)
      db.prepare('DELETE FROM logs WHERE ts_ns < ?').run(m.cutoffNs)
      db.prepare('DELETE FROM log_blocks WHERE ts_ns < ?').run(m.cutoffNs)
      recount()
      prune()
      fit(0, m.maxBytes)
      if (pageCount() * pageSize > m.maxBytes) {
        db.exec('VACUUM; PRAGMA wal_checkpoint(TRUNCATE)')
      }
    } else {
      limitWal(m.maxBytes)
      for (const id of m.forget) chunks.delete(id)
      for (const [id, buffer] of m.chunks) chunks.set(id, buffer)
      const rows = spanRows(m)
      db.exec('BEGIN IMMEDIATE')
      try {
        // Rows need a little more room than their text: record headers, cell pointers, page slack.
        const rowCount = rowsOf(m)
        let resourceBytes = 0
        for (const text of m.resources) resourceBytes += text.length
        // A log row's timestamp column (8 bytes) is counted with the row's 8 of overhead.
        const logBytes = m.logs.length === 0 ? 0 : m.logs[m.logs.length - ${LOG_FIELDS} + 1]
        fit(Math.ceil((textBytes(rows) + logBytes + resourceBytes) * 1.1) + rowCount * 8 + 2 * pageSize, m.maxBytes)
        // After fit: a resource it deleted is added again.
        const ids = resourceIdsOf(m.resources)
        withIds(rows, ids)
        if (rows.length > 0) {
          const w = ${SPAN_FIELDS}
          const last = insertSpans(rows)
          tables.spans.max = last
          if (tables.spans.min === 0) tables.spans.min = last - rows.length / w + 1
          // The seq of each resource's last row (a transaction's rows have consecutive seqs).
          const lastRow = new Map()
          for (let i = 0; i < rows.length; i += w) lastRow.set(rows[i + 2], i / w)
          for (const [id, n] of lastRow) lastUse.spans.run(last - (rows.length / w - 1 - n), id)
        }
        if (m.logs.length > 0) writeBlocks(m, ids)
        db.exec('COMMIT')
      } catch (error) {
        // SQLite may have rolled the transaction back itself (an I/O error, a full disk, a statement without a statement journal).
        if (db.isTransaction) db.exec('ROLLBACK')
        recount()
        resourceIds = new Map()
        failed = rowsOf(m)
      }
    }
  } catch {
    // A failed write (disk full) loses this batch only; the window still has the records.
    if (m.op === 'write') failed = rowsOf(m)
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
  /** `done[0]`: sequence number of the last message the writer finished; `done[1]`: rows it failed to write; `done[2]`: the writer's thread id (Linux). */
  private readonly done = new Int32Array(new SharedArrayBuffer(12))
  /** Sequence number of the last message posted to the writer. */
  private seq = 0
  /**
   * Span rows of the batch being filled ({@link SPAN_FIELDS} numbers each, {@link spanRows} of them
   * used): for a sealed span, the index of its bytes in {@link pendingPacked} (the window's
   * {@link PackedSpan} body), for a span object `-1 - i`, `i` its index in {@link pendingObjectSpans}
   * (it may still finish in place: serialised at the cut). Typed arrays reused from batch to batch,
   * not arrays pushed to: a batch lives for up to {@link BATCH_ROWS} spans, and the growing arrays'
   * elements were most of what each scavenge had to copy with telemetry on (issue 20).
   */
  private pendingSpans = new Float64Array(BATCH_ROWS * SPAN_FIELDS)
  private spanRows = 0
  /** `[chunk id, offset, length]` of the batch's packed spans (see {@link Batch}), {@link packedCount} of them. */
  private pendingPacked = new Float64Array(BATCH_ROWS * 3)
  private packedCount = 0
  /** The span objects of the batch being filled, in row order. */
  private pendingObjectSpans: SpanRecord[] = []
  /** The chunks {@link pendingPacked} names, each held once by the batch. */
  private pendingChunks: TextChunk[] = []
  /** Chunks the writer was sent (it keeps them), and the ids of those since let go for good, for it to forget. */
  private readonly writerChunks = new Set<TextChunk>()
  private forget: number[] = []
  /** Posted batches' chunks, held until the writer finished the batch (`done[0]` reaches `seq`), oldest first. */
  private posted: Array<{ seq: number; held: TextChunk[]; pooled: Buffer | undefined }> = []
  /** The span objects among {@link pendingSpans}: an engine span that started and finished before the cut is written once. */
  private pendingObjects = new Set<SpanRecord>()
  /**
   * Log rows of the batch being filled, serialised at once (a log record never changes): their
   * {@link LOG_FIELDS} numbers each in `logMeta`, their JSON as UTF-8 in `logText` (`logTextAt`
   * bytes of it used); both copied out, exactly as long as they are, at the cut.
   */
  private logMeta = new Float64Array(BATCH_ROWS * LOG_FIELDS)
  private logRows = 0
  private logText = sharedText()
  private logTextAt = 0
  /** Buffers of {@link LOG_TEXT_BYTES} the writer is done with, for the next batches (at most {@link TEXT_POOL}). */
  private readonly freeTexts: Buffer[] = []
  /** The resources of the batch being filled (their JSON, each once) and their indexes by object. */
  private pendingResources: string[] = []
  private resourceIndexes = new Map<object, number>()
  private pendingBytes = 0
  /** Cut batches not yet handed to the writer, oldest first. */
  private readonly queue = new Fifo<Batch>()
  private queuedBytes = 0
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private closing = false
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
      addColumns(db)
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
    this.texts.onDrop = (chunk) => {
      if (this.writerChunks.delete(chunk)) this.forget.push(chunk.id)
    }
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
  /**
   * The writer thread's id (Linux `gettid`, as in `/proc/<pid>/task/`), once it has started;
   * undefined before and on other systems. The writer asks for `SCHED_IDLE` for itself at start.
   */
  get writerThreadId(): number | undefined {
    return Atomics.load(this.done, 2) || undefined
  }

  get droppedRows(): number {
    return this.dropped + Atomics.load(this.done, 1)
  }

  override putSpan(span: SpanRecord, bytes?: number, sealed = false, body?: string): void {
    if (sealed) {
      // One serialisation for both: the window keeps the row's body, and the writer reads it there.
      const texts = this.texts
      this.putPacked(span, body ?? spanBody(span), bytes ?? spanSize(span))
      // Where the window's text of the span is (evicting can only have let go of other chunks: the one being filled is held).
      const chunk = texts.chunk
      const ns = span.start_time_unix_nano
      if (chunk !== this.pendingChunks.at(-1)) {
        texts.retain(chunk)
        this.pendingChunks.push(chunk)
      }
      this.pushRow(Number.isFinite(ns) ? ns : 0, this.pushPacked(chunk.id, texts.textAt, texts.written), this.resourceIndex(span.resource))
      this.pendingBytes += texts.written
    } else {
      super.putSpan(span, bytes)
      this.pendObject(span)
    }
    this.added()
  }

  override updateSpan(span: SpanRecord, bytes?: number): void {
    super.updateSpan(span, bytes)
    this.pendObject(span)
    this.added()
  }

  /** Adds a span object to the batch being filled, once (serialised at the cut). */
  private pendObject(span: SpanRecord): void {
    if (this.pendingObjects.has(span)) return
    this.pendingObjects.add(span)
    this.pushRow(0, -this.pendingObjectSpans.push(span), this.resourceIndex(span.resource))
  }

  /** Appends a span row to {@link pendingSpans}. */
  private pushRow(ns: number, body: number, resource: number): void {
    let i = this.spanRows * SPAN_FIELDS
    if (i === this.pendingSpans.length) this.pendingSpans = grown(this.pendingSpans)
    const rows = this.pendingSpans
    rows[i++] = ns
    rows[i++] = body
    rows[i] = resource
    this.spanRows++
  }

  /** Appends a packed span's `[chunk id, offset, length]` to {@link pendingPacked}; its index. */
  private pushPacked(chunk: number, offset: number, length: number): number {
    let i = this.packedCount * 3
    if (i === this.pendingPacked.length) this.pendingPacked = grown(this.pendingPacked)
    const packed = this.pendingPacked
    packed[i++] = chunk
    packed[i++] = offset
    packed[i] = length
    return this.packedCount++
  }

  override putLog(log: LogRecord, bytes?: number): void {
    // The row holds the record without its resource, which is written once per batch and file, and
    // without its times, which are columns (see SCHEMA) unless one is not a finite number.
    const resource = log.resource
    const time = log.timestamp_unix_nano
    const observed = log.observed_timestamp_unix_nano
    const apart = Number.isFinite(time) && Number.isFinite(observed)
    let json: string
    // The file needs the JSON anyway: its length is the record's size when none is given.
    let size: number
    if (apart) {
      const fields = logRow(log)
      json = JSON.stringify(fields)
      size = bytes === undefined ? logObjectBytes(fields, json.length) + TIMES_BYTES : 0
    } else {
      if (Reflect.set(log, 'resource', undefined)) {
        try {
          json = JSON.stringify(log)
        } finally {
          log.resource = resource
        }
      } else json = JSON.stringify({ ...log, resource: undefined })
      size = json.length
    }
    const index = this.resourceIndex(resource)
    super.putLog(log, bytes ?? size + this.pendingResources[index]!.length + 12)
    // At most 3 bytes of UTF-8 per UTF-16 unit (JSON.stringify leaves no lone surrogate).
    if (this.logText.length === 0) this.logText = this.freeTexts.pop() ?? sharedText()
    if (this.logTextAt + json.length * 3 > this.logText.length) this.growText(this.logTextAt + json.length * 3)
    this.logTextAt += this.logText.write(json, this.logTextAt)
    let i = this.logRows * LOG_FIELDS
    if (i === this.logMeta.length) {
      const meta = new Float64Array(i * 2)
      meta.set(this.logMeta)
      this.logMeta = meta
    }
    const meta = this.logMeta
    meta[i++] = Number.isFinite(observed) ? observed : 0
    meta[i++] = this.logTextAt
    meta[i++] = index
    meta[i] = apart ? time : NaN
    this.logRows++
    this.pendingBytes += json.length
    this.added()
  }

  /** Replaces {@link logText} with a buffer of at least `bytes`, keeping what it holds. */
  private growText(bytes: number): void {
    const text = Buffer.allocUnsafeSlow(Math.max(bytes, this.logText.length * 2))
    this.logText.copy(text, 0, 0, this.logTextAt)
    // A pooled buffer (no other is as long) goes back to the pool.
    if (this.logText.length === LOG_TEXT_BYTES) this.freeText(this.logText)
    this.logText = text
  }

  /** The index of `resource` in the batch being filled, its JSON added when it is the first record naming it. */
  private resourceIndex(resource: object): number {
    let index = this.resourceIndexes.get(resource)
    if (index === undefined) {
      const json = jsonOf(resource)
      index = this.pendingResources.push(json) - 1
      this.resourceIndexes.set(resource, index)
      this.pendingBytes += json.length
    }
    return index
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

  /**
   * Retention and the size cap: at once in the window; in the file after the batches cut before
   * it, by the writer, without waiting for it. The writer runs at idle priority: on a machine with
   * no idle CPU it may take long, and the engine's event loop must not stop meanwhile
   * ({@link flush} after it waits, where a caller needs the file swept).
   */
  override sweep(nowMs: number): void {
    super.sweep(nowMs)
    if (this.closed) return
    this.cut()
    for (let batch = this.queue.shift(); batch !== undefined; batch = this.queue.shift()) this.post(batch)
    this.queuedBytes = 0
    this.writer.postMessage({ op: 'sweep', seq: ++this.seq, cutoffNs: (nowMs - this.limits.retentionSeconds * 1000) * 1e6, maxBytes: this.limits.maxDiskBytes })
  }

  /** Bytes of the pages in use (file size less the free pages SQLite will reuse). */
  usedBytes(): number {
    const one = (sql: string): number => Number(Object.values(this.db.prepare(sql).get() ?? {})[0] ?? 0)
    return (one('PRAGMA page_count') - one('PRAGMA freelist_count')) * one('PRAGMA page_size')
  }

  /** Writes everything pending (the batch being filled and those waiting) and waits until it, and every sweep posted before, is in the file. */
  override flush(): void {
    if (this.closed) return
    this.cut()
    for (let batch = this.queue.shift(); batch !== undefined; batch = this.queue.shift()) this.post(batch)
    this.queuedBytes = 0
    // Everything posted so far, a sweep's work included.
    this.wait(this.seq)
    this.reap()
  }

  override close(): void {
    if (this.closed) return
    clearTimeout(this.timer)
    // The writer ends with the store: no need to give it back its idle priority after the waits.
    this.closing = true
    this.flush()
    this.call({ op: 'close' })
    this.closed = true
    void this.writer.terminate()
    this.db.close()
  }

  /** A record joined the batch being filled: cut it when full, else make sure a timer will. */
  private added(): void {
    if (this.spanRows + this.logRows >= BATCH_ROWS || this.pendingBytes >= BATCH_BYTES) {
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
    if (this.closed || (this.spanRows === 0 && this.logRows === 0)) return
    clearTimeout(this.timer)
    this.timer = undefined
    const spans = this.pendingSpans.slice(0, this.spanRows * SPAN_FIELDS)
    const objects = this.pendingObjectSpans
    const bodies: string[] = []
    // The span and log bodies and every resource's JSON so far; the span objects' JSON now.
    let bytes = this.pendingBytes
    for (let i = 1; objects.length > 0 && i < spans.length; i += SPAN_FIELDS) {
      const k = spans[i]!
      if (k >= 0) continue
      const span = objects[-1 - k]!
      const body = spanBody(span)
      // A non-finite start (a hostile OTLP frame) would fail the NOT NULL column and the whole batch.
      spans[i - 1] = Number.isFinite(span.start_time_unix_nano) ? span.start_time_unix_nano : 0
      bodies[-1 - k] = body
      bytes += body.length
    }
    const text = this.logText
    const pooled = this.logTextAt >= SHARED_TEXT_BYTES && text.length === LOG_TEXT_BYTES ? text : undefined
    const batch: Batch = {
      spans,
      bodies,
      logs: this.logMeta.slice(0, this.logRows * LOG_FIELDS),
      logText: pooled !== undefined ? text.buffer : copyOf(text, this.logTextAt),
      pooled,
      resources: this.pendingResources,
      packed: this.pendingPacked.slice(0, this.packedCount * 3),
      held: this.pendingChunks,
      rows: this.spanRows + this.logRows,
      bytes,
    }
    this.spanRows = 0
    this.packedCount = 0
    this.pendingObjectSpans = []
    this.pendingChunks = []
    this.pendingObjects = new Set()
    this.logRows = 0
    this.logTextAt = 0
    // A buffer handed over or grown for one batch is not kept: the next from the pool, taken when the next log record comes.
    if (pooled !== undefined || text.length > LOG_TEXT_BYTES) this.logText = EMPTY_TEXT
    this.pendingResources = []
    this.resourceIndexes = new Map()
    this.pendingBytes = 0
    this.queue.push(batch)
    this.queuedBytes += bytes
    while ((this.queuedBytes > MAX_QUEUED_BYTES || this.queue.length > MAX_QUEUED_BATCHES) && this.queue.length > 1) {
      // The disk cannot keep up (a flood): the file skips the oldest rows; the window keeps the newest.
      const oldest = this.queue.shift()!
      this.queuedBytes -= oldest.bytes
      this.dropped += oldest.rows
      for (const chunk of oldest.held) this.texts.release(chunk)
      this.freeText(oldest.pooled)
    }
  }

  /** Puts a pooled log text buffer the writer no longer reads back in the pool. */
  private freeText(text: Buffer | undefined): void {
    if (text !== undefined && this.freeTexts.length < TEXT_POOL) this.freeTexts.push(text)
  }

  /** Lets go of the chunks of the batches the writer finished. */
  private reap(): void {
    const done = Atomics.load(this.done, 0)
    const posted = this.posted
    while (posted.length > 0 && posted[0]!.seq <= done) {
      const batch = posted.shift()!
      for (const chunk of batch.held) this.texts.release(chunk)
      this.freeText(batch.pooled)
    }
  }

  /**
   * Hands waiting batches to the writer while fewer than {@link MAX_IN_FLIGHT} messages are with it.
   * Read from `done[0]` at every cut, not counted from the writer's events: during a flood the event
   * loop turns rarely, and one event per turn would starve a writer that is fast enough.
   */
  private pump(): void {
    this.reap()
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
    // Decided when posted, not cut: the batch that was to introduce a chunk may have been dropped.
    const chunks: Array<[number, SharedArrayBuffer]> = []
    for (const chunk of batch.held) {
      if (this.writerChunks.has(chunk)) continue
      this.writerChunks.add(chunk)
      chunks.push([chunk.id, chunk.bytes.buffer as SharedArrayBuffer])
    }
    const forget = this.forget
    this.forget = []
    this.writer.postMessage(
      { seq, op: 'write', spans: batch.spans, bodies: batch.bodies, logs: batch.logs, logText: batch.logText, resources: batch.resources, packed: batch.packed, chunks, forget, maxBytes: this.limits.maxDiskBytes },
      [batch.spans.buffer as ArrayBuffer, batch.packed.buffer as ArrayBuffer, batch.logs.buffer as ArrayBuffer, ...(batch.pooled === undefined ? [batch.logText as ArrayBuffer] : [])],
    )
    if (batch.held.length > 0 || batch.pooled !== undefined) this.posted.push({ seq, held: batch.held, pooled: batch.pooled })
    return seq
  }

  /** Sends one operation to the writer and waits for it. */
  private call(message: Record<string, unknown>): void {
    if (this.closed) return
    const seq = ++this.seq
    this.writer.postMessage({ ...message, seq })
    this.wait(seq)
  }

  /**
   * Blocks until the writer finished message `seq` (giving up after 10 s without progress). A
   * writer not done within {@link BOOST_AFTER_MS} runs at the normal policy until then: at idle
   * priority on a machine with no idle CPU it would get almost none, and the caller (`flush`,
   * `clear`, `close`) is waiting for it, the event loop stopped.
   */
  private wait(seq: number): void {
    let last = Atomics.load(this.done, 0)
    if (last >= seq) return
    let boosted = false
    while (last < seq) {
      if (Atomics.wait(this.done, 0, last, boosted ? 10_000 : BOOST_AFTER_MS) === 'timed-out') {
        if (boosted) break
        boosted = this.writerPolicy('--other')
      }
      last = Atomics.load(this.done, 0)
    }
    if (boosted && !this.closing) this.writerPolicy('--idle')
  }

  /** Sets the writer thread's scheduling policy with util-linux's `chrt` (`--other`, `--idle`); whether it did. */
  private writerPolicy(policy: '--other' | '--idle'): boolean {
    const tid = this.writerThreadId
    if (tid === undefined) return false
    return spawnSync('chrt', [policy, '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 2000 }).status === 0
  }

  /**
   * Loads the newest records of the file into the window, oldest first: rows are read newest first
   * and only as many as the window can hold (by count and by bytes, a row counting its JSON's
   * length), so that opening a large file never holds more than the window in memory.
   */
  private reload(db: DatabaseSync): void {
    const resources = new Resources(db)
    // Rows are appended (a span that was written unfinished has a later, finished row): later rows win.
    const spans = newestRows(db, 'spans', this.limits.maxSpans * 2, this.limits.maxSpanBytes, resources)
    for (let i = spans.length - 1; i >= 0; i--) {
      const row = spans[i]!
      const record = resources.record<SpanRecord>(row)
      // The window keeps the row's text (a row of the current form holds no resource: a PackedSpan's body).
      if (row.resource === null) super.putSpan(record, row.bytes)
      else this.putPacked(record, row.body, row.bytes)
    }
    const logs = newestLogRows(db, this.limits.maxLogs, this.limits.maxLogBytes, resources)
    for (let i = logs.length - 1; i >= 0; i--) super.putLog(logRecord(logs[i]!, resources), logs[i]!.bytes)
  }
}

/**
 * A row read back: its body, the id of its resource (null: the body holds it), its size in the
 * window (body and resource JSON); for a log row whose times are columns (`time_ns` not NULL),
 * `time` and `observed`.
 */
interface Row {
  body: string
  resource: number | null
  bytes: number
  time?: number
  observed?: number
  /** A log row's body parsed, when it is an array ({@link logRow}). */
  fields?: unknown[]
}

/** The record of a log row: its times, when the row has them in columns, first, as in the record that was put. */
function logRecord(row: Row, resources: Resources): LogRecord {
  if (row.fields !== undefined) return logOfRow(row.fields, row.time!, row.observed!, resources.value(row.resource))
  const record = resources.record<LogRecord>(row)
  if (row.time === undefined) return record
  return Object.assign({ timestamp_unix_nano: row.time, observed_timestamp_unix_nano: row.observed! }, record)
}

/** The `resources` of the file as reload reads them: each parsed once, shared by the records that name it. */
class Resources {
  private readonly statement
  private readonly byId = new Map<number, { text: string; value: Record<string, string> | undefined }>()

  constructor(db: DatabaseSync) {
    this.statement = db.prepare('SELECT body FROM resources WHERE id = ?')
  }

  /** The JSON of resource `id` ('{}' when the file lacks it). */
  text(id: number): string {
    let entry = this.byId.get(id)
    if (entry === undefined) this.byId.set(id, (entry = { text: String(this.statement.get(id)?.body ?? '{}'), value: undefined }))
    return entry.text
  }

  /** The record of a row, its resource joined. */
  record<T extends { resource: Record<string, string> }>(row: Row): T {
    const record = jsonParse(row.body) as T
    if (row.resource === null) return record
    record.resource = this.value(row.resource)
    return record
  }

  /** Resource `id` parsed, once (an empty one for null: a row that names none). */
  value(id: number | null): Record<string, string> {
    if (id === null) return {}
    this.text(id)
    const entry = this.byId.get(id)!
    entry.value ??= jsonParse(entry.text) as Record<string, string>
    return entry.value
  }
}

/** The newest rows of `table`, newest first: at most `maxRows`, and no more once their text reaches `maxBytes`. */
function newestRows(db: DatabaseSync, table: 'spans' | 'logs', maxRows: number, maxBytes: number, resources: Resources): Row[] {
  const out: Row[] = []
  let bytes = 0
  // As REAL: node:sqlite refuses integers beyond 2^53, and nanosecond times are (the column took a
  // double's exact value, which converts back exactly).
  const columns = table === 'logs' ? 'body, resource, CAST(ts_ns AS REAL) AS ts_ns, CAST(time_ns AS REAL) AS time_ns' : 'body, resource'
  for (const row of db.prepare(`SELECT ${columns} FROM ${table} ORDER BY seq DESC LIMIT ?`).iterate(maxRows)) {
    const body = String(row.body)
    const resource = row.resource === null ? null : Number(row.resource)
    const apart = row.time_ns !== undefined && row.time_ns !== null
    // An array body (logRow) counts as the object it stands for.
    const fields = apart && body.charCodeAt(0) === 0x5b ? (jsonParse(body) as unknown[]) : undefined
    const size =
      (fields === undefined ? body.length : logObjectBytes(fields, body.length)) +
      (apart ? TIMES_BYTES : 0) +
      (resource === null ? 0 : resources.text(resource).length + 12) +
      (table === 'spans' && body.includes(PAYLOAD_EVENTS_HEAD) ? 2 * PAYLOAD_EVENT_BYTES : 0) // counted as the span with its two events
    bytes += size
    if (bytes > maxBytes && out.length > 0) break
    out.push(apart ? { body, resource, bytes: size, time: Number(row.time_ns), observed: Number(row.ts_ns), fields } : { body, resource, bytes: size })
  }
  return out
}

/**
 * The newest log records of the file as rows, newest first: those of `log_blocks`, then (files
 * written by earlier versions) of `logs`, whose rows are all older than any block; at most
 * `maxRows`, and no more once their text reaches `maxBytes` (see {@link newestRows}).
 */
function newestLogRows(db: DatabaseSync, maxRows: number, maxBytes: number, resources: Resources): Row[] {
  const out: Row[] = []
  let bytes = 0
  for (const block of db.prepare('SELECT lines, body FROM log_blocks ORDER BY seq DESC').iterate()) {
    const numbers = block.lines as Uint8Array
    const view = new DataView(numbers.buffer, numbers.byteOffset, numbers.byteLength)
    const text = block.body as Uint8Array
    const body = Buffer.from(text.buffer, text.byteOffset, text.byteLength)
    for (let i = numbers.byteLength / (LOG_FIELDS * 8) - 1; i >= 0; i--) {
      if (out.length >= maxRows) return out
      const at = i * LOG_FIELDS * 8
      const start = i === 0 ? 0 : view.getFloat64(at - LOG_FIELDS * 8 + 8, true)
      const row = logLine(body.toString('utf8', start, view.getFloat64(at + 8, true)), view.getFloat64(at, true), view.getFloat64(at + 24, true), view.getFloat64(at + 16, true), resources)
      bytes += row.bytes
      if (bytes > maxBytes && out.length > 0) return out
      out.push(row)
    }
  }
  if (out.length >= maxRows) return out
  for (const row of newestRows(db, 'logs', maxRows - out.length, maxBytes - bytes, resources)) {
    bytes += row.bytes
    if (bytes > maxBytes && out.length > 0) break
    out.push(row)
  }
  return out
}

/** The row of a record of a block: its JSON, times (`time` NaN: they are in its JSON) and resource. */
function logLine(body: string, observed: number, time: number, resource: number, resources: Resources): Row {
  const apart = time === time
  // An array body (logRow) counts as the object it stands for.
  const fields = apart && body.charCodeAt(0) === 0x5b ? (jsonParse(body) as unknown[]) : undefined
  const bytes = (fields === undefined ? body.length : logObjectBytes(fields, body.length)) + (apart ? TIMES_BYTES : 0) + resources.text(resource).length + 12
  return apart ? { body, resource, bytes, time, observed, fields } : { body, resource, bytes }
}

/**
 * Adds the columns a file made before they existed lacks: `resource` (its rows keep NULL: their
 * body holds the resource), the logs' `time_ns` (NULL: the body holds the times) and
 * `resources.last_block` (0: no block names it yet).
 */
function addColumns(db: DatabaseSync): void {
  for (const [table, added] of [['spans', ['resource']], ['logs', ['resource', 'time_ns']], ['resources', ['last_block']]] as const) {
    const columns = db.prepare(`PRAGMA table_info(${table})`).all().map((c) => c.name)
    for (const column of added) if (!columns.includes(column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} INTEGER${table === 'resources' ? ' NOT NULL DEFAULT 0' : ''}`)
  }
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

