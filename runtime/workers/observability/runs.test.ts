/**
 * `engine::runs::list` over a memory store (issue 21): the newest runs of one function within the
 * limit whatever the window holds, the caller from the parent span, hostile payload events and
 * inputs (fast-check): previews never exceed 4 KiB nor cut a character, a bad input is
 * `INVALID_ARGUMENTS`, never a crash, and a span's error code of any shape gives a run's
 * `error_code` that is null or a short code.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { LIMITS, span } from '../../adapters/observability/conformance.ts'
import { MemoryStore } from '../../adapters/observability/store.ts'
import { listRuns, previewOf, RUN_PAYLOAD_PREVIEW_BYTES } from './runs.ts'

const input = (json: string, extra: Record<string, unknown> = {}) => ({ name: 'svc.invocation.input', timestamp_unix_nano: 0, attributes: { 'svc.payload.json': json, 'svc.payload.truncated': false, 'svc.payload.ok': true, ...extra } })

describe('engine::runs::list', () => {
  it('keeps the newest `limit` runs of the function, newest first, and counts them all', () => {
    const store = new MemoryStore({ ...LIMITS, maxSpans: 10_000 })
    const t0 = Date.now() - 10_000
    // Arrival order is not start order: the newest runs are not the last put.
    for (let i = 0; i < 300; i++) {
      const at = t0 + ((i * 7919) % 300)
      store.putSpan(span(`t${i}`, `s${i}`, null, at, { name: 'execute app::work', status: i % 3 === 0 ? 'error' : 'ok', attributes: { 'svc.function.id': 'app::work' } }))
      store.putSpan(span(`u${i}`, `v${i}`, null, at, { name: 'execute app::other' }))
    }
    const page = listRuns(store, { function_id: 'app::work', limit: 10 })
    assert.equal(page.total, 300)
    assert.deepEqual(page.runs.map((r) => r.started_at_ms), Array.from({ length: 10 }, (_, i) => t0 + 299 - i))
    const errors = listRuns(store, { function_id: 'app::work', status: 'error', limit: 500 })
    assert.equal(errors.total, 100)
    assert.ok(errors.runs.every((r) => r.status === 'error'))
    const older = listRuns(store, { function_id: 'app::work', before_ms: t0 + 100, limit: 500 })
    assert.equal(older.total, 100)
  })

  it('names the caller: the calling function of an execute parent, else the parent span’s name, else null', () => {
    const store = new MemoryStore(LIMITS)
    store.putSpan(span('t1', 'http', null, Date.now(), { name: 'POST /orders' }))
    store.putSpan(span('t1', 'a', 'http', Date.now(), { name: 'execute app::create', attributes: { 'svc.function.id': 'app::create' } }))
    store.putSpan(span('t1', 'b', 'a', Date.now(), { name: 'execute app::price', attributes: { 'svc.function.id': 'app::price' } }))
    store.putSpan(span('t2', 'c', 'gone', Date.now(), { name: 'execute app::price', attributes: { 'svc.rerun_of': 'ab'.repeat(16) } }))
    assert.equal(listRuns(store, { function_id: 'app::create' }).runs[0]!.caller, 'POST /orders')
    const price = listRuns(store, { function_id: 'app::price' }).runs
    assert.deepEqual(price.map((r) => JSON.stringify([r.caller, r.rerun_of])).sort(), [JSON.stringify(['app::create', null]), JSON.stringify([null, 'ab'.repeat(16)])].sort())
  })

  it('previews a payload in at most 4 KiB, cut between characters and marked; a value the SDK cut is marked too', () => {
    const store = new MemoryStore(LIMITS)
    const now = Date.now()
    store.putSpan(span('t', 's', null, now, { name: 'execute app::big', events: [input(JSON.stringify({ text: '€'.repeat(3000) }))] }))
    store.putSpan(span('t2', 's2', null, now - 1, { name: 'execute app::big', events: [input('{"a":', { 'svc.payload.truncated': true })] }))
    const [big, cut] = listRuns(store, { function_id: 'app::big' }).runs
    assert.equal(big!.input!.truncated, true)
    assert.ok(Buffer.byteLength(big!.input!.json) <= RUN_PAYLOAD_PREVIEW_BYTES)
    assert.ok(!big!.input!.json.includes('\ufffd'), 'no broken character')
    assert.deepEqual(cut!.input, { json: '{"a":', truncated: true })
    assert.equal(big!.output, null, 'no output event: null')
  })

  it('fuzz: any input is answered or refused with INVALID_ARGUMENTS; any payload event previews within bounds', () => {
    const store = new MemoryStore(LIMITS)
    const value = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.jsonValue().map((v) => JSON.stringify(v)), fc.integer(), fc.constant(null), fc.dictionary(fc.string(), fc.jsonValue()))
    fc.assert(
      fc.property(value, fc.option(value), fc.boolean(), (json, output, truncated) => {
        const id = `t${Math.random().toString(16).slice(2)}`
        store.putSpan(span(id, 's', null, Date.now(), { name: `execute fz::${id}`, events: [input(json as string, { 'svc.payload.truncated': truncated }), { name: 'svc.invocation.output', timestamp_unix_nano: 0, attributes: { 'svc.payload.json': output } }] }))
        const [run] = listRuns(store, { function_id: `fz::${id}`, limit: 1 }).runs
        for (const payload of [run!.input, run!.output]) {
          if (payload === null) continue
          assert.ok(Buffer.byteLength(payload.json) <= RUN_PAYLOAD_PREVIEW_BYTES)
          if (typeof json === 'string' && payload === run!.input) assert.ok(json.startsWith(payload.json) || Buffer.from(json).subarray(0, Buffer.byteLength(payload.json)).toString() === payload.json)
        }
      }),
      { numRuns: 300 },
    )
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ function_id: fc.oneof(fc.string(), fc.jsonValue()), limit: fc.oneof(fc.integer({ min: -3, max: 600 }), fc.double(), fc.jsonValue()), status: fc.oneof(fc.constantFrom('ok', 'error', 'unset', 'ERROR'), fc.jsonValue()), before_ms: fc.oneof(fc.double(), fc.jsonValue()) }, { requiredKeys: [] })), (data) => {
        try {
          const page = listRuns(store, data)
          assert.ok(page.runs.length <= 500 && page.total >= page.runs.length)
        } catch (error) {
          assert.equal((error as { code?: string }).code, 'INVALID_ARGUMENTS', String(error))
        }
      }),
      { numRuns: 300 },
    )
    // A worker's spans are not trusted: whatever its `svc.error.code` attribute or `exception.type`
    // event attribute holds, a run's error_code is null or a short code, and only a failed run has one.
    const hostileCode = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 300 }), fc.constantFrom('cancelled', 'TIMEOUT', 'a'.repeat(129), 'x\u001b[2J', '__proto__', ''), fc.jsonValue())
    fc.assert(
      fc.property(fc.constantFrom('ok', 'error', 'unset'), fc.option(hostileCode, { nil: undefined }), fc.option(hostileCode, { nil: undefined }), (status, engineCode, exceptionType) => {
        const id = `c${Math.random().toString(16).slice(2)}`
        const attributes: Record<string, unknown> = engineCode === undefined ? {} : { 'svc.error.code': engineCode }
        const events = exceptionType === undefined ? [] : [{ name: 'exception', timestamp_unix_nano: 0, attributes: { 'exception.type': exceptionType } }]
        store.putSpan(span(id, 's', null, Date.now(), { name: `execute fz::${id}`, status: status as 'ok', attributes, events }))
        const [run] = listRuns(store, { function_id: `fz::${id}`, limit: 1 }).runs
        const code = run!.error_code
        if (status !== 'error') assert.equal(code, null)
        else if (code !== null) {
          assert.match(code, /^[A-Za-z0-9_.:-]{1,128}$/)
          assert.equal(code, engineCode !== undefined ? engineCode : exceptionType)
        }
      }),
      { numRuns: 300 },
    )
    // A surrogate pair straddling the cut is not split either.
    const astral = previewOf(JSON.stringify('a' + '😀'.repeat(2000)), false)
    assert.ok(!astral.json.includes('\ufffd') && astral.truncated)
  })
})
