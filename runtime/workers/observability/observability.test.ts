/**
 * The observability worker against a real engine (builtins.md §12, protocol.md §10): a trace
 * across HTTP → worker → nested invoke read back with `engine::traces::tree`, logs through
 * `engine::log::*` and `/otel` frames, the `log` trigger's levels, `store: none`, a flood, and
 * random `/otel` frames.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { createManualClock } from '../shared/clock.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { waitFor } from '../../../test/support/wait.ts'
import { bindingsSettled } from '../../../test/support/sdk-harness.ts'

/** Opens `/otel` and resolves once it is open. */
async function otel(url: string): Promise<WebSocket> {
  const ws = new WebSocket(`${url}/otel`)
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  return ws
}

function frame(prefix: string, body: unknown): Buffer {
  return Buffer.concat([Buffer.from(prefix), Buffer.from(JSON.stringify(body))])
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex')
const nano = (): string => String(BigInt(Date.now()) * 1_000_000n)

function otlpSpan(traceId: string, spanId: string, parent: string | undefined, name: string): unknown {
  const now = nano()
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'app' } }] },
        scopeSpans: [{ spans: [{ traceId, spanId, parentSpanId: parent, name, kind: 1, startTimeUnixNano: now, endTimeUnixNano: now, status: { code: 1 } }] }],
      },
    ],
  }
}

function otlpLogs(lines: Array<{ body: string; traceId?: string; severity?: number; data?: unknown }>): unknown {
  return {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'app' } }] },
        scopeLogs: [
          {
            scope: { name: 'svc-sdk' },
            logRecords: lines.map((l) => ({
              timeUnixNano: nano(),
              severityNumber: l.severity ?? 9,
              body: { stringValue: l.body },
              traceId: l.traceId,
              attributes: l.data === undefined ? [] : [{ key: 'log.data', value: { kvlistValue: { values: Object.entries(l.data as object).map(([key, v]) => ({ key, value: { stringValue: String(v) } })) } } }],
            })),
          },
        ],
      },
    ],
  }
}

type Tree = { roots: Array<{ name: string; span_id: string; parent_span_id: string | null; children: Tree['roots'] }> }

describe('observability worker', () => {
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'builtin', memory_max_logs: 1000 } } })
  })
  after(() => t.stop())

  it('records a trace across HTTP → worker → nested invoke, read back with engine::traces::tree', async () => {
    const w = await RawWorker.connect(t.url)
    const link = await otel(t.url)
    let traceId = ''
    w.serve('app::hello', async (_data, f) => {
      // What an SDK does: its own `execute` span, child of the engine's HTTP span, then a nested call.
      const [, trace, parent] = String(f.traceparent).split('-')
      traceId = trace!
      const mine = hex(8)
      link.send(frame('OTLP', otlpSpan(trace!, mine, parent, 'execute app::hello')))
      const answer = await w.call('state::set', { scope: 'obs', key: 'k', value: 1 }, { traceparent: `00-${trace}-${mine}-01` })
      assert.equal(answer.error, undefined)
      return { status_code: 200, body: 'hi' }
    })
    w.send({ type: 'registertrigger', id: 'hello-route', trigger_type: 'http', function_id: 'app::hello', config: { api_path: 'hello/:name', http_method: 'GET' } })
    await waitFor(async () => (await fetch(`${t.httpUrl}/hello/x`)).status === 200, '(await fetch(`${t.httpUrl}/hello/x`)).status === 200')

    let tree: Tree = { roots: [] }
    await waitFor(async () => {
      tree = (await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as Tree
      return tree.roots.length === 1 && tree.roots[0]!.children[0]?.children.length === 1
    }, 'the condition')
    const root = tree.roots[0]!
    assert.equal(root.name, 'GET /hello/:name')
    assert.equal(root.parent_span_id, null)
    const execute = root.children[0]!
    assert.equal(execute.name, 'execute app::hello')
    assert.equal(execute.parent_span_id, root.span_id)
    assert.equal(execute.children[0]!.name, 'execute state::set')
    assert.equal(execute.children[0]!.parent_span_id, execute.span_id)

    const list = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: traceId } })) as { traces: Array<{ span_count: number; service_names: string[]; attributes: Record<string, unknown> }> }
    assert.equal(list.traces[0]!.span_count, 3)
    assert.deepEqual([...list.traces[0]!.service_names].sort(), ['app', 'svc'])
    const byName = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'hello/:name', sort_by: 'duration_ms' } })) as { total: number }
    assert.ok(byName.total >= 1)
    const groups = (await t.engine.inject({ function_id: 'engine::traces::group_by', data: { attribute: 'http.route' } })) as { groups: Array<{ value: unknown; trace_ids: string[] }> }
    assert.ok(groups.groups.some((g) => g.value === '/hello/:name' && g.trace_ids.includes(traceId)))
    const metrics = (await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'svc.function.invocations' } })) as { metrics: Array<{ points: Array<{ value: number; attributes: Record<string, unknown> }> }> }
    assert.ok(metrics.metrics[0]!.points.some((p) => p.attributes['svc.function.id'] === 'app::hello' && p.value >= 1))
    link.close()
    await w.close()
  })

  it('starts a trace for an engine-served call without traceparent and continues a given one', async () => {
    const w = await RawWorker.connect(t.url)
    await w.call('state::get', { scope: 'obs', key: 'nope' })
    const parent = `00-${hex(16)}-${hex(8)}-01`
    await w.call('state::get', { scope: 'obs', key: 'nope' }, { traceparent: parent })
    const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: parent.slice(3, 35) } })) as { traces: Array<{ name: string; parent_span_id: string | null; status: string }> }
    assert.equal(listed.traces[0]!.name, 'execute state::get')
    assert.equal(listed.traces[0]!.parent_span_id, parent.slice(36, 52))
    assert.equal(listed.traces[0]!.status, 'ok')
    const all = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'execute state::get', limit: 1000 } })) as { total: number }
    assert.ok(all.total >= 2)
    await w.close()
  })

  it('collects logs from engine::log::* and /otel LOGS frames, with trace ids, data attributes and ANSI removed', async () => {
    const trace = hex(16)
    const span = hex(8)
    await t.engine.inject({ function_id: 'engine::log::warn', data: { message: '\u001b[31mred\u001b[0m alert', data: { user: 'u1', n: 2 } }, traceparent: `00-${trace}-${span}-01` })
    const link = await otel(t.url)
    link.send(frame('LOGS', otlpLogs([{ body: 'from sdk', traceId: trace, severity: 17, data: { order: 'o7' } }])))
    let logs: Array<Record<string, any>> = []
    await waitFor(async () => {
      logs = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: trace } })) as { logs: typeof logs }).logs
      return logs.length === 2
    }, 'the condition')
    assert.equal(logs[0]!.body, 'from sdk')
    assert.equal(logs[0]!.severity_text, 'ERROR')
    assert.equal(logs[0]!.service_name, 'app')
    assert.equal(logs[0]!.attributes['log.data.order'], 'o7')
    assert.equal(logs[1]!.body, 'red alert')
    assert.equal(logs[1]!.severity_number, 13)
    assert.equal(logs[1]!.span_id, span)
    assert.equal(logs[1]!.attributes['log.data.user'], 'u1')
    const errors = (await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: trace, severity_min: 17 } })) as { total: number }
    assert.equal(errors.total, 1)
    const searched = (await t.engine.inject({ function_id: 'engine::logs::list', data: { search: 'RED ALERT' } })) as { total: number }
    assert.equal(searched.total, 1)
    await assert.rejects(t.engine.inject({ function_id: 'engine::logs::list', data: { limit: 5000 } }), { code: 'INVALID_ARGUMENTS' })
    link.close()
  })

  it('keeps the OTLP attribute keys __proto__, constructor and toString as ordinary attributes of spans, events, links, resources, logs and metric points', async () => {
    const link = await otel(t.url)
    const traceId = hex(16)
    const now = nano()
    const tricky = [
      { key: '__proto__', value: { stringValue: 'p' } },
      { key: 'constructor', value: { kvlistValue: { values: [{ key: '__proto__', value: { intValue: 7 } }] } } },
      { key: 'toString', value: { boolValue: true } },
    ]
    const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'app' } }, { key: '__proto__', value: { stringValue: 'r' } }] }
    const span = { traceId, spanId: hex(8), name: 'tricky', kind: 1, startTimeUnixNano: now, endTimeUnixNano: now, attributes: tricky, events: [{ name: 'e', timeUnixNano: now, attributes: tricky }], links: [{ traceId: hex(16), spanId: hex(8), attributes: tricky }] }
    link.send(frame('OTLP', { resourceSpans: [{ resource, scopeSpans: [{ spans: [span] }] }] }))
    const data = { kvlistValue: { values: [{ key: '__proto__', value: { stringValue: 'd' } }] } }
    link.send(frame('LOGS', { resourceLogs: [{ resource, scopeLogs: [{ logRecords: [{ traceId, timeUnixNano: now, body: { stringValue: 'tricky' }, attributes: [...tricky, { key: 'log.data', value: data }] }] }] }] }))
    link.send(frame('MTRC', { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'tricky.gauge', gauge: { dataPoints: [{ asInt: 3, timeUnixNano: now, attributes: tricky }] } }] }] }] }))

    type Attrs = Record<string, unknown>
    const expectTricky = (attributes: Attrs, where: string): void => {
      assert.ok(Object.hasOwn(attributes, '__proto__'), `${where}: __proto__ kept`)
      assert.equal(attributes['__proto__'], 'p', where)
      assert.ok(Object.hasOwn(attributes['constructor'] as object, '__proto__'), `${where}: __proto__ inside a kvlist value kept`)
      assert.equal((attributes['constructor'] as Attrs)['__proto__'], 7, where)
      assert.equal(attributes['toString'], true, where)
      // What a caller reading the JSON sees.
      assert.match(JSON.stringify(attributes), /"__proto__":"p"/, where)
    }
    let root: Record<string, any> | undefined
    await waitFor(async () => {
      root = ((await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<Record<string, any>> }).roots[0]
      return root !== undefined
    }, 'the condition')
    expectTricky(root!.attributes, 'span')
    expectTricky(root!.events[0].attributes, 'event')
    expectTricky(root!.links[0].attributes, 'link')
    assert.equal(root!.resource['__proto__'], 'r')
    // The query functions find them as attributes of their own, and only there.
    const byAttribute = (await t.engine.inject({ function_id: 'engine::traces::list', data: { attributes: JSON.parse('{"__proto__":"p"}') } })) as { traces: Array<{ trace_id: string }> }
    assert.deepEqual(byAttribute.traces.map((x) => x.trace_id), [traceId])
    const grouped = (await t.engine.inject({ function_id: 'engine::traces::group_by', data: { attribute: 'toString', include_internal: true } })) as { groups: Array<{ value: unknown; trace_ids: string[] }> }
    assert.deepEqual(grouped.groups.map((g) => [g.value, g.trace_ids]), [[true, [traceId]]], 'spans without the attribute are not grouped by a prototype member')

    let record: Record<string, any> | undefined
    await waitFor(async () => {
      record = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: traceId } })) as { logs: Array<Record<string, any>> }).logs[0]
      return record !== undefined
    }, 'the condition')
    expectTricky(record!.attributes, 'log record')
    assert.equal(record!.attributes['log.data.__proto__'], 'd')
    assert.equal(record!.resource['__proto__'], 'r')

    let points: Array<{ attributes: Attrs }> = []
    await waitFor(async () => {
      points = ((await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'tricky.gauge' } })) as { metrics: Array<{ points: typeof points }> }).metrics[0]?.points ?? []
      return points.length > 0
    }, 'the condition')
    expectTricky(points[0]!.attributes, 'metric point')
    link.close()
  })

  it('delivers log records to a log trigger at or above its level', async () => {
    const w = await RawWorker.connect(t.url)
    const got: string[] = []
    w.serve('app::onlog', (record) => void got.push(record.body))
    w.send({ type: 'registertrigger', id: 'warn-logs', trigger_type: 'log', function_id: 'app::onlog', config: { level: 'WARN' } })
    await bindingsSettled(t.engine, ['warn-logs'])
    await t.engine.inject({ function_id: 'engine::log::info', data: { message: 'quiet' } })
    await t.engine.inject({ function_id: 'engine::log::warn', data: { message: 'loud' } })
    await t.engine.inject({ function_id: 'engine::log::error', data: { message: 'louder' } })
    await waitFor(() => got.length === 2, 'got.length === 2')
    assert.deepEqual(got, ['loud', 'louder'])
    await w.close()
  })

  it('a log trigger handler that logs what it receives does not loop', async () => {
    const w = await RawWorker.connect(t.url)
    let deliveries = 0
    w.serve('app::echo-log', async (record, f) => {
      deliveries++
      // What an SDK handler does: log with the delivery's trace context.
      await w.call('engine::log::error', { message: `seen: ${record.body}` }, { traceparent: f.traceparent })
    })
    w.send({ type: 'registertrigger', id: 'echo-logs', trigger_type: 'log', function_id: 'app::echo-log', config: { level: 'error' } })
    await bindingsSettled(t.engine, ['echo-logs'])
    const logged = async (search: string) => ((await t.engine.inject({ function_id: 'engine::logs::list', data: { search } })) as { total: number }).total
    await t.engine.inject({ function_id: 'engine::log::error', data: { message: 'once' } })
    await waitFor(async () => (await logged('seen: once')) === 1, "the handler's record of 'once'")
    // A marker after it: deliveries are in order, so a looping delivery of 'seen: once' would come before it.
    await t.engine.inject({ function_id: 'engine::log::error', data: { message: 'marker' } })
    await waitFor(async () => (await logged('seen: marker')) === 1, "the handler's record of 'marker'")
    assert.equal(deliveries, 2, 'once and the marker, nothing the handler logged')
    assert.equal(await logged('seen: seen:'), 0)
    await w.close()
  })

  it('engine::baggage::* read and set the invocation baggage; engine::health::check answers', async () => {
    const value = (await t.engine.inject({ function_id: 'engine::baggage::get', data: { key: 'tenant' }, baggage: 'tenant=acme,x=1' })) as { value: string }
    assert.equal(value.value, 'acme')
    const set = (await t.engine.inject({ function_id: 'engine::baggage::set', data: { key: 'y', value: 'two' }, baggage: 'tenant=acme' })) as { baggage: string }
    assert.match(set.baggage, /tenant=acme/)
    assert.match(set.baggage, /y=two/)
    const health = (await t.engine.inject({ function_id: 'engine::health::check', data: {} })) as { status: string; components: Record<string, unknown> }
    assert.equal(health.status, 'healthy')
    assert.ok(health.components.observability)
  })

  it('stays within its window under a flood of 200,000 log lines on /otel', async () => {
    const link = await otel(t.url)
    const batch = Array.from({ length: 1000 }, (_, i) => ({ body: `line ${i} ${'z'.repeat(60)}` }))
    const payload = frame('LOGS', otlpLogs(batch))
    for (let i = 0; i < 200; i++) link.send(payload)
    link.send(frame('LOGS', otlpLogs([{ body: 'the last line' }])))
    await waitFor(async () => {
      const listed = (await t.engine.inject({ function_id: 'engine::logs::list', data: { limit: 1 } })) as { logs: Array<{ body: string }>; total: number }
      return listed.logs[0]?.body === 'the last line'
    }, 'the condition', 15000)
    const listed = (await t.engine.inject({ function_id: 'engine::logs::list', data: { limit: 1 } })) as { total: number }
    assert.ok(listed.total <= 1000, `window holds ${listed.total}`)
    link.close()
  })

  it('never crashes on random /otel frames or telemetry frames on the main connection', async () => {
    const link = await otel(t.url)
    const w = await RawWorker.connect(t.url)
    // A second main connection that only sends binary frames (the same frames are accepted on `/`).
    const main = new WebSocket(t.url)
    await new Promise((resolve) => main.once('open', resolve))
    const prefix = fc.constantFrom('OTLP', 'LOGS', 'MTRC', 'XXXX', '')
    const body = fc.oneof(
      fc.json(),
      fc.string(),
      fc.constant(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'z', spanId: 1 }] }] }] })),
      fc.anything().map((v) => JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [v, { body: v, severityNumber: v, attributes: [{ key: 'log.data', value: v }] }] }] }] }) ?? ''),
      fc.anything().map((v) => JSON.stringify({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'm', gauge: { dataPoints: [v] } }, { name: 'h', histogram: { dataPoints: [v] } }] }] }] }) ?? ''),
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')),
      // Huge values: a span name and attribute, a log body, a metric point attribute of up to 2 MB.
      fc.integer({ min: 100_000, max: 2_000_000 }).map((n) => JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: hex(16), spanId: hex(8), name: 'n'.repeat(n), attributes: [{ key: 'big', value: { stringValue: 'v'.repeat(n) } }] }] }] }] })),
      fc.integer({ min: 100_000, max: 2_000_000 }).map((n) => JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'b'.repeat(n) }, attributes: [{ key: 'log.data', value: { kvlistValue: { values: [{ key: 'x', value: { stringValue: 'x'.repeat(n) } }] } } }] }] }] }] })),
      fc.integer({ min: 100_000, max: 2_000_000 }).map((n) => JSON.stringify({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'big', gauge: { dataPoints: [{ asInt: 1, attributes: [{ key: 'a', value: { stringValue: 'a'.repeat(n) } }] }] } }] }] }] })),
      // Deep nesting: an attribute value nested thousands of levels (kvlist and array), and a member the ingest never reads.
      fc.integer({ min: 1000, max: 20_000 }).map((n) => {
        const deep = '{"kvlistValue":{"values":[{"key":"k","value":'.repeat(n) + '{"stringValue":"x"}' + '}]}}'.repeat(n)
        return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"${hex(16)}","spanId":"${hex(8)}","attributes":[{"key":"deep","value":${deep}},{"key":"arr","value":${'{"arrayValue":{"values":['.repeat(n)}${']}}'.repeat(n)}}]}]}]}],"extra":${'['.repeat(n)}${']'.repeat(n)}}`
      }),
      // Repeated keys (the last one wins, as JSON.parse reads them), at every level of a span.
      fc.constantFrom('spanId', 'traceId', 'name', 'attributes', 'events', 'kind', 'status', 'startTimeUnixNano').map(
        (key) => `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"${hex(16)}","spanId":"${hex(8)}","name":"a","${key}":null,"${key}":[{"key":"k","value":{"stringValue":"1"}}],"attributes":[{"key":"d","value":{"intValue":"1"}},{"key":"d","value":{"boolValue":true}}],"${key}":"${hex(8)}"}]}],"scopeSpans":[]}]}`,
      ),
      // Wrong types anywhere in a span.
      fc.record({ traceId: fc.anything(), spanId: fc.anything(), name: fc.anything(), kind: fc.anything(), startTimeUnixNano: fc.anything(), endTimeUnixNano: fc.anything(), attributes: fc.anything(), events: fc.anything(), links: fc.anything(), status: fc.anything() }, { requiredKeys: [] }).map((span) => JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: span }] }, scopeSpans: [{ spans: [{ traceId: hex(16), spanId: hex(8), ...span }, span] }] }] }) ?? ''),
      // Numbers as text that are not finite (or not JSON at all: a bare NaN or Infinity token).
      fc.constantFrom('"NaN"', '"Infinity"', '"-Infinity"', '"1e400"', '"-1e400"', '"0x10"', '""', 'NaN', 'Infinity', '-Infinity', '1e400', '-0').map(
        (n) => `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"${hex(16)}","spanId":"${hex(8)}","name":"n","startTimeUnixNano":${n},"endTimeUnixNano":${n},"events":[{"name":"e","timeUnixNano":${n}}],"attributes":[{"key":"i","value":{"intValue":${n}}},{"key":"d","value":{"doubleValue":${n}}}]}]}]}]}`,
      ),
      // Lone surrogates, escaped and raw (raw ones reach the engine as U+FFFD once encoded as UTF-8).
      fc.constantFrom('\\ud800', '\\udfff', 'a\\ud800b', '\\udc00\\ud800', '\ud800', 'x\udfffy').map(
        (text) => `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"${text}"}}]},"scopeSpans":[{"spans":[{"traceId":"${hex(16)}","spanId":"${hex(8)}","name":"${text}","status":{"code":2,"message":"${text}"},"attributes":[{"key":"${text}","value":{"stringValue":"${text}"}}],"events":[{"name":"${text}","attributes":[{"key":"${text}","value":{"arrayValue":{"values":[{"stringValue":"${text}"}]}}}]}]}]}]}]}`,
      ),
    )
    await fc.assert(
      fc.asyncProperty(prefix, body, async (p, b) => {
        const bytes = Buffer.concat([Buffer.from(p), Buffer.from(b)])
        link.send(bytes)
        main.send(bytes)
        const health = (await t.engine.inject({ function_id: 'engine::health::check', data: {} })) as { status: string }
        return health.status === 'healthy'
      }),
      { numRuns: 150 },
    )
    const answer = await w.call('engine::health::check', {})
    assert.equal(answer.result.status, 'healthy')
    link.close()
    main.close()
    await w.close()
  })
  it('reads back a span of any svc-sdk-like frame as sent: hostile strings, members in any order, huge integers (property)', async () => {
    // The window keeps a frame's spans as text (PackedSpan); queries parse what they return.
    const link = await otel(t.url)
    const text = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('"', '\\', '\\"', '\\u0041', '\ud800', '\udc00\ud800', '\u2028', '}]}', '{"key":"x"}'))
    const frame = fc
      .record({ name: text, fn: text, payload: text, attribute: text, big: fc.bigInt({ min: 0n, max: 2n ** 70n }), code: fc.constantFrom(0, 1, 2) })
      .chain((v) => {
        const traceId = hex(16)
        const members: Array<[string, unknown]> = [
          ['traceId', traceId],
          ['spanId', hex(8)],
          ['name', `execute ${v.fn}`],
          ['kind', 2],
          ['startTimeUnixNano', '1795933355813327311'],
          ['endTimeUnixNano', '1795933355816172441'],
          ['attributes', [{ key: 'svc.function.id', value: { stringValue: v.fn } }, { key: v.attribute, value: { intValue: String(v.big) } }, { value: { stringValue: v.attribute }, key: 'reordered' }]],
          ['events', [{ timeUnixNano: '1795933355814499361', name: 'svc.invocation.input', attributes: [{ key: 'svc.payload.json', value: { stringValue: v.payload } }, { key: 'svc.payload.ok', value: { boolValue: true } }] }]],
          ['status', v.code === 0 ? {} : { code: v.code, message: v.name }],
          ['flags', 257],
        ]
        return fc.shuffledSubarray(members, { minLength: members.length, maxLength: members.length }).map((order) => ({ v, traceId, json: JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'fuzz' } }] }, scopeSpans: [{ scope: { name: 'svc-node' }, spans: [Object.fromEntries(order)] }] }] }) }))
      })
    await fc.assert(
      fc.asyncProperty(frame, async ({ v, traceId, json }) => {
        link.send(Buffer.concat([Buffer.from('OTLP'), Buffer.from(json)]))
        const tree = await waitFor(async () => {
          const r = (await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<Record<string, any>> }
          return r.roots.length > 0 && r
        }, 'the span in the window')
        const sent = JSON.parse(json).resourceSpans[0].scopeSpans[0].spans[0]
        const span = tree.roots[0]!
        // JSON.stringify escapes lone surrogates (\\ud800): they arrive, and come back, as they were.
        const wire = (s: string): string => s
        assert.equal(span.name, `execute ${wire(v.fn)}`)
        if (v.code !== 0 && wire(v.name) !== '') assert.equal(span.status_message, wire(v.name))
        assert.equal(span.span_id, sent.spanId)
        assert.equal(span.status, v.code === 1 ? 'ok' : v.code === 2 ? 'error' : 'unset')
        // As an attribute map takes them in order (a repeated key keeps the later value).
        const expected = new Map<string, unknown>([['svc.function.id', wire(v.fn)]])
        expected.set(wire(v.attribute), Number(String(v.big)))
        expected.set('reordered', wire(v.attribute))
        const sorted = (entries: Array<[string, unknown]>) => entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        assert.deepEqual(sorted(Object.entries(span.attributes)), sorted([...expected]))
        assert.equal(span.events[0].attributes['svc.payload.json'], wire(v.payload))
        const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: traceId } })) as { traces: Array<Record<string, any>> }
        assert.deepEqual(listed.traces[0]!.attributes, span.attributes)
        if (wire(v.fn) !== '') {
          const runs = (await t.engine.inject({ function_id: 'engine::runs::list', data: { function_id: wire(v.fn), limit: 500 } })) as { runs: Array<Record<string, any>> }
          assert.ok(runs.runs.some((run) => run.trace_id === traceId && run.input.json === wire(v.payload)))
        }
      }),
      { numRuns: 60 },
    )
    link.close()
  })
})

describe('size limits of stored telemetry (attribute values, counts, log bodies, records)', () => {
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'builtin' } } })
  })
  after(() => t.stop())

  const MARKER = /…\[truncated (\d+) bytes\]$/
  /**
   * The UTF-8 size of what a truncated value was: the bytes kept plus those its marker says were
   * cut. Asserts the value is within `limit` bytes and ends with the marker.
   */
  function original(value: unknown, limit: number): number {
    assert.equal(typeof value, 'string')
    const bytes = Buffer.byteLength(value as string)
    assert.ok(bytes <= limit, `${bytes} bytes`)
    const m = MARKER.exec(value as string)
    assert.ok(m, `no truncation marker at the end of ${(value as string).slice(-60)}`)
    return bytes - Buffer.byteLength(m[0]) + Number(m[1])
  }
  async function truncations(): Promise<Record<string, number>> {
    const listed = (await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'svc.observability.truncated' } })) as { metrics: Array<{ points: Array<{ value: number; attributes: Record<string, string> }> }> }
    const out: Record<string, number> = {}
    for (const p of listed.metrics[0]?.points ?? []) out[`${p.attributes['svc.telemetry.signal']}.${p.attributes['svc.telemetry.limit']}`] = p.value
    return out
  }

  it('a span with a 60 MB attribute and a log with a 20 MB body sent on /otel are stored capped, with the marker and the dropped counts', async () => {
    const link = await otel(t.url)
    const traceId = hex(16)
    const spanId = hex(8)
    const now = nano()
    const small = Array.from({ length: 200 }, (_, i) => ({ key: `a${i}`, value: { intValue: i } }))
    const span = {
      traceId, spanId, name: 'huge', kind: 1, startTimeUnixNano: now, endTimeUnixNano: now,
      attributes: [{ key: 'big', value: { stringValue: 'a'.repeat(60_000_000) } }, ...small],
      events: Array.from({ length: 200 }, (_, i) => ({ name: `e${i}`, timeUnixNano: now, attributes: [{ key: 'i', value: { intValue: i } }] })),
    }
    link.send(frame('OTLP', { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'app' } }] }, scopeSpans: [{ spans: [span] }] }] }))
    link.send(frame('LOGS', otlpLogs([{ body: 'é'.repeat(10_000_000), traceId }])))
    let stored: Record<string, any> | undefined
    await waitFor(async () => {
      const tree = (await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<Record<string, any>> }
      stored = tree.roots[0]
      return stored !== undefined
    }, 'the condition', 60_000)
    assert.equal(original(stored!.attributes.big, 65536), 60_000_000)
    // 128 attributes kept (big and a0…a126); a127…a199 dropped, big truncated.
    assert.equal(Object.keys(stored!.attributes).length, 128)
    assert.equal(stored!.attributes.a126, 126)
    assert.equal(stored!.dropped_attributes_count, 73 + 1)
    assert.equal(stored!.events.length, 128)
    assert.equal(stored!.dropped_events_count, 72)
    assert.equal(stored!.dropped_links_count, undefined)

    let log: Record<string, any> | undefined
    await waitFor(async () => {
      log = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: traceId } })) as { logs: Array<Record<string, any>> }).logs[0]
      return log !== undefined
    }, 'the condition', 60_000)
    assert.equal(original(log!.body, 65536), 20_000_000)
    assert.ok((log!.body as string).startsWith('éé'))

    assert.deepEqual(await truncations(), {
      'spans.attribute_value_length_limit': 1,
      'spans.attribute_count_limit': 73,
      'spans.span_event_count_limit': 72,
      'logs.log_body_length_limit': 1,
    })
    link.close()
  })

  it('engine::log::*, worker process output and the built-ins\' spans are capped too', async () => {
    const trace = hex(16)
    await t.engine.inject({
      function_id: 'engine::log::info',
      data: { message: 'm'.repeat(1_000_000), trace_id: trace, data: { blob: 'b'.repeat(1_000_000), nested: { deep: ['d'.repeat(100_000)] } } },
    })
    const logged = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: trace } })) as { logs: Array<Record<string, any>> }).logs[0]!
    assert.equal(original(logged.body, 65536), 1_000_000)
    assert.equal(original(logged.attributes['log.data.blob'], 65536), 1_000_000)
    // A structured value over the limit becomes its JSON, truncated.
    assert.ok((logged.attributes['log.data.nested'] as string).startsWith('{"deep":["ddd'))
    assert.equal(original(logged.attributes['log.data.nested'], 65536), JSON.stringify({ deep: ['d'.repeat(100_000)] }).length)
    assert.equal(logged.dropped_attributes_count, 2)

    t.engine.telemetry.output('noisy', 'stdout', 'o'.repeat(500_000))
    const output = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { service_name: 'noisy' } })) as { logs: Array<Record<string, any>> }).logs[0]!
    assert.equal(original(output.body, 65536), 500_000)

    const span = t.engine.telemetry.startSpan({ name: 'n'.repeat(200_000), kind: 'internal', attributes: { given: 'g'.repeat(200_000) } })!
    span.end('error', 'e'.repeat(200_000), { added: 'a'.repeat(200_000) })
    const tree = (await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: span.record.trace_id } })) as { roots: Array<Record<string, any>> }
    const root = tree.roots[0]!
    for (const value of [root.name, root.status_message, root.attributes.given]) assert.equal(original(value, 65536), 200_000)
    // Name, status message and `given` (64 KiB each) leave no room for `added` in the 256 KiB record.
    assert.equal(root.attributes.added, undefined)
    assert.equal(root.dropped_attributes_count, 2)
    assert.ok((await truncations())['spans.record_size_limit']! >= 1)
  })
})

describe('the in-memory window is bounded in bytes (memory_max_span_bytes, memory_max_log_bytes)', () => {
  const BUDGET = 1 << 20
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'builtin', memory_max_span_bytes: BUDGET, memory_max_log_bytes: BUDGET } } })
  })
  after(() => t.stop())

  /** `svc.observability.window_bytes` by signal. */
  async function windowBytes(): Promise<{ spans: number; logs: number }> {
    const listed = (await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'svc.observability.window_bytes' } })) as { metrics: Array<{ unit: string; points: Array<{ value: number; attributes: Record<string, string> }> }> }
    const series = listed.metrics[0]!
    assert.equal(series.unit, 'By')
    const of = (signal: string): number => series.points.find((p) => p.attributes['svc.telemetry.signal'] === signal)!.value
    return { spans: of('spans'), logs: of('logs') }
  }

  it('keeps the newest large spans and log records sent over /otel within the budget, evicting the oldest; queries return the newest', async () => {
    const link = await otel(t.url)
    const service = `big-${hex(4)}`
    const resource = { attributes: [{ key: 'service.name', value: { stringValue: service } }] }
    const now = nano()
    // 40 spans of about 100 KiB (two 50 KiB attributes) and 40 log records of 60 KiB: four times the budget each.
    const total = 40
    const seqs = async (): Promise<{ spans: number[]; logs: number[] }> => {
      const traces = (await t.engine.inject({ function_id: 'engine::traces::list', data: { service_name: service, sort_order: 'asc', limit: 1000 } })) as { traces: Array<{ attributes: { seq: number } }> }
      const logs = (await t.engine.inject({ function_id: 'engine::logs::list', data: { service_name: service, limit: 1000 } })) as { logs: Array<{ attributes: { seq: number } }> }
      const ascending = (list: Array<{ attributes: { seq: number } }>): number[] => list.map((x) => x.attributes.seq).sort((a, b) => a - b)
      return { spans: ascending(traces.traces), logs: ascending(logs.logs) }
    }
    for (let first = 0; first < total; first += 4) {
      const batch = [first, first + 1, first + 2, first + 3]
      const spans = batch.map((seq) => ({
        traceId: hex(16), spanId: hex(8), name: `big ${seq}`, kind: 1, startTimeUnixNano: now, endTimeUnixNano: now,
        attributes: [{ key: 'seq', value: { intValue: seq } }, { key: 'a', value: { stringValue: hex(25 * 1024) } }, { key: 'b', value: { stringValue: hex(25 * 1024) } }],
      }))
      const records = batch.map((seq) => ({ timeUnixNano: now, severityNumber: 9, body: { stringValue: hex(30 * 1024) }, attributes: [{ key: 'seq', value: { intValue: seq } }] }))
      link.send(frame('OTLP', { resourceSpans: [{ resource, scopeSpans: [{ spans }] }] }))
      link.send(frame('LOGS', { resourceLogs: [{ resource, scopeLogs: [{ logRecords: records }] }] }))
      await waitFor(async () => {
        const held = await seqs()
        return held.spans.at(-1) === first + 3 && held.logs.at(-1) === first + 3
      }, 'the condition', 30_000)
      const bytes = await windowBytes()
      assert.ok(bytes.spans <= BUDGET && bytes.logs <= BUDGET, `window ${JSON.stringify(bytes)} over ${BUDGET}`)
    }
    const held = await seqs()
    for (const [signal, kept] of Object.entries(held)) {
      // About ten records of 100 KiB fit; the oldest went first, so what is left is the newest, in order.
      assert.ok(kept.length >= 5 && kept.length < total, `${signal}: ${kept.length} kept`)
      assert.deepEqual(kept, Array.from({ length: kept.length }, (_, i) => total - kept.length + i), `${signal}: the newest`)
    }
    const health = (await t.engine.inject({ function_id: 'engine::health::check', data: {} })) as { components: { observability: { detail: string } } }
    assert.match(health.components.observability.detail, /spans \(\d+\.\d MiB\), \d+ logs \(\d+\.\d MiB\)/)
    link.close()
  })

  it('stays within the budget whatever sizes arrive, and answers with the newest record (property)', async () => {
    const link = await otel(t.url)
    const service = `random-${hex(4)}`
    const resource = { attributes: [{ key: 'service.name', value: { stringValue: service } }] }
    // Sizes from nothing to over the record size limit (256 KiB: truncated, then dropped by the budget).
    const size = fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 2000, max: 300_000 }), fc.constantFrom(65_536, 262_144, 1_048_576))
    const record = fc.record({ kind: fc.constantFrom('span' as const, 'log' as const), sizes: fc.array(size, { minLength: 1, maxLength: 5 }) })
    let seq = 0
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 8 }), async (records) => {
        const start = BigInt(nano())
        let lastSpan = -1
        let lastLog = -1
        for (const r of records) {
          const n = seq++
          // One microsecond apart: the newest is the first the queries list.
          const now = String(start + BigInt(n) * 1000n)
          // Each size becomes an attribute of up to 64 KiB (the value limit) or a body.
          const attributes = r.sizes.map((bytes, i) => ({ key: `a${i}`, value: { stringValue: 'x'.repeat(Math.min(bytes, 65_000)) } }))
          if (r.kind === 'span') {
            link.send(frame('OTLP', { resourceSpans: [{ resource, scopeSpans: [{ spans: [{ traceId: hex(16), spanId: hex(8), name: 'r', startTimeUnixNano: now, endTimeUnixNano: now, attributes: [{ key: 'seq', value: { intValue: n } }, ...attributes] }] }] }] }))
            lastSpan = n
          } else {
            link.send(frame('LOGS', { resourceLogs: [{ resource, scopeLogs: [{ logRecords: [{ timeUnixNano: now, body: { stringValue: 'y'.repeat(r.sizes[0]!) }, attributes: [{ key: 'seq', value: { intValue: n } }, ...attributes] }] }] }] }))
            lastLog = n
          }
        }
        await waitFor(async () => {
          const traces = (await t.engine.inject({ function_id: 'engine::traces::list', data: { service_name: service, limit: 1 } })) as { traces: Array<{ attributes: { seq: number } }> }
          const logs = (await t.engine.inject({ function_id: 'engine::logs::list', data: { service_name: service, limit: 1 } })) as { logs: Array<{ attributes: { seq: number } }> }
          return (lastSpan < 0 || traces.traces[0]?.attributes.seq === lastSpan) && (lastLog < 0 || logs.logs[0]?.attributes.seq === lastLog)
        }, 'the condition', 30_000)
        const bytes = await windowBytes()
        assert.ok(bytes.spans <= BUDGET && bytes.logs <= BUDGET, `window ${JSON.stringify(bytes)} over ${BUDGET}`)
      }),
      { numRuns: 20 },
    )
    link.close()
  })

  it('refuses a budget under 1 MiB, naming the setting', async () => {
    await assert.rejects(
      t.engine.inject({ function_id: 'configuration::set', data: { id: 'svc-observability', value: { memory_max_span_bytes: 1000 } } }),
      /memory_max_span_bytes: must be >= 1048576/,
    )
  })
})

describe('size limits under random huge telemetry (property)', () => {
  const LIMITS = { attribute_value_length_limit: 256, attribute_count_limit: 8, span_event_count_limit: 4, span_link_count_limit: 4, log_body_length_limit: 512, record_size_limit: 4096 }
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory', ...LIMITS } } })
  })
  after(() => t.stop())

  // Rare and at most ~400 KB each, so that a frame stays far below the 64 MiB frame limit.
  const huge = fc.integer({ min: 1, max: 100_000 }).chain((n) => fc.constantFrom('x', 'é', '😀', '\u0000').map((unit) => unit.repeat(n)))
  const text = fc.oneof({ arbitrary: fc.string({ maxLength: 20 }), weight: 5 }, { arbitrary: huge, weight: 1 })
  const anyValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      text.map((v) => ({ stringValue: v })),
      fc.integer().map((v) => ({ intValue: v })),
      fc.boolean().map((v) => ({ boolValue: v })),
      fc.array(tie('value'), { maxLength: 4 }).map((values) => ({ arrayValue: { values } })),
      fc.array(fc.record({ key: text, value: tie('value') }), { maxLength: 4 }).map((values) => ({ kvlistValue: { values } })),
    ),
  })).value
  /** Keys that name members of Object.prototype: ordinary attributes like any other. */
  const prototypeKey = fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', '__defineGetter__')
  const keyValues = fc.array(fc.record({ key: fc.oneof({ arbitrary: text, weight: 10 }, { arbitrary: prototypeKey, weight: 2 }), value: anyValue }), { maxLength: 12 })
  const hexId = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'))

  /** UTF-16 units of every string in a value, keys included. */
  function units(value: unknown): number {
    if (typeof value === 'string') return value.length
    if (typeof value !== 'object' || value === null) return 0
    let n = 0
    for (const [k, v] of Object.entries(value)) n += (Array.isArray(value) ? 0 : k.length) + units(v)
    return n
  }
  /** Every string in a value (keys included) is within `limit` UTF-8 bytes. */
  function within(value: unknown, limit: number, where: string): void {
    if (typeof value === 'string') return assert.ok(Buffer.byteLength(value) <= limit, `${where}: ${Buffer.byteLength(value)} bytes`)
    if (typeof value !== 'object' || value === null) return
    for (const [k, v] of Object.entries(value)) {
      assert.ok(Buffer.byteLength(k) <= limit, `${where}: a key of ${Buffer.byteLength(k)} bytes`)
      within(v, limit, `${where}.${k.slice(0, 20)}`)
    }
  }

  // A run may send ~30 values of 400 KB in one frame (tens of MB to parse and cut), usually 3 s in
  // all but minutes on a loaded 2-core machine: a cap above the suite's 120 s, not a wait.
  it('stored spans and log records stay within every limit, whatever /otel sends', { timeout: 360_000 }, async () => {
    const link = await otel(t.url)
    const span = fc.record({
      spanId: hexId(8),
      name: text,
      attributes: keyValues,
      events: fc.array(fc.record({ name: text, attributes: keyValues }), { maxLength: 8 }),
      links: fc.array(fc.record({ traceId: text, spanId: text, attributes: keyValues }), { maxLength: 8 }),
      status: fc.record({ code: fc.constant(2), message: text }),
    })
    const logRecord = fc.record({ body: anyValue, attributes: keyValues, severityText: text })
    await fc.assert(
      fc.asyncProperty(fc.array(span, { minLength: 1, maxLength: 3 }), fc.array(logRecord, { minLength: 1, maxLength: 3 }), keyValues, async (spans, logs, resource) => {
        // A fresh trace per run, shrinking included: a generated trace id (fast-check favours all
        // zeros) could repeat, and a run would then also read an earlier run's records and wait forever.
        const traceId = hex(16)
        const now = nano()
        assert.equal(link.readyState, WebSocket.OPEN)
        link.send(frame('OTLP', { resourceSpans: [{ resource: { attributes: resource }, scopeSpans: [{ spans: spans.map((s) => ({ ...s, traceId, startTimeUnixNano: now, endTimeUnixNano: now })) }] }] }))
        link.send(frame('LOGS', { resourceLogs: [{ resource: { attributes: resource }, scopeLogs: [{ logRecords: logs.map((l) => ({ ...l, traceId, timeUnixNano: now })) }] }] }))
        let stored: Array<Record<string, any>> = []
        let records: Array<Record<string, any>> = []
        await waitFor(async () => {
          const listed = (await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<Record<string, any>> }
          const flat = (nodes: Array<Record<string, any>>): Array<Record<string, any>> => nodes.flatMap((node) => [node, ...flat(node.children)])
          stored = flat(listed.roots)
          records = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: traceId } })) as { logs: Array<Record<string, any>> }).logs
          return stored.length === new Set(spans.map((s) => s.spanId)).size && records.length === logs.length
        }, 'the condition', 30_000)
        for (const s of stored) {
          const { children: _children, ...record } = s
          within(record, LIMITS.attribute_value_length_limit, 'span')
          assert.ok(Object.keys(record.attributes).length <= LIMITS.attribute_count_limit)
          assert.ok(Object.keys(record.resource).length <= LIMITS.attribute_count_limit)
          assert.ok(record.events.length <= LIMITS.span_event_count_limit && record.links.length <= LIMITS.span_link_count_limit)
          for (const part of [...record.events, ...record.links]) assert.ok(Object.keys(part.attributes).length <= LIMITS.attribute_count_limit)
          assert.ok(units(record) <= LIMITS.record_size_limit, `a span of ${units(record)} characters`)
        }
        for (const record of records) {
          const { body, ...rest } = record
          assert.ok(Buffer.byteLength(body) <= LIMITS.log_body_length_limit, `a body of ${Buffer.byteLength(body)} bytes`)
          within(rest, LIMITS.attribute_value_length_limit, 'log')
          assert.ok(Object.keys(record.attributes).length <= LIMITS.attribute_count_limit)
          assert.ok(units(record) <= LIMITS.record_size_limit, `a log record of ${units(record)} characters`)
        }
      }),
      { numRuns: 25 },
    )
    link.close()
  })

  it('stores attributes named after Object.prototype members as sent (the last of a repeated key wins)', async () => {
    const link = await otel(t.url)
    const small = fc.oneof(fc.string({ maxLength: 10 }).map((v) => ({ stringValue: v })), fc.integer().map((v) => ({ intValue: v })), fc.boolean().map((v) => ({ boolValue: v })))
    const pairs = fc.array(fc.record({ key: fc.oneof(prototypeKey, fc.constant('plain')), value: small }), { maxLength: 6 })
    /** What the attributes must be: the last value of each key, in order of first appearance. */
    const expected = (list: Array<{ key: string; value: Record<string, unknown> }>): string => {
      const out = Object.create(null) as Record<string, unknown>
      for (const { key, value } of list) out[key] = Object.values(value)[0]
      return JSON.stringify(out)
    }
    await fc.assert(
      fc.asyncProperty(pairs, async (attributes) => {
        // A fresh trace per run, shrinking included: a run never reads another's records.
        const traceId = hex(16)
        const now = nano()
        link.send(frame('OTLP', { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: 'a'.repeat(16), name: 's', startTimeUnixNano: now, endTimeUnixNano: now, attributes }] }] }] }))
        link.send(frame('LOGS', { resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId, timeUnixNano: now, body: { stringValue: 'l' }, attributes }] }] }] }))
        let span: Record<string, any> | undefined
        let record: Record<string, any> | undefined
        await waitFor(async () => {
          span = ((await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<Record<string, any>> }).roots[0]
          record = ((await t.engine.inject({ function_id: 'engine::logs::list', data: { trace_id: traceId } })) as { logs: Array<Record<string, any>> }).logs[0]
          return span !== undefined && record !== undefined
        }, 'the condition', 30_000)
        assert.equal(JSON.stringify(span!.attributes), expected(attributes))
        assert.equal(JSON.stringify(record!.attributes), expected(attributes))
      }),
      { numRuns: 40 },
    )
    link.close()
  })
})

describe('trace trigger under a span flood', () => {
  it('batches at most 10,000 trace ids, the newest, and counts the others', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory', memory_max_spans: 20000 } } })
    const w = await RawWorker.connect(t.url)
    try {
      const batches: string[][] = []
      w.serve('app::ontraces', (data) => void batches.push(data.trace_ids))
      w.send({ type: 'registertrigger', id: 'all-traces', trigger_type: 'trace', function_id: 'app::ontraces', config: {} })
      await bindingsSettled(t.engine, ['all-traces'])
      const traces = Array.from({ length: 12000 }, () => hex(16))
      const now = nano()
      const spans = traces.map((traceId) => ({ traceId, spanId: hex(8), name: 'job', kind: 1, startTimeUnixNano: now, endTimeUnixNano: now }))
      const link = await otel(t.url)
      // One frame: every span arrives within one batch period.
      link.send(frame('OTLP', { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans }] }] }))
      await waitFor(() => batches.length > 0, 'batches.length > 0', 10_000)
      // (An engine span's trace may take a place in the batch, before or after the flood, and is then
      // left out of the delivery when it is internal: compare the flood's.)
      const flood = new Set(traces)
      assert.ok(batches[0]!.length <= 10_000 && batches[0]!.filter((id) => flood.has(id)).length >= 9_990, String(batches[0]!.length))
      assert.deepEqual(batches[0]!.filter((id) => flood.has(id)).slice(-2), traces.slice(-2), 'the newest are kept, in arrival order')
      assert.equal(batches[0]!.includes(traces[0]!), false)
      const health = (await t.engine.inject({ function_id: 'engine::health::check', data: {} })) as { components: { observability: { detail: string } } }
      // 2,000 of the flood, plus any engine span's trace that joined the batch just before it.
      const left = Number(/(\d+) trace ids left out of trace trigger batches/.exec(health.components.observability.detail)?.[1])
      assert.ok(left >= 2000 && left <= 2010, health.components.observability.detail)
      link.close()
    } finally {
      await w.close()
      await t.stop()
    }
  })
})

describe('log trigger whose handler does not keep up', () => {
  it('keeps at most 64 deliveries open, drops the oldest waiting records beyond 10,000, and leaves other calls alone', async () => {
    // A small engine-wide bound on open invocations: one delivery per record would fill it at once.
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } }, limits: { total: 1000 } })
    const subscriber = await RawWorker.connect(t.url)
    const callee = await RawWorker.connect(t.url)
    const caller = await RawWorker.connect(t.url)
    try {
      const received: string[] = []
      subscriber.serve('app::stuck', (record) => {
        received.push(record.body)
        return new Promise(() => {}) // never answers
      })
      subscriber.send({ type: 'registertrigger', id: 'all-logs', trigger_type: 'log', function_id: 'app::stuck', config: {} })
      callee.serve('app::ping', () => 'pong')
      await bindingsSettled(t.engine, ['all-logs'])
      const link = await otel(t.url)
      for (let f = 0; f < 12; f++) link.send(frame('LOGS', otlpLogs(Array.from({ length: 1000 }, (_, i) => ({ body: `l${f * 1000 + i}` })))))
      const detail = async (): Promise<string> => ((await caller.call('engine::health::check', {})).result.components.observability.detail as string)
      // 12,000 records: 64 with the handler, 10,000 waiting, the oldest 1,936 of the rest dropped.
      await waitFor(async () => /\b1936 log records not delivered/.test(await detail()), '/\\b1936 log records not delivered/.test(await detail())', 10_000)
      // Anything sent to the subscriber before its own call's answer has arrived by then.
      await subscriber.call('engine::health::check', {})
      assert.equal(received.length, 64)
      assert.deepEqual(received.slice(0, 3), ['l0', 'l1', 'l2'], 'arrival order')
      const answer = await caller.call('app::ping', {})
      assert.equal(answer.error, undefined, JSON.stringify(answer.error))
      assert.equal(answer.result, 'pong')
      link.close()
    } finally {
      await subscriber.close()
      await callee.close()
      await caller.close()
      await t.stop()
    }
  })
})

describe('observability worker with store: none', () => {
  it('query functions fail with STORAGE_DISABLED; logging still succeeds', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'none' } } })
    try {
      await t.engine.inject({ function_id: 'engine::log::info', data: { message: 'x' } })
      await assert.rejects(t.engine.inject({ function_id: 'engine::logs::list', data: {} }), { code: 'STORAGE_DISABLED', message: 'local telemetry storage is disabled (store: none)' })
      await assert.rejects(t.engine.inject({ function_id: 'engine::traces::list', data: {} }), { code: 'STORAGE_DISABLED' })
    } finally {
      await t.stop()
    }
  })
})

describe('retention on the engine clock (builtins.md §12.1 retention_seconds)', () => {
  it('the sweep every 60 s drops records older than retention_seconds, moved by a manual clock', async () => {
    const clock = createManualClock()
    const t = await startTestEngine({ clock, settings: { 'svc-observability': { store: 'memory', retention_seconds: 60 } } })
    try {
      const total = async (search: string) => ((await t.engine.inject({ function_id: 'engine::logs::list', data: { search } })) as { total: number }).total
      await t.engine.inject({ function_id: 'engine::log::info', data: { message: 'kept a minute' } })
      assert.equal(await total('kept a minute'), 1)
      clock.advance(60_000) // the first sweep: the record is younger than 60 s on this clock
      assert.equal(await total('kept a minute'), 1)
      clock.advance(60_000) // the second: it is 120 s old
      assert.equal(await total('kept a minute'), 0)
    } finally {
      await t.stop()
    }
  })
})

describe('worker process output', () => {
  it('is recorded with service_name, INFO/WARN, log.source and ANSI removed', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
    try {
      t.engine.telemetry.output('links', 'stdout', '\u001b[32mready\u001b[0m')
      t.engine.telemetry.output('links', 'stderr', 'boom')
      const { logs } = (await t.engine.inject({ function_id: 'engine::logs::list', data: { service_name: 'LINKS' } })) as { logs: Array<Record<string, any>> }
      assert.deepEqual(
        logs.map((l) => [l.body, l.severity_text, l.attributes['log.source']]),
        [
          ['boom', 'WARN', 'stderr'],
          ['ready', 'INFO', 'stdout'],
        ],
      )
    } finally {
      await t.stop()
    }
  })
})

describe('engine spans: sampling and HTTP errors', () => {
  it('sampling_ratio 0 records no span for a new trace but honours a sampled parent', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory', sampling_ratio: 0 } } })
    try {
      await t.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' } })
      const none = (await t.engine.inject({ function_id: 'engine::traces::list', data: { include_internal: true } })) as { total: number }
      assert.equal(none.total, 0)
      const parent = `00-${hex(16)}-${hex(8)}-01`
      await t.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' }, traceparent: parent })
      const one = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: parent.slice(3, 35) } })) as { total: number }
      assert.equal(one.total, 1)
    } finally {
      await t.stop()
    }
  })

  it('an HTTP request whose function fails gives a server span with status error and the response status', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
    const w = await RawWorker.connect(t.url)
    try {
      w.serve('app::fail', () => {
        throw Object.assign(new Error('nope'), { code: 'BROKEN' })
      })
      w.send({ type: 'registertrigger', id: 'fail-route', trigger_type: 'http', function_id: 'app::fail', config: { api_path: 'fail', http_method: 'POST' } })
      await waitFor(async () => (await fetch(`${t.httpUrl}/fail`, { method: 'POST' })).status >= 500, "(await fetch(`${t.httpUrl}/fail`, { method: 'POST' })).status >= 500")
      let traces: Array<{ name: string; status: string; attributes: Record<string, unknown> }> = []
      await waitFor(async () => {
        traces = ((await t.engine.inject({ function_id: 'engine::traces::list', data: { status: 'error', name: 'POST /fail' } })) as { traces: typeof traces }).traces
        return traces.length > 0
      }, 'the condition')
      assert.equal(traces[0]!.name, 'POST /fail')
      assert.ok(Number(traces[0]!.attributes['http.response.status_code']) >= 500)
      assert.equal(traces[0]!.attributes['http.route'], '/fail')
    } finally {
      await w.close()
      await t.stop()
    }
  })
})

describe('trace trigger and clearing', () => {
  it('a trace trigger handler that writes state and enqueues with the delivery context records no span and does not loop', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' }, queue: { adapter: { name: 'memory' }, queue_configs: { jobs: {} } } } })
    const w = await RawWorker.connect(t.url)
    try {
      const parent = `00-${hex(16)}-${hex(8)}-01`
      const mine = parent.slice(3, 35)
      const batches: string[][] = []
      let reactions = 0
      let jobs = 0
      w.serve('app::ontrace', async (data, f) => {
        batches.push(data.trace_ids)
        // Engine-started traces (functions-available deliveries, settings reads) may fire it too.
        if (!data.trace_ids.includes(mine)) return
        // What an SDK handler does: its calls carry the (unsampled) delivery context.
        await w.call('state::set', { scope: 'loop', key: 'k', value: batches.length }, { traceparent: f.traceparent })
        await w.call('app::job', {}, { traceparent: f.traceparent, action: { type: 'enqueue', queue: 'jobs' } })
      })
      w.serve('app::onstate', () => void reactions++)
      w.serve('app::job', () => void jobs++)
      w.send({ type: 'registertrigger', id: 'all-traces', trigger_type: 'trace', function_id: 'app::ontrace', config: {} })
      w.send({ type: 'registertrigger', id: 'loop-state', trigger_type: 'state', function_id: 'app::onstate', config: { scope: 'loop' } })
      await bindingsSettled(t.engine, ['all-traces', 'loop-state'])
      await t.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' }, traceparent: parent })
      await waitFor(() => reactions === 1 && jobs === 1, 'reactions === 1 && jobs === 1', 3000)
      // A marker trace after the handler's calls: the batches are in order, so a trace those calls
      // made would be delivered no later than the marker.
      const marker = `00-${hex(16)}-${hex(8)}-01`
      await t.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'marker' }, traceparent: marker })
      await waitFor(() => batches.flat().includes(marker.slice(3, 35)), 'the marker trace delivered')
      assert.equal(batches.flat().filter((id) => id === mine).length, 1, 'the trace fired the trigger once')
      assert.equal(reactions, 1)
      // None of the traces comes from what the handler did.
      const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { include_internal: true, limit: 1000 } })) as { traces: Array<{ trace_id: string; name: string }> }
      const caused = listed.traces.filter((x) => /state::set|app::onstate|jobs|app::job/.test(x.name))
      assert.deepEqual(caused, [], 'what the delivery caused recorded no span')
      assert.ok(listed.traces.every((x) => !/^0+1$/.test(x.trace_id)))
    } finally {
      await w.close()
      await t.stop()
    }
  })

  it('a trace trigger receives batched trace ids filtered by root status; clear removes spans and logs', async () => {
    const t = await startTestEngine({ settings: { 'svc-observability': { store: 'builtin' } } })
    const w = await RawWorker.connect(t.url)
    try {
      const batches: string[][] = []
      w.serve('app::ontrace', (data) => void batches.push(data.trace_ids))
      w.send({ type: 'registertrigger', id: 'error-traces', trigger_type: 'trace', function_id: 'app::ontrace', config: { status: 'ERROR' } })
      await bindingsSettled(t.engine, ['error-traces'])
      const ok = `00-${hex(16)}-${hex(8)}-01`
      const failed = `00-${hex(16)}-${hex(8)}-01`
      await t.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' }, traceparent: ok })
      await assert.rejects(t.engine.inject({ function_id: 'state::get', data: { scope: 7 }, traceparent: failed }))
      await waitFor(() => batches.flat().includes(failed.slice(3, 35)), 'batches.flat().includes(failed.slice(3, 35))', 3000)
      assert.ok(!batches.flat().includes(ok.slice(3, 35)))
      await t.engine.inject({ function_id: 'engine::log::info', data: { message: 'x' } })
      const spans = (await t.engine.inject({ function_id: 'engine::traces::clear', data: {} })) as { cleared: number }
      assert.ok(spans.cleared >= 2)
      const logs = (await t.engine.inject({ function_id: 'engine::logs::clear', data: {} })) as { cleared: number }
      assert.ok(logs.cleared >= 1)
      assert.equal(((await t.engine.inject({ function_id: 'engine::logs::list', data: {} })) as { total: number }).total, 0)
    } finally {
      await w.close()
      await t.stop()
    }
  })
})
