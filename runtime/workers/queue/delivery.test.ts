/**
 * The delivery pump on its own (./delivery.ts) with a real in-process queue backend and a stand-in
 * worker whose handler calls answer when the test says: how results that settle together refill
 * their slots.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeJson, type JsonInput } from 'svc-protocol'
import type { QueueBackend } from '../../adapters/queue/index.ts'
import { openMemoryQueue } from '../../adapters/queue/memory/memory.ts'
import type { LocalInvokeRequest } from '../../engine/types.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { createManualClock } from '../shared/clock.ts'
import { waitFor } from '../../../test/support/wait.ts'
import { QueueDelivery, queueBaggage, queueBaggagePrefix, type DeliveryHost } from './delivery.ts'
import { parseQueueSettings, parseQueueWorkerSettings } from './settings.ts'

const T0 = 1_700_000_000_000
const silent = { debug() {}, info() {}, warn() {}, error() {} }

/**
 * A queue `q` at `concurrency` on a memory backend; every reserve is recorded with its limit.
 * `remote`: the backend declares `reservesOverlap` (as the redis one does) and each reserve stays on
 * its way until the test lands it (`held`, oldest first), as a reply from a server would.
 * `prefetch`: the worker's adapter entry is redis with that `prefetch` (the backend stays the
 * memory one behind the spy), so the pump reserves ahead of its free slots.
 */
function setup(concurrency: number, remote = false, prefetch?: number) {
  const clock = createManualClock(T0)
  const backend = openMemoryQueue()
  const reserves: number[] = []
  const held: Array<() => void> = []
  const reserve = (queue: string, request: Parameters<QueueBackend['reserve']>[1]) => {
    reserves.push(request.limit)
    if (!remote) return backend.reserve(queue, request)
    return new Promise<Awaited<ReturnType<QueueBackend['reserve']>>>((resolve, reject) => held.push(() => backend.reserve(queue, request).then(resolve, reject)))
  }
  const spied = new Proxy(backend, {
    get(target, key, receiver) {
      if (key === 'reserve') return reserve
      if (key === 'reservesOverlap') return remote
      const value = Reflect.get(target, key, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as QueueBackend
  const backends = new AdapterSlots<QueueBackend>('queue', silent as never)
  backends.install(spied, 'memory')
  const calls: Array<{ request: LocalInvokeRequest; answer: () => void }> = []
  const settings = parseQueueSettings('q', { concurrency, max_retries: 1 })
  const host = {
    worker: {
      hasFunction: () => true,
      invoke: (request: LocalInvokeRequest) => new Promise<unknown>((resolve) => calls.push({ request, answer: () => resolve(null) })),
    },
    log: silent,
    clock,
    telemetry: undefined,
    backends,
    subscribers: { get: () => undefined, latest: () => undefined, byQueue: new Map() },
    now: () => clock.now(),
    settings: () => {
      const settings = parseQueueWorkerSettings({ queue_configs: { q: { concurrency, max_retries: 1 } } })
      if (prefetch === undefined) return settings
      return { ...settings, adapter: { name: 'redis', config: { url: 'redis://127.0.0.1:6379', key_prefix: 'svc:', lease_ms: 30_000, prefetch } } }
    },
    settingsOf: () => settings,
  } as unknown as DeliveryHost
  return { backend, reserves, held, calls, delivery: new QueueDelivery(host) }
}

describe('queue delivery baggage', () => {
  it('percent-encodes the queue name, and a name with a lone surrogate as U+FFFD instead of throwing', () => {
    assert.equal(queueBaggage('k=v,svc.queue.attempt=9', queueBaggagePrefix('e mails'), 'id-1', 2), 'k=v,svc.queue.name=e%20mails,svc.queue.message_id=id-1,svc.queue.attempt=2')
    assert.equal(queueBaggagePrefix('a\ud800'), 'svc.queue.name=a%EF%BF%BD,svc.queue.message_id=')
  })
})

describe('queue delivery: slots freed together', () => {
  it('refills every slot that results settling in one turn freed with one reserve (one transaction with their acks), not one for the first and one for the rest', async () => {
    const { backend, reserves, calls, delivery } = setup(5)
    await backend.enqueue(Array.from({ length: 12 }, (_, n) => ({ id: `m${n}`, queue: 'q', function_id: 'f', namespace: 'default', data: { n }, enqueued_at: T0, ready_at: T0 })))
    delivery.pump('q')
    await waitFor(() => calls.length === 5, 'five deliveries in flight')
    assert.deepEqual(reserves, [5])
    // The five results of one socket read: their handler calls settle in the same turn.
    for (const call of calls.splice(0, 5)) call.answer()
    await waitFor(() => calls.length === 5, 'the next five deliveries')
    assert.deepEqual(reserves, [5, 5])
    for (const call of calls.splice(0, 5)) call.answer()
    await waitFor(() => calls.length === 2, 'the last two deliveries')
    assert.deepEqual(reserves, [5, 5, 5])
    for (const call of calls.splice(0, 2)) call.answer()
    await waitFor(async () => (await backend.counts('q', T0)).in_flight === 0, 'every message acknowledged')
    assert.deepEqual(await backend.counts('q', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 0 })
    delivery.stop()
  })
})

describe('queue delivery: a store whose reserves overlap (redis)', () => {
  it('reserves the slots freed while a reserve is on its way at once, instead of after it lands, and never starts more than concurrency', async () => {
    const { backend, reserves, held, calls, delivery } = setup(4, true)
    await backend.enqueue(Array.from({ length: 8 }, (_, n) => ({ id: `m${n}`, queue: 'q', function_id: 'f', namespace: 'default', data: { n }, enqueued_at: T0, ready_at: T0 })))
    delivery.pump('q')
    await waitFor(() => held.length === 1, 'the first reserve on its way')
    held.shift()!()
    await waitFor(() => calls.length === 4, 'four deliveries in flight')
    // Two results of one socket read: their slots reserve (that reply is still on its way)…
    for (const call of calls.splice(0, 2)) call.answer()
    await waitFor(() => held.length === 1, 'a reserve for the two freed slots')
    // …and the next two results do not wait for it: their slots reserve too.
    for (const call of calls.splice(0, 2)) call.answer()
    await waitFor(() => held.length === 2, 'a second reserve while the first is on its way')
    assert.deepEqual(reserves, [4, 2, 2])
    // A pump while every free slot is asked for reserves nothing more.
    delivery.pump('q')
    await new Promise<void>((resolve) => setImmediate(resolve))
    assert.equal(held.length, 2)
    held.shift()!()
    held.shift()!()
    await waitFor(() => calls.length === 4, 'the last four deliveries')
    for (const call of calls.splice(0, 4)) call.answer()
    await waitFor(() => held.length > 0, 'a reserve that finds the queue empty')
    while (held.length > 0) held.shift()!()
    await waitFor(async () => (await backend.counts('q', T0)).in_flight === 0, 'every message acknowledged')
    assert.deepEqual(await backend.counts('q', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 0 })
    delivery.stop()
  })
})

describe('queue delivery: prefetch (redis)', () => {
  it('reserves up to prefetch messages ahead; a freed slot starts one of them without a reserve in between; a stop gives them back with their attempt', async () => {
    const { backend, reserves, held, calls, delivery } = setup(2, true, 2)
    await backend.enqueue(Array.from({ length: 6 }, (_, n) => ({ id: `m${n}`, queue: 'q', function_id: 'f', namespace: 'default', data: { n }, enqueued_at: T0, ready_at: T0 })))
    delivery.pump('q')
    await waitFor(() => held.length === 1, 'the first reserve on its way')
    assert.deepEqual(reserves, [4])
    held.shift()!()
    await waitFor(() => calls.length === 2, 'two deliveries in flight')
    assert.equal((await backend.counts('q', T0)).in_flight, 4)
    // A result: the next message starts now, while the refill is still on its way.
    calls.shift()!.answer()
    await waitFor(() => calls.length === 2 && held.length === 1, 'a prefetched message started and a refill asked')
    assert.deepEqual(reserves, [4, 1])
    held.shift()!()
    await waitFor(async () => (await backend.counts('q', T0)).in_flight === 4, 'two running, two prefetched')
    const running = calls.map((call) => (decodeJson(call.request.data as JsonInput) as { n: number }).n)
    await delivery.stop()
    // The two running stay in flight; the two prefetched are pending again, attempt given back.
    const counts = await backend.counts('q', T0)
    assert.deepEqual([counts.in_flight, counts.pending], [2, 3])
    const states: string[] = []
    for (let n = 0; n < 6; n++) {
      const message = await backend.get(`m${n}`)
      states.push(message === undefined ? 'acked' : `${message.state}@${message.attempts}`)
    }
    // m0 acknowledged; m1 and one prefetched m2 running; m3, m4 prefetched then given back; m5 never reserved.
    assert.deepEqual(running, [1, 2])
    assert.deepEqual(states, ['acked', 'in_flight@1', 'in_flight@1', 'pending@0', 'pending@0', 'pending@0'])
  })
})

/**
 * Drives a pump whose reserves are held until landed (`setup(…, true)`) through `count` messages:
 * each step of `plan` (`[land, at, size]`) lands the oldest held reserve, or answers `size` of the
 * running attempts from position `at`; `check` runs before every step. Then asserts that every
 * message was delivered once and that nothing is left in the store.
 */
async function landInAnyOrder(ctx: ReturnType<typeof setup>, count: number, plan: Array<[boolean, number, number]>, check: () => unknown): Promise<void> {
  const { backend, held, calls, delivery } = ctx
  await backend.enqueue(Array.from({ length: count }, (_, n) => ({ id: `m${n}`, queue: 'q', function_id: 'f', namespace: 'default', data: { n }, enqueued_at: T0, ready_at: T0 })))
  delivery.pump('q')
  const seen = new Map<number, number>()
  let step = 0
  while (seen.size < count || calls.length > 0 || held.length > 0) {
    await waitFor(() => calls.length > 0 || held.length > 0 || seen.size === count, 'a delivery or a reserve in flight', 10_000, 1)
    await check()
    const [land, at, size] = plan[step++ % Math.max(1, plan.length)] ?? [true, 0, 1]
    if ((land || calls.length === 0) && held.length > 0) {
      held.shift()!()
      await new Promise<void>((resolve) => setImmediate(resolve))
      continue
    }
    for (const call of calls.splice(at % Math.max(1, calls.length), size)) {
      const n = (decodeJson(call.request.data as JsonInput) as { n: number }).n
      seen.set(n, (seen.get(n) ?? 0) + 1)
      call.answer()
    }
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  await waitFor(async () => (await backend.counts('q', T0)).in_flight === 0, 'every message acknowledged', 10_000, 1)
  assert.deepEqual([...seen.values()].filter((v) => v !== 1), [])
  assert.equal(seen.size, count)
  assert.deepEqual(await backend.counts('q', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 0 })
}

describe('queue delivery under any grouping of settling results (fast-check)', () => {
  it('never runs more than concurrency attempts at once, delivers every message once and leaves nothing in flight', async () => {
    const fc = (await import('fast-check')).default
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 30 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 8 }), fc.boolean())), async (concurrency, count, plan) => {
        const { backend, reserves, calls, delivery } = setup(concurrency)
        try {
          await backend.enqueue(Array.from({ length: count }, (_, n) => ({ id: `m${n}`, queue: 'q', function_id: 'f', namespace: 'default', data: { n }, enqueued_at: T0, ready_at: T0 })))
          delivery.pump('q')
          const seen = new Map<number, number>()
          let step = 0
          while (seen.size < count || calls.length > 0) {
            await waitFor(() => calls.length > 0 || seen.size === count, 'a delivery in flight', 10_000, 1)
            assert.ok(calls.length <= concurrency, `${calls.length} attempts at once, concurrency ${concurrency}`)
            // Answer a group of the calls in flight, from any position, in one turn or across two.
            const [at, size, split] = plan[step++ % Math.max(1, plan.length)] ?? [0, 1, false]
            const group = calls.splice(at % Math.max(1, calls.length), size)
            for (const [i, call] of group.entries()) {
              const n = (decodeJson(call.request.data as JsonInput) as { n: number }).n
              seen.set(n, (seen.get(n) ?? 0) + 1)
              if (split && i === Math.floor(group.length / 2)) await new Promise<void>((resolve) => setImmediate(resolve))
              call.answer()
            }
            if (seen.size === count && calls.length === 0) break
          }
          await waitFor(async () => (await backend.counts('q', T0)).in_flight === 0, 'every message acknowledged', 10_000, 1)
          assert.deepEqual([...seen.values()].filter((v) => v !== 1), [])
          assert.equal(seen.size, count)
          assert.deepEqual(await backend.counts('q', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 0 })
          assert.ok(reserves.every((limit) => limit >= 1 && limit <= concurrency), `reserve limits ${reserves}`)
        } finally {
          delivery.stop()
        }
      }),
      { numRuns: 60 },
    )
  })

  it('with prefetch and reserves landing in any order: never more than concurrency attempts, nor concurrency + prefetch reserved, every message once', async () => {
    const fc = (await import('fast-check')).default
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.nat({ max: 6 }), fc.integer({ min: 0, max: 30 }), fc.array(fc.tuple(fc.boolean(), fc.nat(), fc.integer({ min: 1, max: 8 }))), async (concurrency, wanted, count, plan) => {
        const prefetch = Math.min(wanted, concurrency)
        const ctx = setup(concurrency, true, wanted)
        try {
          await landInAnyOrder(ctx, count, plan, async () => {
            assert.ok(ctx.calls.length <= concurrency, `${ctx.calls.length} attempts at once, concurrency ${concurrency}`)
            const reserved = (await ctx.backend.counts('q', T0)).in_flight
            assert.ok(reserved <= concurrency + prefetch, `${reserved} reserved, concurrency ${concurrency} prefetch ${prefetch}`)
          })
        } finally {
          await ctx.delivery.stop()
        }
      }),
      { numRuns: 60 },
    )
  })

  it('with overlapping reserves landing in any order against the results: never more than concurrency attempts or asked slots, every message once', async () => {
    const fc = (await import('fast-check')).default
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 30 }), fc.array(fc.tuple(fc.boolean(), fc.nat(), fc.integer({ min: 1, max: 8 }))), async (concurrency, count, plan) => {
        const ctx = setup(concurrency, true)
        try {
          await landInAnyOrder(ctx, count, plan, () => {
            assert.ok(ctx.calls.length <= concurrency, `${ctx.calls.length} attempts at once, concurrency ${concurrency}`)
            // Slots asked for by the reserves on their way, plus the attempts running: never past concurrency.
            const asked = ctx.reserves.slice(ctx.reserves.length - ctx.held.length).reduce((a, b) => a + b, 0)
            assert.ok(ctx.calls.length + asked <= concurrency, `${ctx.calls.length} running + ${asked} asked, concurrency ${concurrency}`)
          })
        } finally {
          await ctx.delivery.stop()
        }
      }),
      { numRuns: 60 },
    )
  })
})
