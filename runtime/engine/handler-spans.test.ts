/**
 * The handler span the engine records from a worker's result (`handler-spans.ts`): the announce's
 * `handler_spans` checked, the span built from the call and the result, and a fast-check property
 * over hostile fields (never throws; a record, when made, is in the invocation's trace and names
 * the ids and times the result gave).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { RawJson } from 'svc-protocol'
import { runInNewContext } from 'node:vm'
import { setFlagsFromString } from 'node:v8'
import { decodeText, type InboundInvoke, type InboundResult } from 'svc-protocol'
import { jsonParse } from 'svc-protocol/json'
import { spanBody } from '../adapters/observability/store.ts'
import { withPayloadEvents, type SpanRecord } from '../adapters/observability/records.ts'
import { baggageAttributes, handlerSpan, handlerSpanRecord, handlerSpanSource, durationJson, nanosJson, spanText, type HandledCall } from './handler-spans.ts'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER = '00f067aa0ba902b7'
const OWN = 'b7ad6b7169203331'
const call: HandledCall = {
  functionId: 'orders::create',
  data: '{"item":1,"password":"p"}',
  traceparent: `00-${TRACE}-${CALLER}-01`,
  baggage: 'svc.function.id=orders%3A%3Acreate,iii.function.id=orders%3A%3Acreate,tenant=acme;ttl=5',
}
const source = handlerSpanSource({ resource: { 'service.name': 'orders', 'service.version': '1.2.0' } })

describe('handlerSpanSource', () => {
  it('takes a resource of strings with a service.name and the payload settings', () => {
    assert.deepEqual(handlerSpanSource({ resource: { 'service.name': 's' }, payloads: false, payload_max_bytes: 64 }), {
      resource: { 'service.name': 's' },
      serviceName: 's',
      payloads: false,
      maxBytes: 64,
    })
    assert.equal(source?.maxBytes, null)
    assert.equal(source?.payloads, true)
  })

  it('refuses what is not that shape', () => {
    for (const value of [
      undefined,
      null,
      'x',
      [],
      {},
      { resource: [] },
      { resource: { 'service.version': '1' } },
      { resource: { 'service.name': 1 } },
      { resource: { 'service.name': 's' }, payloads: 'no' },
      { resource: { 'service.name': 's' }, payload_max_bytes: -1 },
      { resource: { 'service.name': 's' }, payload_max_bytes: 1.5 },
      { resource: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v']).concat([['service.name', 's']])) },
      { resource: { 'service.name': 'x'.repeat(5000) } },
      { resource: { 'service.name': '\ud800' } },
    ]) {
      assert.equal(handlerSpanSource(value), undefined, JSON.stringify(value))
    }
  })
})

describe('handlerSpanRecord', () => {
  it('builds the span as svc-sdk writes it: parent, baggage attributes, redacted payload events, OK', () => {
    const record = handlerSpanRecord(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1000', span_end: '3000', result: new RawJson('{"id":7,"api_key":"k"}') }, source, 'fallback')
    assert.ok(record)
    assert.equal(record.trace_id, TRACE)
    assert.equal(record.span_id, OWN)
    assert.equal(record.parent_span_id, CALLER)
    assert.equal(record.name, 'execute orders::create')
    assert.equal(record.kind, 'internal')
    assert.equal(record.service_name, 'orders')
    assert.equal(record.resource['service.version'], '1.2.0')
    assert.equal(record.duration_ms, 0.002)
    assert.equal(record.status, 'ok')
    assert.deepEqual(record.attributes, { 'svc.function.id': 'orders::create', 'iii.function.id': 'orders::create', tenant: 'acme' })
    assert.deepEqual(
      record.events.map((e) => [e.name, e.timestamp_unix_nano, e.attributes['svc.payload.json'], e.attributes['svc.payload.ok']]),
      [
        ['svc.invocation.input', 1000, '{"item":1,"password":"[REDACTED]"}', true],
        ['svc.invocation.output', 3000, '{"id":7,"api_key":"[REDACTED]"}', true],
      ],
    )
  })

  it('a failure: ERROR with its message, error.type, the exception event between the payloads', () => {
    const error = { code: 'payment_failed', message: 'card declined', stacktrace: 'Error: card declined\n    at charge (pay.ts:3:9)' }
    const record = handlerSpanRecord(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1', span_end: '2', error }, source, 'fallback')!
    assert.equal(record.status, 'error')
    assert.equal(record.status_message, 'card declined')
    assert.equal(record.attributes['error.type'], 'payment_failed')
    assert.deepEqual(record.events.map((e) => e.name), ['svc.invocation.input', 'exception', 'svc.invocation.output'])
    assert.equal(record.events[1]!.attributes['exception.stacktrace'], error.stacktrace)
    assert.equal(record.events[2]!.attributes['svc.payload.ok'], false)
    // Without a stack: `<code>: <message>`, as svc-sdk records it.
    const bare = handlerSpanRecord(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1', span_end: '2', error: { code: 'x', message: 'y' } }, source, 'f')!
    assert.equal(bare.events[1]!.attributes['exception.stacktrace'], 'x: y')
  })

  it('payload settings: no events when off, cut with the marker past the cap', () => {
    const off = handlerSpanRecord(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1', span_end: '2' }, handlerSpanSource({ resource: { 'service.name': 's' }, payloads: false }), 'f')!
    assert.deepEqual(off.events, [])
    const capped = handlerSpanRecord(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1', span_end: '2' }, handlerSpanSource({ resource: { 'service.name': 's' }, payload_max_bytes: 5 }), 'f')!
    assert.equal(capped.events[0]!.attributes['svc.payload.json'], '{"ite..."[TRUNCATED]"')
    assert.equal(capped.events[0]!.attributes['svc.payload.truncated'], true)
    assert.equal(capped.events[1]!.attributes['svc.payload.json'], 'null', 'no result: null, as svc-sdk records it')
  })

  it('a root span without a parent; the fallback service without an announce', () => {
    const record = handlerSpanRecord({ ...call, traceparent: undefined }, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1', span_end: '2' }, undefined, 'worker-a')!
    assert.equal(record.parent_span_id, null)
    assert.equal(record.service_name, 'worker-a')
    assert.deepEqual(record.resource, { 'service.name': 'worker-a' })
  })

  it('queue deliveries: each span has its own message id and attempt, the same header again included', () => {
    const result = { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1000', span_end: '3000', result: new RawJson('null') }
    const delivery = (id: string, attempt: number) => `tenant=acme,svc.queue.name=jobs,svc.queue.message_id=${id},svc.queue.attempt=${attempt}`
    const seen = ['a', 'b', 'a', 'c', 'c'].map((id, n) => {
      const parts = handlerSpan({ ...call, baggage: delivery(id, n) }, result, source, 'fallback')!
      const text = JSON.parse(spanText(parts).body) as { attributes: Record<string, unknown> }
      return [text.attributes['svc.queue.message_id'], text.attributes['svc.queue.attempt'], Object.keys(text.attributes).join()]
    })
    const keys = 'svc.function.id,tenant,svc.queue.name,svc.queue.message_id,svc.queue.attempt'
    assert.deepEqual(seen, [['a', '0', keys], ['b', '1', keys], ['a', '2', keys], ['c', '3', keys], ['c', '4', keys]])
  })

  it('baggage: entries in order, percent-decoded, properties dropped, malformed ones skipped, svc.function.id first when absent', () => {
    assert.deepEqual(baggageAttributes('a=1,b=%E2%9C%93;p=1,bad,c=%ZZ, d = 4 ', 'f::g'), { 'svc.function.id': 'f::g', a: '1', b: '✓', d: '4' })
    assert.deepEqual(Object.keys(baggageAttributes('__proto__=x', 'f')), ['svc.function.id', '__proto__'])
  })

  it('hostile fields never throw; a span is made only in the invocation trace, with the ids and times given (fast-check)', () => {
    const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n })
    const traceparent = fc.oneof(
      fc.tuple(hex(32), hex(16), fc.constantFrom('00', '01', '03', 'ff')).map(([t, s, f]) => `00-${t}-${s}-${f}`),
      fc.tuple(fc.constant(TRACE), hex(16)).map(([t, s]) => `00-${t}-${s}-01`),
      fc.string({ maxLength: 60 }),
    )
    const nanos = fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 19n }).map(String), fc.string({ maxLength: 24 }))
    const json = fc.oneof(fc.json({ maxDepth: 3 }), fc.string({ maxLength: 40 }))
    fc.assert(
      fc.property(
        traceparent,
        fc.option(nanos, { nil: undefined }),
        fc.option(nanos, { nil: undefined }),
        json,
        fc.option(json, { nil: undefined }),
        fc.string({ maxLength: 80 }),
        fc.anything(),
        (own, start, end, data, result, baggage, announced) => {
          const record = handlerSpanRecord(
            { functionId: 'f', data, traceparent: call.traceparent, baggage },
            { traceparent: own, span_start: start, span_end: end, ...(result === undefined ? {} : { result: new RawJson(result) }) },
            handlerSpanSource(announced),
            'fallback',
          )
          if (record === undefined) return
          assert.equal(record.trace_id, TRACE)
          assert.equal(own, `00-${TRACE}-${record.span_id}-${own.slice(53)}`)
          assert.equal(record.parent_span_id, CALLER)
          assert.equal(record.start_time_unix_nano, Number(start))
          assert.ok(record.end_time_unix_nano! >= record.start_time_unix_nano)
          assert.equal(typeof record.attributes['svc.function.id'], 'string')
          JSON.stringify(record)
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('records a span for exactly the traceparents the W3C format allows: own one lower case, sampled, non-zero ids; the caller\'s in either case (fast-check)', () => {
    // The reference: the format as regular expressions (what the engine checked with before its character scan).
    const ownFormat = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
    const callerFormat = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/i
    const unit = fc.constantFrom(...'0123456789abcdefABCDEF-0g \u0130\u212a\u0660')
    // A well-formed traceparent with a few characters replaced (case, non-hex, non-ASCII, zeros, dashes).
    const mutated = (trace: string) =>
      fc.tuple(fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 16, maxLength: 16 }), fc.constantFrom('00', '01', '03', '0a', '0b', 'ff', 'FF'), fc.array(fc.tuple(fc.nat(54), unit), { maxLength: 3 }))
        .map(([span, flags, edits]) => {
          const chars = [...`00-${trace}-${span}-${flags}`]
          for (const [at, c] of edits) chars[at] = c
          return chars.join('')
        })
    const tp = fc.oneof(mutated(TRACE), mutated('0'.repeat(32)), fc.constant(`00-${TRACE}-${'0'.repeat(16)}-01`), fc.string({ unit, minLength: 54, maxLength: 56 }))
    fc.assert(
      fc.property(tp, fc.option(fc.oneof(tp, tp.map((t) => t.toUpperCase())), { nil: undefined }), (own, caller) => {
        const record = handlerSpanRecord({ ...call, traceparent: caller }, { traceparent: own, span_start: '1', span_end: '2' }, source, 'f')
        const o = ownFormat.exec(own)
        const c = caller === undefined ? null : callerFormat.exec(caller)
        const expected = o !== null && !/^0+$/.test(o[1]!) && !/^0+$/.test(o[2]!) && (parseInt(o[3]!, 16) & 1) === 1 && (c === null || c[1]!.toLowerCase() === o[1])
        assert.equal(record !== undefined, expected, `${own} under ${String(caller)}`)
        if (record === undefined) return
        assert.equal(record.trace_id, o![1])
        assert.equal(record.span_id, o![2])
        assert.equal(record.parent_span_id, c === null ? null : c[2]!.toLowerCase())
      }),
      { numRuns: 5000 },
    )
  })

  it('the text the store keeps is the JSON of the record, character for character once its payload events, kept as one member, are restored (fast-check)', () => {
    const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n })
    const text = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 10 }), fc.constantFrom('"', '\\', '\u2028', '\ud800', '__proto__', 'password'))
    const json = fc.oneof(fc.json({ maxDepth: 3 }), fc.constantFrom('{"password":"p","a":"\\u0041"}', '"\\ud800"', '[1,2]'))
    const error = fc.option(fc.record({ code: text, message: text, stacktrace: fc.option(text, { nil: undefined }) }, { requiredKeys: ['code', 'message'] }), { nil: undefined })
    const announced = fc.option(
      fc.record({ resource: fc.dictionary(text, text, { maxKeys: 4 }).map((r) => ({ ...r, 'service.name': 'svc' })), payloads: fc.boolean(), payload_max_bytes: fc.option(fc.nat(200), { nil: null }) }),
      { nil: undefined },
    )
    fc.assert(
      fc.property(
        hex(16),
        fc.boolean(),
        fc.bigInt({ min: 0n, max: 10n ** 18n }),
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        json,
        fc.option(json, { nil: undefined }),
        error,
        fc.array(fc.tuple(text, text), { maxLength: 4 }),
        text,
        announced,
        (spanId, parented, start, duration, data, result, err, entries, functionId, announce) => {
          if (spanId === '0'.repeat(16)) return
          const baggage = entries.map(([k, v]) => encodeURIComponent(k.toWellFormed()) + '=' + encodeURIComponent(v.toWellFormed())).join(',')
          const c: HandledCall = { functionId, data, traceparent: parented ? call.traceparent : undefined, baggage }
          const outcome = {
            traceparent: `00-${TRACE}-${spanId}-01`,
            span_start: String(start),
            span_end: String(start + duration),
            ...(err !== undefined ? { error: err } : result !== undefined ? { result: new RawJson(result) } : {}),
          }
          const source = announce === undefined ? undefined : handlerSpanSource(announce)
          const record = handlerSpanRecord(c, outcome, source, 'fallback')
          const parts = handlerSpan(c, outcome, source, 'fallback')
          const packed = parts === undefined ? undefined : spanText(parts)
          assert.ok(record !== undefined && packed !== undefined)
          // The text is the record's JSON, its payload events folded into one member at the end.
          assert.equal(JSON.stringify(withPayloadEvents(jsonParse(packed.body) as SpanRecord)), spanBody(record))
          assert.ok((jsonParse(packed.body) as SpanRecord).events.every((e) => e.name === 'exception'))
          assert.equal(packed.head.span_id, record.span_id)
          assert.equal(packed.head.attributes['svc.function.id'], record.attributes['svc.function.id'])
          assert.equal(packed.eventCount, record.events.length)
        },
      ),
      { numRuns: 1500 },
    )
  })

  it("keeps no frame's text alive through the ids it records (their traceparents are slices of the frames)", () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const hex = (n: number, width: number) => n.toString(16).padStart(width, '0')
    const big = 'z'.repeat(100_000)
    gc()
    const before = process.memoryUsage().heapUsed
    const kept: string[] = []
    for (let i = 1; i <= 300; i++) {
      // Both frames as the engine decodes them: an invocation (the parent) and its result, each with a 100 KB payload.
      const invoke = decodeText(`{"type":"invokefunction","invocation_id":"c${i}","function_id":"f","traceparent":"00-${hex(i, 32)}-${hex(i, 16)}-01","data":{"x":"${big}${i}"}}`)
      const result = decodeText(`{"type":"invocationresult","invocation_id":"l${i}","function_id":"f","traceparent":"00-${hex(i, 32)}-${hex(i + 1000, 16)}-01","span_start":"1","span_end":"2","result":{"x":"${big}${i}"}}`)
      assert.ok(invoke.kind === 'message' && result.kind === 'message')
      const message = result.message as InboundResult
      const text = spanText(handlerSpan({ functionId: 'f', data: '{}', traceparent: (invoke.message as InboundInvoke).traceparent, baggage: '' }, message, handlerSpanSource({ resource: { 'service.name': 's' }, payloads: false }), 'f')!)
      kept.push(text.head.trace_id, text.head.span_id, text.head.parent_span_id!)
    }
    gc()
    const grown = process.memoryUsage().heapUsed - before
    // 600 frames of 100 KB: 60 MB if the ids kept them.
    assert.ok(grown < 16 << 20, `heap grew ${grown} bytes for ${kept.length} ids`)
  })
})

describe('nanosJson', () => {
  /** The span's start time and its JSON as the engine records them from `text` (an SDK's `span_start`). */
  const recorded = (text: string): { start: number; json: string } => {
    const parts = handlerSpan({ ...call, traceparent: undefined }, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: text, span_end: text }, source, 'orders')
    assert.ok(parts !== undefined)
    return { start: parts.start, json: JSON.parse(spanText(parts).body).start_time_unix_nano === parts.start ? parts.startJson : 'differs' }
  }

  it('writes the digits JSON.stringify writes for the double Number gives, for any time an SDK sends', () => {
    const ns = 10n ** 9n
    const lo = 2n ** 60n - 10n ** 12n
    const hi = 2n ** 61n + 10n ** 12n
    fc.assert(
      fc.property(
        fc.oneof(
          // Any 1 to 19 digits; times of 2006–2043 (2^60 to 2^61 ns) and around those bounds.
          fc.bigInt({ min: 0n, max: 10n ** 19n - 1n }),
          fc.bigInt({ min: lo, max: hi }),
          // Half a step (128) from a multiple of 256, either side, from either parity.
          fc.tuple(fc.bigInt({ min: lo / 256n, max: hi / 256n }), fc.integer({ min: -130, max: 130 })).map(([k, d]) => k * 256n + BigInt(d)),
          // Near a multiple of 1,000, of 100, of 10^9 (the digits carrying into the first ten).
          fc.tuple(fc.bigInt({ min: lo / 1000n, max: hi / 1000n }), fc.integer({ min: -300, max: 300 })).map(([k, d]) => k * 1000n + BigInt(d)),
          fc.tuple(fc.bigInt({ min: lo / ns, max: hi / ns }), fc.integer({ min: -300, max: 300 })).map(([k, d]) => k * ns + BigInt(d)),
        ),
        (value) => {
          if (value < 0n || value >= 10n ** 19n) return
          const text = String(value)
          assert.equal(nanosJson(text), JSON.stringify(Number(text)), text)
        },
      ),
      { numRuns: 20_000 },
    )
  })

  it('refuses a time that is not 1 to 19 decimal digits, and the span with it', () => {
    for (const text of ['', '-1', ' 1', '1e18', '17644752001234567x9', '176447520012345678\u0660', '12345678901234567890', '1764475200.23456789']) {
      assert.equal(nanosJson(text), undefined, JSON.stringify(text))
      assert.equal(handlerSpan(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: text, span_end: '1764475200123456789' }, source, 'orders'), undefined)
      assert.equal(handlerSpan(call, { traceparent: `00-${TRACE}-${OWN}-01`, span_start: '1', span_end: text }, source, 'orders'), undefined)
    }
  })

  it('gives the span the start Number reads and the text of it', () => {
    for (const text of ['1764475200123456789', '1764475200123456640', '1764475200123456896', '1764475200999999999', '1152921504606846976', '2305843009213693951', '1', '999999999999999999']) {
      const { start, json } = recorded(text)
      assert.equal(start, Number(text), text)
      assert.equal(json, JSON.stringify(Number(text)), text)
    }
  })

  it("writes a span's duration_ms as JSON.stringify writes the quotient, for any whole number of nanoseconds", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: 0, max: 2 ** 31 }).map((n) => n * 256),
          fc.integer({ min: 0, max: 1e6 }).map((n) => n * 1000),
          fc.double({ min: 0, max: 2 ** 54, noNaN: true }).map(Math.floor),
          fc.integer({ min: -2, max: 2 }).map((d) => 1e15 + d),
          fc.double(),
        ),
        (nanos) => assert.equal(durationJson(nanos), JSON.stringify(nanos / 1e6), String(nanos)),
      ),
      { numRuns: 20_000 },
    )
  })
})
