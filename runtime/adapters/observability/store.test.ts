import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { tmpdir } from 'node:os'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { jsonParse } from 'svc-protocol/json'
import { LIMITS, log, runStoreConformance, span } from './conformance.ts'
import { BATCH_BYTES, MAX_IN_FLIGHT, MAX_QUEUED_BYTES, PAGE_SIZE, SqliteStore } from './sqlite.ts'
import { fullSpan, headFunctionId, MemoryStore, NoStore, RECORD_OVERHEAD_BYTES, TEXT_CHUNK_BYTES, type StoreLimits } from './store.ts'
import type { LogRecord, SpanRecord } from './records.ts'
import { attributeMap } from '../../workers/observability/otlp.ts'
import { RawJson } from 'svc-protocol'
import { handlerSpan, handlerSpanRecord, handlerSpanSource, spanText, type HandledCall, type HandledOutcome } from '../../engine/handler-spans.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-obs-store-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

/** The fields a log row's array holds, by position (sqlite.ts `LOG_ROW_FIELDS`, written here again: the test reads the file as it is). */
const LOG_ROW_FIELDS = ['severity_number', 'severity_text', 'body', 'attributes', 'service_name', 'trace_id', 'span_id', 'instrumentation_scope_name', 'instrumentation_scope_version', 'dropped_attributes_count']

/** A log row's body as the record's fields by name: an array holds them by position (an optional one null when absent), an object (older rows, rows with times in the body) by name. */
function logRowFields(body: string): Record<string, unknown> {
  const value = jsonParse(body)
  if (!Array.isArray(value)) return value as Record<string, unknown>
  const fields: Record<string, unknown> = {}
  value.forEach((v, i) => {
    if (i < 7 || v !== null) fields[LOG_ROW_FIELDS[i]!] = v
  })
  return fields
}

/** A log record as observability.db holds it: its row's JSON, the id of its resource (null: the JSON holds it), its observed time and its timestamp (null: the JSON holds both). */
interface FileLog {
  body: string
  resource: number | null
  observed: number
  time: number | null
}

/**
 * The log records of observability.db, oldest first: the rows of `logs` (files of earlier
 * versions), then each record of each `log_blocks` row (sqlite.ts `SCHEMA`, read here again: the
 * test reads the file as it is). Throws when a block's JSON is not UTF-8.
 */
function fileLogs(file: DatabaseSync): FileLog[] {
  const out = file.prepare('SELECT body, resource, CAST(ts_ns AS REAL) AS observed, CAST(time_ns AS REAL) AS time FROM logs ORDER BY seq').all() as unknown as FileLog[]
  const utf8 = new TextDecoder('utf-8', { fatal: true })
  for (const block of file.prepare('SELECT lines, body FROM log_blocks ORDER BY seq').all()) {
    const lines = block.lines as Uint8Array
    const text = block.body as Uint8Array
    const view = new DataView(lines.buffer, lines.byteOffset, lines.byteLength)
    let start = 0
    // Per record four little-endian float64s: observed ns, end of its JSON, resource id, timestamp ns (NaN: in the JSON).
    for (let at = 0; at < lines.byteLength; at += 32) {
      const end = view.getFloat64(at + 8, true)
      const time = view.getFloat64(at + 24, true)
      out.push({ body: utf8.decode(text.subarray(start, end)), resource: view.getFloat64(at + 16, true), observed: view.getFloat64(at, true), time: Number.isNaN(time) ? null : time })
      start = end
    }
  }
  return out
}

runStoreConformance('memory', (limits) => new MemoryStore(limits))
runStoreConformance('builtin', (limits) => new SqliteStore(join(dir, `o${n++}.db`), limits))

describe('builtin observability store', () => {
  it('survives a restart: the window is reloaded from observability.db', async () => {
    const path = join(dir, 'restart.db')
    const a = new SqliteStore(path, LIMITS)
    a.putLog(log('kept'))
    a.putSpan(span('t', 's', null))
    await new Promise((r) => setImmediate(r))
    a.close()
    const b = new SqliteStore(path, LIMITS)
    assert.deepEqual(b.logs().map((l) => l.body), ['kept'])
    assert.equal(b.trace('t').length, 1)
    b.close()
  })

  it('writes from a thread at idle priority on Linux, so the invocation path keeps its cores', { skip: process.platform !== 'linux' && 'SCHED_IDLE is Linux only' }, async () => {
    const store = new SqliteStore(join(dir, 'idle.db'), LIMITS)
    try {
      // /proc/<pid>/task/<tid>/stat's 41st field is the scheduling policy; 5 is SCHED_IDLE.
      const policy = (): number | undefined => {
        const tid = store.writerThreadId
        if (tid === undefined) return undefined
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38])
      }
      const deadline = Date.now() + 20_000
      while (policy() !== 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      assert.equal(policy(), 5, 'the writer thread is not SCHED_IDLE (util-linux `chrt` missing? apt-get install -y util-linux)')
      // And it still writes: a restart reloads what it wrote.
      store.putLog(log('written at idle priority'))
      store.flush()
    } finally {
      store.close()
    }
    const again = new SqliteStore(join(dir, 'idle.db'), LIMITS)
    assert.deepEqual(again.logs().map((l) => l.body), ['written at idle priority'])
    again.close()
  })

  it('clears while every core is busy: the waiting caller gives the idle writer the normal policy, then idle again', { skip: process.platform !== 'linux' && 'SCHED_IDLE is Linux only' }, async () => {
    const path = join(dir, 'busy.db')
    const store = new SqliteStore(path, { ...LIMITS, maxLogs: 100 })
    const policyOf = (tid: number): number => {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38])
    }
    const deadline = Date.now() + 20_000
    while ((store.writerThreadId === undefined || policyOf(store.writerThreadId) !== 5) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    const tid = store.writerThreadId!
    assert.equal(policyOf(tid), 5, 'the writer starts at idle priority')
    // Busy loops at the normal policy on every core (and one more): an idle-priority thread gets almost no CPU.
    const busy = Array.from({ length: availableParallelism() + 1 }, () => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }))
    // A thread that watches the writer's policy while this one is blocked in clear: flag[0] stops it, flag[1] is set when it saw SCHED_OTHER (0).
    const flag = new Int32Array(new SharedArrayBuffer(8))
    const watcher = new Worker(
      `const { workerData } = require('node:worker_threads'); const { readFileSync } = require('node:fs')
      const flag = new Int32Array(workerData.flag)
      while (Atomics.load(flag, 0) === 0) {
        const stat = readFileSync('/proc/self/task/' + workerData.tid + '/stat', 'utf8')
        if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38] === '0') Atomics.store(flag, 1, 1)
      }`,
      { eval: true, workerData: { flag: flag.buffer, tid } },
    )
    try {
      await Promise.all(busy.map((p) => once(p, 'spawn')))
      for (let i = 0; i < 50_000; i++) store.putLog(log(`busy ${i} ${'b'.repeat(200)}`))
      assert.equal(store.clearLogs(), 100)
    } finally {
      Atomics.store(flag, 0, 1)
      for (const p of busy) p.kill()
    }
    await once(watcher, 'exit')
    assert.equal(flag[1], 1, 'the writer ran at the normal policy while clear waited for it')
    assert.equal(policyOf(tid), 5, 'and is at idle priority again')
    const file = new DatabaseSync(path, { readOnly: true })
    const left = fileLogs(file).length
    file.close()
    assert.equal(left, 0, 'the file is cleared when clear returns')
    store.close()
  })

  it('sweeps without waiting for the writer: the event loop goes on while the file is locked', () => {
    const path = join(dir, 'sweep-locked.db')
    const store = new SqliteStore(path, LIMITS)
    store.putLog(log('before the lock'))
    store.flush()
    // Another connection holds the write lock: the writer blocks on it (busy_timeout) until it is released.
    const other = new DatabaseSync(path)
    other.exec('BEGIN EXCLUSIVE')
    try {
      store.putLog(log('during the lock'))
      store.sweep(Date.now())
      // Had the sweep waited for the writer, the writer would have given up on the lock first and
      // counted the batch as not written.
      assert.equal(store.droppedRows, 0)
    } finally {
      other.exec('COMMIT')
      other.close()
    }
    store.flush()
    store.close()
    const again = new SqliteStore(path, LIMITS)
    assert.deepEqual(again.logs().map((l) => l.body), ['before the lock', 'during the lock'])
    again.close()
  })

  it("keeps a handler span the engine recorded with its payload events, in the window and across a restart, its row without the events' names and times", () => {
    const path = join(dir, 'handler-spans.db')
    const source = handlerSpanSource({ resource: { 'service.name': 'orders' }, payload_max_bytes: 24 })
    const trace = (n: number) => n.toString(16).padStart(32, 'a')
    const call = (n: number): HandledCall => ({ functionId: 'orders::create', data: `{"order":${n},"note":"a \\"quoted\\" word"}`, traceparent: `00-${trace(n)}-00f067aa0ba902b7-01`, baggage: 'tenant=acme' })
    const outcomes: HandledOutcome[] = [
      { traceparent: `00-${trace(1)}-b7ad6b7169203331-01`, span_start: '1796023144663896550', span_end: '1796023144664412299', result: new RawJson('{"ok":true}') },
      { traceparent: `00-${trace(2)}-b7ad6b7169203332-01`, span_start: '1796023144663896550', span_end: '1796023144664412299', error: { code: 'E_OUT', message: 'out of stock' } },
    ]
    const records = outcomes.map((o, i) => handlerSpanRecord(call(i + 1), o, source, 'orders')!)
    const a = new SqliteStore(path, LIMITS)
    for (const [i, o] of outcomes.entries()) {
      const text = spanText(handlerSpan(call(i + 1), o, source, 'orders')!)
      a.putSpan(text.head, text.bytes, true, text.body)
    }
    for (const [i, record] of records.entries()) assert.deepEqual(a.trace(trace(i + 1)), [record])
    // The output event of the failure says not ok, after the exception; the input was cut at 24 bytes.
    assert.deepEqual(records[1]!.events.map((e) => [e.name, e.attributes['svc.payload.ok']]), [['svc.invocation.input', true], ['exception', undefined], ['svc.invocation.output', false]])
    assert.equal(records[0]!.events[0]!.attributes['svc.payload.truncated'], true)
    a.close()
    const db = new DatabaseSync(path)
    const rows = db.prepare('SELECT body FROM spans ORDER BY seq').all().map((r) => String(r.body))
    db.close()
    for (const [i, row] of rows.entries()) {
      assert.equal(row.includes('svc.invocation.'), false, row)
      assert.ok(row.length < JSON.stringify({ ...records[i], resource: undefined }).length - 200, `${row.length} bytes`)
    }
    const b = new SqliteStore(path, LIMITS)
    for (const [i, record] of records.entries()) assert.deepEqual(b.trace(trace(i + 1)), [record])
    b.close()
  })

  it('keeps an attribute keyed __proto__ across a restart', () => {
    const path = join(dir, 'proto.db')
    const a = new SqliteStore(path, LIMITS)
    const attributes = Object.create(null) as Record<string, unknown>
    attributes['__proto__'] = 'p'
    a.putSpan(span('tp', 's', null, Date.now(), { attributes }))
    a.putLog(log('l', Date.now(), { attributes }))
    a.close()
    const b = new SqliteStore(path, LIMITS)
    for (const reloaded of [b.trace('tp')[0]!.attributes, b.logs()[0]!.attributes]) {
      assert.ok(Object.hasOwn(reloaded, '__proto__'))
      assert.equal(reloaded['__proto__'], 'p')
      assert.equal(Object.getPrototypeOf(reloaded), Object.prototype, 'the key did not set the prototype')
    }
    b.close()
  })

  it("writes a log record's times as columns, not in its row's JSON, and reloads them; rows of a file made before the column keep theirs in the body", () => {
    const path = join(dir, 'times.db')
    // A file of the previous version: the resource column, no time_ns; one row with its resource
    // apart, one of the first version with the whole record in the body.
    const made = new DatabaseSync(path)
    made.exec(
      'PRAGMA journal_mode = WAL; CREATE TABLE spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL, resource INTEGER); ' +
        'CREATE TABLE logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL, resource INTEGER); ' +
        'CREATE TABLE resources (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL UNIQUE, last_span INTEGER NOT NULL DEFAULT 0, last_log INTEGER NOT NULL DEFAULT 0)',
    )
    const first = log('first version', 1_700_000_000_000, { resource: { 'service.name': 'a' } })
    const previous = log('previous version', 1_700_000_000_001, { resource: { 'service.name': 'b' } })
    made.prepare('INSERT INTO logs (ts_ns, body) VALUES (?, ?)').run(first.observed_timestamp_unix_nano, JSON.stringify(first))
    made.prepare('INSERT INTO resources (body, last_log) VALUES (?, 2)').run(JSON.stringify(previous.resource))
    made.prepare('INSERT INTO logs (ts_ns, body, resource) VALUES (?, ?, 1)').run(previous.observed_timestamp_unix_nano, JSON.stringify({ ...previous, resource: undefined }))
    made.close()

    const a = new SqliteStore(path, LIMITS)
    assert.deepEqual(a.logs(), [first, previous])
    // Nanosecond times beyond 2^53, the two different; and a time that is not a finite number.
    const now = log('now', Date.now(), { timestamp_unix_nano: 1_795_957_232_103_456_000, observed_timestamp_unix_nano: 1_795_957_232_104_000_000 })
    const odd = log('odd', Date.now(), { timestamp_unix_nano: Number.NaN })
    a.putLog(now)
    a.putLog(odd)
    a.close()

    const file = new DatabaseSync(path, { readOnly: true })
    const rows = fileLogs(file)
    file.close()
    assert.deepEqual(
      rows.map((row) => row.time),
      [null, null, now.timestamp_unix_nano, null],
    )
    assert.equal(rows[2]!.observed, now.observed_timestamp_unix_nano)
    assert.deepEqual(jsonParse(rows[2]!.body), [9, 'INFO', 'now', {}, 'test', null, null], "the record's fields by position, without the times")
    assert.equal((jsonParse(rows[3]!.body) as LogRecord).timestamp_unix_nano, null, 'a time JSON cannot hold stays in the body, as JSON writes it')

    const b = new SqliteStore(path, LIMITS)
    assert.deepEqual(b.logs(), [first, previous, now, { ...odd, timestamp_unix_nano: null }])
    assert.deepEqual(Object.keys(b.logs()[2]!).slice(0, 2), ['timestamp_unix_nano', 'observed_timestamp_unix_nano'], 'the times come first, as in the record put')
    b.close()
  })

  it('opens a file of a row per log record (session 32), reloads its rows before the blocks written after them, and caps and clears both', () => {
    const path = join(dir, 'rows-then-blocks.db')
    const made = new DatabaseSync(path)
    made.exec(
      'PRAGMA journal_mode = WAL; CREATE TABLE spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL, resource INTEGER); ' +
        'CREATE TABLE logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL, resource INTEGER, time_ns INTEGER); ' +
        'CREATE TABLE resources (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL UNIQUE, last_span INTEGER NOT NULL DEFAULT 0, last_log INTEGER NOT NULL DEFAULT 0)',
    )
    const resource = { 'service.name': 'old' }
    const old = Array.from({ length: 300 }, (_, i) => log(`old ${i} ${'o'.repeat(1000)}`, Date.now() - 1000 + i, { resource }))
    made.prepare('INSERT INTO resources (body, last_log) VALUES (?, ?)').run(JSON.stringify(resource), old.length)
    const row = made.prepare('INSERT INTO logs (ts_ns, body, resource, time_ns) VALUES (?, ?, 1, ?)')
    for (const l of old) row.run(l.observed_timestamp_unix_nano, JSON.stringify([l.severity_number, l.severity_text, l.body, l.attributes, l.service_name, l.trace_id, l.span_id]), l.timestamp_unix_nano)
    made.close()

    const limits = { ...LIMITS, maxLogs: 10_000, maxDiskBytes: 1 << 20 }
    const a = new SqliteStore(path, limits)
    assert.deepEqual(a.logs(), old, 'the rows reload as they were')
    a.putLog(log('new 0'))
    a.close()
    const b = new SqliteStore(path, limits)
    assert.deepEqual(
      b.logs().map((l) => l.body),
      [...old.map((l) => l.body), 'new 0'],
      'old rows, then the records of blocks',
    )
    // Past the cap (1 MiB, the old rows hold ~400 KiB): the oldest go first, old rows and their resource included.
    for (let i = 1; i <= 600; i++) b.putLog(log(`new ${i} ${'n'.repeat(2000)}`))
    b.flush()
    const file = new DatabaseSync(path, { readOnly: true })
    const written = fileLogs(file)
    const resources = file.prepare('SELECT body FROM resources').all().map((r) => String(r.body))
    file.close()
    assert.ok(b.usedBytes() <= 1 << 20, `used ${b.usedBytes()}`)
    assert.equal(written.at(-1)!.body.includes('new 600 '), true, 'the newest is in the file')
    assert.equal(written.some((w) => w.body.includes('"old ')), false, 'the old rows went first')
    assert.deepEqual(resources, ['{}'], 'with the resource only they named')
    b.clearLogs()
    b.close()
    const cleared = new SqliteStore(path, limits)
    assert.deepEqual(cleared.logs(), [])
    cleared.close()
  })

  it("writes a log row's fields by position, its optional ones only when it has one, and reloads the same records counting the same bytes", () => {
    const path = join(dir, 'fields.db')
    const records = [
      log('plain'),
      log('scoped', Date.now(), { instrumentation_scope_name: 'bench', trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16), attributes: { 'log.data.n': 1.5, nested: { k: ['v', null] } } }),
      log('version only', Date.now(), { instrumentation_scope_version: '1.2' }),
      log('limited', Date.now(), { instrumentation_scope_name: 's', instrumentation_scope_version: '2', dropped_attributes_count: 3, resource: { 'service.name': 'other' } }),
    ]
    const a = new SqliteStore(path, LIMITS)
    for (const record of records) a.putLog(record)
    const bytes = a.windowBytes().logs
    a.close()
    const file = new DatabaseSync(path, { readOnly: true })
    const rows = fileLogs(file).map((row) => jsonParse(row.body))
    file.close()
    assert.deepEqual(rows, [
      [9, 'INFO', 'plain', {}, 'test', null, null],
      [9, 'INFO', 'scoped', { 'log.data.n': 1.5, nested: { k: ['v', null] } }, 'test', 'a'.repeat(32), 'b'.repeat(16), 'bench', null, null],
      [9, 'INFO', 'version only', {}, 'test', null, null, null, '1.2', null],
      [9, 'INFO', 'limited', {}, 'test', null, null, 's', '2', 3],
    ])
    const b = new SqliteStore(path, LIMITS)
    assert.deepEqual(b.logs(), records)
    // A record put without its size counts its JSON as an object (sqlite.ts); reloaded, the same.
    assert.equal(b.windowBytes().logs, bytes)
    assert.equal(bytes, records.reduce((sum, r) => sum + JSON.stringify({ ...r, timestamp_unix_nano: undefined, observed_timestamp_unix_nano: undefined, resource: undefined }).length + 96 + JSON.stringify(r.resource).length + 12 + RECORD_OVERHEAD_BYTES, 0))
    b.close()
  })

  it('counts a batch SQLite rolled back as not written, and the next batch names only resources the file has', () => {
    const path = join(dir, 'rolled-back.db')
    const a = new SqliteStore(path, LIMITS)
    a.flush()
    // A failure that makes SQLite roll back the whole transaction itself (as an I/O error or a full disk may).
    const other = new DatabaseSync(path)
    other.exec("CREATE TRIGGER fail BEFORE INSERT ON log_blocks WHEN CAST(NEW.body AS TEXT) LIKE '%boom%' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END")
    const resource = { 'service.name': 'first seen in the failed batch' }
    a.putLog(log('boom', Date.now(), { resource }))
    a.putLog(log('lost with it', Date.now(), { resource }))
    a.flush()
    assert.equal(a.droppedRows, 2)
    other.exec('DROP TRIGGER fail')
    a.putLog(log('after', Date.now(), { resource }))
    a.flush()
    assert.equal(a.droppedRows, 2)
    const resourceOf = other.prepare('SELECT body FROM resources WHERE id = ?')
    const rows = fileLogs(other).map((row) => resourceOf.get(row.resource)?.body)
    other.close()
    assert.deepEqual(
      rows,
      [JSON.stringify(resource)],
      "the row's resource is in the file",
    )
    a.close()
  })

  // Span rows go to the file 200 to a statement, then 50, then one at a time; log records in blocks of at most 512.
  const tables = {
    logs: {
      what: 'log record of a batch, in order, whatever its number (blocks of 512)',
      sizes: [1, 511, 512, 513, 1024, 1500, 2000],
      put: (a: SqliteStore, text: string) => a.putLog(log(text)),
      read: (file: DatabaseSync) => fileLogs(file).map((row) => logRowFields(row.body).body),
    },
    spans: {
      what: 'span row of a batch, in order, whatever its number of rows (multi-row inserts of 200, 50 and one)',
      sizes: [1, 49, 50, 51, 199, 200, 273, 2000],
      // Sealed spans (rows of text) and span objects (serialised at the cut) in one batch.
      put: (a: SqliteStore, text: string, i: number) => a.putSpan(span(`t${text}`, text.replace(' ', '-'), null, 1_000_000 + i, { name: text }), undefined, i % 2 === 0),
      read: (file: DatabaseSync) =>
        file
          .prepare('SELECT body FROM spans ORDER BY seq')
          .all()
          .map((row) => (JSON.parse(String(row.body)) as { name: string }).name),
    },
  }
  for (const [table, { what, sizes, put, read }] of Object.entries(tables)) {
    it(`writes every ${what}`, () => {
      const path = join(dir, `${table}-batch-sizes.db`)
      const a = new SqliteStore(path, { ...LIMITS, maxLogs: 10_000, maxSpans: 10_000 })
      for (const size of sizes) {
        for (let i = 0; i < size; i++) put(a, `${size} ${i}`, i)
        a.flush()
      }
      a.close()
      const file = new DatabaseSync(path, { readOnly: true })
      const texts = read(file)
      file.close()
      assert.deepEqual(
        texts,
        sizes.flatMap((size) => Array.from({ length: size }, (_, i) => `${size} ${i}`)),
      )
      const b = new SqliteStore(path, { ...LIMITS, maxLogs: 10_000, maxSpans: 10_000 })
      const reloaded = table === 'logs' ? b.logs().map((l) => l.body) : [...b.spans()].map((s) => s.name)
      b.close()
      assert.deepEqual(new Set(reloaded), new Set(texts), 'reloaded at open')
    })
  }

  it('writes log records as UTF-8, whatever their characters and however large the batch (the rows travel to the writer as UTF-8 bytes)', () => {
    const path = join(dir, 'utf8.db')
    const a = new SqliteStore(path, { ...LIMITS, maxLogs: 10_000, maxLogBytes: 64 << 20 })
    // Two- to four-byte characters, a lone surrogate (JSON escapes it), and a batch of several
    // MiB of UTF-8, more than the buffer the rows are written into at first.
    const records = [log('é € 𝄞 \ud800 "quoted"'), log('€'.repeat(700_000)), log('𝄞'.repeat(300_000)), ...Array.from({ length: 2000 }, (_, i) => log(`line ${i} ${'ü'.repeat(i % 50)}`))]
    for (const record of records) a.putLog(record)
    a.close()
    const file = new DatabaseSync(path, { readOnly: true })
    // fileLogs decodes each record's bytes as UTF-8, refusing bytes that are not.
    const rows = fileLogs(file)
    file.close()
    assert.deepEqual(
      rows.map((row) => logRowFields(row.body).body),
      records.map((record) => record.body),
    )
    const b = new SqliteStore(path, { ...LIMITS, maxLogs: 10_000, maxLogBytes: 64 << 20 })
    assert.deepEqual(b.logs(), records)
    b.close()
  })

  it('keeps the file under max_disk_bytes under a flood', () => {
    const path = join(dir, 'cap.db')
    const store = new SqliteStore(path, { ...LIMITS, maxDiskBytes: 2 << 20 })
    const body = 'y'.repeat(200)
    for (let i = 0; i < 100_000; i++) {
      store.putLog(log(`${i} ${body}`))
      if (i % 5000 === 4999) store.flush()
    }
    // The writer keeps the cap as it writes, before any sweep.
    assert.ok(store.usedBytes() <= 2 << 20, `used ${store.usedBytes()} before the sweep`)
    store.sweep(Date.now())
    store.flush()
    assert.ok(store.usedBytes() <= 2 << 20, `used ${store.usedBytes()}`)
    store.close()
    assert.ok(statSync(path).size < 8 << 20, `file ${statSync(path).size}`)
  })
})

describe('builtin observability store: pages', () => {
  it('makes a new observability.db with 16 KiB pages, and goes on with the pages of a file made before', () => {
    const fresh = join(dir, 'pages-new.db')
    const a = new SqliteStore(fresh, LIMITS)
    a.putLog(log('new'))
    a.close()
    const pageSize = (path: string): number => {
      const db = new DatabaseSync(path, { readOnly: true })
      try {
        return Number(db.prepare('PRAGMA page_size').get()!.page_size)
      } finally {
        db.close()
      }
    }
    assert.equal(pageSize(fresh), PAGE_SIZE)
    assert.equal(PAGE_SIZE, 16384)
    // A file an earlier version made (4 KiB pages, WAL): reloaded and written as before.
    const old = join(dir, 'pages-old.db')
    const made = new DatabaseSync(old)
    made.exec('PRAGMA journal_mode = WAL; CREATE TABLE spans (seq INTEGER PRIMARY KEY AUTOINCREMENT, start_ns INTEGER NOT NULL, body TEXT NOT NULL); CREATE TABLE logs (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ns INTEGER NOT NULL, body TEXT NOT NULL)')
    made.prepare('INSERT INTO logs (ts_ns, body) VALUES (?, ?)').run(1, JSON.stringify(log('before')))
    made.close()
    const b = new SqliteStore(old, LIMITS)
    b.putLog(log('after'))
    b.close()
    const c = new SqliteStore(old, LIMITS)
    assert.deepEqual(c.logs().map((l) => l.body), ['before', 'after'])
    c.close()
    assert.equal(pageSize(old), 4096)
  })
})

describe('builtin observability store: resources', () => {
  it('writes a resource once, not in every row: 20,000 log lines and 2,000 spans of a worker with a 4 KiB resource take under 8 MiB', () => {
    const path = join(dir, 'resources-once.db')
    const store = new SqliteStore(path, { ...LIMITS, maxLogs: 100, maxSpans: 100 })
    // One worker's resource: the same object for every record of a frame, a new (equal) object per frame.
    const resourceOfFrame = (): Record<string, string> => ({ 'service.name': 'orders', 'process.command_args': 'a'.repeat(4096) })
    for (let frame = 0; frame < 20; frame++) {
      const resource = resourceOfFrame()
      for (let i = 0; i < 1000; i++) store.putLog(log(`line ${frame * 1000 + i}`, Date.now(), { resource }))
      for (let i = 0; i < 100; i++) store.putSpan(span(`t${frame}`, `s${i}`, null, Date.now(), { resource }))
    }
    store.flush()
    // Before: each row held the resource, 22,000 × 4 KiB ≈ 90 MiB.
    assert.ok(store.usedBytes() < 8 << 20, `used ${store.usedBytes()} bytes`)
    store.close()
    const file = new DatabaseSync(path, { readOnly: true })
    const count = Number(file.prepare('SELECT COUNT(*) AS n FROM resources').get()!.n)
    file.close()
    assert.equal(count, 1, 'equal resources are one row')
    const reopened = new SqliteStore(path, { ...LIMITS, maxLogs: 100, maxSpans: 100 })
    const logs = reopened.logs()
    assert.equal(logs.at(-1)!.body, 'line 19999')
    assert.deepEqual(logs.at(-1)!.resource, resourceOfFrame())
    assert.deepEqual([...reopened.spans()].at(-1)!.resource, resourceOfFrame())
    reopened.close()
  })

  it('deletes a resource with the last row naming it, and writes it again when it comes back', () => {
    const path = join(dir, 'resources-pruned.db')
    const store = new SqliteStore(path, { ...LIMITS, maxDiskBytes: 1 << 20 })
    const body = 'p'.repeat(200)
    // Each frame its own resource: the cap deletes old rows, and the resources only they named.
    for (let frame = 0; frame < 200; frame++) {
      const resource = { 'service.name': `w${frame}`, pad: 'r'.repeat(1000) }
      for (let i = 0; i < 50; i++) store.putLog(log(`${frame} ${i} ${body}`, Date.now(), { resource }))
      if (frame % 20 === 19) store.flush()
    }
    store.flush()
    assert.ok(store.usedBytes() <= 1 << 20, `used ${store.usedBytes()}`)
    const file = new DatabaseSync(path, { readOnly: true })
    const ids = new Set(fileLogs(file).map((row) => row.resource))
    const orphans = file
      .prepare('SELECT id FROM resources')
      .all()
      .filter((row) => !ids.has(Number(row.id))).length
    const named = ids.size
    file.close()
    assert.equal(orphans, 0, 'no resource outlives its rows')
    assert.ok(named > 1 && named < 200, `${named} resources named`)
    // A resource deleted with its rows is written again by the next record naming it.
    store.putLog(log('back', Date.now(), { resource: { 'service.name': 'w0', pad: 'r'.repeat(1000) } }))
    store.clearLogs()
    store.putLog(log('again', Date.now(), { resource: { 'service.name': 'w1' } }))
    store.close()
    const reopened = new SqliteStore(path, LIMITS)
    assert.deepEqual(reopened.logs().map((l) => [l.body, l.resource]), [['again', { 'service.name': 'w1' }]])
    reopened.close()
  })
})

describe('builtin observability store: a damaged file', () => {
  it('is moved aside and replaced by an empty store', () => {
    const path = join(dir, 'damaged.db')
    writeFileSync(path, randomBytes(64 * 1024))
    const store = new SqliteStore(path, LIMITS)
    assert.match(store.movedAside ?? '', /damaged\.db\.damaged-\d+$/)
    assert.ok(existsSync(store.movedAside!))
    assert.deepEqual(store.counts(), { spans: 0, logs: 0 })
    store.putLog(log('after'))
    store.close()
    const reopened = new SqliteStore(path, LIMITS)
    assert.equal(reopened.movedAside, undefined)
    assert.deepEqual(reopened.logs().map((l) => l.body), ['after'])
    reopened.close()
  })
})

describe('builtin observability store: bounded hand-over to the writer', () => {
  it('drops the oldest waiting batches beyond MAX_QUEUED_BYTES while the writer is held up, counts them, and writes the newest', () => {
    const path = join(dir, 'backlog.db')
    const store = new SqliteStore(path, { ...LIMITS, maxDiskBytes: 1 << 30 })
    // Another connection holds the write lock: the writer waits (busy timeout 5 s) on its first batch.
    const lock = new DatabaseSync(path)
    lock.exec('BEGIN IMMEDIATE')
    try {
      const body = 'z'.repeat(200)
      const total = 150_000
      for (let i = 0; i < total; i++) store.putLog(log(`${i} ${body}`))
      assert.ok(store.droppedRows > 0, 'a burst larger than the queue drops rows')
      lock.exec('ROLLBACK')
      store.flush()
      const written = fileLogs(lock)
      const rows = written.length
      const newest = logRowFields(written.at(-1)!.body) as { body: string }
      const oldest = logRowFields(written[0]!.body) as { body: string }
      assert.equal(rows + store.droppedRows, total, 'every row is either in the file or counted')
      assert.match(newest.body, new RegExp(`^${total - 1} `), 'the newest row is in the file')
      assert.match(oldest.body, /^0 /, 'the batches already with the writer were written')
      // The text buffers of batches are reused once the writer is done with them: never before.
      const numbers = written.map((row) => Number((logRowFields(row.body) as { body: string }).body.split(' ')[0]))
      assert.ok(
        numbers.every((n, i) => i === 0 || n > numbers[i - 1]!),
        'each row holds its own record, in order',
      )
      assert.ok(rows * body.length <= MAX_QUEUED_BYTES + MAX_IN_FLIGHT * BATCH_BYTES * 2, `${rows} rows written`)
      assert.equal(store.counts().logs, LIMITS.maxLogs, 'the window is untouched')
    } finally {
      lock.close()
      store.close()
    }
  })

  it('reloads at most the byte budget of the newest records at open, reading no more rows than that', () => {
    const path = join(dir, 'reload-bytes.db')
    const a = new SqliteStore(path, { ...LIMITS, maxSpans: 10_000, maxLogs: 10_000 })
    const text = 'r'.repeat(10_000)
    for (let i = 0; i < 300; i++) {
      a.putLog(log(`${i} ${text}`))
      a.putSpan(span(`t${i}`, `s${i}`, null, Date.now(), { attributes: { text } }))
    }
    a.close()
    const limits: StoreLimits = { ...LIMITS, maxSpans: 10_000, maxLogs: 10_000, maxSpanBytes: 100_000, maxLogBytes: 100_000 }
    const b = new SqliteStore(path, limits)
    const bytes = b.windowBytes()
    assert.ok(bytes.spans <= 100_000 && bytes.logs <= 100_000, JSON.stringify(bytes))
    const logs = b.logs().map((l) => Number(l.body.split(' ')[0]))
    const spans = [...b.spans()].map((s) => Number(s.span_id.slice(1)))
    for (const kept of [logs, spans]) {
      assert.ok(kept.length >= 5 && kept.length <= 10, `${kept.length} kept`)
      assert.deepEqual(kept, Array.from({ length: kept.length }, (_, i) => 300 - kept.length + i), 'the newest, in order')
    }
    b.close()
  })

  it('shrinks the file to a lowered max_disk_bytes at the next sweep', () => {
    const path = join(dir, 'lowered.db')
    const store = new SqliteStore(path, { ...LIMITS, maxDiskBytes: 16 << 20 })
    const body = 'w'.repeat(300)
    for (let i = 0; i < 30_000; i++) store.putLog(log(`${i} ${body}`))
    store.flush()
    assert.ok(store.usedBytes() > 4 << 20, `used ${store.usedBytes()}`)
    store.setLimits({ ...LIMITS, maxDiskBytes: 2 << 20 })
    store.sweep(Date.now())
    store.flush()
    assert.ok(store.usedBytes() <= 2 << 20, `used ${store.usedBytes()}`)
    store.close()
    assert.ok(statSync(path).size <= 2 << 20, `file ${statSync(path).size}`)
    const reopened = new SqliteStore(path, LIMITS)
    assert.match(reopened.logs().at(-1)!.body, /^29999 /, 'the newest rows are kept')
    reopened.close()
  })
})

describe('memory window under random writes (property)', () => {
  it('holds exactly the newest records it admitted, counts their bytes and stays within every bound, whatever is written', async () => {
    const { default: fc } = await import('fast-check')
    // Hostile sizes included: zero, exactly the budget, over the whole budget, far over it.
    const size = fc.oneof(fc.integer({ min: 0, max: 30_000 }), fc.constantFrom(0, 100_000 - RECORD_OVERHEAD_BYTES, 100_001, 10_000_000))
    const op = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('span' as const), trace: fc.integer({ min: 0, max: 5 }), bytes: size }), weight: 6 },
      { arbitrary: fc.record({ kind: fc.constant('resend' as const), pick: fc.nat(), bytes: size }), weight: 2 },
      { arbitrary: fc.record({ kind: fc.constant('update' as const), pick: fc.nat(), bytes: size }), weight: 2 },
      { arbitrary: fc.record({ kind: fc.constant('log' as const), bytes: size }), weight: 6 },
      { arbitrary: fc.record({ kind: fc.constantFrom('clearSpans' as const, 'clearLogs' as const) }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant('limits' as const), maxSpans: fc.integer({ min: 1, max: 20 }), maxSpanBytes: fc.integer({ min: 1, max: 200_000 }), maxLogBytes: fc.integer({ min: 1, max: 200_000 }) }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant('sweep' as const), age: fc.nat({ max: 40 }) }), weight: 1 },
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        let limits: StoreLimits = { ...LIMITS, maxSpans: 10, maxLogs: 10, maxSpanBytes: 100_000, maxLogBytes: 100_000, retentionSeconds: 60 }
        const store = new MemoryStore(limits)
        // The model: what was admitted since the last clear, oldest first, with what each counts.
        let spans: Array<{ record: SpanRecord; counted: number }> = []
        let logs: Array<{ record: LogRecord; counted: number }> = []
        const all: SpanRecord[] = []
        let clock = 0
        for (const o of ops) {
          clock++
          const at = 1_000_000 + clock * 1000
          if (o.kind === 'span') {
            const record = span(`t${o.trace}`, `s${clock}`, null, at)
            all.push(record)
            store.putSpan(record, o.bytes)
            if (o.bytes + RECORD_OVERHEAD_BYTES <= limits.maxSpanBytes) spans.push({ record, counted: o.bytes + RECORD_OVERHEAD_BYTES })
          } else if (o.kind === 'resend' && all.length > 0) {
            const earlier = all[o.pick % all.length]!
            const again = { ...earlier, status: 'ok' as const }
            // The window replaces the span it holds with the same ids, whichever object was sent.
            const held = spans.find((s) => s.record.trace_id === earlier.trace_id && s.record.span_id === earlier.span_id)
            store.putSpan(again, o.bytes)
            if (held) held.counted = o.bytes + RECORD_OVERHEAD_BYTES
            else if (o.bytes + RECORD_OVERHEAD_BYTES <= limits.maxSpanBytes) {
              all.push(again)
              spans.push({ record: again, counted: o.bytes + RECORD_OVERHEAD_BYTES })
            }
          } else if (o.kind === 'update' && all.length > 0) {
            const record = all[o.pick % all.length]!
            const held = spans.find((s) => s.record === record)
            store.updateSpan(record, o.bytes)
            if (held) held.counted = o.bytes + RECORD_OVERHEAD_BYTES
          } else if (o.kind === 'log') {
            const record = log(`l${clock}`, at)
            store.putLog(record, o.bytes)
            if (o.bytes + RECORD_OVERHEAD_BYTES <= limits.maxLogBytes) logs.push({ record, counted: o.bytes + RECORD_OVERHEAD_BYTES })
          } else if (o.kind === 'clearSpans') {
            store.clearSpans()
            spans = []
          } else if (o.kind === 'clearLogs') {
            store.clearLogs()
            logs = []
          } else if (o.kind === 'limits') {
            limits = { ...limits, maxSpans: o.maxSpans, maxSpanBytes: o.maxSpanBytes, maxLogBytes: o.maxLogBytes }
            store.setLimits(limits)
          } else if (o.kind === 'sweep') {
            // Everything put more than `age` operations ago is past the retention.
            store.sweep(1_000_000 + (clock - o.age) * 1000 + limits.retentionSeconds * 1000)
          }
          // The window is a suffix of what was admitted: the newest, oldest evicted first.
          const held = [...store.spans()]
          const heldLogs = store.logs()
          spans = spans.slice(spans.length - held.length)
          logs = logs.slice(logs.length - heldLogs.length)
          assert.deepEqual(held, spans.map((s) => s.record), 'spans: the newest admitted, in order')
          assert.deepEqual(heldLogs, logs.map((l) => l.record), 'logs: the newest admitted, in order')
          const bytes = store.windowBytes()
          assert.equal(bytes.spans, spans.reduce((n, s) => n + s.counted, 0))
          assert.equal(bytes.logs, logs.reduce((n, l) => n + l.counted, 0))
          assert.ok(bytes.spans <= limits.maxSpanBytes && bytes.logs <= limits.maxLogBytes, JSON.stringify(bytes))
          assert.ok(held.length <= limits.maxSpans && heldLogs.length <= limits.maxLogs)
          for (const s of held) assert.ok(store.trace(s.trace_id).includes(s), 'every span of the window is in its trace')
          assert.equal([0, 1, 2, 3, 4, 5].reduce((n, t) => n + store.trace(`t${t}`).length, 0), held.length, 'and no other')
        }
      }),
      { numRuns: 300 },
    )
  })
})

describe('none store', () => {
  it('keeps nothing', () => {
    const store = new NoStore()
    store.putLog()
    store.putSpan()
    assert.deepEqual(store.counts(), { spans: 0, logs: 0 })
    assert.deepEqual(store.trace(), [])
  })
})

describe('span rows of the builtin store', () => {
  it('the file holds each span exactly as JSON.stringify writes it, for any span (property)', async () => {
    const { default: fc } = await import('fast-check')
    const dir = mkdtempSync(join(tmpdir(), 'svc-obs-rows-'))
    after(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'observability.db')
    const store = new SqliteStore(path, { ...LIMITS, maxSpans: 100_000 })
    const file = new DatabaseSync(path, { readOnly: true })
    after(() => (file.close(), store.close()))
    const text = fc.string({ unit: 'binary' })
    const attrs = fc.dictionary(fc.string(), fc.jsonValue(), { noNullPrototype: true })
    const shared = Object.freeze({ 'service.name': 'svc' })
    // The resource of the spans of one frame: one object, not frozen, shared by the spans of a batch.
    const frameResource = attributeMap() as Record<string, string>
    Object.assign(frameResource, { 'service.name': 'svc-node', 'service.instance.id': 'i-1' })
    frameResource['__proto__'] = 'p'
    const attributeMapOf = (entries: Record<string, unknown>): Record<string, unknown> => {
      const map = attributeMap()
      for (const key of Object.keys(entries)) map[key] = entries[key]
      return map
    }
    const none = Object.freeze([]) as never[]
    const record = fc.record(
      {
        trace_id: text,
        span_id: text,
        parent_span_id: fc.option(text, { nil: null }),
        name: text,
        kind: fc.constantFrom('internal', 'server', 'client', 'producer', 'consumer'),
        service_name: text,
        start_time_unix_nano: fc.double(),
        end_time_unix_nano: fc.option(fc.double(), { nil: null }),
        duration_ms: fc.option(fc.double(), { nil: null }),
        status: fc.constantFrom('ok', 'error', 'unset'),
        status_message: text,
        attributes: fc.oneof(attrs, attrs.map(attributeMapOf), fc.constant(attributeMapOf({ ['__proto__']: 1, constructor: 'c', lone: '\ud800' }))),
        resource: fc.oneof(fc.constant(shared), fc.constant(frameResource), fc.dictionary(fc.string(), fc.string(), { noNullPrototype: true })),
        events: fc.oneof(fc.constant(none), fc.array(fc.record({ name: text, timestamp_unix_nano: fc.integer(), attributes: attrs, dropped_attributes_count: fc.nat() }, { requiredKeys: ['name', 'timestamp_unix_nano', 'attributes'] }))),
        links: fc.oneof(fc.constant(none), fc.array(fc.record({ trace_id: text, span_id: text, attributes: attrs, dropped_attributes_count: fc.nat() }, { requiredKeys: ['trace_id', 'span_id', 'attributes'] }))),
        // What the size limits dropped (present only when non-zero).
        dropped_attributes_count: fc.integer({ min: 1 }),
        dropped_events_count: fc.integer({ min: 1 }),
        dropped_links_count: fc.integer({ min: 1 }),
      },
      { requiredKeys: ['trace_id', 'span_id', 'parent_span_id', 'name', 'kind', 'service_name', 'start_time_unix_nano', 'end_time_unix_nano', 'duration_ms', 'status', 'attributes', 'resource', 'events', 'links'] },
    )
    // A row holds the span without its resource; the resource is a row of `resources`, written once.
    const rows = file.prepare('SELECT s.seq AS seq, s.body AS body, r.body AS resource FROM spans s LEFT JOIN resources r ON r.id = s.resource WHERE s.seq > ? ORDER BY s.seq')
    let seen = 0
    // Ids ever put as an object (not sealed): the window keeps that object, which takes the content of later puts.
    const objectIds = new Set<string>()
    const idOf = (span: { trace_id: string; span_id: string }): string => JSON.stringify([span.trace_id, span.span_id])
    fc.assert(
      fc.property(fc.array(fc.tuple(record, fc.boolean()), { minLength: 1, maxLength: 8 }), (puts) => {
        const spans = puts.map(([span]) => span)
        // Sealed (a frame's spans): the window keeps the row's text, and reads give the record back.
        for (const [span, sealed] of puts) {
          store.putSpan(span as never, undefined, sealed)
          if (!sealed) objectIds.add(idOf(span))
        }
        for (const [span, sealed] of puts) {
          const last = spans.findLast((s) => idOf(s) === idOf(span))
          if (!sealed || last !== span || objectIds.has(idOf(span))) continue
          const kept = store.trace(span.trace_id).filter((s) => s.span_id === span.span_id)
          assert.equal(kept.length, 1)
          assert.deepEqual(jsonParse(JSON.stringify(kept[0])), jsonParse(JSON.stringify(span)))
          assert.equal(kept[0]!.resource, span.resource, 'the resource object is shared')
        }
        store.flush()
        const written = rows.all(seen) as Array<{ seq: number; body: string; resource: string }>
        seen = Number(written.at(-1)?.seq ?? seen)
        const joined = written.map((row) => {
          const body = jsonParse(row.body) as Record<string, unknown>
          assert.equal(Object.hasOwn(body, 'resource'), false, 'the resource is not repeated in the row')
          body.resource = jsonParse(row.resource)
          return body
        })
        // Spans with one trace and span id are one span to the window, but each put is a row.
        assert.deepEqual(joined, spans.map((span) => jsonParse(JSON.stringify(span))))
      }),
      { numRuns: 150 },
    )
  })

  it('log rows and their resources read back as JSON.stringify writes the record, also after the cap or a clear deleted resources and across a restart (property)', async () => {
    const { default: fc } = await import('fast-check')
    const dir = mkdtempSync(join(tmpdir(), 'svc-obs-logrows-'))
    after(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'observability.db')
    const limits = { ...LIMITS, maxLogs: 100_000, maxDiskBytes: 256 << 10 }
    let store = new SqliteStore(path, limits)
    after(() => store.close())
    const text = fc.string({ unit: 'binary' })
    const shared = Object.freeze({ 'service.name': 'svc' })
    const protoResource = attributeMap() as Record<string, string>
    protoResource['__proto__'] = 'p'
    protoResource['constructor'] = '\ud800'
    // Hostile resources: any keys and values (lone surrogates, __proto__), frozen and shared ones,
    // equal but distinct objects, large ones (the cap then deletes rows and the resources only they named).
    const resource = fc.oneof(
      fc.constant(shared),
      fc.constant(protoResource),
      fc.dictionary(fc.string(), fc.string(), { noNullPrototype: true }),
      fc.string({ unit: 'binary', minLength: 1 }).map((v) => ({ 'service.name': v, pad: v.repeat(Math.ceil(8192 / v.length)) })),
    )
    const record = fc.record({
      timestamp_unix_nano: fc.double(),
      observed_timestamp_unix_nano: fc.oneof(fc.double(), fc.integer()),
      severity_number: fc.integer({ min: 0, max: 24 }),
      severity_text: text,
      body: text,
      attributes: fc.dictionary(fc.string(), fc.jsonValue(), { noNullPrototype: true }),
      resource,
      service_name: text,
      trace_id: fc.option(text, { nil: null }),
      span_id: fc.option(text, { nil: null }),
    })
    const action = fc.oneof(
      { weight: 8, arbitrary: fc.array(record, { minLength: 1, maxLength: 12 }) },
      { weight: 1, arbitrary: fc.constantFrom('clear' as const, 'restart' as const) },
    )
    fc.assert(
      fc.property(fc.array(action, { minLength: 1, maxLength: 6 }), (actions) => {
        for (const a of actions) {
          if (a === 'clear') store.clearLogs()
          else if (a === 'restart') {
            store.close()
            store = new SqliteStore(path, limits)
          } else for (const l of a) store.putLog(l as never)
        }
        store.flush()
        const file = new DatabaseSync(path, { readOnly: true })
        try {
          const resourceOf = file.prepare('SELECT body FROM resources WHERE id = ?')
          const rows = fileLogs(file).map((row) => ({ ...row, id: row.resource, resource: (resourceOf.get(row.resource)?.body ?? null) as string | null }))
          const named = new Set([...rows.map((row) => row.id), ...file.prepare('SELECT resource FROM spans WHERE resource IS NOT NULL').all().map((row) => Number(row.resource))])
          const orphans = file
            .prepare('SELECT id FROM resources')
            .all()
            .filter((row) => !named.has(Number(row.id))).length
          assert.equal(orphans, 0, 'no resource outlives the rows naming it')
          // The rows the cap kept are the newest records of the window, each as JSON.stringify writes it.
          const window = store.logs()
          const newest = window.slice(window.length - rows.length).map((l) => jsonParse(JSON.stringify(l)))
          assert.deepEqual(
            rows.map((row) => {
              assert.notEqual(row.resource, null, `resource ${row.id} of a row is in the file`)
              const body = logRowFields(row.body)
              body.resource = jsonParse(row.resource!)
              // Finite times are columns, not in the body; others stay in the body (as JSON writes them).
              if (row.time !== null) {
                assert.equal(Object.hasOwn(body, 'timestamp_unix_nano') || Object.hasOwn(body, 'observed_timestamp_unix_nano'), false, 'the times are not repeated in the body')
                body.timestamp_unix_nano = row.time
                body.observed_timestamp_unix_nano = row.observed
              }
              // As JSON writes it (a block keeps a time of -0, which JSON writes as 0).
              return jsonParse(JSON.stringify(body))
            }),
            newest,
          )
        } finally {
          file.close()
        }
      }),
      { numRuns: 60 },
    )
  })

  it('a value JSON cannot hold (a function) is dropped as JSON.stringify drops it, and the store goes on', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-obs-rows-'))
    after(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'observability.db')
    const store = new SqliteStore(path, LIMITS)
    const base = span('t1', 's1', null)
    store.putSpan({ ...base, attributes: { keep: 1, drop: () => 1 } } as never)
    store.putSpan(span('t1', 's2', 's1'))
    store.flush()
    const file = new DatabaseSync(path, { readOnly: true })
    const bodies = file.prepare('SELECT body FROM spans ORDER BY seq').all().map((row) => jsonParse(String(row.body)) as { span_id: string; attributes: object })
    file.close()
    store.close()
    assert.deepEqual(bodies.map((b) => b.span_id), ['s1', 's2'])
    assert.deepEqual(bodies[0]!.attributes, { keep: 1 })
  })
})

describe('spans put sealed (from /otel frames) are kept as text', () => {
  // What the window holds per span is what V8 keeps and marks for minutes under traced load: a
  // sealed span must leave no object of its record behind (docs/benchmarks.md, issue 20).
  v8.setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void

  for (const kind of ['memory', 'builtin'] as const) {
    it(`${kind}: keeps no object of the record (attributes, events, their maps), and reads give back an equal record`, async () => {
      const store = kind === 'memory' ? new MemoryStore(LIMITS) : new SqliteStore(join(dir, `sealed-${kind}.db`), LIMITS)
      // Made in another function: this frame's registers would keep the last record alive.
      const { refs, expected } = putSealed(store)
      store.flush()
      await new Promise((r) => setImmediate(r))
      gc()
      assert.equal(refs.filter((r) => r.deref() !== undefined).length, 0, 'the window keeps objects of sealed spans')
      assert.deepEqual(JSON.parse(JSON.stringify([...store.spans()])), expected)
      assert.deepEqual(JSON.parse(JSON.stringify(store.trace('t3'))), expected.filter((s) => s.trace_id === 't3'))
      assert.equal(store.trace('t3')[0]!.resource, store.trace('t3')[1]!.resource, 'the resource object is shared, not copied')
      store.close()
    })
  }

  it('memory: holds no heap object per span it keeps, so a full window costs the collector nothing per span (its ids, name and times are in the chunk)', async () => {
    // Each kept span's object and id strings were promoted and marked until evicted: about 270 bytes of heap per span.
    const store = new MemoryStore({ ...LIMITS, maxSpans: 41_000, maxSpanBytes: 256 << 20 })
    const resource = Object.freeze({ 'service.name': 'w' })
    const attributes = Object.freeze({ 'svc.function.id': 'app::work' })
    const put = (from: number, count: number): void => {
      for (let i = from; i < from + count; i++) {
        const record = span(randomBytes(16).toString('hex'), randomBytes(8).toString('hex'), randomBytes(8).toString('hex'), 1_000_000 + i, { name: 'execute app::work', resource, attributes: attributes as Record<string, unknown> })
        store.putSpan(record, 500, true)
      }
    }
    // Collected after a turn of the event loop, twice: what this turn made may still be reachable from it.
    const collect = async (): Promise<void> => {
      await new Promise((resolve) => setImmediate(resolve))
      gc()
      gc()
    }
    put(0, 1000)
    await collect()
    const before = process.memoryUsage().heapUsed
    put(1000, 40_000)
    await collect()
    // The ring's three arrays of pointers (resources, chunks, span objects) take 24 bytes a span; about 70 are measured in this file.
    const perSpan = (process.memoryUsage().heapUsed - before) / 40_000
    assert.equal(store.counts().spans, 41_000)
    assert.ok(perSpan < 128, `${perSpan.toFixed(1)} bytes of heap per span kept`)
    const last = [...store.heads()].at(-1)!
    assert.equal(last.name, 'execute app::work')
    assert.equal(fullSpan(last).attributes['svc.function.id'], 'app::work')
  })

  /** Puts 50 sealed spans with attributes and a payload event (hostile keys and strings); weak references to their objects and their JSON copies. */
  function putSealed(store: MemoryStore): { refs: Array<WeakRef<object>>; expected: SpanRecord[] } {
    const refs: Array<WeakRef<object>> = []
    const expected: SpanRecord[] = []
    const resource = { 'service.name': 'w' }
    for (let i = 0; i < 50; i++) {
      const attributes = attributeMap()
      attributes['svc.function.id'] = `f${i}`
      attributes['quote"and\\backslash'] = 'v\u2028\ud800'
      const eventAttributes = attributeMap()
      eventAttributes['svc.payload.json'] = JSON.stringify({ i, text: 'x'.repeat(i) })
      const record = span(`t${i % 5}`, `s${i}`, null, Date.now(), { attributes, resource, events: [{ name: 'svc.invocation.input', timestamp_unix_nano: 1, attributes: eventAttributes }] })
      expected.push(JSON.parse(JSON.stringify(record)) as SpanRecord)
      refs.push(new WeakRef(record), new WeakRef(attributes), new WeakRef(record.events), new WeakRef(eventAttributes))
      store.putSpan(record, undefined, true)
    }
    return { refs, expected }
  }
})

describe('texts of sealed spans (UTF-8 chunks shared with the writer)', () => {
  it('a sealed span\'s head gives the times of the record as scans read them: null end and duration, -0, huge and fractional numbers', () => {
    const store = new MemoryStore(LIMITS)
    const times: Array<[number, number | null, number | null]> = [
      [1764400000000000123, null, null],
      [1764400000000000000, 1764400000000100000, 0.1],
      [-0, 5e-324, Number.MAX_VALUE],
      [Number.MAX_SAFE_INTEGER, null, 12.5],
      [0, 3, null],
    ]
    times.forEach(([start, end, duration], i) => store.putSpan(span('t', `s${i}`, null, 0, { start_time_unix_nano: start, end_time_unix_nano: end, duration_ms: duration }), 100, true))
    const heads = [...store.heads()]
    assert.deepEqual(heads.map((h) => [h.start_time_unix_nano, h.end_time_unix_nano, h.duration_ms]), times)
    assert.ok(Object.is(heads[2]!.start_time_unix_nano, -0))
    assert.deepEqual(store.traceHeads('t').map((h) => h.end_time_unix_nano), times.map(([, end]) => end))
  })

  it("memory: heads give each span's name, service and svc.function.id (shared by many spans, or its own) through evictions, resends and clears", () => {
    const store = new MemoryStore({ ...LIMITS, maxSpans: 300 })
    const expected = new Map<string, [string, string, string | undefined]>()
    const record = (i: number): SpanRecord => {
      // Few names and services, and every 7th span a name of its own; every 5th span no function id.
      const name = i % 7 === 0 ? `own ☃ ${i}` : `execute f${i % 3}`
      const service = `w${i % 2}`
      const functionId = i % 5 === 0 ? undefined : `f${i % 3}`
      const attributes: Record<string, unknown> = functionId === undefined ? { other: 1 } : { 'svc.function.id': functionId }
      expected.set(`s${i % 1000}`, [name, service, functionId])
      return span(`t${i % 450}`, `s${i % 1000}`, null, 1_000_000 + i, { name, service_name: service, attributes })
    }
    for (let i = 0; i < 5000; i++) {
      store.putSpan(record(i), 100, true)
      if (i === 2600) store.clearSpans()
      if (i % 250 === 0) {
        const heads = [...store.heads()]
        assert.ok(heads.length > 0)
        for (const head of heads) assert.deepEqual([head.name, head.service_name, headFunctionId(head)], expected.get(head.span_id), head.span_id)
        for (const full of store.spans()) assert.deepEqual([full.name, full.service_name, full.attributes['svc.function.id']], expected.get(full.span_id))
      }
    }
  })

  it('builtin: spans across many chunks, non-ASCII ones and one larger than a chunk read back from the window, the file and a reopened store as JSON.stringify writes them', () => {
    const path = join(dir, 'texts.db')
    const limits = { ...LIMITS, maxSpans: 5000, maxSpanBytes: 64 << 20 }
    let store = new SqliteStore(path, limits)
    const resource = Object.freeze({ 'service.name': 'w' })
    const expected: string[] = []
    // About 3 MiB of text: several chunks; every 7th span with multi-byte characters and escapes.
    for (let i = 0; i < 3000; i++) {
      const text = i % 7 === 0 ? `é☃𝄞"\\\u2028${i}`.repeat(40) : 'x'.repeat(900 + (i % 50))
      const record = span(`t${i % 100}`, `s${i}`, null, 1_000_000 + i, { resource, attributes: { 'svc.function.id': 'f', n: i }, events: [{ name: 'svc.invocation.input', timestamp_unix_nano: i, attributes: { 'svc.payload.json': text } }] })
      if (i === 1500) record.attributes.big = '☃'.repeat(TEXT_CHUNK_BYTES)
      expected.push(JSON.stringify({ ...record, resource: undefined }))
      store.putSpan(record, 1000, true)
    }
    const window = (s: MemoryStore): string[] => [...s.spans()].map((r) => {
      assert.equal(r.resource['service.name'], 'w')
      return JSON.stringify({ ...r, resource: undefined })
    })
    assert.deepEqual(window(store), expected)
    store.flush()
    const file = new DatabaseSync(path, { readOnly: true })
    const rows = file.prepare('SELECT body, typeof(body) AS type FROM spans ORDER BY seq').all() as Array<{ body: string; type: string }>
    file.close()
    assert.deepEqual(rows.map((r) => r.type), expected.map(() => 'text'))
    assert.deepEqual(rows.map((r) => r.body), expected)
    store.close()
    store = new SqliteStore(path, limits)
    assert.deepEqual(window(store), expected)
    assert.deepEqual(store.trace('t7').map((s) => s.span_id), expected.map((_, i) => `s${i}`).filter((_, i) => i % 100 === 7))
    store.close()
  })
})

describe('chunks of sealed spans are reused once nothing reads them', () => {
  /** A sealed span of about `size` bytes of JSON (every third with multi-byte characters). */
  const sealed = (i: number, size: number): SpanRecord => span(`t${i % 37}`, `s${i}`, null, 1_000_000 + i, { resource: { 'service.name': 'w' }, attributes: { 'svc.function.id': 'f', text: (i % 3 === 0 ? `☃${i}` : `x${i}`).padEnd(size, i % 3 === 0 ? 'é' : 'y') } })
  const bodyOf = (record: SpanRecord): string => JSON.stringify({ ...record, resource: undefined })

  it('builtin: a chunk the window let go is not reused before the writer wrote the batches naming it, so every row holds its own span', () => {
    const path = join(dir, 'reuse.db')
    // A window of 1 MiB: the spans leave it (and their chunks) long before the held-up writer gets them.
    const store = new SqliteStore(path, { ...LIMITS, maxSpans: 100_000, maxSpanBytes: 1 << 20, maxDiskBytes: 1 << 30 })
    const lock = new DatabaseSync(path)
    lock.exec('BEGIN IMMEDIATE')
    const expected = new Map<string, string>()
    try {
      for (let i = 0; i < 6000; i++) {
        const record = sealed(i, 2000)
        expected.set(record.span_id, bodyOf(record))
        store.putSpan(record, 2000, true)
      }
      lock.exec('ROLLBACK')
      store.flush()
      const rows = lock.prepare('SELECT body FROM spans ORDER BY seq').all() as Array<{ body: string }>
      assert.ok(rows.length + store.droppedRows === 6000 && rows.length > 1000, `${rows.length} rows, ${store.droppedRows} dropped`)
      for (const { body } of rows) assert.equal(body, expected.get((JSON.parse(body) as SpanRecord).span_id))
      // And the window holds the newest spans, read from reused chunks.
      const held = [...store.spans()]
      assert.ok(held.length > 100)
      assert.deepEqual(held.map(bodyOf), held.map((s) => expected.get(s.span_id)))
      assert.equal(held.at(-1)!.span_id, 's5999')
    } finally {
      lock.close()
      store.close()
    }
  })

  it('memory: the window reads right through many reuses, and a head kept after its span left the window and its chunk was reused refuses to read rather than give another span', () => {
    const store = new MemoryStore({ ...LIMITS, maxSpans: 100_000, maxSpanBytes: 1 << 20 })
    store.putSpan(sealed(0, 3000), 3000, true)
    const kept = [...store.heads()][0]!
    for (let i = 1; i < 5000; i++) {
      store.putSpan(sealed(i, 3000), 3000, true)
      if (i % 500 === 0) {
        const held = [...store.spans()]
        assert.deepEqual(held.map(bodyOf), held.map((s) => bodyOf(sealed(Number(s.span_id.slice(1)), 3000))))
        assert.equal(held.at(-1)!.span_id, `s${i}`)
      }
    }
    assert.throws(() => fullSpan(kept), /left the observability window/)
    assert.throws(() => kept.start_time_unix_nano, /left the observability window/)
    assert.deepEqual(store.trace('t0').map((s) => s.span_id), [...store.heads()].filter((s) => s.trace_id === 't0').map((s) => s.span_id))
  })
})
