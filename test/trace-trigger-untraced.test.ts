/**
 * A `trace` trigger whose handler runs in a worker with telemetry off (OTEL_ENABLED=false) and
 * calls a built-in function (builtins.md §12.6, protocol.md §10.1). The engine delivers trace
 * triggers under an unsampled `traceparent` so that the handler's own work records no trace; the
 * SDK must carry that parent to the calls the handler makes even without telemetry, or each call
 * of a built-in (which the engine traces) starts a new sampled trace, which fires the trigger
 * again, forever. Traces of internal functions (engine::*) do not fire it at all.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

describe('a trace trigger handled by a worker with telemetry off', () => {
  let t: TestEngine
  let client: SvcClient
  const batches: string[][] = []

  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
    client = registerWorker(t.url, { workerName: 'quiet', otel: { enabled: false } })
    client.registerFunction('on-traces', async (data: { trace_ids: string[] }) => {
      batches.push(data.trace_ids)
      // What a real handler does with the ids: more calls, which must not make traces of their own.
      await client.trigger({ function_id: 'state::set', payload: { scope: 'seen', key: data.trace_ids[0]!, value: true } })
      return null
    })
    client.registerTrigger({ type: 'trace', function_id: 'on-traces', config: {} })
    await waitFor(async () => {
      const { functions } = (await t.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: Array<{ function_id: string }> }
      return functions.some((f) => f.function_id === 'on-traces')
    }, 'the condition', 10_000)
    // The trigger is registered after the functions; give it its round trip.
    await sleep(200)
  })
  after(async () => {
    await client?.shutdown()
    await t?.stop()
  })

  it('fires once for the one trace, not again for the calls its handler makes', async () => {
    // One traced call (engine::functions::list, polled above, is internal and fires nothing).
    await client.trigger({ function_id: 'state::set', payload: { scope: 'orders', key: 'o1', value: { total: 3 } } })
    await waitFor(() => batches.length === 1, 'batches.length === 1')
    // Several trace batches (300 ms each) later, nothing more arrived.
    await sleep(1500)
    assert.equal(batches.length, 1, `deliveries: ${JSON.stringify(batches)}`)
    const { traces } = (await t.engine.inject({ function_id: 'engine::traces::list', data: {} })) as { traces: Array<{ name: string; trace_id: string }> }
    assert.deepEqual(traces.map((trace) => trace.name), ['execute state::set'])
    assert.deepEqual(batches[0], [traces[0]!.trace_id])
    // The handler's own call did run (unsampled, untraced).
    const seen = await client.trigger({ function_id: 'state::get', payload: { scope: 'seen', key: traces[0]!.trace_id } })
    assert.equal(seen, true)
  })
})
