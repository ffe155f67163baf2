/**
 * Telemetry over the `/otel` socket (sdk.md §12, protocol.md §10.2) against a test receiver: a
 * `ws` server on a free port that records the binary frames.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { WebSocketServer } from 'ws'
import {
  currentTraceId,
  executeTracedRequest,
  flushOtel,
  getLogger,
  initOtel,
  otelSocketStats,
  resolveOtelConfig,
  shutdownOtel,
  withSpan,
} from 'svc-helpers/observability'
import { waitFor } from '../../../test/support/wait.ts'

interface Frame {
  prefix: string
  body: Record<string, unknown>
}

describe('initOtel over a /otel receiver', () => {
  const frames: Frame[] = []
  const paths: string[] = []
  let wss: WebSocketServer
  let port = 0
  const http = createServer((req, res) => {
    res.statusCode = req.url === '/missing' ? 404 : 200
    res.end(JSON.stringify({ traceparent: req.headers['traceparent'] ?? null }))
  })
  let httpPort = 0

  before(async () => {
    wss = new WebSocketServer({ port: 0 })
    await new Promise((resolve) => wss.once('listening', resolve))
    port = (wss.address() as AddressInfo).port
    wss.on('connection', (ws, req) => {
      paths.push(req.url ?? '')
      ws.on('message', (data: Buffer, isBinary) => {
        assert.ok(isBinary, 'telemetry frames are binary')
        frames.push({ prefix: data.subarray(0, 4).toString('ascii'), body: JSON.parse(data.subarray(4).toString('utf8')) as Record<string, unknown> })
      })
    })
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    httpPort = (http.address() as AddressInfo).port
    assert.equal(initOtel({ engineWsUrl: `ws://127.0.0.1:${port}/?token=t`, serviceName: 'otel-test', metricsEnabled: false }), true)
    assert.equal(initOtel({}), false, 'idempotent')
  })
  after(async () => {
    await shutdownOtel()
    wss.close()
    http.close()
  })


  it('sends spans as OTLP frames and logs as LOGS frames with the trace id', async () => {
    let traceId: string | undefined
    await withSpan('unit-of-work', {}, async () => {
      traceId = currentTraceId()
      getLogger().info('hello', { password: 'x', n: 1 })
    })
    assert.match(traceId ?? '', /^[0-9a-f]{32}$/)
    await flushOtel()
    await waitFor(() => frames.some((f) => f.prefix === 'OTLP') && frames.some((f) => f.prefix === 'LOGS'), 'an OTLP and a LOGS frame', 5000, 50)
    assert.equal(paths[0], '/otel?token=t')
    const spans = frames.filter((f) => f.prefix === 'OTLP').flatMap((f) => (f.body['resourceSpans'] as any[]).flatMap((r) => r.scopeSpans.flatMap((s: any) => s.spans)))
    const span = spans.find((s) => s.name === 'unit-of-work')
    assert.equal(span.traceId, traceId)
    const resource = (frames.find((f) => f.prefix === 'OTLP')!.body['resourceSpans'] as any[])[0].resource
    assert.ok(resource.attributes.some((a: any) => a.key === 'service.name' && a.value.stringValue === 'otel-test'))
    const records = frames.filter((f) => f.prefix === 'LOGS').flatMap((f) => (f.body['resourceLogs'] as any[]).flatMap((r) => r.scopeLogs.flatMap((s: any) => s.logRecords)))
    const record = records.find((r) => r.body.stringValue === 'hello')
    assert.equal(record.severityNumber, 9)
    const attrs = Object.fromEntries(record.attributes.map((a: any) => [a.key, a.value]))
    assert.equal(attrs['trace_id'].stringValue, traceId)
    assert.ok(JSON.stringify(attrs['log.data']).includes('[REDACTED]'))
  })

  it('traces fetch calls: traceparent injected, status >= 400 marks the span ERROR', async () => {
    frames.length = 0
    const ok = await fetch(`http://127.0.0.1:${httpPort}/ok`)
    assert.match(((await ok.json()) as { traceparent: string }).traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    const missing = await executeTracedRequest(`http://127.0.0.1:${httpPort}/missing`, { method: 'post' })
    assert.equal(missing.status, 404)
    await assert.rejects(fetch('http://127.0.0.1:1/refused'))
    await flushOtel()
    await waitFor(() => frames.some((f) => f.prefix === 'OTLP' && JSON.stringify(f.body).includes('POST /missing')), 'the span of POST /missing', 5000, 50)
    const spans = frames.filter((f) => f.prefix === 'OTLP').flatMap((f) => (f.body['resourceSpans'] as any[]).flatMap((r) => r.scopeSpans.flatMap((s: any) => s.spans)))
    const byName = new Map(spans.map((s) => [s.name, s]))
    assert.equal(byName.get('GET /ok').status.code ?? 0, 0)
    assert.equal(byName.get('POST /missing').status.code, 2)
    assert.equal(byName.get('GET /refused').status.code, 2)
    assert.equal(byName.get('GET /ok').kind, 3, 'CLIENT')
  })

  it('counts no drops while connected', () => {
    assert.equal(otelSocketStats()?.dropped, 0)
  })
})

describe('resolveOtelConfig', () => {
  it('applies env over defaults and explicit fields over env (sdk.md §12.1)', () => {
    const env = { OTEL_ENABLED: 'off', OTEL_SERVICE_NAME: 'svc-a', OTEL_LOGS_BATCH_SIZE: '5', OTEL_SPANS_FLUSH_INTERVAL_MS: '250', SVC_URL: 'ws://h:1' }
    const r = resolveOtelConfig({}, env)
    assert.equal(r.enabled, false)
    assert.equal(r.serviceName, 'svc-a')
    assert.equal(r.logsBatchSize, 5)
    assert.equal(r.spansFlushIntervalMs, 250)
    assert.equal(r.engineWsUrl, 'ws://h:1')
    // SVC_URL may list several engines (issue 19 §3): telemetry goes to the first.
    assert.equal(resolveOtelConfig({}, { SVC_URL: ' ws://a:1/?token=t , ws://b:2' }).engineWsUrl, 'ws://a:1/?token=t')
    assert.equal(resolveOtelConfig({ engineWsUrl: 'ws://c:3' }, { SVC_URL: 'ws://a:1,ws://b:2' }).engineWsUrl, 'ws://c:3')
    assert.equal(resolveOtelConfig({ enabled: true, serviceName: 'x' }, env).enabled, true)
    const d = resolveOtelConfig({}, {})
    assert.deepEqual([d.enabled, d.serviceName, d.serviceVersion, d.logsBatchSize, d.logsFlushIntervalMs, d.metricsExportIntervalMs], [true, 'svc-node', 'unknown', 1, 100, 60000])
  })
})

describe('instrumentations given to initOtel', () => {
  it('get the SDK tracer and meter providers themselves (built at once for them), and spans they start are exported', async () => {
    const { TracerProvider } = await import('@opentelemetry/sdk-trace')
    const { MeterProvider } = await import('@opentelemetry/sdk-metrics')
    const frames: string[] = []
    const connector = (): import('svc-protocol/transport').Transport => ({
      send: () => {},
      sendBinary: (data) => void frames.push(Buffer.from(data).toString('utf8')),
      bufferedAmount: 0,
      isOpen: true,
      close: () => {},
      terminate: () => {},
      ping: () => {},
      setHandlers: (h) => queueMicrotask(() => h.open?.()),
    })
    const got: { tracer?: unknown; meter?: unknown; enabled?: boolean } = {}
    const instrumentation = {
      setTracerProvider: (p: unknown) => (got.tracer = p),
      setMeterProvider: (p: unknown) => (got.meter = p),
      enable: () => (got.enabled = true),
    }
    assert.equal(initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector, fetchInstrumentationEnabled: false, instrumentations: [instrumentation] }), true)
    try {
      assert.ok(got.tracer instanceof TracerProvider, 'the SDK tracer provider')
      assert.ok(got.meter instanceof MeterProvider, 'the SDK meter provider')
      assert.equal(got.enabled, true)
      await new Promise((r) => setImmediate(r))
      ;(got.tracer as InstanceType<typeof TracerProvider>).getTracer('instr').startSpan('from an instrumentation').end()
      await flushOtel()
      assert.ok(frames.some((f) => f.startsWith('OTLP') && f.includes('"from an instrumentation"') && f.includes('{"name":"instr"}')))
    } finally {
      await shutdownOtel()
    }
  })
})

describe('initOtel without an address, SVC_URL a list of engines (issue 19 §3)', () => {
  it('connects the telemetry socket to the first engine of the list', async (t) => {
    const seen: Array<{ engine: 'a' | 'b'; path: string; spans: string[] }> = []
    const servers = await Promise.all(
      (['a', 'b'] as const).map(async (engine) => {
        const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
        await new Promise((resolve) => wss.once('listening', resolve))
        wss.on('connection', (ws, req) => {
          const connection = { engine, path: req.url ?? '', spans: [] as string[] }
          seen.push(connection)
          ws.on('message', (data: Buffer) => {
            if (data.subarray(0, 4).toString('ascii') !== 'OTLP') return
            const body = JSON.parse(data.subarray(4).toString('utf8')) as { resourceSpans: any[] }
            for (const r of body.resourceSpans) for (const s of r.scopeSpans) for (const span of s.spans) connection.spans.push(span.name)
          })
        })
        return wss
      }),
    )
    t.after(() => {
      for (const wss of servers) {
        for (const ws of wss.clients) ws.terminate()
        wss.close()
      }
    })
    const [a, b] = servers.map((wss) => `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`)
    // A process of its own: initOtel is once per process, and this one's is taken above.
    const script = [
      "import { initOtel, withSpan, flushOtel } from 'svc-helpers/observability'",
      "if (!initOtel({ serviceName: 'otel-list', metricsEnabled: false, fetchInstrumentationEnabled: false })) throw new Error('not initialised')",
      "await withSpan('to-the-first-engine', {}, async () => {})",
      'await flushOtel()',
      'setInterval(() => {}, 1000)',
    ].join('\n')
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, SVC_URL: `${a}, ${b}`, OTEL_ENABLED: 'true' },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    t.after(async () => {
      child.kill('SIGKILL')
      await exited
    })
    await waitFor(() => {
      assert.ok(child.exitCode === null, `the process exited: ${stderr}`)
      return seen.some((c) => c.spans.includes('to-the-first-engine'))
    }, () => `a span at an engine: ${JSON.stringify(seen)} ${stderr}`, 60_000, 100)
    assert.deepEqual(seen.map((c) => [c.engine, c.path]), [['a', '/otel']])
  })
})
