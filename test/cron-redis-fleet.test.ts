/**
 * Two engines sharing a Redis (builtins.md §13.4 "cron"): replicas of one schedule on both engines
 * run each slot once fleet-wide. Both engines' svc-cron run on one manual clock: each slot comes
 * when the test moves time, not after a real second.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { SvcClient } from 'svc-sdk'
import { CronWorker } from '../runtime/workers/cron/worker.ts'
import { createManualClock } from '../runtime/workers/shared/clock.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { startTestRedis, type TestRedis } from './support/redis.ts'
import { bindingsSettled, connectClient } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

describe('svc-cron across engines sharing Redis', () => {
  let redis: TestRedis
  const engines: TestEngine[] = []
  const clients: SvcClient[] = []
  const clock = createManualClock()
  const T0 = Date.parse('2025-01-01T00:00:00.000Z')
  before(async () => {
    redis = await startTestRedis()
    for (let i = 0; i < 2; i++) {
      const settings = { adapter: { name: 'redis', config: { url: redis.url, key_prefix: 'cronfleet:' } } }
      engines.push(await startTestEngine({ builtins: [new CronWorker({ clock, epochMs: T0 })], settings: { 'svc-cron': settings } }))
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
    // Five slots, one second apart: each runs on one engine or the other before time moves on.
    for (let second = 1; second <= 5; second++) {
      clock.advance(1000)
      const slot = new Date(T0 + second * 1000).toISOString()
      await waitFor(() => runs.some((r) => r.scheduled_time === slot), () => `the run of ${slot}; runs: ${JSON.stringify(runs)}`)
    }
    const slots = runs.map((r) => r.scheduled_time)
    assert.equal(new Set(slots).size, slots.length, `a slot ran twice: ${JSON.stringify(runs)}`)
    assert.equal(slots.length, 5)
  })
})
