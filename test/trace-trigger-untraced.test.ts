/**
 * A `trace` trigger whose handler runs in a worker with telemetry off (OTEL_ENABLED=false) and
 * calls a built-in function (builtins.md §12.6, protocol.md §10.1). The engine delivers trace
 * triggers under an unsampled `traceparent` so that the handler's own work records no trace; the
 * SDK must carry that parent to the calls the handler makes even without telemetry, or each call
 * of a built-in (which the engine traces) starts a new sampled trace, which fires the trigger
 * again, forever. Traces of internal functions (engine::*) do not fire it at all.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { bindingsSettled } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

describe('a trace trigger handled by a worker with telemetry off', () => {
  let t: TestEngine
  let client: SvcClient
  const batches: string[][] = []
  let handled = 0

  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
    client = registerWorker(t.url, { workerName: 'quiet', otel: { enabled: false } })
    client.registerFunction('on-traces', async (data: { trace_ids: string[] }) => {
      batches.push(data.trace_ids)
      // What a real handler does with the ids: more calls, which must not make traces of their own.
      await client.trigger({ function_id: 'state::set', payload: { scope: 'seen', key: data.trace_ids[0]!, value: true } })
      handled++
      return null
    })
    const trigger = client.registerTrigger({ type: 'trace', function_id: 'on-traces', config: {} })
    await waitFor(async () => {
      const { functions } = (await t.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: Array<{ function_id: string }> }
      return functions.some((f) => f.function_id === 'on-traces')
    }, 'on-traces registered', 10_000)
    await bindingsSettled(t.engine, [trigger.id])
  })
  after(async () => {
    await client?.shutdown()
    await t?.stop()
  })

  it('fires once for the one trace, not again for the calls its handler makes', async () => {
    // One traced call (engine::functions::list, polled above, is internal and fires nothing).
    await client.trigger({ function_id: 'state::set', payload: { scope: 'orders', key: 'o1', value: { total: 3 } } })
    await waitFor(() => batches.length === 1 && handled === 1, 'the first batch handled')
    // A marker: a traced call after the handler's own call. Batches go out in order, so a trace of
    // the handler's call would be delivered no later than the marker's.
    await client.trigger({ function_id: 'state::get', payload: { scope: 'marker', key: 'm' } })
    await waitFor(() => batches.length >= 2, 'the batch of the marker')
    const { traces } = (await t.engine.inject({ function_id: 'engine::traces::list', data: {} })) as { traces: Array<{ name: string; trace_id: string }> }
    assert.deepEqual(traces.map((trace) => trace.name).sort(), ['execute state::get', 'execute state::set'])
    const traceOf = (name: string) => traces.find((trace) => trace.name === name)!.trace_id
    assert.deepEqual(batches.slice(0, 2), [[traceOf('execute state::set')], [traceOf('execute state::get')]], `deliveries: ${JSON.stringify(batches)}`)
    // The handler's own call did run (unsampled, untraced).
    const seen = await client.trigger({ function_id: 'state::get', payload: { scope: 'seen', key: traceOf('execute state::set') } })
    assert.equal(seen, true)
  })
})
