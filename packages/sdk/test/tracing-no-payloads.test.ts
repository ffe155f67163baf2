/**
 * Handler spans with `SVC_DISABLE_TRACE_PAYLOADS=1` (protocol.md §10.1, sdk.md §12.3): the span is
 * still exported and ended, with its status, attributes and exception event, and no payload
 * event. The setting is read once per process, so this file sets it before any span starts (node
 * --test runs each file in a process of its own).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Transport, TransportHandlers } from 'svc-protocol/transport'
import { flushOtel, initOtel, shutdownOtel } from 'svc-sdk/telemetry'
import { endInvocationSpan, startInvocationSpan } from '../src/tracing.ts'

process.env['SVC_DISABLE_TRACE_PAYLOADS'] = '1'

describe('invocation spans without payload events', () => {
  const spans: any[] = []
  before(async () => {
    const connector = (): Transport => ({
      send: () => {},
      sendBinary: (data) => {
        const text = Buffer.from(data).toString('utf8')
        if (!text.startsWith('OTLP')) return
        for (const r of JSON.parse(text.slice(4)).resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans)
      },
      bufferedAmount: 0,
      isOpen: true,
      close: () => {},
      terminate: () => {},
      ping: () => {},
      setHandlers: (h: TransportHandlers) => queueMicrotask(() => h.open?.()),
    })
    assert.equal(initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector, metricsEnabled: false, fetchInstrumentationEnabled: false }), true)
    await new Promise((resolve) => setImmediate(resolve))
  })
  after(async () => {
    await shutdownOtel()
  })

  it('ends and exports the span with its outcome, without svc.invocation.input/output', async () => {
    const ok = startInvocationSpan('orders::create', { password: 'p' })!
    endInvocationSpan(ok, { done: true }, undefined, '{"done":true}')
    const failed = startInvocationSpan('orders::fail', null)!
    endInvocationSpan(failed, undefined, { code: 'out_of_stock', message: 'none left' })
    await flushOtel()
    assert.equal(spans.length, 2)
    const [a, b] = spans
    assert.equal(a.name, 'execute orders::create')
    assert.deepEqual(a.status, { code: 1 })
    assert.equal(a.events, undefined, 'no payload events')
    assert.ok(BigInt(a.endTimeUnixNano) >= BigInt(a.startTimeUnixNano))
    assert.equal(b.name, 'execute orders::fail')
    assert.deepEqual(b.status, { code: 2, message: 'none left' })
    assert.deepEqual(b.events.map((e: any) => e.name), ['exception'])
  })
})
