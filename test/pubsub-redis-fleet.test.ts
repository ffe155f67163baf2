/**
 * Two engines sharing a Redis (builtins.md §13.4 "pubsub"): a publish on either engine reaches the
 * `subscribe` triggers of both, once each; the adapter moves to Redis at runtime with the
 * subscriptions it holds.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { SvcClient } from 'svc-sdk'
import { PubSubWorker } from '../runtime/workers/pubsub/worker.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { startTestRedis, type TestRedis } from './support/redis.ts'
import { bindingsSettled, connectClient } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

describe('svc-pubsub across engines sharing Redis', () => {
  let redis: TestRedis
  const engines: Array<{ test: TestEngine; worker: PubSubWorker }> = []
  const clients: SvcClient[] = []
  before(async () => {
    redis = await startTestRedis()
    for (let i = 0; i < 2; i++) {
      const worker = new PubSubWorker()
      // The first engine starts in-process and moves to Redis later; the second starts on Redis.
      const settings = i === 0 ? {} : { adapter: { name: 'redis', config: { url: redis.url, key_prefix: 'fleet:' } } }
      engines.push({ test: await startTestEngine({ builtins: [worker], settings: { 'svc-pubsub': settings } }), worker })
    }
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    await Promise.all(engines.map((e) => e.test.stop()))
    await redis.close()
  })

  it('delivers a publish on any engine to the subscribers of every engine, once each', async () => {
    const got: Array<{ engine: number; data: unknown }> = []
    for (const [i, { test }] of engines.entries()) {
      const client = connectClient(test.engine, `sub${i}`)
      clients.push(client)
      client.registerFunction(`sub${i}::on`, (data) => void got.push({ engine: i, data }))
      const t = client.registerTrigger({ type: 'subscribe', function_id: `sub${i}::on`, config: { topic: 'fleet' } })
      await bindingsSettled(test.engine, [t.id])
    }
    // Engine 0 moves its subscription to Redis at runtime (§8: adapter changes move every subscription).
    await engines[0]!.worker.applySettings({ adapter: { name: 'redis', config: { url: redis.url, key_prefix: 'fleet:' } } })

    await engines[0]!.test.engine.inject({ function_id: 'publish', data: { topic: 'fleet', data: { from: 0 } } })
    await engines[1]!.test.engine.inject({ function_id: 'publish', data: { topic: 'fleet', data: { from: 1 } } })
    await waitFor(() => got.length === 4, 'got.length === 4')
    // Markers after them from both engines: each subscriber hears a publisher's messages in order,
    // so a duplicate would have come before the markers.
    await engines[0]!.test.engine.inject({ function_id: 'publish', data: { topic: 'fleet', data: { from: 0, marker: true } } })
    await engines[1]!.test.engine.inject({ function_id: 'publish', data: { topic: 'fleet', data: { from: 1, marker: true } } })
    const isMarker = (g: { data: unknown }) => (g.data as { marker?: boolean }).marker === true
    await waitFor(() => got.filter(isMarker).length === 4, 'the four markers')
    assert.deepEqual(
      got.filter((g) => !isMarker(g)).map((g) => `${g.engine}<-${(g.data as { from: number }).from}`).sort(),
      ['0<-0', '0<-1', '1<-0', '1<-1'],
    )
  })
})
