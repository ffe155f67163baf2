/**
 * The redis queue backend against a real `redis-server` (test/support/redis.ts): the shared
 * conformance suite, then two backends on one Redis acting as two engines of a fleet (leases,
 * crash recovery, wake-ups), and Redis going away and coming back.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { startTestRedis } from '../../../../test/support/redis.ts'
import { input, runQueueBackendConformance } from '../conformance.ts'
import { RedisQueueBackend, type RedisQueueConfig } from './redis.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0
const config = (fields: Partial<RedisQueueConfig> = {}): RedisQueueConfig => ({ url: redis.url, key_prefix: `t${++prefixes}:`, lease_ms: 30_000, ...fields })
const open = (fields: Partial<RedisQueueConfig> = {}) => RedisQueueBackend.open(config(fields))

runQueueBackendConformance('redis', () => open())

const T0 = 1_700_000_000_000

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`condition not met within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('redis queue backend: two engines on one Redis', () => {
  it('never has one message in flight on both at once, and delivers each exactly once without a crash', async (t) => {
    const shared = config()
    const a = await RedisQueueBackend.open(shared)
    const b = await RedisQueueBackend.open(shared)
    t.after(() => Promise.all([a.close(), b.close()]))
    const total = 300
    const messages = Array.from({ length: total }, (_, i) => input({ data: { i }, key: i % 7 === 0 ? `k${i % 3}` : undefined, group: i % 5 === 0 ? `g${i % 2}` : undefined }))
    for (let i = 0; i < total; i += 50) await a.enqueue(messages.slice(i, i + 50))
    const inFlight = new Map<string, string>()
    const acked = new Map<string, number>()
    let overlap = 0
    const consume = async (backend: RedisQueueBackend, name: string) => {
      for (let idle = 0; idle < 20 && acked.size < total; ) {
        const got = await backend.reserve('q', { now: T0, limit: 4 })
        if (got.length === 0) {
          idle++
          await new Promise((resolve) => setImmediate(resolve))
          continue
        }
        idle = 0
        for (const m of got) {
          if (inFlight.has(m.id)) overlap++
          inFlight.set(m.id, name)
        }
        // Hold them across a round trip of the other engine.
        await backend.counts('q', T0)
        for (const m of got) {
          inFlight.delete(m.id)
          assert.equal(await backend.ack(m.id), true)
          acked.set(m.id, (acked.get(m.id) ?? 0) + 1)
        }
      }
    }
    await Promise.all([consume(a, 'a'), consume(b, 'b'), consume(a, 'a2'), consume(b, 'b2')])
    assert.equal(overlap, 0)
    assert.equal(acked.size, total)
    assert.ok([...acked.values()].every((n) => n === 1))
    assert.deepEqual(await b.counts('q', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 0 })
    assert.deepEqual(await a.queues(), [])
  })

  it("recover at open and recoverExpired leave a live engine's messages alone; its renewals keep them past the lease", async (t) => {
    const shared = config({ lease_ms: 1000 })
    const a = await RedisQueueBackend.open(shared)
    const b = await RedisQueueBackend.open(shared)
    t.after(() => Promise.all([a.close(), b.close()]))
    await a.enqueue([input(), input()])
    const held = await a.reserve('q', { now: T0, limit: 2 })
    assert.equal(held.length, 2)
    const c = await RedisQueueBackend.open(shared)
    t.after(() => c.close())
    assert.deepEqual(await c.recover(T0, () => 4), { requeued: 0, deadLettered: 0 })
    // Three leases of Redis time later, a still holds both: its timer renewed them.
    const server = (await import('ioredis')).Redis
    const probe = new server(redis.url)
    t.after(() => probe.disconnect())
    const timeOf = async () => {
      const [s, us] = await probe.time()
      return Number(s) * 1000 + Math.floor(Number(us) / 1000)
    }
    const start = await timeOf()
    await waitFor(async () => (await timeOf()) > start + 3000)
    assert.deepEqual(await b.recoverExpired(T0, () => 4), { requeued: 0, deadLettered: 0 })
    assert.deepEqual(await b.counts('q', T0), { pending: 0, delayed: 0, in_flight: 2, dead: 0 })
    assert.equal(await a.ack(held[0]!.id), true)
    assert.equal(await a.release(held[1]!.id, { ready_at: T0 }), true)
    assert.deepEqual(await b.counts('q', T0), { pending: 1, delayed: 0, in_flight: 0, dead: 0 })
  })

  it('a crashed engine (closed without acking) has its messages delivered again by the other after the lease; nothing acknowledged is lost', async (t) => {
    const shared = config({ lease_ms: 1000 })
    const a = await RedisQueueBackend.open(shared)
    const b = await RedisQueueBackend.open(shared)
    t.after(() => b.close())
    const msgs = [input({ data: { n: 1 } }), input({ data: { n: 2 }, group: 'g' }), input({ data: { n: 3 }, key: 'k' }), input({ queue: 'tight' })]
    const later = input({ data: { n: 4 }, group: 'g' })
    await a.enqueue([...msgs, later])
    const first = [...(await a.reserve('q', { now: T0, limit: 10 })), ...(await a.reserve('tight', { now: T0, limit: 10 }))]
    assert.equal(first.length, 4)
    const done = input({ data: { n: 5 } })
    await a.enqueue([done])
    const [got] = await a.reserve('q', { now: T0, limit: 1 })
    assert.equal(got!.id, done.id)
    assert.equal(await a.ack(done.id), true)
    await a.close() // crash: no ack, no renewal
    // The fifo group stays blocked and the key busy while the crashed engine's lease runs.
    assert.deepEqual(await b.reserve('q', { now: T0, limit: 10 }), [])
    let taken = { requeued: 0, deadLettered: 0 }
    await waitFor(async () => {
      const round = await b.recoverExpired(T0 + 1, (queue) => (queue === 'tight' ? 1 : 4))
      taken = { requeued: taken.requeued + round.requeued, deadLettered: taken.deadLettered + round.deadLettered }
      return taken.requeued + taken.deadLettered === 4
    })
    assert.deepEqual(taken, { requeued: 3, deadLettered: 1 })
    const again = await b.reserve('q', { now: T0 + 1, limit: 10 })
    assert.deepEqual(again.map((m) => [m.id, m.attempts]).sort(), msgs.slice(0, 3).map((m) => [m.id, 2]).sort())
    // fifo order kept: `later` waits behind the redelivered head.
    assert.ok(!again.some((m) => m.id === later.id))
    assert.equal((await b.deadLetters('tight', 0, 1))[0]!.error!.code, 'delivery_interrupted')
    assert.equal(await b.get(done.id), undefined)
    for (const m of again) assert.equal(await b.ack(m.id), true)
    assert.deepEqual((await b.reserve('q', { now: T0 + 1, limit: 10 })).map((m) => m.id), [later.id])
  })

  it("wakes the other engine's listeners when messages become startable, not its own", async (t) => {
    const shared = config()
    const a = await RedisQueueBackend.open(shared)
    const b = await RedisQueueBackend.open(shared)
    t.after(() => Promise.all([a.close(), b.close()]))
    const heardByA: Array<string | undefined> = []
    const heardByB: Array<string | undefined> = []
    a.onWake((q) => heardByA.push(q))
    b.onWake((q) => heardByB.push(q))
    await a.enqueue([input({ queue: 'jobs', group: 'g' }), input({ queue: 'jobs', group: 'g' })])
    await waitFor(() => heardByB.includes('jobs'))
    const [head] = await b.reserve('jobs', { now: T0, limit: 10 })
    heardByA.length = 0
    await b.ack(head!.id) // frees the group's next message
    await waitFor(() => heardByA.includes('jobs'))
    await a.enqueue([input({ queue: 'dead', dead: { code: 'no_subscribers', message: 'none' } })])
    await b.enqueue([input({ queue: 'mine' })])
    await waitFor(() => heardByA.includes('mine'))
    assert.ok(!heardByB.includes('mine') && !heardByB.includes('dead'))
  })
})

describe('redis queue backend: Redis down and back', () => {
  it('fails with ADAPTER_UNAVAILABLE while Redis is down, recovers by itself, and wakes every queue after reconnecting', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const woken: Array<string | undefined> = []
    backend.onWake((q) => woken.push(q))
    await backend.enqueue([input()])
    await redis.stop()
    for (const call of [() => backend.enqueue([input()]), () => backend.reserve('q', { now: T0, limit: 1 }), () => backend.counts('q', T0)]) {
      await assert.rejects(call(), (error: { code?: string }) => error.code === 'ADAPTER_UNAVAILABLE')
    }
    await redis.start()
    await waitFor(async () => {
      try {
        await backend.enqueue([input({ data: { back: true } })])
        return true
      } catch (error) {
        assert.equal((error as { code?: string }).code, 'ADAPTER_UNAVAILABLE')
        return false
      }
    })
    const [message] = await backend.reserve('q', { now: T0, limit: 1 })
    assert.deepEqual(message!.data, { back: true })
    await waitFor(() => woken.includes(undefined))
  })

  it('opens while Redis is unreachable, warning once, and works when it comes up', async (t) => {
    const { freePort } = await import('../../../../test/support/redis.ts')
    const warnings: string[] = []
    const url = `redis://127.0.0.1:${await freePort()}`
    const backend = await RedisQueueBackend.open({ url, key_prefix: 'x:', lease_ms: 30_000 }, { log: { info() {}, warn: (m) => void warnings.push(m), error() {} } })
    t.after(() => backend.close())
    assert.equal(warnings.length, 1)
    assert.match(warnings[0]!, /unreachable/)
    await assert.rejects(backend.queues(), (error: { code?: string }) => error.code === 'ADAPTER_UNAVAILABLE')
  })
})
