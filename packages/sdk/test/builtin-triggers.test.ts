/** Typed configs of the built-in trigger types `subscribe` and `cron` (sdk.md §5, builtins.md §8, §9). */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { CronTriggerConfig, CronTriggerPayload, FunctionHandler, SubscribeTriggerConfig } from '../src/index.ts'
import { makeClient } from './support/client.ts'
import { EnginePeer } from './support/peer.ts'
import { waitFor } from '../../../test/support/wait.ts'

describe('typed built-in trigger configs', () => {
  it('send subscribe and cron configs as given', async (t) => {
    const peer = await EnginePeer.start()
    t.after(() => peer.close())
    const { client } = makeClient(t, peer.url)
    const conn = await peer.connection(0)
    await waitFor(() => client.getConnectionState() === 'connected', 'connected', 5000, 5)

    const subscribe: SubscribeTriggerConfig = { topic: 'orders', condition_function_id: 'orders::is-paid' }
    const cron: CronTriggerConfig = { expression: '0 0 2 * * *', timezone: 'Europe/Berlin', timeout_ms: 60_000 }
    const onTick: FunctionHandler<CronTriggerPayload> = (payload) => payload.job_id
    client.registerFunction('reports::daily', onTick)
    const a = client.registerTrigger<SubscribeTriggerConfig>({ type: 'subscribe', function_id: 'mail::on-order', config: subscribe })
    const b = client.registerTrigger<CronTriggerConfig>({ type: 'cron', function_id: 'reports::daily', config: cron })
    assert.deepEqual((await conn.waitForType('registertrigger', (f) => f.id === a.id)).config, subscribe)
    assert.deepEqual((await conn.waitForType('registertrigger', (f) => f.id === b.id)).config, cron)
  })
})
