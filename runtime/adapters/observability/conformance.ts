/**
 * The conformance suite every observability store passes (builtins.md §12.3): replacement of
 * in-progress spans, the window bounds, retention, clearing, and a flood staying within bounds.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LogRecord, SpanRecord } from './records.ts'
import { RECORD_OVERHEAD_BYTES, type StoreLimits, type TelemetryStore } from './store.ts'

/** Opens a fresh store with `limits` (a new file for `builtin`). */
export type StoreFactory = (limits: StoreLimits) => Promise<TelemetryStore> | TelemetryStore

export const LIMITS: StoreLimits = { retentionSeconds: 3600, maxSpans: 1000, maxLogs: 1000, maxSpanBytes: 64 << 20, maxLogBytes: 32 << 20, maxDiskBytes: 1 << 30 }

/** A log record observed at `ms` (Unix milliseconds). */
export function log(body: string, ms = Date.now(), fields: Partial<LogRecord> = {}): LogRecord {
  const ns = ms * 1e6
  return { timestamp_unix_nano: ns, observed_timestamp_unix_nano: ns, severity_number: 9, severity_text: 'INFO', body, attributes: {}, resource: {}, service_name: 'test', trace_id: null, span_id: null, ...fields }
}

/** A span of `trace` started at `ms`; unfinished unless `end` is given. */
export function span(trace: string, id: string, parent: string | null, ms = Date.now(), fields: Partial<SpanRecord> = {}): SpanRecord {
  return { trace_id: trace, span_id: id, parent_span_id: parent, name: `s ${id}`, kind: 'internal', service_name: 'svc', start_time_unix_nano: ms * 1e6, end_time_unix_nano: null, duration_ms: null, status: 'unset', attributes: {}, resource: {}, events: [], links: [], ...fields }
}

export function runStoreConformance(name: string, factory: StoreFactory): void {
  describe(`${name} observability store conformance`, () => {
    it('keeps logs in arrival order and spans by trace; a span put again replaces the earlier one', async () => {
      const store = await factory(LIMITS)
      store.putLog(log('a'))
      store.putLog(log('b'))
      store.putSpan(span('t1', 's1', null))
      store.putSpan(span('t1', 's2', 's1'))
      store.putSpan(span('t1', 's1', null, Date.now(), { end_time_unix_nano: 1, duration_ms: 3, status: 'ok' }))
      assert.deepEqual(store.logs().map((l) => l.body), ['a', 'b'])
      assert.equal(store.trace('t1').length, 2)
      assert.equal(store.trace('t1').find((s) => s.span_id === 's1')!.status, 'ok')
      assert.deepEqual(store.trace('nope'), [])
      assert.deepEqual(store.counts(), { spans: 2, logs: 2 })
      store.close()
    })

    it('evicts the oldest records beyond the window', async () => {
      const store = await factory(LIMITS)
      for (let i = 0; i < 2500; i++) store.putLog(log(`l${i}`))
      for (let i = 0; i < 2500; i++) store.putSpan(span(`t${i % 7}`, `s${i}`, null))
      assert.equal(store.counts().logs, 1000)
      assert.equal(store.logs()[0]!.body, 'l1500')
      // Spans are evicted in batches of 1/64 of the window: never more than the window.
      const spans = store.counts().spans
      assert.ok(spans <= 1000 && spans >= 1000 - 1000 / 64 - 1, `window holds ${spans}`)
      const perTrace = [0, 1, 2, 3, 4, 5, 6].reduce((n, t) => n + store.trace(`t${t}`).length, 0)
      assert.equal(perTrace, spans)
      store.close()
    })

    it('keeps its bytes within the byte budgets, evicting the oldest records; a record larger than a whole budget is kept out', async () => {
      // Records given as `bytes` so that each counts a round 10,000 with the overhead.
      const b = 10_000 - RECORD_OVERHEAD_BYTES
      const store = await factory({ ...LIMITS, maxSpanBytes: 100_000, maxLogBytes: 50_000 })
      for (let i = 0; i < 25; i++) store.putSpan(span(`t${i}`, `s${i}`, null), b)
      for (let i = 0; i < 25; i++) store.putLog(log(`l${i}`), b)
      assert.deepEqual(store.windowBytes(), { spans: 100_000, logs: 50_000 })
      assert.deepEqual(store.counts(), { spans: 10, logs: 5 })
      assert.deepEqual([...store.spans()].map((s) => s.span_id), Array.from({ length: 10 }, (_, i) => `s${15 + i}`))
      assert.deepEqual(store.trace('t14'), [], 'an evicted span leaves its trace too')
      assert.deepEqual(store.logs().map((l) => l.body), ['l20', 'l21', 'l22', 'l23', 'l24'])
      // Larger than the whole budget: not kept, and nothing evicted for it.
      store.putSpan(span('huge', 'h', null), 100_001)
      store.putLog(log('huge'), 50_001)
      assert.deepEqual(store.trace('huge'), [])
      assert.deepEqual(store.counts(), { spans: 10, logs: 5 })
      assert.deepEqual(store.windowBytes(), { spans: 100_000, logs: 50_000 })
      store.close()
    })

    it('counts a span that grows in place (an engine span that finished) at its new size, and one no longer in the window not at all', async () => {
      const b = 10_000 - RECORD_OVERHEAD_BYTES
      const store = await factory({ ...LIMITS, maxSpanBytes: 100_000 })
      const running = span('run', 'r', null)
      store.putSpan(running, b)
      for (let i = 0; i < 8; i++) store.putSpan(span(`t${i}`, `s${i}`, null), b)
      assert.equal(store.windowBytes().spans, 90_000)
      // It finished with more attributes: 30,000 now; the oldest (itself) goes to make room.
      running.end_time_unix_nano = running.start_time_unix_nano + 1
      store.updateSpan(running, 30_000 - RECORD_OVERHEAD_BYTES)
      assert.equal(store.windowBytes().spans, 80_000)
      assert.deepEqual(store.trace('run'), [])
      // Updated again after it was evicted: nothing changes.
      store.updateSpan(running, 50_000)
      assert.equal(store.windowBytes().spans, 80_000)
      const later = span('later', 'l', null)
      store.putSpan(later, b)
      store.putSpan(span('later', 'l', null, Date.now(), { status: 'ok' }), 20_000 - RECORD_OVERHEAD_BYTES)
      assert.equal(store.windowBytes().spans, 100_000, 'a span sent again is counted once, at its new size')
      assert.equal(store.clearSpans(), 9)
      store.updateSpan(later, b)
      assert.deepEqual(store.windowBytes(), { spans: 0, logs: 0 }, 'a cleared span does not count when it changes later')
      store.close()
    })

    it('sweeps what is older than the retention', async () => {
      const store = await factory(LIMITS)
      const now = Date.now()
      store.putLog(log('old', now - 7200_000))
      store.putLog(log('new', now))
      store.putSpan(span('t', 'old', null, now - 7200_000))
      store.putSpan(span('t', 'new', null, now))
      store.putPoint({ name: 'm', type: 'sum' }, { time_unix_nano: (now - 7200_000) * 1e6, value: 1, attributes: {} })
      store.putPoint({ name: 'm', type: 'sum' }, { time_unix_nano: now * 1e6, value: 2, attributes: {} })
      store.sweep(now)
      assert.deepEqual(store.logs().map((l) => l.body), ['new'])
      assert.deepEqual(store.trace('t').map((s) => s.span_id), ['new'])
      const bytes = store.windowBytes()
      assert.ok(bytes.spans > 0 && bytes.logs > 0)
      store.clearLogs()
      store.clearSpans()
      assert.deepEqual(store.windowBytes(), { spans: 0, logs: 0 })
      assert.deepEqual(store.metrics()[0]!.points.map((p) => p.value), [2])
      store.close()
    })

    it('clears logs and spans, counting what was removed', async () => {
      const store = await factory(LIMITS)
      store.putLog(log('a'))
      store.putSpan(span('t', 's', null))
      assert.equal(store.clearLogs(), 1)
      assert.equal(store.clearSpans(), 1)
      assert.deepEqual(store.counts(), { spans: 0, logs: 0 })
      store.close()
    })

    it('stays within its bounds under a flood of 200,000 log lines', async () => {
      const store = await factory({ ...LIMITS, maxDiskBytes: 4 << 20 })
      const body = 'x'.repeat(120)
      for (let i = 0; i < 200_000; i++) {
        store.putLog(log(`${i} ${body}`))
        if (i % 20_000 === 0) await new Promise((r) => setImmediate(r))
      }
      store.flush()
      store.sweep(Date.now())
      assert.equal(store.counts().logs, 1000)
      assert.match(store.logs().at(-1)!.body, /^199999 /)
      store.close()
    })
  })
}
