/**
 * Run history and re-runs through the console backend (issue 21 "In the console"): a real engine,
 * an svc-sdk worker with telemetry on, and the console's HTTP API. A run shows with its status,
 * caller and payloads in `engine::runs::list`; `POST /api/rerun` with an edited payload makes a new
 * run whose result reflects the edit and that names the old trace (`svc.rerun_of`); the endpoint
 * refuses hostile bodies (fast-check) and keeps the console's access rules.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { flushOtel, otelSocketStats } from 'svc-sdk/telemetry'
import { startConsole, type RunningConsole } from 'svc-console'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { waitFor } from '../../../test/support/wait.ts'

interface Run {
  trace_id: string
  span_id: string
  status: string
  status_message?: string
  caller: string | null
  input: { json: string; truncated: boolean } | null
  output: { json: string; truncated: boolean } | null
  rerun_of: string | null
  started_at_ms: number
  duration_ms: number | null
}

describe('run history and re-run (issue 21, the console)', () => {
  let t: TestEngine
  let worker: SvcClient
  let server: RunningConsole

  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> => {
    const res = await fetch(server.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}`, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
  }
  const runs = async (data: Record<string, unknown>): Promise<{ runs: Run[]; total: number }> => {
    const reply = await post('/api/invoke', { function_id: 'engine::runs::list', payload: data, trace: false })
    assert.equal(reply.body.ok, true, JSON.stringify(reply.body))
    return reply.body.result
  }
  /** Waits until `function_id` has `count` stored runs (handler spans arrive in batches). */
  const runsOf = async (functionId: string, count: number): Promise<Run[]> => {
    let list: Run[] = []
    await flushOtel()
    await waitFor(async () => (list = (await runs({ function_id: functionId })).runs).length >= count, '(list = (await runs({ function_id: functionId })).runs).length >= count', 10_000).catch(() => {
      throw new Error(`expected ${count} runs of ${functionId}, got ${JSON.stringify(list).slice(0, 400)}`)
    })
    return list
  }

  before(async () => {
    t = await startTestEngine()
    worker = registerWorker(t.url, { workerName: 'shop', otel: { enabled: true, serviceName: 'shop', fetchInstrumentationEnabled: false, metricsEnabled: false } })
    worker.registerFunction('shop::price', ({ qty }: { qty: number }) => {
      if (qty < 0) throw Object.assign(new Error('qty must not be negative'), { code: 'BAD_QTY' })
      return { total: qty * 3 }
    })
    worker.registerFunction('shop::checkout', async ({ qty }: { qty: number }) => worker.trigger({ function_id: 'shop::price', payload: { qty } }))
    worker.registerFunction('shop::big', () => ({ blob: 'é'.repeat(5000) }))
    await waitFor(() => worker.getConnectionState() === 'connected' && otelSocketStats()?.connected === true, "worker.getConnectionState() === 'connected' && otelSocketStats()?.connected === true", 10_000)
    server = await startConsole({ port: 0, engineUrl: t.url, reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    await waitFor(() => server.connected, 'server.connected', 10_000)
  })

  after(async () => {
    await server?.close()
    await worker?.shutdown()
    await t?.stop()
  })

  it('engine::runs::list: a function’s runs newest first, with status, caller, payloads and the error of a failed run', async () => {
    await worker.trigger({ function_id: 'shop::checkout', payload: { qty: 2 } })
    await post('/api/invoke', { function_id: 'shop::price', payload: { qty: -1 } })
    const list = await runsOf('shop::price', 2)
    const [failed, called] = list
    assert.equal(failed!.status, 'error')
    assert.match(failed!.status_message ?? '', /qty must not be negative/)
    assert.deepEqual(JSON.parse(failed!.input!.json), { qty: -1 })
    assert.equal(called!.status, 'ok')
    assert.equal(called!.caller, 'shop::checkout', 'the caller is the calling function')
    assert.deepEqual(JSON.parse(called!.input!.json), { qty: 2 })
    assert.deepEqual(JSON.parse(called!.output!.json), { total: 6 })
    assert.ok(failed!.started_at_ms >= called!.started_at_ms, 'newest first')
    assert.equal(called!.rerun_of, null)

    const onlyErrors = await runs({ function_id: 'shop::price', status: 'error' })
    assert.deepEqual(onlyErrors.runs.map((r) => r.trace_id), [failed!.trace_id])
    const one = await runs({ function_id: 'shop::price', limit: 1 })
    assert.equal(one.runs.length, 1)
    assert.equal(one.total, 2)
  })

  it('engine::runs::list shows a large payload as a 4 KiB preview marked truncated', async () => {
    await post('/api/invoke', { function_id: 'shop::big', payload: {} })
    const [run] = await runsOf('shop::big', 1)
    assert.equal(run!.output!.truncated, true)
    assert.ok(Buffer.byteLength(run!.output!.json) <= 4096, `${Buffer.byteLength(run!.output!.json)} bytes`)
    assert.ok(run!.output!.json.startsWith('{"blob":"éé'), 'cut between characters, from the start')
    assert.equal(run!.input!.truncated, false)
  })

  it('POST /api/rerun with an edited payload makes a new run whose result reflects the edit and that links to the old one', async () => {
    const first = await post('/api/invoke', { function_id: 'shop::price', payload: { qty: 4 } })
    assert.deepEqual(first.body.result, { total: 12 })
    const before = await runsOf('shop::price', 3)
    const old = before.find((r) => r.input !== null && JSON.parse(r.input.json).qty === 4)!
    assert.ok(old, 'the first run is listed')

    const rerun = await post('/api/rerun', { function_id: 'shop::price', payload: { qty: 5 }, rerun_of: old.trace_id.toUpperCase() })
    assert.equal(rerun.status, 200, JSON.stringify(rerun.body))
    assert.equal(rerun.body.ok, true)
    assert.deepEqual(rerun.body.result, { total: 15 }, 'the result reflects the edited payload')
    assert.match(rerun.body.trace_id, /^[0-9a-f]{32}$/)
    assert.notEqual(rerun.body.trace_id, old.trace_id)
    assert.equal(rerun.body.rerun_of, old.trace_id)

    const after = await runsOf('shop::price', 4)
    const again = after.find((r) => r.trace_id === rerun.body.trace_id)
    assert.ok(again, `the re-run is listed under its trace id: ${JSON.stringify(after.map((r) => r.trace_id))}`)
    assert.equal(again!.rerun_of, old.trace_id, 'the new run names the old trace')
    assert.deepEqual(JSON.parse(again!.output!.json), { total: 15 })
    assert.equal(after[0]!.trace_id, rerun.body.trace_id, 'newest first')
    // The new run is the root of its own trace, which the Traces page lists.
    const traces = (await post('/api/invoke', { function_id: 'engine::traces::list', payload: { trace_id: rerun.body.trace_id }, trace: false })).body.result
    assert.equal(traces.traces[0].name, 'execute shop::price')
  })

  it('POST /api/rerun of a failing payload answers the error and still records the run with its link', async () => {
    const old = (await runsOf('shop::price', 1))[0]!
    const rerun = await post('/api/rerun', { function_id: 'shop::price', payload: { qty: -2 }, rerun_of: old.trace_id })
    assert.equal(rerun.body.ok, false)
    assert.match(rerun.body.error.message, /negative/)
    await flushOtel()
    await waitFor(async () => (await runs({ function_id: 'shop::price', status: 'error' })).runs.some((r) => r.trace_id === rerun.body.trace_id && r.rerun_of === old.trace_id), 'the condition', 10_000)
  })

  it('POST /api/rerun keeps the console’s access rules: a token, a JSON content type, an allowed Origin', async () => {
    const body = { function_id: 'shop::price', payload: { qty: 1 }, rerun_of: 'ab'.repeat(16) }
    assert.equal((await post('/api/rerun', body, { authorization: '' })).status, 401)
    assert.equal((await post('/api/rerun', body, { 'content-type': 'text/plain' })).status, 415)
    assert.equal((await post('/api/rerun', body, { origin: 'https://evil.example' })).status, 403)
    const res = await fetch(server.url + '/api/rerun', { headers: { authorization: `Bearer ${server.token}` } })
    assert.equal(res.status, 405)
  })

  it('POST /api/rerun without rerun_of (a dead letter’s payload) runs in a new trace with no link', async () => {
    const rerun = await post('/api/rerun', { function_id: 'shop::price', payload: { qty: 7 } })
    assert.deepEqual({ ok: rerun.body.ok, result: rerun.body.result, rerun_of: rerun.body.rerun_of }, { ok: true, result: { total: 21 }, rerun_of: null })
    await flushOtel()
    await waitFor(async () => (await runs({ function_id: 'shop::price' })).runs.some((r) => r.trace_id === rerun.body.trace_id && r.rerun_of === null), 'the condition', 10_000)
  })

  it('POST /api/rerun refuses an invalid rerun_of, or trace', async () => {
    const cases: [unknown, RegExp][] = [
      [{ function_id: 'shop::price', rerun_of: 'xyz' }, /rerun_of/],
      [{ function_id: 'shop::price', rerun_of: '0'.repeat(32) }, /rerun_of/],
      [{ function_id: 'shop::price', rerun_of: 'ab'.repeat(16) + ',k=v' }, /rerun_of/],
      [{ function_id: 'shop::price', rerun_of: 'ab'.repeat(16), trace: false }, /always traced/],
      [{ rerun_of: 'ab'.repeat(16) }, /function_id/],
      [{ function_id: 'shop::price', rerun_of: 'ab'.repeat(16), timeout_ms: 0 }, /timeout_ms/],
    ]
    for (const [body, message] of cases) {
      const reply = await post('/api/rerun', body)
      assert.equal(reply.status, 400, JSON.stringify(body))
      assert.match(reply.body.error.message, message)
    }
  })

  it('fuzz: any /api/rerun body and any engine::runs::list input get an answer, and both keep serving', async () => {
    const traceId = fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{32}$/), fc.string(), fc.constant('0'.repeat(32)), fc.jsonValue(), fc.stringMatching(/^[0-9a-f]{32}[,;= ][ -~]{0,20}$/))
    const rerunBody = fc.oneof(
      fc.record(
        { function_id: fc.oneof(fc.constantFrom('shop::price', 'shop::nope', 'engine::runs::list', ''), fc.string(), fc.jsonValue()), payload: fc.jsonValue(), rerun_of: traceId, namespace: fc.option(fc.oneof(fc.string(), fc.integer())), timeout_ms: fc.option(fc.oneof(fc.integer({ min: -5, max: 5000 }), fc.double())), trace: fc.option(fc.jsonValue()) },
        { requiredKeys: [] },
      ),
      fc.jsonValue(),
      fc.string(),
    )
    const listInput = fc.oneof(
      fc.record({ function_id: fc.oneof(fc.constantFrom('shop::price', ''), fc.string(), fc.jsonValue()), limit: fc.oneof(fc.integer({ min: -5, max: 2000 }), fc.double(), fc.jsonValue()), status: fc.oneof(fc.constantFrom('ok', 'error', 'unset', 'OK'), fc.jsonValue()), before_ms: fc.oneof(fc.double(), fc.jsonValue()) }, { requiredKeys: [] }),
      fc.jsonValue(),
    )
    await fc.assert(
      fc.asyncProperty(fc.oneof(rerunBody.map((b) => ['rerun', b] as const), listInput.map((b) => ['list', b] as const)), async ([kind, body]) => {
        if (kind === 'rerun') {
          const reply = await post('/api/rerun', typeof body === 'string' ? body : JSON.stringify(body ?? null))
          assert.ok([200, 400].includes(reply.status), `status ${reply.status}: ${JSON.stringify(reply.body)}`)
          if (reply.status === 200) {
            assert.equal(typeof reply.body.ok, 'boolean')
            assert.match(reply.body.trace_id, /^[0-9a-f]{32}$/)
          } else assert.equal(typeof reply.body.error.message, 'string')
        } else {
          const reply = await post('/api/invoke', { function_id: 'engine::runs::list', payload: body, trace: false })
          assert.equal(reply.status, 200)
          if (reply.body.ok) assert.ok(Array.isArray(reply.body.result.runs))
          else assert.equal(reply.body.error.code, 'INVALID_ARGUMENTS', JSON.stringify(reply.body.error))
        }
      }),
      { numRuns: 120 },
    )
    const info = (await (await fetch(server.url + '/api/info', { headers: { authorization: `Bearer ${server.token}` } })).json()) as { connected: boolean }
    assert.equal(info.connected, true)
  })
})
