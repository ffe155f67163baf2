/**
 * SDK telemetry against a real engine (sdk.md §12, protocol.md §10): the `/otel` socket connects
 * and its frames are accepted, invocations keep working, `traceparent` crosses a nested call
 * between two SDK workers; telemetry is on by default and the handler spans reach the
 * observability store (`engine::traces::list`), and `OTEL_ENABLED=false` / `otel.enabled: false`
 * turn it off.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { currentTraceId, flushOtel, getLogger, isOtelInitialized, otelSocketStats, withSpan } from 'svc-sdk/telemetry'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

describe('SDK telemetry with a real engine', () => {
  let engine: TestEngine
  let caller: SvcClient
  let callee: SvcClient

  before(async () => {
    engine = await startTestEngine({ builtins: [] })
    callee = registerWorker(engine.url, { workerName: 'callee', otel: { enabled: true, metricsExportIntervalMs: 200 } })
    caller = registerWorker(engine.url, { workerName: 'caller', otel: { enabled: true } })
    callee.registerFunction('tele::inner', () => ({ traceId: currentTraceId() ?? null }))
    caller.registerFunction('tele::outer', async () => {
      getLogger().info('outer running', { api_key: 'k' })
      const inner = await caller.trigger<unknown, { traceId: string | null }>({ function_id: 'tele::inner', payload: {} })
      return { traceId: currentTraceId() ?? null, inner: inner.traceId }
    })
    await waitFor(() => caller.getConnectionState() === 'connected' && callee.getConnectionState() === 'connected', 'connections')
  })
  after(async () => {
    await caller.shutdown()
    await callee.shutdown()
    assert.equal(isOtelInitialized(), false, 'the last client shuts telemetry down')
    await engine.stop()
  })

  it('opens /otel and the engine takes its frames without disturbing invocations', async () => {
    assert.equal(isOtelInitialized(), true, 'telemetry is on by default')
    await waitFor(() => otelSocketStats()?.connected === true, 'the /otel socket')
    await withSpan('warm-up', {}, () => getLogger().info('hello'))
    await flushOtel()
    await waitFor(() => (otelSocketStats()?.sent ?? 0) > 0, 'frames sent')
    assert.equal(otelSocketStats()?.dropped, 0)
    assert.equal(otelSocketStats()?.connected, true, 'the engine keeps the socket open')
  })

  it('propagates the trace across caller → engine → worker → nested call → worker', async () => {
    let rootTrace: string | undefined
    const result = await withSpan('test-root', {}, async () => {
      rootTrace = currentTraceId()
      return caller.trigger<unknown, { traceId: string | null; inner: string | null }>({ function_id: 'tele::outer', payload: {} })
    })
    assert.match(rootTrace ?? '', /^[0-9a-f]{32}$/)
    assert.equal(result.traceId, rootTrace, 'the handler span is parented on the inbound traceparent')
    assert.equal(result.inner, rootTrace, 'the nested call carries the trace on')
  })

  it('an invocation without a caller span starts a new trace in the handler', async () => {
    const result = await caller.trigger<unknown, { traceId: string | null }>({ function_id: 'tele::inner', payload: {} })
    assert.match(result.traceId ?? '', /^[0-9a-f]{32}$/)
  })
})

interface TraceSummary {
  trace_id: string
  span_id: string
  name: string
  span_count: number
  service_name: string
  attributes: Record<string, unknown>
  events: Array<{ name: string; attributes: Record<string, unknown> }>
}
interface SpanNode extends TraceSummary {
  parent_span_id: string | null
  children: SpanNode[]
}

describe('SDK telemetry is on by default (sdk.md §12.1), spans reach the engine store', () => {
  let engine: TestEngine
  const saved = process.env.OTEL_ENABLED

  before(async () => {
    delete process.env.OTEL_ENABLED
    engine = await startTestEngine()
  })
  after(async () => {
    if (saved === undefined) delete process.env.OTEL_ENABLED
    else process.env.OTEL_ENABLED = saved
    await engine.stop()
  })

  const traces = async (name: string): Promise<TraceSummary[]> =>
    ((await engine.engine.inject({ function_id: 'engine::traces::list', data: { name } })) as { traces: TraceSummary[] }).traces

  async function connectedAll(...clients: SvcClient[]): Promise<void> {
    await waitFor(() => clients.every((c) => c.getConnectionState() === 'connected'), 'connections')
  }

  it('a registerWorker without otel options records handler spans that engine::traces::list returns', async () => {
    const callee = registerWorker(engine.url, { workerName: 'default-callee' })
    const caller = registerWorker(engine.url, { workerName: 'default-caller' })
    try {
      assert.equal(isOtelInitialized(), true, 'registerWorker turned telemetry on')
      callee.registerFunction('deftel::inner', (data) => ({ echoed: data }))
      caller.registerFunction('deftel::outer', (data) => caller.trigger({ function_id: 'deftel::inner', payload: data }))
      await connectedAll(caller, callee)
      const out = await caller.trigger({ function_id: 'deftel::outer', payload: { n: 1, password: 'p' } })
      assert.deepEqual(out, { echoed: { n: 1, password: 'p' } }, 'the payload itself is untouched')
      await flushOtel()
      const root = await waitFor(async () => (await traces('execute deftel::outer')).find((t) => t.span_count === 2), 'both handler spans in one trace')
      assert.equal(root.name, 'execute deftel::outer')
      assert.equal(root.service_name, 'svc-node')
      assert.equal(root.attributes['svc.function.id'], 'deftel::outer')
      const input = root.events.find((e) => e.name === 'svc.invocation.input')
      assert.deepEqual(JSON.parse(String(input?.attributes['svc.payload.json'])), { n: 1, password: '[REDACTED]' })
      assert.equal(input?.attributes['svc.payload.ok'], true)
      const tree = (await engine.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: root.trace_id } })) as { roots: SpanNode[] }
      assert.equal(tree.roots.length, 1)
      const inner = tree.roots[0]!.children.find((c) => c.name === 'execute deftel::inner')
      assert.ok(inner, 'the nested call is a child of the outer handler span')
      assert.equal(inner.parent_span_id, root.span_id)
      const output = inner.events.find((e) => e.name === 'svc.invocation.output')
      assert.deepEqual(JSON.parse(String(output?.attributes['svc.payload.json'])), { echoed: { n: 1, password: '[REDACTED]' } })
    } finally {
      await caller.shutdown()
      await callee.shutdown()
    }
    assert.equal(isOtelInitialized(), false, 'the last client shut telemetry down')
  })

  for (const [label, env, options] of [
    ['OTEL_ENABLED=false', 'false', {}],
    ['otel: { enabled: false }', undefined, { otel: { enabled: false } }],
  ] as const) {
    it(`${label}: no telemetry socket and no spans`, async () => {
      if (env !== undefined) process.env.OTEL_ENABLED = env
      const client = registerWorker(engine.url, { workerName: 'telemetry-off', ...options })
      delete process.env.OTEL_ENABLED
      try {
        assert.equal(isOtelInitialized(), false)
        assert.equal(otelSocketStats(), undefined, 'no /otel socket')
        client.registerFunction('offtel::fn', (data) => data)
        await connectedAll(client)
        assert.deepEqual(await client.trigger({ function_id: 'offtel::fn', payload: { x: 1 } }), { x: 1 })
        // Nothing in this process can send spans: telemetry was never initialised.
        assert.equal(isOtelInitialized(), false)
        assert.deepEqual(await traces('offtel'), [])
      } finally {
        await client.shutdown()
      }
    })
  }

  it('a client with otel.enabled=false records no spans even when another client of the process turned telemetry on', async () => {
    const on = registerWorker(engine.url, { workerName: 'telemetry-on' })
    const off = registerWorker(engine.url, { workerName: 'telemetry-off', otel: { enabled: false } })
    try {
      assert.equal(isOtelInitialized(), true)
      on.registerFunction('mixtel::on', () => 'on')
      off.registerFunction('mixtel::off', () => 'off')
      await connectedAll(on, off)
      assert.equal(await on.trigger({ function_id: 'mixtel::off', payload: {} }), 'off')
      assert.equal(await on.trigger({ function_id: 'mixtel::on', payload: {} }), 'on')
      await flushOtel()
      await waitFor(async () => ((await traces('execute mixtel::on')).length > 0 ? true : undefined), 'the span of mixtel::on')
      // mixtel::off ended first and would have left on the same socket no later than mixtel::on.
      assert.deepEqual(await traces('mixtel::off'), [])
    } finally {
      await off.shutdown()
      await on.shutdown()
    }
    assert.equal(isOtelInitialized(), false)
  })
})
