/**
 * Two engines sharing a Redis (builtins.md §13.4 "cron"): replicas of one schedule on both engines
 * run each slot once fleet-wide, with real time and generous bounds.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { SvcClient } from 'svc-sdk'
import { CronWorker } from '../runtime/workers/cron/worker.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { startTestRedis, type TestRedis } from './support/redis.ts'
import { bindingsSettled, connectClient } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

describe('svc-cron across engines sharing Redis', () => {
  let redis: TestRedis
  const engines: TestEngine[] = []
  const clients: SvcClient[] = []
  before(async () => {
    redis = await startTestRedis()
    for (let i = 0; i < 2; i++) {
      const settings = { adapter: { name: 'redis', config: { url: redis.url, key_prefix: 'cronfleet:' } } }
      engines.push(await startTestEngine({ builtins: [new CronWorker()], settings: { 'svc-cron': settings } }))
    }
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    await Promise.all(engines.map((e) => e.stop()))
    await redis.close()
  })

  it('runs each slot of a schedule once, whichever engine claims it', async () => {
    const runs: Array<{ engine: number; scheduled_time: string }> = []
    for (const [i, test] of engines.entries()) {
      const client = connectClient(test.engine, `reporter${i}`)
      clients.push(client)
      client.registerFunction('report::tick', (payload: { scheduled_time: string }) => void runs.push({ engine: i, scheduled_time: payload.scheduled_time }))
      const t = client.registerTrigger({ type: 'cron', function_id: 'report::tick', config: { expression: '* * * * * *' } })
      await bindingsSettled(test.engine, [t.id])
    }
    await waitFor(() => runs.length >= 4, 'runs.length >= 4', 15_000)
    const slots = runs.map((r) => r.scheduled_time)
    assert.equal(new Set(slots).size, slots.length, `a slot ran twice: ${JSON.stringify(runs)}`)
  })
})
