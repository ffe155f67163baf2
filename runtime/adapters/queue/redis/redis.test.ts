/**
 * The redis queue backend against a real `redis-server` (test/support/redis.ts): the shared
 * conformance suite, then two backends on one Redis acting as two engines of a fleet (leases,
 * crash recovery, wake-ups), and Redis going away and coming back.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestRedis } from '../../../../test/support/redis.ts'
import { input, runQueueBackendConformance } from '../conformance.ts'
import type { QueueMessageInput } from '../types.ts'
import { RedisQueueBackend, RESERVE_SCAN_BUDGET, type RedisQueueConfig } from './redis.ts'
import { waitFor } from '../../../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0
const config = (fields: Partial<RedisQueueConfig> = {}): RedisQueueConfig => ({ url: redis.url, key_prefix: `t${++prefixes}:`, lease_ms: 30_000, ...fields })
const open = (fields: Partial<RedisQueueConfig> = {}) => RedisQueueBackend.open(config(fields))

runQueueBackendConformance('redis', () => open())

const T0 = 1_700_000_000_000

describe('redis queue backend: calls of one turn', () => {
  it('600 enqueues and acks made in one turn are batched into a few script calls, each stored once, in call order', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const messages = Array.from({ length: 600 }, (_, i) => input({ data: { i }, idempotency: i % 100 === 99 ? { key: 'same', expires_at: T0 + 1000 } : undefined }))
    const outcomes = await Promise.all(messages.map((m) => backend.enqueue([m])))
    // The first message with the key is stored; the later ones in the same turn answer its id.
    const first = messages[99]!.id
    for (const [i, [outcome]] of outcomes.entries()) assert.deepEqual(outcome, i % 100 === 99 && i > 99 ? { id: first, duplicate: true } : { id: messages[i]!.id, duplicate: false })
    const got = await backend.reserve('q', { now: T0, limit: 1000 })
    assert.deepEqual(got.map((m) => (m.data.value as { i: number }).i), messages.map((_, i) => i).filter((i) => !(i % 100 === 99 && i > 99)))
    assert.deepEqual(await Promise.all(got.map((m) => backend.ack(m.id))), got.map(() => true))
    assert.deepEqual(await backend.queues(), [])
  })

  it('refuses, in a turn of other enqueues, an id stored earlier and an id the same turn stores first', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const stored = input({ data: { n: 'stored' } })
    await backend.enqueue([stored])
    const twice = input({ data: { n: 'first' } })
    // One script call: new, already stored, new, the same id again, new.
    const settled = await Promise.allSettled([
      backend.enqueue([input({ data: { n: 'a' } })]),
      backend.enqueue([{ ...stored, data: { n: 'again' } }]),
      backend.enqueue([twice]),
      backend.enqueue([{ ...twice, data: { n: 'second' } }]),
      backend.enqueue([input({ data: { n: 'b' } })]),
    ])
    assert.deepEqual(
      settled.map((s) => s.status),
      ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
    )
    for (const s of [settled[1]!, settled[3]!]) assert.equal((s as PromiseRejectedResult).reason.code, 'STORAGE_ERROR')
    const got = await backend.reserve('q', { now: T0, limit: 10 })
    assert.deepEqual(got.map((m) => (m.data.value as { n: string }).n), ['stored', 'a', 'first', 'b'])
  })
})

describe('redis queue backend: script calls on the wire', () => {
  it('keeps working when Redis loses its script cache (SCRIPT FLUSH), and stores multi-byte and large payloads byte for byte', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const { Redis } = await import('ioredis')
    const admin = new Redis(redis.url)
    t.after(() => admin.disconnect())
    const payloads = [{ text: 'zß水🙂'.repeat(3) }, { text: 'é'.repeat(40_000) }, { n: 12_345.5, nested: [null, true, 'ü'] }]
    await backend.enqueue([input({ data: payloads[0] })])
    // Every script is cached now (EVAL on first use); Redis forgets them, and the next calls answer NOSCRIPT.
    await admin.script('FLUSH')
    await backend.enqueue([input({ data: payloads[1] }), input({ data: payloads[2] })])
    await admin.script('FLUSH')
    const got = await backend.reserve('q', { now: T0, limit: 10 })
    assert.deepEqual(got.map((m) => m.data.value), payloads)
    await admin.script('FLUSH')
    assert.deepEqual(await Promise.all(got.map((m) => backend.ack(m.id))), [true, true, true])
    assert.deepEqual(await backend.queues(), [])
  })

  it('answers a reserved message as stored (seq, attempts, a ready_at with a fraction), and refuses an id already stored or a payload JSON cannot hold', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const late = input({ ready_at: T0 + 0.5 })
    const first = input()
    const [stored, kept] = await Promise.all([backend.enqueue([late]), backend.enqueue([first])])
    assert.deepEqual([stored, kept], [[{ id: late.id, duplicate: false }], [{ id: first.id, duplicate: false }]])
    await assert.rejects(backend.enqueue([input({ id: first.id, data: { other: true } })]), (error: { code?: string; message: string }) => error.code === 'STORAGE_ERROR' && error.message.includes(first.id))
    // A payload JSON refuses rejects the call (as before, when enqueue was an async function) and stores nothing.
    const refused = input({ data: { n: 1n } })
    await assert.rejects(backend.enqueue([refused]), TypeError)
    assert.equal(await backend.get(refused.id), undefined)
    const got = await backend.reserve('q', { now: T0 + 1, limit: 10 })
    assert.deepEqual(
      got.map((m) => [m.id, m.ready_at, m.attempts, m.data.value]),
      [
        [first.id, T0, 1, { n: 0 }],
        [late.id, T0 + 0.5, 1, { n: 0 }],
      ],
    )
    assert.ok(got[0]!.seq > got[1]!.seq, 'seq in enqueue order')
    assert.deepEqual(await backend.get(late.id).then((m) => m && [m.ready_at, m.seq, m.attempts]), [T0 + 0.5, got[1]!.seq, 1])
  })
})

describe('redis queue backend: finish and fetch', () => {
  /** Script calls (EVAL, EVALSHA) the server ran so far. */
  const scriptCalls = async () => {
    const { Redis } = await import('ioredis')
    const client = new Redis(redis.url)
    try {
      const text = await client.info('commandstats')
      // The first call of a script is an EVAL (ioredis loads it), the later ones EVALSHA.
      return Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(text)?.[1] ?? 0) + Number(/^cmdstat_eval:calls=(\d+)/m.exec(text)?.[1] ?? 0)
    } finally {
      client.disconnect()
    }
  }

  it('an ack and a reserve of one turn are one script call, and the reserve starts what the ack freed (a busy concurrency key, a fifo head)', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const keyed = [input({ key: 'k', data: { n: 1 } }), input({ key: 'k', data: { n: 2 } })]
    const grouped = [input({ group: 'g', data: { n: 3 } }), input({ group: 'g', data: { n: 4 } })]
    await backend.enqueue([...keyed, ...grouped])
    const first = await backend.reserve('q', { now: T0, limit: 10 })
    assert.deepEqual(first.map((m) => m.id).sort(), [keyed[0]!.id, grouped[0]!.id].sort())
    const before = await scriptCalls()
    // As the queue worker does: the results of a turn are acknowledged, and the freed slots reserved, without waiting.
    const [ackedKey, ackedHead, next] = await Promise.all([backend.ack(keyed[0]!.id), backend.ack(grouped[0]!.id), backend.reserve('q', { now: T0, limit: 10 })])
    assert.equal(await scriptCalls(), before + 1, 'one script call for two acks and a reserve')
    assert.deepEqual([ackedKey, ackedHead], [true, true])
    assert.deepEqual(next.map((m) => m.id).sort(), [keyed[1]!.id, grouped[1]!.id].sort())
    // An ack of a message this backend does not hold answers false inside the combined call too.
    const [again, none] = await Promise.all([backend.ack(keyed[0]!.id), backend.reserve('q', { now: T0, limit: 10 })])
    assert.deepEqual([again, none], [false, []])
    assert.deepEqual(await Promise.all(next.map((m) => backend.ack(m.id))), [true, true])
    assert.deepEqual(await backend.queues(), [])
  })
})

describe('redis queue backend: acks wait for the reserve on its way back', () => {
  it('an ack made while a reserve is in flight rides with the next reserve; with none, it goes alone once the reserve landed', async (t) => {
    const backend = await open()
    const { Redis } = await import('ioredis')
    const admin = new Redis(redis.url)
    t.after(async () => {
      await admin.client('UNPAUSE').catch(() => {})
      admin.disconnect()
      await backend.close()
    })
    const calls = async () => {
      const text = await admin.info('commandstats')
      return Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(text)?.[1] ?? 0) + Number(/^cmdstat_eval:calls=(\d+)/m.exec(text)?.[1] ?? 0)
    }
    await backend.enqueue([1, 2, 3, 4, 5].map((n) => input({ data: { n } })))
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
    }
    const [first] = await backend.reserve('q', { now: T0, limit: 1 })
    // Warm every script (its first call is an EVAL, loading it), so that each call below is one EVALSHA.
    const [spare] = await backend.reserve('q', { now: T0, limit: 1 })
    const [, [warm]] = await Promise.all([backend.ack(spare!.id), backend.reserve('q', { now: T0, limit: 1 })])
    assert.equal(await backend.ack(warm!.id), true)
    const before = await calls()
    // Scripts wait on the server while it is paused: the reserve stays in flight.
    await admin.client('PAUSE', 60_000, 'WRITE')
    const inFlight = backend.reserve('q', { now: T0, limit: 1 })
    // As the worker's pump: its slot is reserved again as soon as the reserve lands (chained here,
    // not after the UNPAUSE reply, which may reach this process after that reserve's reply).
    const next = inFlight.then(() => backend.reserve('q', { now: T0, limit: 1 }))
    await turns(3)
    // A result settles in another turn, as the worker's are.
    const acked = backend.ack(first!.id)
    await turns(3)
    await admin.client('UNPAUSE')
    const [got] = await inFlight
    assert.equal(await acked, true)
    const [third] = await next
    assert.equal(await calls(), before + 2, 'the reserve in flight, then the next reserve carrying the ack')
    assert.deepEqual([got!.data.value, third!.data.value], [{ n: 4 }, { n: 5 }])
    // No reserve follows: the ack still goes, alone, once the reserve in flight has landed.
    await admin.client('PAUSE', 60_000, 'WRITE')
    const empty = backend.reserve('q', { now: T0, limit: 1 })
    await turns(3)
    const lone = backend.ack(got!.id)
    await turns(3)
    await admin.client('UNPAUSE')
    assert.deepEqual(await empty, [])
    assert.equal(await lone, true)
    assert.equal(await backend.ack(third!.id), true)
    assert.deepEqual(await backend.queues(), [])
  })
})

describe('redis queue backend: long scans', () => {
  it('a startable message behind more blocked ones than one reserve looks at is still started (no starvation)', async (t) => {
    const backend = await open()
    t.after(() => backend.close())
    const blocked = Array.from({ length: RESERVE_SCAN_BUDGET + 300 }, () => input({ key: 'busy' }))
    const waitingGroups = Array.from({ length: RESERVE_SCAN_BUDGET + 300 }, (_, i) => input({ group: `g${i}`, function_id: 'gone::f' }))
    const free = input({ data: { free: true } })
    for (let i = 0; i < blocked.length; i += 256) await backend.enqueue(blocked.slice(i, i + 256))
    for (let i = 0; i < waitingGroups.length; i += 256) await backend.enqueue(waitingGroups.slice(i, i + 256))
    await backend.enqueue([free])
    const startable = (_ns: string, fid: string) => fid !== 'gone::f'
    // The first reserve starts the key's first message; then every other 'busy' message waits.
    assert.deepEqual((await backend.reserve('q', { now: T0, limit: 1, startable })).map((m) => m.id), [blocked[0]!.id])
    let found: string[] = []
    for (let round = 0; round < 10 && found.length === 0; round++) {
      found = (await backend.reserve('q', { now: T0, limit: 10, startable })).map((m) => m.id)
      if (found.length === 0) assert.ok((await backend.nextReadyAt('q', T0))! <= T0 + 1000, 'a reserve that ran out of budget asks to be called again soon')
    }
    assert.deepEqual(found, [free.id])
  })
})

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
    const shared = config({ lease_ms: 2000 })
    const a = await RedisQueueBackend.open(shared)
    const b = await RedisQueueBackend.open(shared)
    t.after(() => Promise.all([a.close(), b.close()]))
    await a.enqueue([input(), input()])
    const held = await a.reserve('q', { now: T0, limit: 2 })
    assert.equal(held.length, 2)
    const c = await RedisQueueBackend.open(shared)
    t.after(() => c.close())
    assert.deepEqual(await c.recover(T0, () => 4), { requeued: 0, deadLettered: 0 })
    // More than two leases of Redis time later, a still holds both: its timer renewed them (every
    // 667 ms, so a stall of over a second on a loaded machine is still covered).
    const server = (await import('ioredis')).Redis
    const probe = new server(redis.url)
    t.after(() => probe.disconnect())
    const timeOf = async () => {
      const [s, us] = await probe.time()
      return Number(s) * 1000 + Math.floor(Number(us) / 1000)
    }
    const start = await timeOf()
    await waitFor(async () => (await timeOf()) > start + 4500, '(await timeOf()) > start + 4500', 20_000)
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
    }, 'the condition', 20_000)
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

  it('an engine restarted on its data directory takes back what its earlier process held at open; other engines and live backends wait for the lease', async (t) => {
    const shared = config() // 30 s leases: nothing here may wait for one
    const crashed = await RedisQueueBackend.open(shared, { dataDir: '/srv/engine-a' })
    const other = await RedisQueueBackend.open(shared, { dataDir: '/srv/engine-b' })
    t.after(() => other.close())
    const [m1, m2, m3] = [input(), input({ queue: 'tight' }), input({ queue: 'b' })]
    await crashed.enqueue([m1, m2, m3])
    await crashed.reserve('q', { now: T0, limit: 1 })
    await crashed.reserve('tight', { now: T0, limit: 1 })
    await other.reserve('b', { now: T0, limit: 1 })
    await crashed.close() // its process dies; its leases still run
    // Another engine's open does not take them, nor the other engine's own live message.
    const stranger = await RedisQueueBackend.open(shared, { dataDir: '/srv/engine-c' })
    t.after(() => stranger.close())
    assert.deepEqual(await stranger.recover(T0, () => 4), { requeued: 0, deadLettered: 0 })
    // The same engine, restarted: at once, attempt kept, exhausted to the DLQ.
    const restarted = await RedisQueueBackend.open(shared, { dataDir: '/srv/engine-a/' })
    t.after(() => restarted.close())
    assert.deepEqual(await restarted.recover(T0, (queue) => (queue === 'tight' ? 1 : 4)), { requeued: 1, deadLettered: 1 })
    assert.equal((await restarted.reserve('q', { now: T0, limit: 1 }))[0]!.attempts, 2)
    assert.equal((await restarted.deadLetters('tight', 0, 1))[0]!.error!.code, 'delivery_interrupted')
    // A second backend of the live process (an adapter switch) leaves the first one's deliveries alone.
    const [live] = await restarted.enqueue([input({ queue: 'live' })]).then(() => restarted.reserve('live', { now: T0, limit: 1 }))
    const switched = await RedisQueueBackend.open(shared, { dataDir: '/srv/engine-a' })
    t.after(() => switched.close())
    assert.deepEqual(await switched.recover(T0, () => 4), { requeued: 0, deadLettered: 0 })
    assert.equal(await restarted.ack(live!.id), true)
    assert.equal(await other.ack((await other.get(m3.id))!.id), true)
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
    await waitFor(() => heardByB.includes('jobs'), "heardByB.includes('jobs')", 20_000)
    const [head] = await b.reserve('jobs', { now: T0, limit: 10 })
    heardByA.length = 0
    await b.ack(head!.id) // frees the group's next message
    await waitFor(() => heardByA.includes('jobs'), "heardByA.includes('jobs')", 20_000)
    await a.enqueue([input({ queue: 'dead', dead: { code: 'no_subscribers', message: 'none' } })])
    await b.enqueue([input({ queue: 'mine' })])
    await waitFor(() => heardByA.includes('mine'), "heardByA.includes('mine')", 20_000)
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
    }, 'the condition', 20_000)
    const [message] = await backend.reserve('q', { now: T0, limit: 1 })
    assert.deepEqual(message!.data.value, { back: true })
    await waitFor(() => woken.includes(undefined), 'woken.includes(undefined)', 20_000)
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

describe('redis queue backend under hostile names (fast-check)', () => {
  // Names that could break a key layout or a script: separators of the layout (':', NUL, '|',
  // newline), Redis glob and hash-tag characters, lone surrogates (UTF-8 would merge them),
  // U+0001 (the escape of ./redis.ts enc), non-BMP and long names, empty strings.
  const hostile = fc.oneof(
    fc.constantFrom('', ':', 'q', 'q:', ':q', 'p:q', 'g:1:q', '\u0000', 'a\u0000b', '|', '1|x', '\n', '*', '?', '[a]', '{tag}', 'a\ud800', 'a\udc00', '\ud800', '\u0001', '\u0001"x"', '😀', 'é', 'e\u0301'),
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.string({ maxLength: 300 }).map((s) => s.repeat(2)),
  )
  // Message bodies that could break a script's reply or its parser: big, unicode, NUL, JSON-looking
  // strings (a body is JSON text inside a flat reply array), any JSON value.
  const hostileBody: fc.Arbitrary<unknown> = fc.oneof(
    hostile,
    fc.constantFrom('\u0000', '{"id":"x","a":1}', '[1,2', 'null', '1', '"', '\\', '\r\n*3\r\n$1', 'x'.repeat(20_000), '😀'.repeat(5_000)),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  )
  type Op =
    | { kind: 'enqueue'; queue: number; group?: number; key?: number; idem?: number; dead: boolean; delay: boolean; body: unknown }
    | { kind: 'reserve'; queue: number; refuse: boolean }
    | { kind: 'finish-and-fetch'; pick: number; queue: number }
    | { kind: 'ack-behind-reserve'; pick: number; queue: number }
    | { kind: 'settle'; pick: number; how: 'ack' | 'release' | 'refund' | 'dead' }
    | { kind: 'enqueue-many'; messages: Array<Extract<Op, { kind: 'enqueue' }>> }
    | { kind: 'ack-many'; picks: number[] }
    | { kind: 'dlq'; queue: number; how: 'redrive' | 'one' | 'discard' | 'all' }

  const enqueueOp = fc.record({ kind: fc.constant('enqueue' as const), queue: fc.nat(3), group: fc.option(fc.nat(3), { nil: undefined }), key: fc.option(fc.nat(3), { nil: undefined }), idem: fc.option(fc.nat(3), { nil: undefined }), dead: fc.boolean(), delay: fc.boolean(), body: hostileBody }, { requiredKeys: ['kind', 'queue', 'dead', 'delay', 'body'] })
  const op: fc.Arbitrary<Op> = fc.oneof(
    enqueueOp,
    // One script call for several messages (several queues, groups, keys, a repeated idempotency key).
    fc.record({ kind: fc.constant('enqueue-many' as const), messages: fc.array(enqueueOp, { minLength: 2, maxLength: 6 }) }),
    // Acks of one turn in one script call, an id twice among them.
    fc.record({ kind: fc.constant('ack-many' as const), picks: fc.array(fc.nat(), { minLength: 1, maxLength: 5 }) }),
    fc.record({ kind: fc.constant('reserve' as const), queue: fc.nat(3), refuse: fc.boolean() }),
    fc.record({ kind: fc.constant('finish-and-fetch' as const), pick: fc.nat(), queue: fc.nat(3) }),
    fc.record({ kind: fc.constant('ack-behind-reserve' as const), pick: fc.nat(), queue: fc.nat(3) }),
    fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), how: fc.constantFrom('ack' as const, 'release' as const, 'refund' as const, 'dead' as const) }),
    fc.record({ kind: fc.constant('dlq' as const), queue: fc.nat(3), how: fc.constantFrom('redrive' as const, 'one' as const, 'discard' as const, 'all' as const) }),
  )

  it('behaves as the in-process index (memory backend) for any names and any sequence of operations', async () => {
    const { openMemoryQueue } = await import('../memory/memory.ts')
    const sortIds = (ms: Array<{ id: string; attempts: number }>) => ms.map((m) => `${m.id}#${m.attempts}`).sort()
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 4, maxLength: 4 }), fc.array(hostile, { minLength: 6, maxLength: 6 }), fc.array(op, { minLength: 1, maxLength: 40 }), async (queues, names, ops) => {
        const red = await open()
        const mem = openMemoryQueue()
        try {
          const inFlight: string[] = []
          let step = 0
          let n = 0
          const make = (o: Extract<Op, { kind: 'enqueue' }>, now: number) => {
            const fields: Partial<QueueMessageInput> = { id: `${names[n++ % names.length]}#${n}`, queue: queues[o.queue]!, function_id: names[n % names.length]!, enqueued_at: now, ready_at: o.delay ? now + 15 : now, data: { name: names[(n + 1) % names.length], body: o.body } }
            if (o.group !== undefined) fields.group = names[o.group]!
            if (o.key !== undefined) fields.key = names[o.key]!
            if (o.idem !== undefined) fields.idempotency = { key: names[o.idem]!, expires_at: now + 100 }
            if (o.dead) fields.dead = { code: 'no_subscribers', message: names[0]! }
            return input(fields)
          }
          for (const o of ops) {
            const now = T0 + ++step * 10
            switch (o.kind) {
              case 'enqueue': {
                const message = make(o, now)
                assert.deepEqual(await red.enqueue([message]), await mem.enqueue([message]))
                break
              }
              case 'enqueue-many': {
                const messages = o.messages.map((m) => make(m, now))
                assert.deepEqual(await red.enqueue(messages), await mem.enqueue(messages))
                break
              }
              case 'ack-many': {
                if (inFlight.length === 0) break
                const ids = o.picks.map((pick) => inFlight[pick % inFlight.length]!)
                ids.push(ids[0]!)
                const acked = await Promise.all(ids.map((id) => red.ack(id)))
                const expected: boolean[] = []
                for (const id of ids) expected.push(await mem.ack(id))
                assert.deepEqual(acked, expected)
                for (const id of new Set(ids)) inFlight.splice(inFlight.indexOf(id), 1)
                break
              }
              case 'reserve': {
                const queue = queues[o.queue]!
                const refused = names[1]!
                const startable = o.refuse ? (_ns: string, fid: string) => fid !== refused : undefined
                const request = startable ? { now, limit: 1000, startable } : { now, limit: 1000 }
                const [a, b] = [await red.reserve(queue, request), await mem.reserve(queue, request)]
                assert.deepEqual(sortIds(a), sortIds(b))
                for (const m of a) {
                  const twin = b.find((x) => x.id === m.id)!
                  assert.deepEqual(m, twin)
                  inFlight.push(m.id)
                }
                break
              }
              case 'finish-and-fetch': {
                // An ack and a reserve in one turn (one ACK_RESERVE call) against the index doing the ack, then the reserve.
                if (inFlight.length === 0) break
                const [id] = inFlight.splice(o.pick % inFlight.length, 1)
                const queue = queues[o.queue]!
                const [acked, a] = await Promise.all([red.ack(id!), red.reserve(queue, { now, limit: 1000 })])
                assert.equal(acked, await mem.ack(id!))
                const b = await mem.reserve(queue, { now, limit: 1000 })
                assert.deepEqual(sortIds(a), sortIds(b))
                for (const m of a) {
                  assert.deepEqual(m, b.find((x) => x.id === m.id)!)
                  inFlight.push(m.id)
                }
                break
              }
              case 'ack-behind-reserve': {
                // An ack in a later turn than a reserve still in flight (it waits for that reserve to land).
                if (inFlight.length === 0) break
                const [id] = inFlight.splice(o.pick % inFlight.length, 1)
                const queue = queues[o.queue]!
                const reserving = red.reserve(queue, { now, limit: 1000 })
                await new Promise((resolve) => setImmediate(resolve))
                const [a, acked] = await Promise.all([reserving, red.ack(id!)])
                const b = await mem.reserve(queue, { now, limit: 1000 })
                assert.equal(acked, await mem.ack(id!))
                assert.deepEqual(sortIds(a), sortIds(b))
                for (const m of a) {
                  assert.deepEqual(m, b.find((x) => x.id === m.id)!)
                  inFlight.push(m.id)
                }
                break
              }
              case 'settle': {
                if (inFlight.length === 0) break
                const [id] = inFlight.splice(o.pick % inFlight.length, 1)
                const run = (b: typeof red | typeof mem) =>
                  o.how === 'ack' ? b.ack(id!) : o.how === 'dead' ? b.deadLetter(id!, { code: 'boom', message: names[2]! }, now) : b.release(id!, { ready_at: now + 5, refund: o.how === 'refund' })
                assert.equal(await run(red), await run(mem))
                break
              }
              case 'dlq': {
                const queue = queues[o.queue]!
                const dead = await mem.deadLetters(queue, 0, 1000)
                assert.deepEqual(sortIds(await red.deadLetters(queue, 0, 1000)), sortIds(dead))
                const one = dead[0]?.id ?? names[3]!
                const run = (b: typeof red | typeof mem) =>
                  o.how === 'redrive' ? b.redrive(queue, now) : o.how === 'one' ? b.redriveMessage(queue, one, now) : o.how === 'discard' ? b.discard(queue, one) : b.deadLetterQueue(queue, { code: 'subscriber_expired', message: 'x' }, now)
                assert.deepEqual(await run(red), await run(mem))
                break
              }
            }
            for (const queue of new Set(queues)) assert.deepEqual(await red.counts(queue, now), await mem.counts(queue, now), `counts of ${JSON.stringify(queue)}`)
          }
          assert.deepEqual((await red.queues()).sort(), (await mem.queues()).sort())
          for (const id of inFlight) assert.deepEqual(await red.get(id), await mem.get(id))
        } finally {
          await red.close()
          await mem.close()
        }
      }),
      { numRuns: 100 },
    )
  })

  it('any adapter config is refused naming an adapter field, or opens a store isolated under its prefix', async () => {
    const { parseQueueAdapterEntry } = await import('../index.ts')
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          { url: fc.oneof({ arbitrary: fc.constant(redis.url), weight: 4 }, hostile), key_prefix: hostile, lease_ms: fc.oneof(fc.constant(30_000), fc.integer(), fc.double(), hostile), extra: fc.option(hostile, { nil: undefined }) },
          { requiredKeys: ['url'] },
        ),
        async (raw) => {
          const config: Record<string, unknown> = { ...raw }
          if (raw.extra !== undefined) config[raw.extra] = 1
          delete config.extra
          let spec
          try {
            spec = parseQueueAdapterEntry({ name: 'redis', config })
          } catch (error) {
            assert.match((error as Error).message, /^adapter\.config(\.|\b)/)
            return
          }
          assert.equal(spec.name, 'redis')
          if (spec.name !== 'redis' || spec.config.url !== redis.url) return
          const prefix = spec.config.key_prefix
          const backend = await RedisQueueBackend.open({ ...spec.config, key_prefix: `iso${++prefixes}:${prefix}` })
          try {
            const m = input({ queue: prefix })
            await backend.enqueue([m])
            assert.deepEqual(await backend.queues(), [prefix])
            assert.equal((await backend.reserve(prefix, { now: T0, limit: 1 }))[0]!.id, m.id)
          } finally {
            await backend.close()
          }
        },
      ),
      { numRuns: 40 },
    )
  })
})
