/**
 * The filters of `engine::traces::list` that `svc traces` sends (issue 21): `function_id`, the
 * bounds on `status`, the durations and the text filters, and `engine::logs::list` by `trace_id`;
 * random payloads answer or fail with `INVALID_ARGUMENTS`, never anything else (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { SvcError } from 'svc-protocol'
import { LIMITS, log, span } from '../../adapters/observability/conformance.ts'
import { MemoryStore } from '../../adapters/observability/store.ts'
import { listLogs, listTraces, MAX_TRACE_FILTER_CHARS } from './query.ts'

const T0 = Date.now() - 10_000

/** Two traces: `a` runs `orders::create` and fails after 300 ms, `b` runs `orders::list` in 5 ms. */
function store(): MemoryStore {
  const s = new MemoryStore(LIMITS)
  const done = (ms: number, status: 'ok' | 'error', fn: string) => ({ end_time_unix_nano: (T0 + ms) * 1e6, duration_ms: ms, status, attributes: { 'svc.function.id': fn } })
  s.putSpan(span('a'.repeat(32), '1'.repeat(16), null, T0, { name: 'POST /orders', kind: 'server', ...done(300, 'error', 'orders::create') }))
  s.putSpan(span('a'.repeat(32), '2'.repeat(16), '1'.repeat(16), T0 + 1, { name: 'execute orders::create', ...done(290, 'error', 'orders::create') }))
  s.putSpan(span('b'.repeat(32), '3'.repeat(16), null, T0 + 1000, { name: 'GET /orders', kind: 'server', ...done(5, 'ok', 'orders::list') }))
  s.putLog(log('in a', T0 + 2, { trace_id: 'a'.repeat(32), span_id: '2'.repeat(16) }))
  s.putLog(log('in b', T0 + 1001, { trace_id: 'b'.repeat(32), span_id: '3'.repeat(16) }))
  s.putLog(log('in none', T0 + 1002))
  return s
}

const ids = (r: { traces: Array<{ trace_id: string }> }): string[] => r.traces.map((t) => t.trace_id[0]!)

describe('engine::traces::list filters (svc traces)', () => {
  it('function_id keeps the traces in which that function ran, the root span describing each', () => {
    const s = store()
    assert.deepEqual(ids(listTraces(s, { function_id: 'orders::create' })), ['a'])
    assert.deepEqual(ids(listTraces(s, { function_id: 'orders::list' })), ['b'])
    assert.deepEqual(ids(listTraces(s, { function_id: 'orders' })), [], 'an id, not a substring')
    assert.equal(listTraces(s, { function_id: 'orders::create' }).traces[0]!.name, 'POST /orders')
  })

  it('status, min_duration_ms and name combine; newest first by default', () => {
    const s = store()
    assert.deepEqual(ids(listTraces(s, {})), ['b', 'a'])
    assert.deepEqual(ids(listTraces(s, { status: 'ERROR' })), ['a'])
    assert.deepEqual(ids(listTraces(s, { min_duration_ms: 250 })), ['a'])
    assert.deepEqual(ids(listTraces(s, { name: 'get', status: 'ok' })), ['b'])
  })

  it('refuses an unknown status, a negative duration and an over-long text filter with INVALID_ARGUMENTS', () => {
    const s = store()
    for (const bad of [{ status: 'failed' }, { min_duration_ms: -1 }, { max_duration_ms: -5 }, { name: 'x'.repeat(MAX_TRACE_FILTER_CHARS + 1) }, { function_id: 'f'.repeat(MAX_TRACE_FILTER_CHARS + 1) }, { function_id: 7 }]) {
      assert.throws(() => listTraces(s, bad), (e: unknown) => e instanceof SvcError && e.code === 'INVALID_ARGUMENTS', JSON.stringify(bad).slice(0, 80))
    }
    assert.equal(listTraces(s, { name: 'x'.repeat(MAX_TRACE_FILTER_CHARS) }).total, 0)
  })

  it('engine::logs::list with trace_id returns only the records of that trace', () => {
    assert.deepEqual(
      listLogs(store(), { trace_id: 'A'.repeat(32) }).logs.map((l) => l.body),
      ['in a'],
    )
  })

  it('answers any payload or refuses it with INVALID_ARGUMENTS (property)', () => {
    const s = store()
    const hostileText = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('\u001b]52;c;aGk=\u0007', '__proto__', '%00', '\u202e', ''), fc.integer({ min: 250, max: 5000 }).map((n) => 'n'.repeat(n)))
    const value = fc.oneof(hostileText, fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.anything())
    const key = fc.constantFrom('function_id', 'name', 'status', 'min_duration_ms', 'max_duration_ms', 'service_name', 'trace_id', 'limit', 'offset', 'sort_by', 'sort_order', 'attributes', 'start_time')
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 5 }), (payload) => {
        try {
          const r = listTraces(s, payload)
          assert.ok(r.traces.length <= r.limit)
        } catch (e) {
          assert.ok(e instanceof SvcError && e.code === 'INVALID_ARGUMENTS', String(e))
        }
      }),
      { numRuns: 500, examples: [[{ sort_by: '__proto__' }], [{ sort_by: 'constructor', sort_order: 'asc' }]] },
    )
  })
})

describe('scans of a window of spans kept as text (spans from /otel frames)', () => {
  /** `n` one-span traces put sealed, as the observability worker puts a frame's spans; every third an error, every other one running `orders::create`. */
  function sealedStore(n: number): MemoryStore {
    const s = new MemoryStore({ ...LIMITS, maxSpans: n })
    for (let i = 0; i < n; i++) {
      const trace = i.toString(16).padStart(32, '0')
      const fn = i % 2 === 0 ? 'orders::create' : 'orders::list'
      s.putSpan(span(trace, i.toString(16).padStart(16, '0'), null, T0 + i, { name: `execute ${fn}`, status: i % 3 === 0 ? 'error' : 'ok', end_time_unix_nano: (T0 + i + 5) * 1e6, duration_ms: 5, attributes: { 'svc.function.id': fn } }), undefined, true)
    }
    return s
  }

  it('engine::traces::list and engine::runs::list parse only the spans they return, and answer as over span objects', async () => {
    const { PackedSpan } = await import('../../adapters/observability/store.ts')
    const { listRuns } = await import('./runs.ts')
    const sealed = sealedStore(600)
    const unpack = PackedSpan.prototype.unpack
    let parsed = 0
    PackedSpan.prototype.unpack = function (this: InstanceType<typeof PackedSpan>) {
      parsed++
      return unpack.call(this)
    }
    let traces, runs
    try {
      traces = listTraces(sealed, { function_id: 'orders::create', status: 'error', limit: 5 })
      runs = listRuns(sealed, { function_id: 'orders::create', limit: 5 })
    } finally {
      PackedSpan.prototype.unpack = unpack
    }
    // The 100 error traces of orders::create are summarised, 5 returned; 5 runs (each reads its trace).
    assert.ok(parsed <= 200, `parsed ${parsed} of 600 spans`)
    // The same answers as from span objects.
    const objects = new MemoryStore({ ...LIMITS, maxSpans: 600 })
    for (const s of sealed.spans()) objects.putSpan(s)
    assert.deepEqual(traces, listTraces(objects, { function_id: 'orders::create', status: 'error', limit: 5 }))
    assert.deepEqual(runs, listRuns(objects, { function_id: 'orders::create', limit: 5 }))
    assert.equal(traces.traces.length, 5)
    assert.equal(runs.runs.length, 5)
  })
})
