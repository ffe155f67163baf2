/**
 * At-least-once across the crash of one engine of a fleet (issue 19 §2, builtins.md §7.8): two
 * engine processes share one `redis-server` through the queue worker's `redis` adapter. Engine A
 * is killed with SIGKILL while a message is in flight; engine B delivers it again once A's lease
 * has run out, with its attempt count kept; no acknowledged message is delivered again and nothing
 * is lost. A live engine's messages are not taken while it runs. Messages A prefetched (reserved
 * ahead of its free slots, never started) come back the same way, with the attempt their reserve
 * counted: the documented cost of prefetch after a crash.
 */
import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { after, describe, it } from 'node:test'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { startEngineProcess, tempProject } from './support/processes.ts'
import { startTestRedis } from './support/redis.ts'
import { waitFor } from './support/wait.ts'

const redis = await startTestRedis()
const projects: string[] = []
after(async () => {
  for (const dir of projects) await rm(dir, { recursive: true, force: true })
  await redis.close()
})

const queueYaml = (prefix = 'fleet:') => `  - name: queue
    config:
      adapter: { name: redis, config: { url: "${redis.url}", key_prefix: "${prefix}", lease_ms: 2000 } }
      queue_configs:
        jobs:
          max_retries: 3
          backoff_ms: 50
          concurrency: 4
`

interface Delivery {
  n: number
  id: string
  attempt: string
}

function delivery(data: { n: number }, frame: Frame): Delivery {
  const baggage = Object.fromEntries(String(frame.baggage).split(',').map((e) => e.split('=') as [string, string]))
  return { n: data.n, id: baggage['svc.queue.message_id']!, attempt: baggage['svc.queue.attempt']! }
}

async function stats(w: RawWorker): Promise<{ depth: number; in_flight: number; dlq_depth: number }> {
  return (await w.call('engine::queue::topic_stats', { topic: 'jobs' })).result
}

describe('queue on redis: a fleet survives the kill -9 of one engine', () => {
  it("redelivers the killed engine's in-flight message from the other engine after the lease, attempt kept; no acknowledged one again", async () => {
    const dirA = await tempProject(queueYaml())
    const dirB = await tempProject(queueYaml())
    projects.push(dirA, dirB)
    const a = await startEngineProcess(dirA)
    const b = await startEngineProcess(dirB)
    const wa = await RawWorker.connect(a.engineUrl)
    const before: Delivery[] = []
    wa.serve('job::run', (data, frame) => {
      before.push(delivery(data, frame))
      if (data.n === 7) return new Promise(() => {}) // still running when engine A dies
      return { ok: true }
    })
    await wa.call('engine::functions::list', {})
    const receipts = new Map<number, string>()
    for (let n = 0; n < 30; n++) {
      const answer = await wa.call('job::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })
      assert.equal(answer.error, undefined)
      receipts.set(n, answer.result.messageReceiptId)
    }
    const wb = await RawWorker.connect(b.engineUrl)
    // Engine B sees the same queue; A's message stays in flight on A while A renews its lease.
    await waitFor(async () => {
      const s = await stats(wb)
      return s.depth === 0 && s.in_flight === 1 && before.length === 30
    }, 'the condition', 10_000)
    await a.kill9()
    await wa.close().catch(() => {})

    const afterCrash: Delivery[] = []
    wb.serve('job::run', (data, frame) => {
      afterCrash.push(delivery(data, frame))
      return { ok: true }
    })
    await waitFor(() => afterCrash.length >= 1, 'afterCrash.length >= 1', 15_000)
    await waitFor(async () => {
      const s = await stats(wb)
      return s.depth === 0 && s.in_flight === 0
    }, 'the condition', 10_000)
    // A later duplicate would show up in this quiet period.
    assert.equal(await wb.silent((f) => f.type === 'invokefunction' && f.function_id === 'job::run', 500), true)
    assert.deepEqual(afterCrash, [{ n: 7, id: receipts.get(7)!, attempt: '2' }])
    assert.equal((await stats(wb)).dlq_depth, 0)
    assert.deepEqual([...new Set(before.map((d) => d.n))].sort((x, y) => x - y), [...receipts.keys()])
    assert.equal(before.length, 30)
    await wb.close()
    assert.equal(await b.stop(), 0)
  })
  it('messages the killed engine prefetched come back after the lease with the attempt their reserve counted', async () => {
    const dirA = await tempProject(queueYaml('prefetch:'))
    const dirB = await tempProject(queueYaml('prefetch:'))
    projects.push(dirA, dirB)
    const a = await startEngineProcess(dirA)
    const b = await startEngineProcess(dirB)
    const wa = await RawWorker.connect(a.engineUrl)
    const onA: Delivery[] = []
    wa.serve('job::run', (data, frame) => {
      onA.push(delivery(data, frame))
      return new Promise(() => {}) // all four slots stay busy until engine A dies
    })
    await wa.call('engine::functions::list', {})
    for (let n = 0; n < 8; n++) assert.equal((await wa.call('job::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })).error, undefined)
    const wb = await RawWorker.connect(b.engineUrl)
    // Four running on A, four reserved ahead by A (concurrency 4, prefetch its default, 4).
    await waitFor(async () => {
      const s = await stats(wb)
      return onA.length === 4 && s.in_flight === 8 && s.depth === 0
    }, 'four running and four prefetched on A', 10_000)
    await a.kill9()
    await wa.close().catch(() => {})
    const onB: Delivery[] = []
    wb.serve('job::run', (data, frame) => {
      onB.push(delivery(data, frame))
      return { ok: true }
    })
    await waitFor(() => onB.length === 8, 'onB.length === 8', 15_000)
    await waitFor(async () => {
      const s = await stats(wb)
      return s.depth === 0 && s.in_flight === 0
    }, 'the queue drained', 10_000)
    const ranOnA = new Set(onA.map((d) => d.n))
    // Every message once more, at attempt 2: A's four ran once, the four it prefetched never did.
    assert.deepEqual(onB.map((d) => d.n).sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7])
    assert.ok(onB.every((d) => d.attempt === '2'), JSON.stringify(onB))
    assert.equal(onB.filter((d) => !ranOnA.has(d.n)).length, 4)
    assert.equal((await stats(wb)).dlq_depth, 0)
    await wb.close()
    assert.equal(await b.stop(), 0)
  })
})
