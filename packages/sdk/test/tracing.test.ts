/**
 * Handler spans (sdk.md §12.3, protocol.md §10.1) exported to a test `/otel` receiver: parent,
 * name, kind, payload events with redaction, ERROR status for a failed handler.
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { WebSocketServer } from 'ws'
import { flushOtel, initOtel, shutdownOtel } from 'svc-sdk/telemetry'
import { endInvocationSpan, startInvocationSpan } from '../src/tracing.ts'
import { makeClient } from './support/client.ts'
import { EnginePeer } from './support/peer.ts'
import { waitFor } from '../../../test/support/wait.ts'

describe('invocation spans', () => {
  const spans: any[] = []
  let wss: WebSocketServer

  before(async () => {
    wss = new WebSocketServer({ port: 0 })
    await new Promise((resolve) => wss.once('listening', resolve))
    wss.on('connection', (ws) =>
      ws.on('message', (data: Buffer) => {
        if (data.subarray(0, 4).toString() !== 'OTLP') return
        const body = JSON.parse(data.subarray(4).toString()) as { resourceSpans: any[] }
        for (const r of body.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans)
      }),
    )
    initOtel({ engineWsUrl: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, metricsEnabled: false, fetchInstrumentationEnabled: false })
  })
  after(async () => {
    await shutdownOtel()
    wss.close()
  })

  it('parents on the inbound traceparent, records redacted payload events and returns the span context', async () => {
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const s = startInvocationSpan('orders::create', { item: 1, password: 'p' }, parent, 'tenant=acme')
    assert.ok(s)
    const headers = endInvocationSpan(s, { ok: true }, undefined)
    assert.match(headers.traceparent ?? '', /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/)
    assert.equal(headers.baggage, 'tenant=acme')
    const failed = startInvocationSpan('orders::fail', null, parent)
    assert.ok(failed)
    endInvocationSpan(failed, undefined, { code: 'out_of_stock', message: 'none left' })
    await flushOtel()
    await waitFor(() => spans.length >= 2, 'both spans exported')
    const ok = spans.find((x) => x.name === 'execute orders::create')
    assert.equal(ok.traceId, '0af7651916cd43dd8448eb211c80319c')
    assert.equal(ok.parentSpanId, 'b7ad6b7169203331')
    assert.equal(ok.kind, 1, 'INTERNAL')
    const input = ok.events.find((e: any) => e.name === 'svc.invocation.input')
    const json = input.attributes.find((a: any) => a.key === 'svc.payload.json').value.stringValue
    assert.deepEqual(JSON.parse(json), { item: 1, password: '[REDACTED]' })
    assert.ok(ok.events.some((e: any) => e.name === 'svc.invocation.output'))
    assert.ok(ok.attributes.some((a: any) => a.key === 'tenant' && a.value.stringValue === 'acme'), 'baggage copied onto the span')
    const bad = spans.find((x) => x.name === 'execute orders::fail')
    assert.equal(bad.status.code, 2)
    assert.equal(bad.status.message, 'none left')
  })

  it('a result that cannot be sent ends the handler span as the failure the caller gets; the result carries the span context', async (t) => {
    const peer = await EnginePeer.start()
    t.after(() => peer.close())
    const { client } = makeClient(t, peer.url)
    const conn = await peer.connection(0)
    await waitFor(() => client.getConnectionState() === 'connected', 'connected', 5000, 5)
    client.registerFunction('bad::result', () => ({ n: 10n }))
    conn.send({ type: 'invokefunction', invocation_id: 'x', function_id: 'bad::result', data: null, baggage: 'constructor=c' })
    const answer = await conn.waitFor((f) => f.type === 'invocationresult' && f.invocation_id === 'x')
    assert.equal(answer.error.code, 'invocation_failed')
    assert.match(answer.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    assert.equal(answer.baggage, 'constructor=c', 'the inbound baggage comes back unchanged')
    await flushOtel()
    await waitFor(() => spans.some((x) => x.name === 'execute bad::result'), 'the span', 5000, 5)
    const span = spans.find((x) => x.name === 'execute bad::result')
    assert.equal(span.spanId, answer.traceparent.split('-')[2])
    assert.equal(span.status.code, 2)
    assert.match(span.status.message, /not JSON-serialisable/)
    const attributes = Object.fromEntries(span.attributes.map((a: any) => [a.key, a.value.stringValue]))
    assert.equal(attributes['constructor'], 'c', 'a baggage key named like an Object property is copied too')
  })
})
