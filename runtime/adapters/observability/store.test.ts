import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { LIMITS, log, runStoreConformance, span } from './conformance.ts'
import { SqliteStore } from './sqlite.ts'
import { MemoryStore, NoStore } from './store.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-obs-store-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

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

  it('keeps the file under max_disk_bytes under a flood', () => {
    const path = join(dir, 'cap.db')
    const store = new SqliteStore(path, { ...LIMITS, maxDiskBytes: 2 << 20 })
    const body = 'y'.repeat(200)
    for (let i = 0; i < 100_000; i++) {
      store.putLog(log(`${i} ${body}`))
      if (i % 5000 === 4999) store.flush()
    }
    store.sweep(Date.now())
    assert.ok(store.usedBytes() <= 2 << 20, `used ${store.usedBytes()}`)
    store.close()
    assert.ok(statSync(path).size < 8 << 20, `file ${statSync(path).size}`)
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

describe('spanJson', () => {
  it('reads back as the span it wrote, for any span (property)', async () => {
    const { default: fc } = await import('fast-check')
    const { spanJson } = await import('./records.ts')
    const text = fc.string({ unit: 'binary' })
    const attrs = fc.dictionary(fc.string(), fc.jsonValue())
    const shared = Object.freeze({ 'service.name': 'svc' })
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
        attributes: attrs,
        resource: fc.oneof(fc.constant(shared), fc.dictionary(fc.string(), fc.string())),
        events: fc.oneof(fc.constant(none), fc.array(fc.record({ name: text, timestamp_unix_nano: fc.integer(), attributes: attrs }))),
        links: fc.oneof(fc.constant(none), fc.array(fc.record({ trace_id: text, span_id: text, attributes: attrs }))),
      },
      { requiredKeys: ['trace_id', 'span_id', 'parent_span_id', 'name', 'kind', 'service_name', 'start_time_unix_nano', 'end_time_unix_nano', 'duration_ms', 'status', 'attributes', 'resource', 'events', 'links'] },
    )
    fc.assert(
      fc.property(record, (span) => {
        assert.deepEqual(JSON.parse(spanJson(span as never)), JSON.parse(JSON.stringify(span)))
      }),
      { numRuns: 500 },
    )
  })
})
