/**
 * Handler spans recorded by the engine (svc addition to protocol.md §10.1; docs/reference/protocol.md
 * "Handler spans recorded by the engine"): svc-sdk hands a span its handler left untouched to an
 * engine that lists `handler_spans` in `workerregistered.features`, sending only its times on the
 * `invocationresult`; the engine records `execute <function_id>` as the SDK would have. A span the
 * handler changed is still sent in full over `/otel`. Results with malformed or foreign span
 * fields record nothing and are answered as usual.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { SpanRecord } from 'svc-protocol'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { flushOtel, otelSocketStats, setCurrentSpanAttribute, withSpan } from 'svc-sdk/telemetry'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

/** Spans as `engine::traces::tree` returns them; `children` on each node. */
type StoredSpan = SpanRecord & { end_time_unix_nano: number }

/**
 * A raw worker announcing `handler_spans` and serving `id` with `result` (the extra fields of each
 * `invocationresult` from `extra()`, read per call), and a raw caller, both in-process.
 */
async function rawPair(engine: TestEngine, id: string, announce: Record<string, unknown>, result: unknown, extra: () => Frame): Promise<{ worker: RawWorker; caller: RawWorker }> {
  const worker = await RawWorker.inProcess(engine.engine)
  const caller = await RawWorker.inProcess(engine.engine)
  worker.announce(announce)
  worker.onFrame((frame) => {
    if (frame.type !== 'invokefunction' || frame.function_id !== id) return
    worker.send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: frame.function_id, result, ...extra() })
  })
  worker.send({ type: 'registerfunction', id })
  await waitFor(async () => ((await engine.engine.inject({ function_id: 'engine::functions::list', data: { prefix: id } })) as { functions: unknown[] }).functions.length === 1, `${id} registered`)
  return { worker, caller }
}

describe('handler spans recorded by the engine', () => {
  let engine: TestEngine
  let callee: SvcClient
  let caller: SvcClient

  before(async () => {
    engine = await startTestEngine()
    callee = registerWorker(engine.url, { workerName: 'span-callee' })
    caller = registerWorker(engine.url, { workerName: 'span-caller' })
    callee.registerFunction('spans::plain', (data: { n: number }) => ({ doubled: data.n * 2, token: 'secret-value' }))
    callee.registerFunction('spans::touched', (data: { n: number }) => {
      setCurrentSpanAttribute('order.size', data.n)
      return { doubled: data.n * 2, token: 'secret-value' }
    })
    callee.registerFunction('spans::fails', () => {
      throw Object.assign(new Error('card declined'), { code: 'payment_failed' })
    })
    await waitFor(() => caller.getConnectionState() === 'connected' && callee.getConnectionState() === 'connected', 'connections')
  })
  after(async () => {
    await caller.shutdown()
    await callee.shutdown()
    await engine.stop()
  })

  const spanOf = async (traceId: string, name: string): Promise<StoredSpan> =>
    waitFor(async () => {
      const tree = (await engine.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<StoredSpan & { children: StoredSpan[] }> }
      const all: StoredSpan[] = []
      const walk = (nodes: Array<StoredSpan & { children?: StoredSpan[] }>) => {
        for (const n of nodes) {
          all.push(n)
          walk((n.children ?? []) as Array<StoredSpan & { children?: StoredSpan[] }>)
        }
      }
      walk(tree.roots ?? [])
      return all.find((s) => s.name === name)
    }, `span ${name} in trace ${traceId}`)

  /** Calls `id` inside a caller span with baggage, returns the caller span's ids. */
  async function callTraced(id: string, payload: unknown): Promise<{ traceId: string; spanId: string; outcome: unknown }> {
    let ids!: { traceId: string; spanId: string }
    let outcome: unknown
    await withSpan('test-root', {}, async (span) => {
      ids = { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId }
      outcome = await caller.trigger({ function_id: id, payload }).catch((error: unknown) => error)
    })
    return { ...ids, outcome }
  }

  it('an untouched handler span is recorded by the engine, with the SDK sending nothing for it', async () => {
    await flushOtel()
    const exportedBefore = otelSocketStats()!.spans.exported
    const { traceId, spanId, outcome } = await callTraced('spans::plain', { n: 21, password: 'p' })
    assert.deepEqual(outcome, { doubled: 42, token: 'secret-value' })
    const span = await spanOf(traceId, 'execute spans::plain')
    // Only the caller's own span (test-root) left this process.
    await flushOtel()
    assert.equal(otelSocketStats()!.spans.exported - exportedBefore, 1, 'the handler span was not exported by the SDK')
    assert.equal(span.parent_span_id, spanId, 'parented on the calling span')
    assert.equal(span.kind, 'internal')
    assert.equal(span.status, 'ok')
    assert.equal(span.service_name, 'svc-node')
    assert.equal(span.resource['service.name'], 'svc-node')
    assert.match(span.resource['service.instance.id'] ?? '', /./, 'the worker resource, as announced')
    assert.equal(span.attributes['svc.function.id'], 'spans::plain')
    assert.ok(span.end_time_unix_nano >= span.start_time_unix_nano)
    const [input, output] = span.events
    assert.equal(input?.name, 'svc.invocation.input')
    assert.equal(input?.timestamp_unix_nano, span.start_time_unix_nano)
    assert.deepEqual(JSON.parse(String(input?.attributes['svc.payload.json'])), { n: 21, password: '[REDACTED]' })
    assert.equal(output?.name, 'svc.invocation.output')
    assert.equal(output?.timestamp_unix_nano, span.end_time_unix_nano)
    assert.deepEqual(JSON.parse(String(output?.attributes['svc.payload.json'])), { doubled: 42, token: '[REDACTED]' })
    assert.equal(output?.attributes['svc.payload.ok'], true)
    assert.equal(output?.attributes['svc.payload.truncated'], false)
  })

  it('a span the handler changed is sent by the SDK in full, with the same shape plus its change', async () => {
    const plain = await callTraced('spans::plain', { n: 3, password: 'p' })
    const touched = await callTraced('spans::touched', { n: 3, password: 'p' })
    await flushOtel()
    const a = await spanOf(plain.traceId, 'execute spans::plain')
    const b = await spanOf(touched.traceId, 'execute spans::touched')
    assert.equal(b.attributes['order.size'], 3, "the handler's attribute")
    const shape = (s: StoredSpan) => ({
      kind: s.kind,
      status: s.status,
      service_name: s.service_name,
      resource: s.resource,
      attributes: Object.keys(s.attributes).filter((k) => k !== 'order.size').sort(),
      events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
      parented: s.parent_span_id !== null,
    })
    // Compared as JSON, as a client of engine::traces::tree sees them.
    assert.deepEqual(JSON.parse(JSON.stringify(shape(a))), JSON.parse(JSON.stringify(shape(b))), 'the engine writes the span the SDK would have written')
    assert.equal(b.events[0]!.timestamp_unix_nano, b.start_time_unix_nano, 'the deferred input event keeps the start time')
  })

  it('a failed handler: status ERROR with the message, error.type, an exception event with the stack, output not ok', async () => {
    const { traceId, outcome } = await callTraced('spans::fails', {})
    assert.equal((outcome as { code?: string }).code, 'payment_failed')
    const span = await spanOf(traceId, 'execute spans::fails')
    assert.equal(span.status, 'error')
    assert.equal(span.status_message, 'card declined')
    assert.equal(span.attributes['error.type'], 'payment_failed')
    assert.deepEqual(
      span.events.map((e) => e.name),
      ['svc.invocation.input', 'exception', 'svc.invocation.output'],
    )
    const exception = span.events[1]!
    assert.equal(exception.attributes['exception.type'], 'payment_failed')
    assert.equal(exception.attributes['exception.message'], 'card declined')
    assert.match(String(exception.attributes['exception.stacktrace']), /telemetry-engine-spans\.test/, "the handler's own frames")
    const output = span.events[2]!
    assert.equal(output.attributes['svc.payload.ok'], false)
    assert.equal(JSON.parse(String(output.attributes['svc.payload.json'])).code, 'payment_failed')
  })
})

describe('handler span fields from a raw worker', () => {
  let engine: TestEngine
  let worker: RawWorker
  let caller: RawWorker
  /** What the next result of `raw::fn` adds to its frame. */
  let extra: Frame = {}
  let checks = 0

  const TRACE = 'a'.repeat(31) + '1'
  const CALLER_SPAN = 'b'.repeat(15) + '1'
  const OWN_SPAN = 'c'.repeat(15) + '1'
  const PARENT = `00-${TRACE}-${CALLER_SPAN}-01`

  before(async () => {
    engine = await startTestEngine()
    const announce = { name: 'raw', handler_spans: { resource: { 'service.name': 'raw-svc', 'deployment.environment': 'test' }, payload_max_bytes: 12 } }
    ;({ worker, caller } = await rawPair(engine, 'raw::fn', announce, { long: 'x'.repeat(40) }, () => extra))
    assert.deepEqual(worker.frames.find((f) => f.type === 'workerregistered')?.features, ['handler_spans'], 'the engine announces the feature')
  })
  after(async () => {
    await worker.close()
    await caller.close()
    await engine.stop()
  })

  const spans = async (): Promise<StoredSpan[]> =>
    ((await engine.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: TRACE } })) as { roots?: StoredSpan[] }).roots ?? []

  it('records the span with the announced resource and payload cap', async () => {
    extra = { traceparent: `00-${TRACE}-${OWN_SPAN}-01`, span_start: '1764400000000000000', span_end: '1764400000002500000' }
    const answer = await caller.call('raw::fn', { note: 'a payload longer than twelve bytes' }, { traceparent: PARENT })
    assert.deepEqual(answer.result, { long: 'x'.repeat(40) })
    const [span] = await waitFor(async () => ((await spans()).length === 1 ? spans() : undefined), 'the recorded span')
    assert.equal(span!.span_id, OWN_SPAN)
    assert.equal(span!.parent_span_id, CALLER_SPAN)
    assert.equal(span!.service_name, 'raw-svc')
    assert.equal(span!.resource['deployment.environment'], 'test')
    // Nanoseconds since the epoch as doubles (as for every stored span): exact to 256 ns.
    assert.ok(Math.abs(span!.end_time_unix_nano - span!.start_time_unix_nano - 2_500_000) <= 512)
    for (const event of span!.events) {
      assert.equal(event.attributes['svc.payload.truncated'], true)
      assert.ok(String(event.attributes['svc.payload.json']).startsWith(event.name === 'svc.invocation.input' ? '{"note":"a p' : '{"long":"xxx'))
    }
  })

  for (const [label, fields] of [
    ['times that are not decimal digits', { traceparent: `00-${TRACE}-${'d'.repeat(16)}-01`, span_start: '-1', span_end: '12' }],
    ['an end before the start', { traceparent: `00-${TRACE}-${'d'.repeat(16)}-01`, span_start: '20', span_end: '10' }],
    ['a span in another trace', { traceparent: `00-${'e'.repeat(32)}-${'d'.repeat(16)}-01`, span_start: '10', span_end: '20' }],
    ['an unsampled span', { traceparent: `00-${TRACE}-${'d'.repeat(16)}-00`, span_start: '10', span_end: '20' }],
    ['a malformed traceparent', { traceparent: 'nonsense', span_start: '10', span_end: '20' }],
    ['times of the wrong type', { traceparent: `00-${TRACE}-${'d'.repeat(16)}-01`, span_start: 10, span_end: { x: 1 } }],
    ['only a start', { traceparent: `00-${TRACE}-${'d'.repeat(16)}-01`, span_start: '10' }],
  ] as const) {
    it(`${label}: the call is answered, nothing is recorded`, async () => {
      extra = fields
      const answer = await caller.call('raw::fn', {}, { traceparent: PARENT })
      assert.deepEqual(answer.result, { long: 'x'.repeat(40) })
      // A second, well-formed result after it: once its span is stored, the first was handled too.
      extra = { traceparent: `00-${TRACE}-${'f'.repeat(12)}${(++checks).toString(16).padStart(4, '0')}-01`, span_start: '1', span_end: '2' }
      const before = (await spans()).length
      await caller.call('raw::fn', {}, { traceparent: PARENT })
      await waitFor(async () => ((await spans()).length === before + 1 ? true : undefined), 'the well-formed span')
      assert.ok(!(await spans()).some((s) => s.span_id === 'd'.repeat(16)), 'no span from the malformed result')
    })
  }
})

describe('a handler span the size limits change is recorded as a record, limited', () => {
  let engine: TestEngine
  let worker: RawWorker
  let caller: RawWorker
  const TRACE = '9'.repeat(31) + '1'

  before(async () => {
    engine = await startTestEngine({ settings: { 'svc-observability': { attribute_value_length_limit: 64 } } })
    const extra = { traceparent: `00-${TRACE}-${'7'.repeat(16)}-01`, span_start: '1000', span_end: '2000' }
    ;({ worker, caller } = await rawPair(engine, 'raw::long', { name: 'raw', handler_spans: { resource: { 'service.name': 'limited' } } }, { long: 'y'.repeat(500) }, () => extra))
  })
  after(async () => {
    await worker.close()
    await caller.close()
    await engine.stop()
  })

  it('the output payload is cut by attribute_value_length_limit, with its marker', async () => {
    const answer = await caller.call('raw::long', {}, { traceparent: `00-${TRACE}-${'8'.repeat(16)}-01` })
    assert.deepEqual(answer.result, { long: 'y'.repeat(500) }, 'the result itself is whole')
    const span = await waitFor(async () => {
      const tree = (await engine.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: TRACE } })) as { roots?: StoredSpan[] }
      return tree.roots?.[0]
    }, 'the recorded span')
    const output = span.events.find((e) => e.name === 'svc.invocation.output')!
    const text = String(output.attributes['svc.payload.json'])
    assert.ok(text.length < 200, `cut: ${text.length} characters`)
    assert.match(text, /…\[truncated \d+ bytes\]$/)
  })
})
