/**
 * The queue worker on the `redis` adapter (builtins.md §7, §13.4), end to end: engines of a fleet,
 * each with its own queue worker, on one real `redis-server` and key prefix. Work enqueued through
 * one engine runs on another's workers (woken without polling), an engine that dies with a message
 * in flight has it delivered again by another after the lease, and durable publish reaches the
 * subscribers of every engine.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { RawWorker, type Frame } from '../../../test/support/raw-worker.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { recordingLogger } from '../../../test/support/recording-log.ts'
import { startTestRedis } from '../../../test/support/redis.ts'
import { waitFor } from '../../../test/support/wait.ts'

const redis = await startTestRedis()
const engines: TestEngine[] = []
const workers: RawWorker[] = []
after(async () => {
  for (const w of workers) await w.close().catch(() => {})
  for (const e of engines) await e.stop().catch(() => {})
  await redis.close()
})

let prefixes = 0
/** Queue settings with the redis adapter on a prefix of its own per test. */
function queueSettings(extra: Record<string, unknown> = {}, config: Record<string, unknown> = {}): Record<string, unknown> {
  return { adapter: { name: 'redis', config: { url: redis.url, key_prefix: `e2e${++prefixes}:`, ...config } }, ...extra }
}

async function engineWith(settings: unknown, log?: ReturnType<typeof recordingLogger>['log']): Promise<TestEngine> {
  const engine = await startTestEngine(log ? { settings: { queue: settings }, log } : { settings: { queue: settings } })
  engines.push(engine)
  return engine
}

async function worker(engine: TestEngine): Promise<RawWorker> {
  const w = await RawWorker.connect(engine.url)
  workers.push(w)
  return w
}

async function call(w: RawWorker, functionId: string, data: unknown): Promise<any> {
  const frame = await w.call(functionId, data)
  if (frame.error) throw Object.assign(new Error(frame.error.message), { code: frame.error.code })
  return frame.result
}

function attemptOf(frame: Frame): string | undefined {
  return /(?:^|,)svc\.queue\.attempt=(\d+)/.exec(String(frame.baggage ?? ''))?.[1]
}

describe('queue worker with adapter redis: a fleet on one Redis', () => {
  it("messages enqueued through engine A run on engine B's worker, which hears of them without polling", async () => {
    const settings = queueSettings({ queue_configs: { jobs: { concurrency: 4 } } })
    const a = await engineWith(settings)
    const b = await engineWith(settings)
    const producer = await worker(a)
    const consumer = await worker(b)
    const seen: number[] = []
    consumer.serve('jobs::run', (data: { i: number }) => void seen.push(data.i))
    await call(consumer, 'engine::functions::list', {})
    // B delivers a first message and goes idle: nothing of its own makes it look at the queue again.
    assert.equal((await producer.call('jobs::run', { i: -1 }, { action: { type: 'enqueue', queue: 'jobs' } })).error, undefined)
    await waitFor(() => seen.length === 1, 'seen.length === 1', 10_000)
    await waitFor(async () => {
      const stats = await call(producer, 'engine::queue::topic_stats', { topic: 'jobs' })
      return stats.depth === 0 && stats.in_flight === 0
    }, 'the condition')
    seen.length = 0
    for (let i = 0; i < 20; i++) {
      const answer = await producer.call('jobs::run', { i }, { action: { type: 'enqueue', queue: 'jobs' } })
      assert.equal(answer.error, undefined)
    }
    // The lease sweep (every 15 s) would find nothing to do: only the wake-up brings them to B.
    await waitFor(() => seen.length === 20, 'seen.length === 20', 10_000)
    assert.deepEqual([...seen].sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i))
    await waitFor(async () => (await call(producer, 'engine::queue::topic_stats', { topic: 'jobs' })).in_flight === 0, "(await call(producer, 'engine::queue::topic_stats', { topic: 'jobs' })).in_flight === 0")
    const stats = await call(producer, 'engine::queue::topic_stats', { topic: 'jobs' })
    assert.deepEqual([stats.depth, stats.dlq_depth], [0, 0])
    const listed = (await call(producer, 'engine::queue::list_topics', {})).find((t: { name: string }) => t.name === 'jobs')
    assert.equal(listed.broker_type, 'redis')
  })

  it('a message in flight on an engine that goes away is delivered again by another engine after the lease, attempt kept', async () => {
    const settings = queueSettings({ queue_configs: { work: { max_retries: 3 } } }, { lease_ms: 2000 })
    const a = await engineWith(settings)
    const b = await engineWith(settings)
    const doomed = await worker(a)
    const started: Frame[] = []
    doomed.serve('work::do', (_data, frame) => {
      started.push(frame)
      return new Promise(() => {}) // never answers: the engine goes away mid-delivery
    })
    await call(doomed, 'engine::functions::list', {})
    assert.equal((await doomed.call('work::do', { n: 1 }, { action: { type: 'enqueue', queue: 'work' } })).error, undefined)
    await waitFor(() => started.length === 1, 'started.length === 1')
    assert.equal(attemptOf(started[0]!), '1')
    await a.stop()
    const survivor = await worker(b)
    const got: Frame[] = []
    survivor.serve('work::do', (_data, frame) => void got.push(frame))
    await waitFor(() => got.length === 1, 'got.length === 1', 15_000)
    assert.deepEqual(got[0]!.data, { n: 1 })
    assert.equal(attemptOf(got[0]!), '2')
    await waitFor(async () => {
      const stats = await call(survivor, 'engine::queue::topic_stats', { topic: 'work' })
      return stats.depth === 0 && stats.in_flight === 0 && stats.dlq_depth === 0
    }, 'the condition')
  })

  it("a durable publish through engine A reaches a subscriber whose trigger lives on engine B", async () => {
    const settings = queueSettings()
    const a = await engineWith(settings)
    const b = await engineWith(settings)
    const publisher = await worker(a)
    const subscriber = await worker(b)
    const got: unknown[] = []
    subscriber.serve('audit::log', (data) => void got.push(data))
    subscriber.send({ type: 'registertrigger', id: 'sub', trigger_type: 'durable:subscriber', function_id: 'audit::log', config: { topic: 'orders' } })
    await waitFor(async () => (await call(subscriber, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).consumer_count === 1, 'the condition')
    assert.deepEqual(await call(publisher, 'svc::durable::publish', { topic: 'orders', data: { id: 7 } }), { subscriber_count: 1 })
    await waitFor(() => got.length === 1, 'got.length === 1', 10_000)
    assert.deepEqual(got, [{ id: 7 }])
  })

  it('a subscriber whose trigger went away on engine A but lives on engine B is not expired by A', async () => {
    // B re-saves its live subscriber every 500 ms (lease_ms / 2), well within the 3 s retention.
    const settings = queueSettings({ subscriber_retention_ms: 3000 }, { lease_ms: 1000 })
    const { log, entries } = recordingLogger()
    const a = await engineWith(settings, log)
    const b = await engineWith(settings)
    const got: unknown[] = []
    const onA = await worker(a)
    onA.serve('audit::log', () => {})
    onA.send({ type: 'registertrigger', id: 'sub-a', trigger_type: 'durable:subscriber', function_id: 'audit::log', config: { topic: 'orders' } })
    await waitFor(async () => (await call(onA, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).consumer_count === 1, "(await call(onA, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).consumer_count === 1")
    const onB = await worker(b)
    onB.serve('audit::log', (data) => void got.push(data))
    onB.send({ type: 'registertrigger', id: 'sub-b', trigger_type: 'durable:subscriber', function_id: 'audit::log', config: { topic: 'orders' } })
    await waitFor(async () => (await call(onB, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).consumer_count === 1, "(await call(onB, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).consumer_count === 1")
    await onA.close() // A's last trigger goes: A records the subscriber detached and plans its expiry
    await waitFor(() => entries.some((e) => /subscriber orders::audit::log (is live on another engine|forgotten)/.test(e.message)), 'entries.some((e) => /subscriber orders::audit::log (is live on another engine|forgotten)/.test(e.message))', 10_000)
    assert.ok(entries.some((e) => /subscriber orders::audit::log is live on another engine/.test(e.message)), JSON.stringify(entries.map((e) => e.message)))
    assert.deepEqual(await call(onB, 'svc::durable::publish', { topic: 'orders', data: { id: 1 } }), { subscriber_count: 1 })
    await waitFor(() => got.length === 1, 'got.length === 1', 10_000)
    assert.equal((await call(onB, 'engine::queue::topic_stats', { topic: 'orders' })).dlq_depth, 0)
  })

  it('refuses a bad lease_ms naming the field', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    const answer = await w.call('configuration::set', { id: 'queue', value: { adapter: { name: 'redis', config: { url: redis.url, lease_ms: 10 } } } })
    assert.equal(answer.error?.code, 'SCHEMA_INVALID')
    assert.match(answer.error.message, /adapter\/config\/lease_ms/)
  })
})

/** Data of a delivery frame, its message id and its attempt (the `svc.queue.*` baggage). */
function deliveryOf(frame: Frame): { n: number; id: string; attempt: string } {
  const id = /(?:^|,)svc\.queue\.message_id=([^,]+)/.exec(String(frame.baggage ?? ''))?.[1]
  return { n: (frame.data as { n: number }).n, id: id!, attempt: attemptOf(frame)! }
}

describe('queue worker with adapter redis: prefetch (issue 19)', () => {
  it('reserves up to concurrency messages ahead of its slots, yet never runs more than concurrency at once; each message once, attempt 1', async () => {
    const engine = await engineWith(queueSettings({ queue_configs: { jobs: { concurrency: 3 } } }))
    const w = await worker(engine)
    let running = 0
    let most = 0
    const waiting: Array<() => void> = []
    const seen: Array<{ n: number; id: string; attempt: string }> = []
    w.serve('jobs::run', (_data, frame) => {
      seen.push(deliveryOf(frame))
      most = Math.max(most, ++running)
      return new Promise<void>((resolve) =>
        waiting.push(() => {
          running--
          resolve()
        }),
      )
    })
    await call(w, 'engine::functions::list', {})
    for (let n = 0; n < 12; n++) assert.equal((await w.call('jobs::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })).error, undefined)
    // Three running, three more reserved (their attempts stored, their leases held) and waiting here.
    await waitFor(async () => running === 3 && (await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })).in_flight === 6, 'three running and three prefetched')
    assert.equal((await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })).depth, 6)
    // Finish them one at a time, then a few at once: a freed slot starts a prefetched message.
    while (seen.length < 12 || running > 0) {
      await waitFor(() => waiting.length > 0, 'a handler running')
      const batch = waiting.splice(0, seen.length % 2 === 0 ? 1 : waiting.length)
      for (const done of batch) done()
      assert.ok(running <= 3, `${running} handlers running`)
    }
    assert.equal(most, 3)
    assert.deepEqual(seen.map((d) => d.n).sort((x, y) => x - y), Array.from({ length: 12 }, (_, n) => n))
    assert.ok(seen.every((d) => d.attempt === '1'))
    await waitFor(async () => {
      const stats = await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })
      return stats.depth === 0 && stats.in_flight === 0 && stats.dlq_depth === 0
    }, 'the queue drained')
  })

  it('prefetch 0 reserves nothing ahead; an adapter without it (memory) neither', async () => {
    for (const adapter of [queueSettings({}, { prefetch: 0 }).adapter, { name: 'memory' }]) {
      const engine = await engineWith({ adapter, queue_configs: { jobs: { concurrency: 2 } } })
      // Stored before their target registers: its registration makes one reserve of every free place.
      for (let n = 0; n < 5; n++) await engine.engine.inject({ function_id: 'engine::queue::enqueue', data: { queue: 'jobs', function_id: 'jobs::run', data: { n } } })
      const w = await worker(engine)
      const started: number[] = []
      w.serve('jobs::run', (data: { n: number }) => {
        started.push(data.n)
        return new Promise(() => {})
      })
      await waitFor(() => started.length === 2, 'two running')
      const stats = await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })
      assert.deepEqual([stats.in_flight, stats.depth], [2, 3])
    }
  })

  it('a graceful stop gives the prefetched messages back with their attempt unchanged: another engine starts them at attempt 1', async () => {
    // A lease far longer than the test: what engine A ran stays A's; only what it gives back moves.
    const settings = queueSettings({ queue_configs: { jobs: { concurrency: 2 } } }, { lease_ms: 120_000 })
    const a = await engineWith(settings)
    const onA = await worker(a)
    const startedOnA: string[] = []
    onA.serve('jobs::run', (_data, frame) => {
      startedOnA.push(deliveryOf(frame).id)
      return new Promise(() => {})
    })
    await call(onA, 'engine::functions::list', {})
    const ids: string[] = []
    for (let n = 0; n < 4; n++) {
      const answer = await onA.call('jobs::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })
      assert.equal(answer.error, undefined)
      ids.push(answer.result.messageReceiptId)
    }
    await waitFor(async () => startedOnA.length === 2 && (await call(onA, 'engine::queue::topic_stats', { topic: 'jobs' })).in_flight === 4, 'two running on A and two prefetched')
    await a.stop()
    const b = await engineWith(settings)
    const onB = await worker(b)
    const got: Array<{ n: number; id: string; attempt: string }> = []
    onB.serve('jobs::run', (_data, frame) => void got.push(deliveryOf(frame)))
    const notStarted = ids.filter((id) => !startedOnA.includes(id))
    assert.equal(notStarted.length, 2)
    // (The two A was running end as the engine's stop closed their worker's connection first.)
    await waitFor(() => notStarted.every((id) => got.some((d) => d.id === id)), 'the two prefetched messages on B', 10_000)
    assert.deepEqual(got.filter((d) => notStarted.includes(d.id)).map((d) => d.attempt), ['1', '1'])
  })

  it("a durable subscriber's last trigger going away gives its prefetched messages back at once, attempt unchanged", async () => {
    const engine = await engineWith(queueSettings({ subscriber_defaults: { concurrency: 1 } }))
    const w = await worker(engine)
    const got: Array<{ n: number; id: string; attempt: string }> = []
    let finish: (() => void) | undefined
    w.serve('audit::log', (_data, frame) => {
      got.push(deliveryOf(frame))
      if (got.length === 1) return new Promise<void>((resolve) => (finish = resolve))
      return undefined
    })
    const subscribe = () => w.send({ type: 'registertrigger', id: 'sub', trigger_type: 'durable:subscriber', function_id: 'audit::log', config: { topic: 'orders' } })
    subscribe()
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).consumer_count === 1, 'the subscriber')
    for (let n = 0; n < 3; n++) await call(w, 'svc::durable::publish', { topic: 'orders', data: { n } })
    // One running, one reserved ahead of the busy slot.
    await waitFor(async () => got.length === 1 && (await call(w, 'engine::queue::topic_stats', { topic: 'orders' })).in_flight === 2, 'one running and one prefetched')
    w.send({ type: 'unregistertrigger', id: 'sub' })
    // The running delivery goes on; the prefetched message is back in the store before it ends.
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'orders' })).in_flight === 1, 'the prefetched message given back')
    finish!()
    subscribe()
    await waitFor(() => got.length === 3, 'the other two delivered once the trigger is back')
    assert.deepEqual(got.map((d) => [d.n, d.attempt]).sort(), [[0, '1'], [1, '1'], [2, '1']])
  })

  it('fifo order and one attempt per group hold with prefetch, across two engines', async () => {
    const settings = queueSettings({ queue_configs: { orders: { type: 'fifo', message_group_field: 'g', concurrency: 4 } } })
    const engines = [await engineWith(settings), await engineWith(settings)]
    const running = new Map<string, number>()
    const order = new Map<string, number[]>()
    let overlaps = 0
    let done = 0
    for (const engine of engines) {
      const w = await worker(engine)
      w.serve('orders::run', async (data: { g: string; i: number }) => {
        if ((running.get(data.g) ?? 0) > 0) overlaps++
        running.set(data.g, (running.get(data.g) ?? 0) + 1)
        order.set(data.g, [...(order.get(data.g) ?? []), data.i])
        await new Promise((resolve) => setImmediate(resolve))
        running.set(data.g, running.get(data.g)! - 1)
        done++
      })
      await call(w, 'engine::functions::list', {})
    }
    const producer = await worker(engines[0]!)
    for (let i = 0; i < 8; i++) {
      for (const g of ['a', 'b', 'c']) assert.equal((await producer.call('orders::run', { g, i }, { action: { type: 'enqueue', queue: 'orders' } })).error, undefined)
    }
    await waitFor(() => done === 24, 'every message handled', 15_000)
    assert.equal(overlaps, 0)
    for (const g of ['a', 'b', 'c']) assert.deepEqual(order.get(g), [0, 1, 2, 3, 4, 5, 6, 7])
  })

  it('one attempt per concurrency key at a time holds with prefetch, across two engines', async () => {
    const settings = queueSettings({ queue_configs: { keyed: { concurrency_key_field: 'k', concurrency: 4 } } })
    const engines = [await engineWith(settings), await engineWith(settings)]
    const running = new Map<string, number>()
    let overlaps = 0
    let done = 0
    for (const engine of engines) {
      const w = await worker(engine)
      w.serve('keyed::run', async (data: { k: string }) => {
        if ((running.get(data.k) ?? 0) > 0) overlaps++
        running.set(data.k, (running.get(data.k) ?? 0) + 1)
        await new Promise((resolve) => setImmediate(resolve))
        running.set(data.k, running.get(data.k)! - 1)
        done++
      })
      await call(w, 'engine::functions::list', {})
    }
    const producer = await worker(engines[0]!)
    for (let i = 0; i < 10; i++) {
      for (const k of ['x', 'y']) assert.equal((await producer.call('keyed::run', { k, i }, { action: { type: 'enqueue', queue: 'keyed' } })).error, undefined)
    }
    await waitFor(() => done === 20, 'every message handled', 15_000)
    assert.equal(overlaps, 0)
  })

  it('refuses a bad prefetch naming the field', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    const answer = await w.call('configuration::set', { id: 'queue', value: { adapter: { name: 'redis', config: { url: redis.url, prefetch: -1 } } } })
    assert.equal(answer.error?.code, 'SCHEMA_INVALID')
    assert.match(answer.error.message, /adapter\/config\/prefetch/)
  })
})

describe('queue worker with adapter redis under random input (fast-check)', () => {
  // The catalogue codes the queue functions answer with (./fuzz.test.ts), plus STORAGE_ERROR: a
  // messageReceiptId already stored is refused by the redis store.
  const CODES = new Set(['INVALID_ARGUMENTS', 'queue_not_set', 'topic_not_set', 'message_id_not_set', 'queue_not_found', 'invalid_message_group', 'invalid_queue_config', 'SCHEMA_INVALID', 'enqueue_error', 'STORAGE_ERROR'])
  const FUNCTIONS = ['svc::durable::publish', 'svc::queue::redrive', 'svc::queue::redrive_message', 'svc::queue::discard_message', 'engine::queue::list_topics', 'engine::queue::topic_stats', 'engine::queue::dlq_topics', 'engine::queue::dlq_messages', 'engine::queue::enqueue']
  // Names that reach Redis keys: layout separators, NUL, glob and hash-tag characters, lone
  // surrogates (merged by UTF-8 unless escaped), U+0001 (the escape), non-BMP and long text.
  const hostile = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.constantFrom('q', 'f', '', ':', 'q:', '\u0000', '*', '{tag}', '|', 'a\ud800', 'a\udc00', '\u0001', '\u0001"q"', '😀', 'x'.repeat(600), null),
  )

  it('answers every payload with a result or a catalogue code, and keeps delivering', async () => {
    const engine = await engineWith(queueSettings({ queue_configs: { q: {}, f: { type: 'fifo', message_group_field: 'g' }, k: { concurrency_key_field: 'g' } } }))
    const w = await worker(engine)
    const got: unknown[] = []
    w.serve('fz::run', (data) => void got.push(data))
    await call(w, 'engine::functions::list', {})
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FUNCTIONS),
        fc.record(
          { queue: fc.oneof(fc.constantFrom('q', 'f', 'k'), hostile), topic: hostile, message_id: hostile, messageReceiptId: hostile, data: fc.oneof(hostile, fc.record({ g: hostile })), function_id: fc.oneof(fc.constant('fz::run'), hostile), offset: hostile, limit: hostile, delay_ms: hostile, idempotency_key: hostile },
          { requiredKeys: [] },
        ),
        async (fn, payload) => {
          try {
            await engine.engine.inject({ function_id: fn, data: payload })
          } catch (error) {
            const code = (error as { code?: string }).code
            assert.ok(code !== undefined && CODES.has(code), `${fn} failed with ${code}: ${(error as Error).message}`)
          }
        },
      ),
      { numRuns: 300 },
    )
    got.length = 0
    await engine.engine.inject({ function_id: 'engine::queue::enqueue', data: { queue: 'q', function_id: 'fz::run', data: { last: true } } })
    await waitFor(() => got.some((d) => JSON.stringify(d) === '{"last":true}'), 'got.some((d) => JSON.stringify(d) === \'{"last":true}\')', 10_000)
  })
})

describe('queue worker with adapter redis: Redis down and back', () => {
  it('answers ADAPTER_UNAVAILABLE while Redis is down and delivers again once it is back, by itself', async () => {
    const engine = await engineWith(queueSettings({ queue_configs: { jobs: {} } }))
    const w = await worker(engine)
    const got: unknown[] = []
    w.serve('jobs::run', (data) => void got.push(data))
    await call(w, 'engine::functions::list', {})
    const enqueue = (data: unknown) => engine.engine.inject({ function_id: 'engine::queue::enqueue', data: { queue: 'jobs', function_id: 'jobs::run', data } })
    await enqueue({ n: 1 })
    await waitFor(() => got.length === 1, 'got.length === 1')
    await redis.stop()
    await assert.rejects(enqueue({ n: 2 }), { code: 'ADAPTER_UNAVAILABLE' })
    await assert.rejects(engine.engine.inject({ function_id: 'engine::queue::topic_stats', data: { topic: 'jobs' } }), { code: 'ADAPTER_UNAVAILABLE' })
    await redis.start()
    await waitFor(async () => {
      try {
        await enqueue({ n: 3 })
        return true
      } catch (error) {
        assert.equal((error as { code?: string }).code, 'ADAPTER_UNAVAILABLE')
        return false
      }
    }, 'the condition', 15_000)
    await waitFor(() => got.some((d) => JSON.stringify(d) === '{"n":3}'), 'got.some((d) => JSON.stringify(d) === \'{"n":3}\')', 10_000)
  })
})
