/**
 * The telemetry hub's seams for built-ins (builtins.md §12.5, §12.7) on a running engine with the
 * observability worker attached: the `recording` pre-check, common delivery attributes with the
 * internal marking of §12.4, and metric sources read by `engine::metrics::list`.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../test/support/engine.ts'
import { waitFor } from '../../test/support/wait.ts'
import fc from 'fast-check'
import { parseTraceparent } from './telemetry.ts'

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

describe('parseTraceparent', () => {
  /** The W3C grammar as a regular expression, any case (what the engine read before issue 20). */
  const reference = (value: string) => {
    if (value.length !== 55) return undefined
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value.toLowerCase())
    if (m === null || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined
    return { traceId: m[1]!, spanId: m[2]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 }
  }
  it('reads exactly what the W3C grammar allows, ids lower case, any case in (fast-check)', () => {
    const hexChar = fc.constantFrom(...'0123456789abcdefABCDEF0000')
    const anyChar = fc.oneof(hexChar, fc.constantFrom('-', 'g', 'G', ' ', '\u0130', '\u212a', '\uff21', '\u0000'))
    const part = (n: number) => fc.array(fc.oneof({ weight: 20, arbitrary: hexChar }, { weight: 1, arbitrary: anyChar }), { minLength: n, maxLength: n }).map((a) => a.join(''))
    const sep = fc.oneof({ weight: 20, arbitrary: fc.constant('-') }, { weight: 1, arbitrary: anyChar })
    const value = fc.oneof(
      fc.tuple(fc.oneof({ weight: 10, arbitrary: fc.constant('00') }, { weight: 1, arbitrary: part(2) }), sep, part(32), sep, part(16), sep, part(2)).map((p) => p.join('')),
      fc.string({ minLength: 53, maxLength: 57 }),
    )
    fc.assert(
      fc.property(value, (v) => {
        assert.deepEqual(parseTraceparent(v), reference(v))
        assert.deepEqual(parseTraceparent(v), reference(v), 'the same value again')
      }),
      { numRuns: 5000, examples: [['00-00000000000000000000000000000000-00f067aa0ba902b7-01'], ['00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-0F'], [SAMPLED], [UNSAMPLED]] },
    )
    assert.equal(parseTraceparent(undefined), undefined)
  })
})
