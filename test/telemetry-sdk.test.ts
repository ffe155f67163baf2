/**
 * SDK telemetry against a real engine (sdk.md §12, protocol.md §10): the `/otel` socket connects
 * and its frames are accepted (the engine stores nothing yet and answers nothing), invocations
 * keep working, and `traceparent` crosses a nested call between two SDK workers.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { currentTraceId, flushOtel, getLogger, isOtelInitialized, otelSocketStats, withSpan } from 'svc-sdk/telemetry'
import { startTestEngine, type TestEngine } from './support/engine.ts'

async function until(pred: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25))
  assert.ok(pred(), `timed out waiting for ${what}`)
}

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
    await until(() => caller.getConnectionState() === 'connected' && callee.getConnectionState() === 'connected', 'connections')
  })
  after(async () => {
    await caller.shutdown()
    await callee.shutdown()
    assert.equal(isOtelInitialized(), false, 'the last client shuts telemetry down')
    await engine.stop()
  })

  it('opens /otel and the engine takes its frames without disturbing invocations', async () => {
    assert.equal(isOtelInitialized(), true, 'telemetry is on by default')
    await until(() => otelSocketStats()?.connected === true, 'the /otel socket')
    await withSpan('warm-up', {}, () => getLogger().info('hello'))
    await flushOtel()
    await until(() => (otelSocketStats()?.sent ?? 0) > 0, 'frames sent')
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
