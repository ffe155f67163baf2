/**
 * OTLP export (builtins.md §12.8) to a real receiver started by the test (test/support/otlp-receiver.ts,
 * decoding with the official OTLP protobuf definitions): every protocol, switched at runtime through
 * `configuration::set`, checked span by span, log by log and metric by metric; a backend that
 * refuses; the signal filter; `store: none`.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { startOtlpReceiver, type OtlpReceiver } from '../../../test/support/otlp-receiver.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { silentLogger } from '../../engine/logger.ts'
import { resolveOtlpSettings } from './export.ts'
import { quietPeriod, waitFor } from '../../../test/support/wait.ts'

const hex = (bytes: number): string => randomBytes(bytes).toString('hex')

describe('OTLP export', () => {
  let receiver: OtlpReceiver
  let t: TestEngine
  let w: RawWorker
  const warnings: string[] = []

  before(async () => {
    receiver = await startOtlpReceiver()
    t = await startTestEngine({
      settings: { 'svc-observability': { store: 'memory', otlp: { enabled: true, endpoint: receiver.httpUrl, headers: { 'x-api-key': 'k1' } } } },
      log: { ...silentLogger, warn: (message: string) => void warnings.push(message) },
    })
    w = await RawWorker.connect(t.url)
    w.serve('shop::ping', async (data) => ({ status_code: 200, body: { pong: (data as { query_params?: unknown }).query_params ?? null } }))
    w.send({ type: 'registertrigger', id: 'ping-route', trigger_type: 'http', function_id: 'shop::ping', config: { api_path: 'ping/:id', http_method: 'GET' } })
    await waitFor(async () => (await fetch(`${t.httpUrl}/ping/0`)).status === 200, '(await fetch(`${t.httpUrl}/ping/0`)).status === 200')
  })
  after(async () => {
    await w.close()
    await t.stop()
    await receiver.close()
  })

  /**
   * Sets the settings entry and waits until engine::health::check shows the export in effect and
   * the previous one done (no `detail` about it), so that no request of the previous one arrives later.
   */
  const configure = async (otlp: Record<string, unknown>, extra: Record<string, unknown> = { store: 'memory' }): Promise<void> => {
    await t.engine.inject({ function_id: 'configuration::set', data: { id: 'svc-observability', value: { ...extra, otlp } } })
    await waitFor(async () => {
      const health = (await t.engine.inject({ function_id: 'engine::health::check', data: {} })) as { components: { otlp_export: Record<string, unknown> } }
      const shown = health.components.otlp_export
      if (shown.detail !== undefined) return false
      if (otlp.enabled !== true) return shown.status === 'disabled'
      return shown.protocol === otlp.protocol && shown.endpoint === otlp.endpoint && JSON.stringify(shown.signals) === JSON.stringify(otlp.signals ?? ['traces', 'metrics', 'logs'])
    }, 'the condition')
  }

  /** One HTTP request (an engine server span) and one log line in its trace; returns the trace id. */
  const traffic = async (): Promise<{ traceId: string; spanId: string }> => {
    const traceId = hex(16)
    const parent = hex(8)
    const response = await fetch(`${t.httpUrl}/ping/7`, { headers: { traceparent: `00-${traceId}-${parent}-01` } })
    assert.equal(response.status, 200)
    await t.engine.inject({ function_id: 'engine::log::warn', data: { message: 'stock low', data: { sku: 'a-1', left: 2 } }, traceparent: `00-${traceId}-${parent}-01` })
    return { traceId, spanId: parent }
  }

  for (const protocol of ['http/protobuf', 'http/json', 'grpc'] as const) {
    it(`exports spans, logs and metrics over ${protocol}, span by span`, async () => {
      await configure({ enabled: true, protocol, endpoint: protocol === 'grpc' ? receiver.grpcUrl : receiver.httpUrl, headers: { 'x-api-key': 'k1' } })
      const before = receiver.requests.length
      const { traceId, spanId } = await traffic()
      await waitFor(() => receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId), 'receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId)', 10_000)
      const wire = protocol === 'grpc' ? 'grpc' : 'http'
      const type = protocol === 'http/json' ? 'application/json' : protocol === 'grpc' ? 'application/grpc' : 'application/x-protobuf'
      assert.ok(receiver.requests.slice(before).includes(`${wire} traces ${type}`), receiver.requests.slice(before).join('\n'))
      assert.equal(receiver.lastHeaders['x-api-key'], 'k1')

      const spans = receiver.spans.filter((s) => s.traceId === traceId)
      const server = spans.find((s) => s.name === 'GET /ping/:id')
      assert.ok(server, `spans: ${spans.map((s) => s.name).join(', ')}`)
      assert.equal(server.parentSpanId, spanId)
      assert.equal(server.kind, 2) // SPAN_KIND_SERVER
      assert.equal(server.service, 'svc')
      assert.equal(server.statusCode, 0)
      assert.equal(server.attributes['http.route'], '/ping/:id')
      assert.equal(server.attributes['http.request.method'], 'GET')
      assert.equal(server.attributes['http.response.status_code'], 200)
      assert.ok(server.endTimeUnixNano >= server.startTimeUnixNano && server.startTimeUnixNano > 0n)
      // The exported span is the stored one.
      const stored = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: traceId } })) as { traces: Array<{ span_id: string; name: string }> }
      assert.equal(stored.traces[0]!.span_id, server.spanId)

      const log = receiver.logs.find((l) => l.traceId === traceId)!
      assert.equal(log.body, 'stock low')
      assert.equal(log.severityNumber, 13)
      assert.equal(log.severityText, 'WARN')
      assert.equal(log.spanId, spanId)
      assert.equal(log.attributes['log.data.sku'], 'a-1')
      assert.equal(log.attributes['log.data.left'], 2)

      await waitFor(() => receiver.metrics.some((m) => m.name === 'svc.function.invocations' && m.points.some((p) => p.attributes['svc.function.id'] === 'shop::ping')), 'the condition', 10_000)
      const counts = receiver.metrics.filter((m) => m.name === 'svc.function.invocations').at(-1)!
      assert.equal(counts.type, 'sum')
      const ping = counts.points.find((p) => p.attributes['svc.function.id'] === 'shop::ping')!
      assert.ok((ping.value as number) >= 1)
      const durations = receiver.metrics.filter((m) => m.name === 'svc.function.duration').at(-1)!
      assert.equal(durations.type, 'histogram')
    })
  }

  it('keeps ingesting while the backend refuses; drops a batch after three attempts and warns once', async () => {
    await configure({ enabled: true, protocol: 'http/protobuf', endpoint: receiver.httpUrl, signals: ['traces'] })
    warnings.length = 0
    receiver.failNext(3, 'http traces')
    const refused = await traffic()
    // Three refused attempts of the same batch, then it is gone; the store has the trace all along.
    await waitFor(() => receiver.refused === 3, 'receiver.refused === 3', 10_000)
    const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: refused.traceId } })) as { total: number }
    assert.equal(listed.total, 1)
    const next = await traffic()
    await waitFor(() => receiver.spans.some((s) => s.traceId === next.traceId), 'receiver.spans.some((s) => s.traceId === next.traceId)', 10_000)
    assert.equal(receiver.spans.some((s) => s.traceId === refused.traceId), false)
    assert.equal(warnings.length, 1, warnings.join('\n'))
    assert.match(warnings[0]!, /OTLP export of traces to http:\/\/127\.0\.0\.1:\d+ \(http\/protobuf\) failed/)
    // signals: [traces] only: no log record of that trace left the engine.
    assert.equal(receiver.logs.some((l) => l.traceId === next.traceId), false)
  })

  it('exports records as the size limits left them, with their dropped counts', async () => {
    await configure({ enabled: true, protocol: 'http/protobuf', endpoint: receiver.httpUrl })
    const traceId = hex(16)
    const now = String(BigInt(Date.now()) * 1_000_000n)
    const attributes = [{ key: 'big', value: { stringValue: 'b'.repeat(200_000) } }, ...Array.from({ length: 130 }, (_, i) => ({ key: `a${i}`, value: { intValue: i } }))]
    const events = Array.from({ length: 130 }, (_, i) => ({ name: `e${i}`, timeUnixNano: now, attributes: i === 0 ? attributes.slice(0, 1) : [] }))
    const link = new WebSocket(`${t.url}/otel`)
    await new Promise((resolve, reject) => link.once('open', resolve).once('error', reject))
    link.send(Buffer.concat([Buffer.from('OTLP'), Buffer.from(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: hex(8), name: 'limited', startTimeUnixNano: now, endTimeUnixNano: now, attributes, events }] }] }] }))]))
    link.send(Buffer.concat([Buffer.from('LOGS'), Buffer.from(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId, spanId: hex(8), body: { stringValue: 'l'.repeat(100_000) }, attributes }] }] }] }))]))
    await waitFor(() => receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId), 'receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId)', 10_000)
    const span = receiver.spans.find((s) => s.traceId === traceId)!
    assert.match(span.attributes.big as string, /…\[truncated \d+ bytes\]$/)
    assert.equal(span.droppedAttributesCount, 1 + 3)
    assert.equal(span.droppedEventsCount, 2)
    assert.equal(span.eventsDroppedAttributes[0], 1)
    const log = receiver.logs.find((l) => l.traceId === traceId)!
    assert.ok(Buffer.byteLength(log.body as string) <= 65536)
    assert.equal(log.droppedAttributesCount, 1 + 3)
    link.close()
  })

  it('exports the attribute keys __proto__ and constructor as ordinary attributes', async () => {
    await configure({ enabled: true, protocol: 'http/protobuf', endpoint: receiver.httpUrl })
    const traceId = hex(16)
    const now = String(BigInt(Date.now()) * 1_000_000n)
    const attributes = [{ key: '__proto__', value: { stringValue: 'p' } }, { key: 'constructor', value: { intValue: 1 } }]
    const link = new WebSocket(`${t.url}/otel`)
    await new Promise((resolve, reject) => link.once('open', resolve).once('error', reject))
    link.send(Buffer.concat([Buffer.from('OTLP'), Buffer.from(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: hex(8), name: 'tricky', startTimeUnixNano: now, endTimeUnixNano: now, attributes }] }] }] }))]))
    link.send(Buffer.concat([Buffer.from('LOGS'), Buffer.from(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId, spanId: hex(8), body: { stringValue: 'tricky' }, attributes }] }] }] }))]))
    await waitFor(() => receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId), 'receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId)', 10_000)
    for (const exported of [receiver.spans.find((s) => s.traceId === traceId)!.attributes, receiver.logs.find((l) => l.traceId === traceId)!.attributes]) {
      assert.ok(Object.hasOwn(exported, '__proto__'))
      assert.equal(exported['__proto__'], 'p')
      assert.equal(exported['constructor'], 1)
    }
    link.close()
  })

  it('exports with store: none, where the query functions answer STORAGE_DISABLED', async () => {
    await configure({ enabled: true, protocol: 'http/json', endpoint: receiver.httpUrl }, { store: 'none' })
    const { traceId } = await traffic()
    await waitFor(() => receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId), 'receiver.spans.some((s) => s.traceId === traceId) && receiver.logs.some((l) => l.traceId === traceId)', 10_000)
    await assert.rejects(t.engine.inject({ function_id: 'engine::logs::list', data: {} }), /STORAGE_DISABLED|disabled/)
  })

  it('turns off while a batch waits for its answer: everything held leaves before it is reported disabled, nothing after', async () => {
    await configure({ enabled: true, protocol: 'http/json', endpoint: receiver.httpUrl, signals: ['traces'] })
    const status = async (): Promise<unknown> => ((await t.engine.inject({ function_id: 'engine::health::check', data: {} })) as { components: { otlp_export: { status: unknown } } }).components.otlp_export.status
    const release = receiver.hold('http traces')
    try {
      // 1,100 finished spans: a batch leaves and waits for its answer, the others wait behind it.
      for (let i = 0; i < 1100; i++) t.engine.telemetry.startSpan({ name: `held ${i}`, kind: 'internal' })!.end('ok')
      await waitFor(() => receiver.held > 0, 'receiver.held > 0', 10_000)
      await t.engine.inject({ function_id: 'configuration::set', data: { id: 'svc-observability', value: { store: 'memory', otlp: { enabled: false } } } })
      await waitFor(async () => (await status()) !== 'healthy', "(await status()) !== 'healthy'", 10_000)
    } finally {
      release()
    }
    await waitFor(async () => (await status()) === 'disabled', "(await status()) === 'disabled'", 10_000)
    const seen = receiver.requests.length
    const held = receiver.spans.filter((s) => s.name.startsWith('held ')).length
    assert.equal(held, 1100, 'a planned change loses nothing the export held')
    await quietPeriod(1500, 'no OTLP request once the export is disabled (more than one export tick)')
    assert.deepEqual(receiver.requests.slice(seen), [], 'nothing leaves once the export is reported disabled')
  })

  it('turns off at runtime: nothing more leaves', async () => {
    await configure({ enabled: false })
    const seen = receiver.requests.length
    await traffic()
    await quietPeriod(1500, 'no OTLP request once the export is turned off (more than one export tick)')
    assert.equal(receiver.requests.length, seen)
  })
})

describe('OTLP settings', () => {
  it('fills what the block leaves out from OTEL_EXPORTER_OTLP_* and refuses bad values by key', () => {
    assert.deepEqual(resolveOtlpSettings(undefined, {}), { enabled: false, endpoint: 'http://localhost:4318', protocol: 'http/protobuf', headers: {}, signals: ['traces', 'metrics', 'logs'] })
    const env = { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317/', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s%20t,bad' }
    assert.deepEqual(resolveOtlpSettings({ enabled: true, headers: { team: 'a' } }, env), { enabled: true, endpoint: 'http://collector:4317', protocol: 'grpc', headers: { 'api-key': 's t', team: 'a' }, signals: ['traces', 'metrics', 'logs'] })
    assert.equal(resolveOtlpSettings({ protocol: 'http/json', endpoint: 'https://x.example/otlp' }, env).endpoint, 'https://x.example/otlp')
    assert.equal(resolveOtlpSettings({ protocol: 'grpc' }, {}).endpoint, 'http://localhost:4317')
    assert.throws(() => resolveOtlpSettings({ protocol: 'udp' }, {}), /^Error: otlp\.protocol must be/)
    assert.throws(() => resolveOtlpSettings({ endpoint: 'not a url' }, {}), /^Error: otlp\.endpoint must be a URL/)
    assert.throws(() => resolveOtlpSettings({ signals: ['traces', 'profiles'] }, {}), /^Error: otlp\.signals/)
    assert.throws(() => resolveOtlpSettings({ headers: { a: 1 } }, {}), /^Error: otlp\.headers\.a must be a string/)
  })
})
