/**
 * Span, context and baggage helpers (sdk.md §12.2) with an in-memory tracer provider, and their
 * no-op behaviour before any provider is installed.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import {
  currentSpanId,
  currentSpanIsRecording,
  currentTraceId,
  extractBaggage,
  extractContext,
  getAllBaggage,
  getBaggageEntry,
  injectBaggage,
  injectTraceparent,
  Logger,
  recordSpanEvent,
  removeBaggageEntry,
  setBaggageEntry,
  setCurrentSpanAttribute,
  setCurrentSpanError,
  withSpan,
} from 'svc-helpers/observability'
import { nextTurn } from '../../../test/support/wait.ts'

describe('without a provider (telemetry off)', () => {
  it('helpers are no-ops and withSpan still runs the callback', async () => {
    assert.equal(currentTraceId(), undefined)
    assert.equal(currentSpanIsRecording(), false)
    assert.equal(await withSpan('x', {}, (span) => (span.isRecording() ? 'recording' : 'noop')), 'noop')
    recordSpanEvent('e')
    setCurrentSpanAttribute('k', 1)
    setCurrentSpanError('m')
    assert.equal(injectTraceparent(), undefined)
  })
  it('the Logger writes to the console', (t) => {
    const info = t.mock.method(console, 'info', () => {})
    new Logger().info('plain', { secret: 's', n: 1 })
    assert.deepEqual(info.mock.calls[0]?.arguments, ['plain', { secret: '[REDACTED]', n: 1 }])
  })
})

describe('with an in-memory provider', () => {
  const exporter = new InMemorySpanExporter()
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
  const manager = new AsyncLocalStorageContextManager()

  before(() => {
    context.setGlobalContextManager(manager.enable())
    trace.setGlobalTracerProvider(provider)
  })
  after(async () => {
    trace.disable()
    context.disable()
    await provider.shutdown()
  })

  it('withSpan sets OK, records events and attributes, exposes the ids', async () => {
    exporter.reset()
    const ids = await withSpan('work', { attributes: { a: 1 } }, async () => {
      await nextTurn() // the span stays current across an await
      recordSpanEvent('step', { n: 2 })
      setCurrentSpanAttribute('b', 'two')
      assert.equal(currentSpanIsRecording(), true)
      return { traceId: currentTraceId(), spanId: currentSpanId(), tp: injectTraceparent() }
    })
    const [span] = exporter.getFinishedSpans()
    assert.ok(span)
    assert.equal(span.name, 'work')
    assert.equal(span.status.code, SpanStatusCode.OK)
    assert.deepEqual(span.attributes, { a: 1, b: 'two' })
    assert.equal(span.events[0]?.name, 'step')
    assert.equal(ids.traceId, span.spanContext().traceId)
    assert.equal(ids.tp, `00-${ids.traceId}-${ids.spanId}-01`)
  })

  it('withSpan marks a throw as ERROR with the exception and rethrows; setCurrentSpanError sets ERROR', async () => {
    exporter.reset()
    await assert.rejects(withSpan('boom', {}, () => { throw new TypeError('bad input') }), TypeError)
    await withSpan('soft', {}, () => setCurrentSpanError('degraded'))
    const [boom, soft] = exporter.getFinishedSpans()
    assert.equal(boom?.status.code, SpanStatusCode.ERROR)
    assert.equal(boom?.status.message, 'bad input')
    assert.equal(boom?.attributes['error.type'], 'TypeError')
    assert.equal(boom?.events[0]?.name, 'exception')
    assert.deepEqual(soft?.status, { code: SpanStatusCode.ERROR, message: 'degraded' })
  })

  it('withSpan parents on a given traceparent', async () => {
    exporter.reset()
    await withSpan('child', { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, () => {})
    const [span] = exporter.getFinishedSpans()
    assert.equal(span?.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
    assert.equal(span?.parentSpanContext?.spanId, '00f067aa0ba902b7')
  })

  it('baggage: set, get, remove, list, inject and extract', () => {
    const withTenant = setBaggageEntry('tenant', 'acme')
    context.with(withTenant, () => {
      assert.equal(getBaggageEntry('tenant'), 'acme')
      const both = setBaggageEntry('user', 'u 1')
      context.with(both, () => {
        assert.deepEqual(getAllBaggage(), { tenant: 'acme', user: 'u 1' })
        assert.equal(injectBaggage(), 'tenant=acme,user=u%201')
        context.with(removeBaggageEntry('tenant'), () => assert.deepEqual(getAllBaggage(), { user: 'u 1' }))
      })
    })
    assert.equal(getBaggageEntry('tenant'), undefined, 'contexts are immutable')
    const ctx = extractBaggage('a=1, b=two;prop, broken')
    assert.equal(propagation.getBaggage(ctx)?.getEntry('b')?.value, 'two')
    const full = extractContext('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'k=v')
    assert.equal(trace.getSpanContext(full)?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
    assert.equal(propagation.getBaggage(full)?.getEntry('k')?.value, 'v')
  })
})
