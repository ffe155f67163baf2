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
    for (let i = 0; i < 100 && spans.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
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
})
