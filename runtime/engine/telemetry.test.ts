/**
 * The telemetry hub's seams for built-ins (builtins.md §12.5, §12.7) on a running engine with the
 * observability worker attached: the `recording` pre-check, common delivery attributes with the
 * internal marking of §12.4, and metric sources read by `engine::metrics::list`.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../test/support/engine.ts'
import { waitFor } from '../../test/support/wait.ts'

const SAMPLED = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const UNSAMPLED = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00'

describe('TelemetryHub', () => {
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
  })
  after(() => t.stop())

  it('recording: a sink is attached and the parent, when valid, is sampled', () => {
    const hub = t.engine.telemetry
    assert.equal(hub.recording(), true)
    assert.equal(hub.recording(SAMPLED), true)
    assert.equal(hub.recording(UNSAMPLED), false)
    assert.equal(hub.recording('not a traceparent'), true, 'an invalid parent means a new trace')
    assert.equal(hub.startSpan({ name: 'x', kind: 'internal', parent: UNSAMPLED }), undefined)
  })

  it('a span recorded at its end: stored once finished; one still running is visible unfinished, then finished in place', async () => {
    const hub = t.engine.telemetry
    type Stored = { span_id: string; name: string; end_time_unix_nano: number | null; status: string; attributes: Record<string, unknown> }
    const stored = async (traceId: string): Promise<Stored[]> => {
      const tree = (await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<Stored & { children: Stored[] }> }
      const all: Stored[] = []
      const walk = (nodes: Array<Stored & { children?: Stored[] }>) => nodes.forEach((n) => (all.push(n), walk(n.children ?? [])))
      walk(tree.roots)
      return all
    }
    const short = hub.startSpan({ name: 'short', kind: 'producer', attributes: { a: 1 }, atEnd: true })!
    short.end('ok', undefined, { b: 2 })
    const [done] = await stored(short.record.trace_id)
    assert.deepEqual([done!.name, done!.status, done!.attributes], ['short', 'ok', { a: 1, b: 2 }])
    assert.equal(typeof done!.end_time_unix_nano, 'number')

    const long = hub.startSpan({ name: 'long', kind: 'consumer', attributes: { a: 1 }, atEnd: true })!
    const running = await waitFor(async () => (await stored(long.record.trace_id))[0], 'the running span to be visible')
    assert.deepEqual([running.span_id, running.end_time_unix_nano, running.status], [long.record.span_id, null, 'unset'])
    long.end('error', 'boom', { b: 2 })
    const finished = await stored(long.record.trace_id)
    assert.equal(finished.length, 1, 'one span, finished in place')
    assert.deepEqual([finished[0]!.status, finished[0]!.attributes], ['error', { a: 1, b: 2 }])
    assert.equal(typeof finished[0]!.end_time_unix_nano, 'number')
  })

  it('deliveryAttributes: common attributes, internal targets marked (§12.4)', () => {
    const hub = t.engine.telemetry
    assert.deepEqual(hub.deliveryAttributes('state::set', 'default', { worker: 'svc-state', triggerType: 'state', triggerId: 't1' }), {
      'svc.function.id': 'state::set',
      'svc.worker.name': 'svc-state',
      'svc.trigger.type': 'state',
      'svc.trigger.id': 't1',
    })
    assert.equal(hub.deliveryAttributes('engine::queue::enqueue', 'default', { worker: 'queue' })['svc.function.kind'], 'internal')
    assert.equal(hub.deliveryAttributes('queue::on-functions-change', 'default', { worker: 'queue' })['svc.function.kind'], 'internal', 'metadata internal: true')
    assert.equal(hub.deliveryAttributes('app::nowhere', 'default', { worker: 'queue' })['svc.function.kind'], undefined)
  })

  it('metric sources reach engine::metrics::list; a failing one is skipped; removal takes effect', async () => {
    const hub = t.engine.telemetry
    const removeBad = hub.addMetricSource(() => {
      throw new Error('broken source')
    })
    const removeSlow = hub.addMetricSource(async () => Promise.reject(new Error('broken async source')))
    const remove = hub.addMetricSource((now) => [{ name: 'test.gauge', type: 'gauge', unit: '1', points: [{ time_unix_nano: now, value: 42, attributes: { k: 'v' } }] }])
    try {
      const listed = (await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'test.gauge' } })) as { metrics: Array<{ name: string; points: Array<{ value: number; attributes: Record<string, unknown> }> }> }
      assert.equal(listed.metrics.length, 1)
      assert.deepEqual(listed.metrics[0]!.points.map((p) => [p.value, p.attributes]), [[42, { k: 'v' }]])
    } finally {
      remove()
      removeBad()
      removeSlow()
    }
    const gone = (await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'test.gauge' } })) as { metrics: unknown[] }
    assert.deepEqual(gone.metrics, [])
  })
})
