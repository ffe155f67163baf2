/**
 * How a function's run history reads `engine::invocations::list`
 * (packages/console/app/src/pages/functions/running.ts): rows of this function in this namespace
 * only, names and ids bounded, only a real trace id linked, just-cancelled ids left out, and any
 * JSON — a fleet's rows come from other engines, names from workers — read without throwing
 * (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { MAX_TEXT } from '../app/src/pages/fleet/fleet.ts'
import { MAX_INVOCATION_ID, readRunning, runningByFunction, runningTotal, wasCancelled } from '../app/src/pages/functions/running.ts'

const flight = (invocation_id: string, extra: Record<string, unknown> = {}) => ({
  invocation_id,
  function_id: 'jobs::long',
  namespace: 'default',
  worker: 'w-1',
  worker_name: 'jobs',
  caller: 'w-2',
  caller_name: 'checkout',
  started_at: 1_764_000_000_000,
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  ...extra,
})

describe('the run history reads engine::invocations::list defensively', () => {
  it('the function’s calls in its namespace, oldest first, with caller, worker and trace', () => {
    const view = readRunning({ invocations: [flight('a'), flight('b', { namespace: 'other' }), flight('c', { function_id: 'jobs::short' }), flight('d', { caller: null, caller_name: null, worker: null, worker_name: null, trace_id: null })], total: 4 }, 'jobs::long', 'default')
    assert.deepEqual(view, {
      rows: [
        { invocationId: 'a', startedAtMs: 1_764_000_000_000, caller: 'checkout', worker: 'jobs', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' },
        { invocationId: 'd', startedAtMs: 1_764_000_000_000, caller: 'engine', worker: null, traceId: null },
      ],
      more: 0,
    })
  })

  it('ids cancelled here are left out at once; calls beyond the read are counted', () => {
    const view = readRunning({ invocations: [flight('a'), flight('b')], total: 7 }, 'jobs::long', 'default', new Set(['a']))
    assert.deepEqual(view.rows.map((r) => r.invocationId), ['b'])
    assert.equal(view.more, 5)
  })

  it('hostile rows: long names cut, a bad trace id not linked, unusable ids and non-objects left out', () => {
    const view = readRunning(
      {
        invocations: [
          flight('x', { caller_name: 'c'.repeat(5000), worker_name: '<img src=x onerror=alert(1)>', trace_id: 'javascript:alert(1)//000000000000000', started_at: 'yesterday' }),
          flight('i'.repeat(MAX_INVOCATION_ID + 1)),
          flight(''),
          { ...flight('y'), invocation_id: 42 },
          null,
          'z',
          [flight('w')],
        ],
        total: -3,
      },
      'jobs::long',
      'default',
    )
    assert.equal(view.rows.length, 1)
    const [row] = view.rows
    assert.equal(row!.caller, `${'c'.repeat(MAX_TEXT)}…`)
    assert.equal(row!.worker, '<img src=x onerror=alert(1)>', 'text, escaped by React')
    assert.equal(row!.traceId, null)
    assert.equal(row!.startedAtMs, null)
    assert.equal(view.more, 0)
  })

  it('anything that is not a listing gives no rows and a zero count', () => {
    for (const junk of [undefined, null, 'busy', 42, [], {}, { invocations: 'all' }, { invocations: {} }]) {
      assert.deepEqual(readRunning(junk, 'jobs::long', 'default'), { rows: [], more: 0 }, JSON.stringify(junk))
      assert.equal(runningTotal(junk), 0)
    }
    assert.equal(runningTotal({ invocations: [], total: 3 }), 3)
    assert.equal(runningTotal({ invocations: [], total: 1e300 }), 0)
  })

  it('fast-check: any JSON reads into bounded rows of this function without throwing', () => {
    const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme', maxLength: 400 }), fc.constantFrom('jobs::long', 'default', '\u202e', '\u0000', ''))
    const item = fc.oneof(
      fc.record(
        {
          invocation_id: fc.oneof(text, fc.integer()),
          function_id: fc.constantFrom('jobs::long', 'jobs::short', 7, null),
          namespace: fc.oneof(fc.constantFrom('default', 'other'), fc.anything()),
          worker: fc.anything(),
          worker_name: fc.oneof(text, fc.anything()),
          caller: fc.anything(),
          caller_name: fc.oneof(text, fc.anything()),
          started_at: fc.oneof(fc.double(), fc.integer(), fc.anything()),
          trace_id: fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), text, fc.anything()),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    )
    const answer = fc.oneof(fc.record({ invocations: fc.array(item, { maxLength: 30 }), total: fc.oneof(fc.integer(), fc.double(), fc.anything()) }, { requiredKeys: [] }), fc.anything())
    fc.assert(
      fc.property(answer, fc.array(fc.string(), { maxLength: 5 }), (value, hidden) => {
        const view = readRunning(value, 'jobs::long', 'default', new Set(hidden))
        assert.ok(Number.isInteger(view.more) && view.more >= 0)
        for (const row of view.rows) {
          assert.ok(typeof row.invocationId === 'string' && row.invocationId !== '' && row.invocationId.length <= MAX_INVOCATION_ID)
          assert.ok(!hidden.includes(row.invocationId))
          assert.ok([...row.caller].length <= MAX_TEXT + 1 && row.caller !== '')
          assert.ok(row.worker === null || [...row.worker].length <= MAX_TEXT + 1)
          assert.ok(row.traceId === null || /^[0-9a-f]{32}$/.test(row.traceId))
          assert.ok(row.startedAtMs === null || Number.isFinite(row.startedAtMs))
        }
        const total = runningTotal(value)
        assert.ok(Number.isSafeInteger(total) && total >= 0)
        let counted = 0
        for (const n of runningByFunction(value).values()) counted += n
        assert.ok(counted <= (Array.isArray((value as { invocations?: unknown } | null)?.invocations) ? (value as { invocations: unknown[] }).invocations.length : 0))
      }),
      { numRuns: 500 },
    )
  })

  it('the Functions page counts calls per namespace and function', () => {
    const counts = runningByFunction({ invocations: [flight('a'), flight('b'), flight('c', { namespace: 'other' }), flight('d', { function_id: 7 }), null], total: 5 })
    assert.deepEqual([...counts], [['default/jobs::long', 2], ['other/jobs::long', 1]])
  })

  it('a finished run is shown as cancelled when it ended with the catalogue’s cancelled code, whatever its message', () => {
    assert.equal(wasCancelled({ status: 'error', error_code: 'cancelled' }), true)
    assert.equal(wasCancelled({ status: 'error', error_code: 'PRINTER_EMPTY', status_message: 'Invocation cancelled: out of paper' } as { status: string; error_code: string }), false)
    assert.equal(wasCancelled({ status: 'error', error_code: 'Cancelled' }), false)
    assert.equal(wasCancelled({ status: 'ok', error_code: 'cancelled' }), false)
    assert.equal(wasCancelled({ status: 'error', error_code: null }), false)
    assert.equal(wasCancelled({ status: 'error' }), false)
    // Whatever a run's fields hold (a worker's spans are not trusted), only the exact code counts.
    fc.assert(
      fc.property(fc.oneof(fc.constantFrom('ok', 'error', 'unset'), fc.string()), fc.oneof(fc.constantFrom('cancelled', 'CANCELLED', 'cancelled ', null), fc.string(), fc.jsonValue()), fc.string(), (status, code, message) => {
        const run = { status, error_code: code, status_message: message } as { status: string; error_code: string | null }
        assert.equal(wasCancelled(run), status === 'error' && code === 'cancelled')
      }),
      { numRuns: 300 },
    )
  })
})
