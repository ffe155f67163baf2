/**
 * Handler spans and the OTLP/JSON span writer (sdk.md §12.3, protocol.md §10.1–§10.2): the light
 * `HandlerSpan` behind svc-sdk's `execute <function_id>` spans, and SDK spans written by
 * `readableSpanJson` — checked against the frames a fake `/otel` transport receives and against
 * `@opentelemetry/otlp-transformer`'s serializer.
 */
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import { type Context, context, createContextKey, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { Transport, TransportHandlers } from 'svc-protocol/transport'
import { currentSpanId, currentTraceId, flushOtel, getBaggageEntry, initOtel, injectBaggage, otelSocketStats, shutdownOtel, withSpan } from 'svc-helpers/observability'
import { HandlerSpan, knownBaggageHeader, startHandlerSpan } from 'svc-helpers/observability/internal'
import { parseTraceparent } from '../src/observability/handler-span.ts'
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { msNanos, readableSpanJson } from '../src/observability/otlp-json.ts'
import { MAX_BATCH_BYTES, MAX_BATCH_SPANS, MAX_QUEUED_SPANS, SpanBatch } from '../src/observability/span-batch.ts'
import fc from 'fast-check'

type OtlpSpan = Record<string, any>

/** A transport that is open at once and keeps the decoded OTLP frames. */
function recorder(): { connector: () => Transport; spans: () => Array<{ scope: string; span: OtlpSpan }>; frames: Array<Record<string, any>> } {
  const frames: Array<Record<string, any>> = []
  const connector = (): Transport => ({
    send: () => {},
    sendBinary: (data) => {
      const text = Buffer.from(data).toString('utf8')
      if (text.startsWith('OTLP')) frames.push(JSON.parse(text.slice(4)) as Record<string, any>)
    },
    bufferedAmount: 0,
    isOpen: true,
    close: () => {},
    terminate: () => {},
    ping: () => {},
    setHandlers: (h: TransportHandlers) => queueMicrotask(() => h.open?.()),
  })
  const spans = () =>
    frames.flatMap((f) => f.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans.map((span: OtlpSpan) => ({ scope: s.scope.name as string, span })))))
  return { connector, spans, frames }
}

const attrs = (list: Array<{ key: string; value: Record<string, unknown> }> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0]]))

const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'

describe('handler spans', () => {
  const rec = recorder()
  before(async () => {
    assert.equal(initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: rec.connector, metricsEnabled: false, fetchInstrumentationEnabled: false, serviceName: 'hs-test' }), true)
    await new Promise((r) => setImmediate(r))
  })
  after(async () => {
    await shutdownOtel()
  })
  beforeEach(() => {
    rec.frames.length = 0
  })

  it('gives every span fresh lower-case hex ids that its traceparent carries, a child keeping its parent trace id', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 500; i++) {
      // Root and child spans alternate, so both kinds of header come from the same pool and buffer.
      const started = startHandlerSpan('execute a::b', undefined, i % 2 === 0 ? undefined : PARENT)!
      const span = started.span as HandlerSpan
      assert.match(span.traceId, /^(?!0{32})[0-9a-f]{32}$/)
      assert.match(span.spanId, /^(?!0{16})[0-9a-f]{16}$/)
      assert.equal(started.traceparent, `00-${span.traceId}-${span.spanId}-01`)
      assert.equal(span.traceparent, started.traceparent)
      if (i % 2 === 1) assert.equal(span.traceId, '0af7651916cd43dd8448eb211c80319c')
      assert.equal(seen.has(span.spanId), false, 'a new span id every time')
      seen.add(span.spanId)
      span.handOver()
    }
  })

  it('writes the OTLP/JSON span: parent, ids, times, attributes from baggage, events, status, flags', async () => {
    const before = Date.now()
    const started = startHandlerSpan('execute orders::create', ['svc.function.id', 'orders::create'], PARENT, 'svc.function.id=orders%3A%3Acreate,tenant=acme')
    assert.ok(started !== undefined && started.span instanceof HandlerSpan)
    const span = started.span
    assert.match(started.traceparent, /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/)
    context.with(started.ctx, () => {
      assert.equal(trace.getActiveSpan(), span)
      assert.equal(currentTraceId(), '0af7651916cd43dd8448eb211c80319c')
      assert.equal(currentSpanId(), span.spanId)
      assert.equal(getBaggageEntry('tenant'), 'acme')
      const bag = propagation.getBaggage(context.active())
      assert.ok(bag !== undefined)
      assert.equal(knownBaggageHeader(bag), 'svc.function.id=orders%3A%3Acreate,tenant=acme')
    })
    span.setAttribute('tenant', 'override')
    span.setAttributes({ 'order.items': 3, ratio: 0.5, flags: [true, false], bad: { nested: 1 } as never })
    span.addPayloadEvent('svc.invocation.input', '{"a":"\\"q\\""}', false, true)
    span.addEvent('checkpoint', { step: 'x' })
    span.setStatus({ code: SpanStatusCode.OK })
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'ignored: OK is final' })
    span.end()
    span.end()
    await flushOtel()
    const found = rec.spans()
    assert.equal(found.length, 1, 'one span, ended once')
    const { scope, span: s } = found[0]!
    assert.equal(scope, 'svc-node')
    assert.equal(s.traceId, '0af7651916cd43dd8448eb211c80319c')
    assert.equal(s.spanId, span.spanId)
    assert.equal(s.parentSpanId, 'b7ad6b7169203331')
    assert.equal(s.name, 'execute orders::create')
    assert.equal(s.kind, 1, 'INTERNAL')
    assert.equal(s.flags, 0x301, 'sampled, remote parent')
    assert.match(s.startTimeUnixNano, /^\d{19}$/)
    assert.ok(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano))
    const startMs = Number(BigInt(s.startTimeUnixNano) / 1_000_000n)
    assert.ok(startMs >= before - 50 && startMs <= Date.now() + 50, 'wall-clock start time')
    assert.deepEqual(attrs(s.attributes), { 'svc.function.id': 'orders::create', tenant: 'override', 'order.items': 3, ratio: 0.5, flags: { values: [{ boolValue: true }, { boolValue: false }] } })
    assert.deepEqual(
      s.events.map((e: any) => [e.name, attrs(e.attributes)]),
      [
        ['svc.invocation.input', { 'svc.payload.json': '{"a":"\\"q\\""}', 'svc.payload.truncated': false, 'svc.payload.ok': true }],
        ['checkpoint', { step: 'x' }],
      ],
    )
    assert.deepEqual(s.status, { code: 1 })
    const resource = attrs(rec.frames[0]!.resourceSpans[0].resource.attributes)
    assert.equal(resource['service.name'], 'hs-test')
  })

  it('spans the handler starts with any tracer nest under it and are exported with their scope', async () => {
    const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'])
    assert.ok(started !== undefined)
    await context.with(started.ctx, async () => {
      const child = trace.getTracer('user-lib', '1.2.0').startSpan('child work', { kind: SpanKind.CLIENT })
      child.end()
      await withSpan('helper span', {}, async () => {})
    })
    started.span.end()
    await flushOtel()
    const all = rec.spans()
    const handler = all.find((x) => x.span.name === 'execute a::b')!.span
    assert.equal(handler.parentSpanId, undefined, 'a root span without inbound traceparent')
    assert.equal(handler.flags, 0x101)
    const child = all.find((x) => x.span.name === 'child work')!
    assert.equal(child.scope, 'user-lib')
    assert.equal(child.span.traceId, handler.traceId)
    assert.equal(child.span.parentSpanId, handler.spanId)
    assert.equal(child.span.kind, 3, 'CLIENT')
    const helper = all.find((x) => x.span.name === 'helper span')!
    assert.equal(helper.span.parentSpanId, handler.spanId)
  })

  it('an unsampled parent gives a non-recording span that passes the trace on; nothing is exported', async () => {
    const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'], '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00')
    assert.ok(started !== undefined)
    assert.equal(started.span.isRecording(), false)
    assert.match(started.traceparent, /^00-0af7651916cd43dd8448eb211c80319c-(?!b7ad6b7169203331)[0-9a-f]{16}-00$/)
    started.span.end()
    await flushOtel()
    assert.equal(rec.spans().length, 0)
  })

  it('applies the default limits: 128 attributes (the initial one and baggage count), 128 events', async () => {
    const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'], undefined, 'k1=v1,k2=v2')
    assert.ok(started !== undefined)
    const span = started.span
    for (let i = 0; i < 130; i++) span.setAttribute(`a${i}`, i)
    for (let i = 0; i < 130; i++) span.addEvent(`e${i}`)
    span.recordException(new TypeError('boom'))
    span.end()
    await flushOtel()
    const s = rec.spans()[0]!.span
    assert.equal(s.attributes.length, 128)
    assert.equal(s.droppedAttributesCount, 5)
    assert.equal(s.events.length, 128)
    assert.equal(s.droppedEventsCount, 3, 'the oldest events make room')
    const exception = s.events.at(-1)
    assert.equal(exception.name, 'exception')
    assert.equal(attrs(exception.attributes)['exception.type'], 'TypeError')
  })

  it('attribute keys named like Object properties are ordinary keys', async () => {
    const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'], undefined, 'constructor=c')
    assert.ok(started !== undefined)
    started.span.setAttribute('toString', 't')
    started.span.end()
    await flushOtel()
    assert.deepEqual(attrs(rec.spans()[0]!.span.attributes), { 'svc.function.id': 'a::b', constructor: 'c', toString: 't' })
  })

  it('counts spans dropped past the queue bound', async () => {
    const before = otelSocketStats()!.spans
    for (let i = 0; i < MAX_QUEUED_SPANS + 10; i++) startHandlerSpan('execute a::b', undefined)!.span.end()
    const after = otelSocketStats()!.spans
    await flushOtel()
    assert.ok(after.dropped - before.dropped >= 10, `dropped ${after.dropped - before.dropped}`)
    assert.ok(rec.frames.every((f) => f.resourceSpans[0].scopeSpans.reduce((n: number, s: any) => n + s.spans.length, 0) <= MAX_BATCH_SPANS), 'frames hold at most MAX_BATCH_SPANS spans')
  })
})

describe('without telemetry', () => {
  it('startHandlerSpan returns undefined', () => {
    assert.equal(startHandlerSpan('execute a::b', undefined), undefined)
  })
})

describe('parseTraceparent', () => {
  it('accepts W3C version 00 and later versions, refuses malformed headers', () => {
    assert.deepEqual(parseTraceparent(PARENT), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true })
    assert.ok(parseTraceparent('01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra'))
    for (const bad of [
      undefined,
      '',
      'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra',
      '00-00000000000000000000000000000000-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
      '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01',
    ]) {
      assert.equal(parseTraceparent(bad), undefined, String(bad))
    }
  })
})

describe('OTLP/JSON writer', () => {
  it('msNanos writes exact nanosecond strings', () => {
    assert.equal(msNanos(1_795_752_213_397, 0.787875), '1795752213397787875')
    assert.equal(msNanos(1_795_752_213_397, 0.0000004), '1795752213397000000')
    assert.equal(msNanos(1_795_752_213_397, 0.9999996), '1795752213398000000')
    assert.equal(msNanos(0, 0.5), '500000')
  })

  it('readableSpanJson says what JsonTraceSerializer says, without default-valued fields', async () => {
    const exporter = new InMemorySpanExporter()
    const provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': 'x' }), spanProcessors: [new SimpleSpanProcessor({ exporter })] })
    const tracer = provider.getTracer('lib', '2.0.0')
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true })
    const span = tracer.startSpan('GET /x', { kind: SpanKind.SERVER, attributes: { s: 'é"\\', i: 7, d: 1.5, b: true, arr: ['a', 'b'], nums: [1, 2.5] } }, parent)
    span.addEvent('e1', { k: 'v' })
    span.addEvent('e2')
    span.addLink({ context: { traceId: '1af7651916cd43dd8448eb211c80319c', spanId: 'c7ad6b7169203331', traceFlags: 0 }, attributes: { l: 1 } })
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'bad' })
    span.end()
    const other = tracer.startSpan('plain', {}, ROOT_CONTEXT)
    other.end()
    await provider.forceFlush()
    for (const readable of exporter.getFinishedSpans()) {
      const theirs = (JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest([readable])!)) as any).resourceSpans[0].scopeSpans[0].spans[0]
      const ours = JSON.parse(readableSpanJson(readable))
      assert.deepEqual(withoutDefaults(ours), withoutDefaults(theirs), readable.name)
    }
    await provider.shutdown()
  })

  it('SpanBatch sends frames of at most MAX_BATCH_SPANS spans, grouped by scope, on flush', () => {
    const sent: any[] = []
    const batch = new SpanBatch({ resourceJson: '{"attributes":[]}', flushIntervalMs: 60_000, send: (frame) => sent.push(JSON.parse(Buffer.from(frame).toString('utf8'))) })
    for (let i = 0; i < MAX_BATCH_SPANS + 5; i++) batch.add(i % 2 === 0 ? '{"name":"a"}' : '{"name":"b"}', `{"name":"s${i}"}`)
    batch.flush()
    const counts = sent.map((f) => f.resourceSpans[0].scopeSpans.map((s: any) => [s.scope.name, s.spans.length]))
    assert.ok(sent.length >= 2)
    assert.ok(counts.every((groups: Array<[string, number]>) => groups.reduce((n, [, c]) => n + c, 0) <= MAX_BATCH_SPANS))
    const names = sent.flatMap((f) => f.resourceSpans[0].scopeSpans.flatMap((s: any) => s.spans.map((x: any) => x.name)))
    assert.equal(names.length, MAX_BATCH_SPANS + 5)
    assert.equal(new Set(names).size, MAX_BATCH_SPANS + 5)
    assert.deepEqual(batch.stats, { exported: MAX_BATCH_SPANS + 5, dropped: 0 })
    batch.close()
    batch.add('{"name":"a"}', '{}')
    assert.equal(batch.stats.dropped, 1, 'closed: dropped and counted')
  })
})

describe('property: inbound baggage headers (fast-check)', () => {
  it('any header sequence (hostile text, lone surrogates, repeats, alternation) gives a handler context with the entries the W3C propagator extracts that are well-formed text, which its calls can carry on', async () => {
    const propagator = new W3CBaggagePropagator()
    const entries = (b: ReturnType<typeof propagation.getBaggage>) => (b === undefined ? [] : b.getAllEntries().map(([k, e]) => [k, e.value]))
    const header = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.constantFrom('svc.function.id=a%3A%3Ab,iii.function.id=a%3A%3Ab', 'k=v;prop', 'constructor=c,__proto__=p', '=,=,', 'a=%ZZ', 'k=\uD800', ' k = v ', ','.repeat(100)),
    )
    initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: recorder().connector, metricsEnabled: false, fetchInstrumentationEnabled: false })
    try {
      fc.assert(
        fc.property(fc.array(header, { minLength: 1, maxLength: 6 }), fc.nat(3), (headers, repeat) => {
          for (const h of headers.flatMap((x) => Array(repeat + 1).fill(x) as string[])) {
            const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'], undefined, h)!
            const getter = { get: (c: any, k: string) => c[k], keys: (c: any) => Object.keys(c) }
            const extracted = entries(propagation.getBaggage(propagator.extract(ROOT_CONTEXT, { baggage: h }, getter)))
            const want = extracted.filter(([k, v]) => k.isWellFormed() && v.isWellFormed())
            assert.deepEqual(entries(propagation.getBaggage(started.ctx)), want, JSON.stringify(h))
            // What a handler's calls carry on: it can be written, and reads back as the same entries.
            const outgoing = injectBaggage(started.ctx)
            assert.deepEqual(outgoing === undefined ? [] : entries(propagation.getBaggage(propagator.extract(ROOT_CONTEXT, { baggage: outgoing }, getter))), want)
            assert.equal(trace.getSpan(started.ctx), started.span)
            started.span.end()
          }
        }),
        { numRuns: 200 },
      )
    } finally {
      await shutdownOtel()
    }
  })
})

describe('property: plain baggage headers (fast-check)', () => {
  it('headers of printable ASCII members (spaces, duplicates, integer-like and Object-property keys, `%`, `;`, empty members, past the limits) percent-encoded or not (bad escapes, encoded surrogates) give the entries the W3C propagator extracts, and calls carry on the header it writes', async () => {
    const propagator = new W3CBaggagePropagator()
    const getter = { get: (c: any, k: string) => c[k], keys: (c: any) => Object.keys(c) }
    const setter = { set: (c: any, k: string, v: string) => void (c[k] = v) }
    const entries = (b: ReturnType<typeof propagation.getBaggage>) => (b === undefined ? [] : b.getAllEntries().map(([k, e]) => [k, e.value]))
    const word = fc.oneof(fc.string({ unit: fc.constantFrom('a', 'b', '1', '.', ':', '-', '_', '/', '+', '~', '!', '<'), minLength: 1, maxLength: 6 }), fc.constantFrom('0', '7', '__proto__', 'constructor', 'svc.queue.message_id', 'a%3A%3Ab', '%C3%A9', '%E2%82%AC%20', '%', '%ZZ', '%ED%A0%80', '%5F%5Fproto%5F%5F', '%2C%3B', 'x'.repeat(4097)))
    const pad = fc.constantFrom('', ' ', '\t', '  ')
    const member = fc.oneof(
      { weight: 8, arbitrary: fc.tuple(pad, word, pad, pad, word, pad).map(([a, k, b, c, v, d]) => `${a}${k}${b}=${c}${v}${d}`) },
      { weight: 1, arbitrary: fc.constantFrom('', 'k=v;p', 'k=', '=v', 'k', 'k=a b', 'k=é') },
    )
    const header = fc.oneof(
      { weight: 6, arbitrary: fc.array(member, { minLength: 1, maxLength: 8 }).map((m) => m.join(',')) },
      { weight: 1, arbitrary: fc.constantFrom(179, 180, 181, 200).map((n) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',')) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => Array.from({ length: n }, (_, i) => `k${i}=${'v'.repeat(4000)}`).join(',')) },
    )
    initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: recorder().connector, metricsEnabled: false, fetchInstrumentationEnabled: false })
    try {
      fc.assert(
        fc.property(fc.array(header, { minLength: 1, maxLength: 4 }), (headers) => {
          for (const h of headers) {
            const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'], undefined, h)!
            const theirs = propagation.getBaggage(propagator.extract(ROOT_CONTEXT, { baggage: h }, getter))
            assert.deepEqual(entries(propagation.getBaggage(started.ctx)), entries(theirs), JSON.stringify(h))
            const written: Record<string, string> = {}
            if (theirs !== undefined) propagator.inject(propagation.setBaggage(ROOT_CONTEXT, theirs), written, setter)
            assert.equal(injectBaggage(started.ctx), written['baggage'], JSON.stringify(h))
            started.span.end()
          }
        }),
        { numRuns: 300 },
      )
    } finally {
      await shutdownOtel()
    }
  })
})

describe('property: a handler span\'s attributes (fast-check)', () => {
  it('any mix of initial attribute, baggage entries and attributes the handler sets, span after span, is written in order: initial, baggage, own (each later key wins)', async () => {
    const rec = recorder()
    initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: rec.connector, metricsEnabled: false, fetchInstrumentationEnabled: false })
    try {
      const key = fc.constantFrom('svc.function.id', 'tenant', 'k', 'constructor', 'a.b')
      const spanInput = fc.record({
        initial: fc.option(fc.tuple(fc.constantFrom('svc.function.id', 'tenant'), fc.constantFrom('a::b', 'c::d'))),
        baggage: fc.uniqueArray(fc.tuple(key, fc.constantFrom('v1', 'v2')), { selector: ([k]) => k, maxLength: 4 }),
        own: fc.array(fc.tuple(key, fc.oneof(fc.constantFrom('x', 'y'), fc.integer())), { maxLength: 4 }),
      })
      await fc.assert(
        fc.asyncProperty(fc.array(spanInput, { minLength: 1, maxLength: 5 }), async (inputs) => {
          rec.frames.length = 0
          for (const { initial, baggage, own } of inputs) {
            const header = baggage.map(([k, v]) => `${k}=${v}`).join(',')
            const started = startHandlerSpan('execute a::b', initial ?? undefined, undefined, header === '' ? undefined : header)!
            for (const [k, v] of own) started.span.setAttribute(k, v)
            started.span.end()
          }
          await flushOtel()
          const spans = rec.spans().map((x) => x.span)
          assert.equal(spans.length, inputs.length)
          inputs.forEach(({ initial, baggage, own }, i) => {
            const ownMap = new Map(own)
            const want = new Map<string, unknown>()
            if (initial !== null && !baggage.some(([k]) => k === initial[0]) && !ownMap.has(initial[0])) want.set(initial[0], initial[1])
            for (const [k, v] of baggage) if (!ownMap.has(k)) want.set(k, v)
            for (const [k, v] of ownMap) want.set(k, v)
            assert.deepEqual(spans[i]!.attributes.map((kv: any) => [kv.key, Object.values(kv.value)[0]]), [...want], JSON.stringify(inputs[i]))
          })
        }),
        { numRuns: 200 },
      )
    } finally {
      await shutdownOtel()
    }
  })
})

describe('property: a handler\'s context (fast-check)', () => {
  it('reads, sets and deletes values (the span, the baggage, any key) as the API context with the same span and baggage does', async () => {
    initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: recorder().connector, metricsEnabled: false, fetchInstrumentationEnabled: false })
    try {
      const SPAN = createContextKey('OpenTelemetry Context Key SPAN')
      const BAGGAGE = createContextKey('OpenTelemetry Baggage Key')
      const own = [createContextKey('a'), createContextKey('b')]
      const key = fc.constantFrom(SPAN, BAGGAGE, ...own)
      const op = fc.oneof(
        fc.record({ op: fc.constant('set' as const), key, value: fc.oneof(fc.string(), fc.constant(undefined), fc.integer()) }),
        fc.record({ op: fc.constant('delete' as const), key }),
      )
      fc.assert(
        fc.property(fc.option(fc.constantFrom('k=v', 'tenant=acme,svc.function.id=a%3A%3Ab')), fc.option(fc.constantFrom(PARENT, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00')), fc.array(op, { maxLength: 6 }), (baggage, parent, ops) => {
          const started = startHandlerSpan('execute a::b', ['svc.function.id', 'a::b'], parent ?? undefined, baggage ?? undefined)!
          // The API's own context with the same values: the baggage's root context plus the span.
          let ours: Context = started.ctx
          let theirs: Context = trace.setSpan(baggage === null ? ROOT_CONTEXT : propagation.setBaggage(ROOT_CONTEXT, propagation.getBaggage(started.ctx)!), started.span)
          const same = () => {
            for (const k of [SPAN, BAGGAGE, ...own]) assert.equal(ours.getValue(k), theirs.getValue(k))
            assert.equal(trace.getSpan(ours), trace.getSpan(theirs))
            context.with(ours, () => assert.equal(trace.getActiveSpan(), trace.getSpan(theirs)))
          }
          same()
          for (const o of ops) {
            ours = o.op === 'set' ? ours.setValue(o.key, o.value) : ours.deleteValue(o.key)
            theirs = o.op === 'set' ? theirs.setValue(o.key, o.value) : theirs.deleteValue(o.key)
            same()
          }
          started.span.end()
        }),
        { numRuns: 300 },
      )
    } finally {
      await shutdownOtel()
    }
  })
})

describe('property: the global propagator initOtel sets, made on first use (fast-check)', () => {
  it('extracts and injects any traceparent, tracestate and baggage headers (hostile text included) as the W3C composite propagator does', async () => {
    // initOtel sets a propagator that builds @opentelemetry/core's composite when first asked (issue 20).
    const w3c = new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] })
    const getter = { get: (c: any, k: string) => c[k], keys: (c: any) => Object.keys(c) }
    const setter = { set: (c: any, k: string, v: string) => void (c[k] = v) }
    const seen = (ctx: ReturnType<typeof propagation.extract>) => {
      const baggage = propagation.getBaggage(ctx)
      return { span: trace.getSpanContext(ctx), baggage: baggage === undefined ? [] : baggage.getAllEntries().map(([k, e]) => [k, e.value, e.metadata?.toString()]) }
    }
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.constantFrom(PARENT, '00-00000000000000000000000000000000-b7ad6b7169203331-01', 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'k=v;prop', 'a=%ZZ', '__proto__=p', 'k=\uD800', ','.repeat(200)))
    initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: recorder().connector, metricsEnabled: false, fetchInstrumentationEnabled: false })
    try {
      assert.deepEqual(propagation.fields(), w3c.fields())
      fc.assert(
        fc.property(fc.option(text), fc.option(text), fc.option(text), (traceparent, tracestate, baggage) => {
          const carrier: Record<string, string> = {}
          if (traceparent !== null) carrier.traceparent = traceparent
          if (tracestate !== null) carrier.tracestate = tracestate
          if (baggage !== null) carrier.baggage = baggage
          const ours = propagation.extract(ROOT_CONTEXT, carrier, getter)
          const theirs = w3c.extract(ROOT_CONTEXT, carrier, getter)
          assert.deepEqual(seen(ours), seen(theirs))
          const outOurs: Record<string, string> = {}
          const outTheirs: Record<string, string> = {}
          propagation.inject(ours, outOurs, setter)
          w3c.inject(theirs, outTheirs, setter)
          assert.deepEqual(outOurs, outTheirs)
        }),
        { numRuns: 300 },
      )
    } finally {
      await shutdownOtel()
    }
  })
})

describe('property: SpanBatch frames (fast-check)', () => {
  it('any span texts and scopes (non-ASCII, lone surrogates, quotes, up to 3× MAX_BATCH_BYTES) leave as valid frames: every span once, in order per scope, within the bounds', () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.constantFrom('\uD800', 'a\uDFFFb', '"]}]}', '日本語'.repeat(30_000), '😀'.repeat(40_000), 'x'.repeat(200_000)))
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('a', 'b', '"c"'), text), { minLength: 1, maxLength: 150 }), fc.constantFrom('', 'OTLP'), (items, framePrefix) => {
        const frames: string[] = []
        const batch = new SpanBatch({ resourceJson: '{"attributes":[]}', flushIntervalMs: 60_000, framePrefix, send: (frame) => frames.push(Buffer.from(frame).toString('utf8')) })
        // A span's text is JSON: hostile names are written as JSON strings.
        const spans = items.map(([scope, name], i) => [JSON.stringify({ name: scope }), JSON.stringify({ name, i })] as const)
        for (const [scope, span] of spans) batch.add(scope, span)
        batch.close()
        const got = new Map<string, Array<{ name: string; i: number }>>()
        for (const frame of frames) {
          assert.ok(frame.startsWith(framePrefix))
          const request = JSON.parse(frame.slice(framePrefix.length))
          const scopeSpans = request.resourceSpans[0].scopeSpans as Array<{ scope: { name: string }; spans: Array<{ name: string; i: number }> }>
          assert.equal(scopeSpans.length, 1, 'one scope per frame')
          const inFrame = scopeSpans[0]!.spans
          assert.ok(inFrame.length >= 1 && inFrame.length <= MAX_BATCH_SPANS)
          const chars = inFrame.reduce((n, x) => n + JSON.stringify(x).length, 0)
          assert.ok(inFrame.length === 1 || chars <= MAX_BATCH_BYTES, `${inFrame.length} spans of ${chars} characters`)
          const list = got.get(scopeSpans[0]!.scope.name) ?? []
          list.push(...inFrame)
          got.set(scopeSpans[0]!.scope.name, list)
        }
        for (const scope of ['a', 'b', '"c"']) {
          const want = items.flatMap(([s, name], i) => (s === scope ? [{ name: JSON.parse(JSON.stringify(name)) as string, i }] : []))
          assert.deepEqual(got.get(scope) ?? [], want, scope)
        }
        assert.deepEqual(batch.stats, { exported: items.length, dropped: 0 })
      }),
      { numRuns: 60 },
    )
  })
})

/** A span (or event, link) without the fields that hold their proto3 default (0, empty list, unset). */
function withoutDefaults(span: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {}
  for (const [key, value] of Object.entries(span)) {
    if (value === undefined || value === 0 && key.startsWith('dropped')) continue
    if (Array.isArray(value) && value.length === 0) continue
    if (key === 'events') out[key] = value.map((e: any) => withoutDefaults(e))
    else if (key === 'links') out[key] = value.map((l: any) => withoutDefaults(l))
    else if (key === 'status') out[key] = Object.fromEntries(Object.entries(value).filter(([k, v]) => v !== undefined && !(k === 'code' && v === 0)))
    else out[key] = value
  }
  return out
}
