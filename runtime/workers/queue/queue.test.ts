/**
 * The queue worker through a real engine and real worker sockets (builtins.md §7): enqueue,
 * delivery, retries, DLQ, ordering, concurrency, delays, idempotency, durable pub/sub, settings.
 */
import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, it } from 'node:test'
import { RawWorker, type Frame } from '../../../test/support/raw-worker.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { createManualClock } from '../shared/clock.ts'
import { waitFor } from '../../../test/support/wait.ts'

const engines: TestEngine[] = []
const workers: RawWorker[] = []
after(async () => {
  for (const w of workers) await w.close().catch(() => {})
  for (const e of engines) await e.stop()
})

async function engineWith(queueSettings: unknown, extra: { clock?: ReturnType<typeof createManualClock>; dataDir?: string } = {}): Promise<TestEngine> {
  const options: Parameters<typeof startTestEngine>[0] = { settings: { queue: queueSettings } }
  if (extra.clock) options.clock = extra.clock
  if (extra.dataDir) options.dataDir = extra.dataDir
  const engine = await startTestEngine(options)
  engines.push(engine)
  return engine
}

async function worker(engine: TestEngine): Promise<RawWorker> {
  const w = await RawWorker.connect(engine.url)
  workers.push(w)
  return w
}

/** Calls a function and returns its result, failing on an error frame. */
async function call(w: RawWorker, functionId: string, data: unknown): Promise<any> {
  const frame = await w.call(functionId, data)
  if (frame.error) throw Object.assign(new Error(frame.error.message), { code: frame.error.code })
  return frame.result
}

async function enqueue(w: RawWorker, queue: string, functionId: string, data: unknown, action: Frame = {}): Promise<Frame> {
  return w.call(functionId, data, { action: { type: 'enqueue', queue, ...action } })
}

function baggageOf(frame: Frame): Record<string, string> {
  return Object.fromEntries(String(frame.baggage ?? '').split(',').filter(Boolean).map((e) => e.split('=') as [string, string]))
}

describe('queue worker: enqueue and delivery', () => {
  it('stores, answers the receipt, delivers with svc.queue.* baggage and metadata, acks', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { emails: { max_retries: 1 } } })
    const w = await worker(engine)
    const seen: Frame[] = []
    w.serve('mail::send', (_data, frame) => void seen.push(frame))
    const answer = await enqueue(w, 'emails', 'mail::send', { to: 'a@example.com' }, {})
    assert.equal(answer.error, undefined)
    const receipt = answer.result.messageReceiptId
    assert.match(receipt, /^[0-9a-f-]{36}$/)
    await waitFor(() => seen.length === 1, 'seen.length === 1')
    assert.deepEqual(seen[0]!.data, { to: 'a@example.com' })
    assert.deepEqual(baggageOf(seen[0]!), { 'svc.queue.name': 'emails', 'svc.queue.message_id': receipt, 'svc.queue.attempt': '1', ...pick(baggageOf(seen[0]!), 'svc.function.id', 'iii.function.id') })
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'emails' })).delivered === 1, "(await call(w, 'engine::queue::topic_stats', { topic: 'emails' })).delivered === 1")
    const stats = await call(w, 'engine::queue::topic_stats', { topic: 'emails' })
    assert.equal(stats.kind, 'queue')
    assert.equal(stats.depth, 0)
    assert.equal(stats.in_flight, 0)
    assert.equal(stats.config.max_retries, 1)
  })

  it("delivers the payload as the text the producer's frame carried, before and after a restart (builtin adapter)", async () => {
    // A decode and re-encode would round the 64-bit id (…567891 → …567000) and drop the spaces and the 1.10's zero.
    const text = '{"id": 12345678901234567891, "price": 1.10, "note": "caf\\u00e9 \u{1f600}"}'
    const enqueueFrame = (invocationId: string, functionId: string) =>
      `{"type":"invokefunction","invocation_id":"${invocationId}","function_id":"${functionId}","data":${text},"action":{"type":"enqueue","queue":"jobs"}}`
    const deliveries = (w: RawWorker, functionId: string) => {
      const texts: string[] = []
      w.onText((t) => {
        if (t.includes('"type":"invokefunction"') && t.includes(`"function_id":"${functionId}"`)) texts.push(t)
      })
      return texts
    }
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-queue-text-'))
    try {
      const first = await startTestEngine({ dataDir, settings: { queue: { adapter: { name: 'builtin' }, queue_configs: { jobs: {} } } } })
      try {
        const w = await RawWorker.connect(first.url)
        try {
          const live = deliveries(w, 'live::run')
          w.serve('live::run', () => null)
          await call(w, 'engine::functions::list', {})
          w.send(enqueueFrame('e1', 'live::run'))
          w.send(enqueueFrame('e2', 'later::run')) // not registered: stored, waits for its target
          for (const id of ['e1', 'e2']) assert.equal((await w.next((f) => f.type === 'invocationresult' && f.invocation_id === id)).error, undefined)
          await waitFor(() => live.length === 1, 'live.length === 1')
          assert.ok(live[0]!.includes(`"data":${text}`), live[0])
        } finally {
          await w.close()
        }
      } finally {
        await first.stop()
      }
      const second = await startTestEngine({ dataDir, settings: { queue: { adapter: { name: 'builtin' }, queue_configs: { jobs: {} } } } })
      try {
        const w = await RawWorker.connect(second.url)
        try {
          const later = deliveries(w, 'later::run')
          w.serve('later::run', () => null)
          await waitFor(() => later.length === 1, 'later.length === 1', 8000)
          assert.ok(later[0]!.includes(`"data":${text}`), later[0])
        } finally {
          await w.close()
        }
      } finally {
        await second.stop()
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })

  it('answers queue_not_found, invalid_message_group and bad delay_ms with the spec codes', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { pay: { type: 'fifo', message_group_field: 'account' } } })
    const w = await worker(engine)
    const missing = await enqueue(w, 'nope', 'x::y', {})
    assert.equal(missing.error.code, 'queue_not_found')
    // The §7.3 message, then how to declare the queue (undeclared.test.ts).
    assert.ok(missing.error.message.startsWith("Queue 'nope' is not declared in queue_configs. "), missing.error.message)
    for (const data of [{}, { account: null }, { account: '' }, { account: { a: 1 } }, 'text']) {
      const bad = await enqueue(w, 'pay', 'x::y', data)
      assert.deepEqual(bad.error, { code: 'invalid_message_group', message: "FIFO queue 'pay' requires field 'account' in data" })
    }
    const late = await enqueue(w, 'pay', 'x::y', { account: 1 }, { delay_ms: 604_800_001 })
    assert.equal(late.error.code, 'enqueue_error')
  })

  it('a disabled queue worker leaves enqueue with enqueue_error', async () => {
    const engine = await startTestEngine({ config: { builtins: { queue: { enabled: false } } } as never })
    engines.push(engine)
    const w = await worker(engine)
    const answer = await enqueue(w, 'emails', 'mail::send', {})
    assert.deepEqual(answer.error, { code: 'enqueue_error', message: 'No queue provider is installed; enable the queue worker (svc worker add queue)' })
  })
})

describe('queue worker: retries and dead letters', () => {
  it('retries with backoff, then dead-letters with the last error and the §7.3 shape', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 2, backoff_ms: 20 } } })
    const w = await worker(engine)
    const attempts: Array<{ attempt: string; at: number }> = []
    w.serve('job::run', (_d, frame) => {
      attempts.push({ attempt: baggageOf(frame)['svc.queue.attempt']!, at: Date.now() })
      throw Object.assign(new Error(`refused ${attempts.length}`), { code: 'E_REFUSED' })
    })
    const receipt = (await enqueue(w, 'jobs', 'job::run', { n: 1 })).result.messageReceiptId
    await waitFor(async () => (await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })).length === 1, "(await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })).length === 1")
    assert.deepEqual(attempts.map((a) => a.attempt), ['1', '2', '3'])
    // Backoff 20 ms then 40 ms (generous lower bounds only).
    assert.ok(attempts[1]!.at - attempts[0]!.at >= 15)
    assert.ok(attempts[2]!.at - attempts[1]!.at >= 30)
    const [dead] = await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })
    assert.equal(dead.id, receipt)
    assert.deepEqual(dead.error, { code: 'E_REFUSED', message: 'refused 3' })
    assert.deepEqual([dead.queue, dead.function_id, dead.namespace, dead.attempts, dead.retries, dead.size_bytes], ['jobs', 'job::run', 'default', 3, 2, 7])
    assert.deepEqual(dead.payload, { n: 1 })
    assert.ok(dead.failed_at >= dead.enqueued_at)
    assert.deepEqual(await call(w, 'engine::queue::dlq_topics', {}), [{ topic: 'jobs', kind: 'queue', broker_type: 'memory', message_count: 1 }])
    const stats = await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })
    assert.equal(stats.failed, 1)
    assert.equal(stats.dlq_depth, 1)
  })

  it('NON_RETRYABLE dead-letters at once; retry_after_ms replaces the backoff', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 5, backoff_ms: 3_600_000 } } })
    const w = await worker(engine)
    let retried = 0
    w.serve('job::fatal', () => {
      throw Object.assign(new Error('bad input'), { code: 'NON_RETRYABLE' })
    })
    w.serve('job::later', () => {
      if (retried++ === 0) throw Object.assign(new Error('busy'), { code: 'BUSY', retry_after_ms: 10 })
    })
    await enqueue(w, 'jobs', 'job::fatal', {})
    await enqueue(w, 'jobs', 'job::later', {})
    await waitFor(async () => (await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })).length === 1, "(await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })).length === 1", 15_000)
    const [dead] = await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })
    assert.equal(dead.attempts, 1)
    assert.equal(dead.error.code, 'NON_RETRYABLE')
    // With backoff at one hour, only retry_after_ms can bring the second attempt this soon.
    await waitFor(() => retried === 2, 'retried === 2', 15_000)
  })

  it('redrives one message from the middle of a DLQ, discards another, redrives the rest', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 0 } } })
    const w = await worker(engine)
    let healthy = false
    const delivered: number[] = []
    w.serve('job::run', (data) => {
      if (!healthy) throw new Error('down')
      delivered.push(data.n)
    })
    const receipts: string[] = []
    for (let n = 0; n < 5; n++) receipts.push((await enqueue(w, 'jobs', 'job::run', { n })).result.messageReceiptId)
    await waitFor(async () => (await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })).length === 5, "(await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })).length === 5")
    healthy = true
    const middle = receipts[2]!
    assert.deepEqual(await call(w, 'svc::queue::redrive_message', { queue: 'jobs', message_id: middle }), { queue: 'jobs', message_id: middle, redriven: 1 })
    await waitFor(() => delivered.length === 1, 'delivered.length === 1')
    assert.deepEqual(delivered, [2])
    assert.deepEqual(await call(w, 'svc::queue::redrive_message', { queue: 'jobs', message_id: middle }), { queue: 'jobs', message_id: middle, redriven: 0 })
    assert.deepEqual(await call(w, 'svc::queue::discard_message', { queue: 'jobs', message_id: receipts[0] }), { queue: 'jobs', message_id: receipts[0], discarded: 1 })
    assert.deepEqual(await call(w, 'svc::queue::discard_message', { queue: 'jobs', message_id: receipts[0] }), { queue: 'jobs', message_id: receipts[0], discarded: 0 })
    const left = await call(w, 'engine::queue::dlq_messages', { topic: 'jobs' })
    assert.deepEqual(left.map((m: { payload: { n: number } }) => m.payload.n).sort(), [1, 3, 4])
    assert.deepEqual(await call(w, 'svc::queue::redrive', { queue: 'jobs' }), { queue: 'jobs', redriven: 3 })
    await waitFor(() => delivered.length === 4, 'delivered.length === 4')
    assert.deepEqual(delivered.slice(1).sort(), [1, 3, 4])
  })

  it('answers queue_not_set, message_id_not_set, topic_not_set and queue_not_found', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    const code = async (id: string, data: unknown) => (await w.call(id, data)).error?.code
    assert.equal(await code('svc::queue::redrive', {}), 'queue_not_set')
    assert.equal(await code('svc::queue::redrive_message', { queue: 'q' }), 'message_id_not_set')
    assert.equal(await code('svc::durable::publish', { data: 1 }), 'topic_not_set')
    assert.equal(await code('svc::queue::redrive', { queue: 'ghost' }), 'queue_not_found')
    assert.equal(await code('engine::queue::topic_stats', { topic: 'ghost' }), 'queue_not_found')
    assert.equal(await code('iii::queue::redrive', {}), 'queue_not_set')
  })
})

describe('queue worker: ordering and concurrency', () => {
  it('caps attempts in flight at concurrency, and at one per concurrency key', async () => {
    const engine = await engineWith({
      adapter: { name: 'memory' },
      queue_configs: { wide: { concurrency: 3 }, keyed: { concurrency: 4, concurrency_key_field: 'account' } },
    })
    const w = await worker(engine)
    let running = 0
    let peak = 0
    const perKey = new Map<string, number>()
    let keyPeak = 0
    let done = 0
    const hold = () => new Promise((resolve) => setTimeout(resolve, 15))
    w.serve('wide::run', async () => {
      peak = Math.max(peak, ++running)
      await hold()
      running--
      done++
    })
    w.serve('keyed::run', async (data) => {
      const n = (perKey.get(data.account) ?? 0) + 1
      perKey.set(data.account, n)
      keyPeak = Math.max(keyPeak, n)
      await hold()
      perKey.set(data.account, n - 1)
      done++
    })
    for (let i = 0; i < 12; i++) await enqueue(w, 'wide', 'wide::run', { i })
    for (let i = 0; i < 12; i++) await enqueue(w, 'keyed', 'keyed::run', { account: `a${i % 3}` })
    await waitFor(() => done === 24, 'done === 24', 10_000)
    assert.equal(peak, 3)
    assert.equal(keyPeak, 1)
  })

  it('fifo: one attempt per group in enqueue order, a failing message retried in place', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { pay: { type: 'fifo', message_group_field: 'account', backoff_ms: 10, concurrency: 5 } } })
    const w = await worker(engine)
    const order: string[] = []
    let failedOnce = false
    const active = new Set<string>()
    let overlap = false
    w.serve('pay::charge', async (data) => {
      if (active.has(data.account)) overlap = true
      active.add(data.account)
      await new Promise((resolve) => setTimeout(resolve, 2))
      active.delete(data.account)
      if (data.account === 'a' && data.n === 1 && !failedOnce) {
        failedOnce = true
        throw new Error('transient')
      }
      order.push(`${data.account}${data.n}`)
    })
    for (let n = 0; n < 4; n++) {
      await enqueue(w, 'pay', 'pay::charge', { account: 'a', n })
      await enqueue(w, 'pay', 'pay::charge', { account: 'b', n })
    }
    await waitFor(() => order.length === 8, 'order.length === 8')
    assert.deepEqual(order.filter((o) => o.startsWith('a')), ['a0', 'a1', 'a2', 'a3'])
    assert.deepEqual(order.filter((o) => o.startsWith('b')), ['b0', 'b1', 'b2', 'b3'])
    assert.equal(overlap, false)
  })

  it('a message whose target is not registered waits without using an attempt', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 0 } } })
    const w = await worker(engine)
    const pings: unknown[] = []
    w.serve('ping::run', (data) => void pings.push(data))
    await enqueue(w, 'jobs', 'late::run', { n: 1 })
    // A message to a registered function behind it on the same queue: once it is delivered, the
    // queue was pumped past the waiting one.
    await enqueue(w, 'jobs', 'ping::run', { n: 2 })
    await waitFor(() => pings.length === 1, 'the message behind it delivered')
    const stats = await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })
    assert.equal(stats.dlq_depth, 0)
    assert.equal(stats.depth, 1)
    const seen: Frame[] = []
    w.serve('late::run', (_d, frame) => void seen.push(frame))
    await waitFor(() => seen.length === 1, 'seen.length === 1', 8000)
    assert.equal(baggageOf(seen[0]!)['svc.queue.attempt'], '1')
  })

  it('a message enqueued to an idle queue is stored already in flight: one row write, in the commit that answers the enqueue (builtin adapter)', async () => {
    const engine = await engineWith({ adapter: { name: 'builtin' }, queue_configs: { idle: {} } })
    const w = await worker(engine)
    const handled: Frame[] = []
    w.serve('idle::run', (data) => void handled.push(data))
    await call(w, 'engine::functions::list', {})
    // What this worker receives, in order: each enqueue's answer comes before its message's delivery.
    const order: string[] = []
    w.onFrame((f) => {
      if (f.type === 'invocationresult' && f.result?.messageReceiptId !== undefined) order.push('receipt')
      else if (f.type === 'invokefunction' && f.function_id === 'idle::run') order.push('delivery')
    })
    // Every write to the queue's rows, in order, recorded inside the engine's own transactions.
    const db = new DatabaseSync(join(engine.dataDir, 'queue.db'), { timeout: 10_000 })
    db.exec(`CREATE TABLE test_log (op TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL);
      CREATE TRIGGER test_ins AFTER INSERT ON queue_messages BEGIN INSERT INTO test_log VALUES ('insert', NEW.state, NEW.attempts); END;
      CREATE TRIGGER test_upd AFTER UPDATE ON queue_messages BEGIN INSERT INTO test_log VALUES ('update', NEW.state, NEW.attempts); END;
      CREATE TRIGGER test_del AFTER DELETE ON queue_messages BEGIN INSERT INTO test_log VALUES ('delete', OLD.state, OLD.attempts); END;`)
    try {
      for (let n = 1; n <= 3; n++) {
        assert.equal((await enqueue(w, 'idle', 'idle::run', { n })).error, undefined)
        await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'idle' })).delivered === n, 'the message acknowledged')
      }
      const log = db.prepare('SELECT op, state, attempts FROM test_log ORDER BY rowid').all().map((r) => [r.op, r.state, r.attempts])
      const once = [
        ['insert', 'in_flight', 1],
        ['delete', 'in_flight', 1],
      ]
      assert.deepEqual(log, [...once, ...once, ...once])
      assert.deepEqual(handled, [{ n: 1 }, { n: 2 }, { n: 3 }])
      assert.deepEqual(order, ['receipt', 'delivery', 'receipt', 'delivery', 'receipt', 'delivery'])
    } finally {
      db.close()
    }
  })

  it('a message waiting for its target costs no write to queue.db (builtin adapter, manual clock), then is delivered once', async () => {
    const clock = createManualClock(1_000)
    const engine = await engineWith({ adapter: { name: 'builtin' }, queue_configs: { jobs: {} } }, { clock })
    const w = await worker(engine)
    const pings: Frame[] = []
    w.serve('ping::run', (data) => void pings.push(data))
    const receipt = (await enqueue(w, 'jobs', 'late::run', { blob: 'x'.repeat(100_000) })).result.messageReceiptId as string
    // Count every write to the waiting message's row from here on, inside the engine's own transactions.
    const db = new DatabaseSync(join(engine.dataDir, 'queue.db'), { timeout: 10_000 })
    db.exec(`CREATE TABLE test_writes (n INTEGER NOT NULL); INSERT INTO test_writes VALUES (0);
      CREATE TRIGGER test_count_updates AFTER UPDATE ON queue_messages WHEN old.id = '${receipt}' BEGIN UPDATE test_writes SET n = n + 1; END;`)
    const writes = () => (db.prepare('SELECT n FROM test_writes').get() as { n: number }).n
    try {
      // Several periods of the worker's retry timer pass; a message to a registered function on the
      // same queue goes through after each, so the queue was pumped meanwhile.
      for (let round = 1; round <= 3; round++) {
        clock.advance(2_000)
        assert.equal((await enqueue(w, 'jobs', 'ping::run', { round })).error, undefined)
        await waitFor(() => pings.length === round, 'pings.length === round')
        await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })).delivered === round, "(await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })).delivered === round")
      }
      assert.equal(writes(), 0, 'the waiting message was written while its target was not registered')
      const stats = await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })
      assert.deepEqual([stats.depth, stats.in_flight, stats.dlq_depth], [1, 0, 0])
      const late: Frame[] = []
      w.serve('late::run', (_d, frame) => void late.push(frame))
      await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })).delivered === 4, "(await call(w, 'engine::queue::topic_stats', { topic: 'jobs' })).delivered === 4", 8000)
      assert.equal(late.length, 1)
      assert.equal(baggageOf(late[0]!)['svc.queue.attempt'], '1')
      assert.equal(baggageOf(late[0]!)['svc.queue.message_id'], receipt)
    } finally {
      db.close()
    }
  })
})

describe('queue worker: delay and idempotency (§7.4 extensions)', () => {
  it('delivers a delayed message only once its time has come (manual clock)', async () => {
    const clock = createManualClock(1_000)
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { later: {} } }, { clock })
    const w = await worker(engine)
    const seen: Frame[] = []
    w.serve('later::run', (data) => void seen.push(data))
    const answer = await enqueue(w, 'later', 'later::run', { n: 1 }, { delay_ms: 3_600_000 })
    assert.equal(answer.error, undefined)
    assert.equal((await call(w, 'engine::queue::topic_stats', { topic: 'later' })).delayed, 1)
    clock.advance(3_599_000)
    assert.equal(await w.silent((f) => f.type === 'invokefunction' && f.function_id === 'later::run', 150), true)
    clock.advance(1_000)
    await waitFor(() => seen.length === 1, 'seen.length === 1')
  })

  it('a repeated idempotency_key returns the first receipt and stores nothing', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { once: {} } })
    const w = await worker(engine)
    let runs = 0
    const first = await enqueue(w, 'once', 'once::run', { n: 1 }, { idempotency_key: 'order-42' })
    const second = await enqueue(w, 'once', 'once::run', { n: 2 }, { idempotency_key: 'order-42' })
    assert.equal(second.result.messageReceiptId, first.result.messageReceiptId)
    const other = await enqueue(w, 'once', 'once::run', { n: 3 }, { idempotency_key: 'order-43' })
    assert.notEqual(other.result.messageReceiptId, first.result.messageReceiptId)
    assert.equal((await call(w, 'engine::queue::topic_stats', { topic: 'once' })).depth, 2)
    w.serve('once::run', () => void runs++)
    await waitFor(() => runs === 2, 'runs === 2')
  })
})

describe('queue worker: durable pub/sub (§7.5)', () => {
  it('publishes one copy per subscriber; an offline subscriber gets its copy when it returns', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const online = await worker(engine)
    const gotA: unknown[] = []
    online.serve('audit::a', (data) => void gotA.push(data))
    online.send({ type: 'registertrigger', id: 'ta', trigger_type: 'durable:subscriber', function_id: 'audit::a', config: { topic: 'orders' } })
    const offline = await worker(engine)
    offline.serve('audit::b', () => {})
    offline.send({ type: 'registertrigger', id: 'tb', trigger_type: 'queue', function_id: 'audit::b', config: { queue: 'orders', maxRetries: 1 } })
    await waitFor(async () => (await call(online, 'engine::queue::topic_stats', { topic: 'orders' }).catch(() => ({}))).subscribers?.length === 2, 'the condition')
    await offline.close()
    await waitFor(async () => (await call(online, 'engine::queue::topic_stats', { topic: 'orders' })).consumer_count === 1, "(await call(online, 'engine::queue::topic_stats', { topic: 'orders' })).consumer_count === 1")
    assert.deepEqual(await call(online, 'svc::durable::publish', { topic: 'orders', data: { id: 7 } }), { subscriber_count: 2 })
    await waitFor(() => gotA.length === 1, 'gotA.length === 1')
    const stats = await call(online, 'engine::queue::topic_stats', { topic: 'orders' })
    const b = stats.subscribers.find((s: { function_id: string }) => s.function_id === 'audit::b')
    assert.deepEqual([b.online, b.depth, b.queue], [false, 1, 'orders::audit::b'])
    const back = await worker(engine)
    const gotB: unknown[] = []
    back.serve('audit::b', (data) => void gotB.push(data))
    back.send({ type: 'registertrigger', id: 'tb2', trigger_type: 'durable:subscriber', function_id: 'audit::b', config: { topic: 'orders' } })
    await waitFor(() => gotB.length === 1, 'gotB.length === 1')
    assert.deepEqual(gotB, [{ id: 7 }])
    const topics = await call(online, 'engine::queue::list_topics', {})
    assert.deepEqual(topics.find((t: { name: string }) => t.name === 'orders'), { name: 'orders', kind: 'topic', broker_type: 'memory', subscriber_count: 2, depth: 0, dlq_depth: 0 })
  })

  it('a publish without subscribers lands in the DLQ (no_subscribers); its redrive publishes again', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    assert.deepEqual(await call(w, 'svc::durable::publish', { topic: 'lonely', data: { x: 1 } }), { subscriber_count: 0 })
    const [dead] = await call(w, 'engine::queue::dlq_messages', { topic: 'lonely' })
    assert.equal(dead.error.code, 'no_subscribers')
    const got: unknown[] = []
    w.serve('lonely::sub', (data) => void got.push(data))
    w.send({ type: 'registertrigger', id: 't1', trigger_type: 'durable:subscriber', function_id: 'lonely::sub', config: { topic: 'lonely' } })
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'lonely' }).catch(() => ({}))).consumer_count === 1, "(await call(w, 'engine::queue::topic_stats', { topic: 'lonely' }).catch(() => ({}))).consumer_count === 1")
    assert.deepEqual(await call(w, 'svc::queue::redrive_message', { queue: 'lonely', message_id: dead.id }), { queue: 'lonely', message_id: dead.id, redriven: 1 })
    await waitFor(() => got.length === 1, 'got.length === 1')
    assert.deepEqual(got, [{ x: 1 }])
  })

  it('forgets a subscriber after subscriber_retention_ms and moves its copies to its DLQ (manual clock)', async () => {
    const clock = createManualClock(0)
    const engine = await engineWith({ adapter: { name: 'memory' }, subscriber_retention_ms: 60_000 }, { clock })
    const w = await worker(engine)
    const gone = await worker(engine)
    gone.serve('gone::sub', () => {})
    gone.send({ type: 'registertrigger', id: 'g', trigger_type: 'durable:subscriber', function_id: 'gone::sub', config: { topic: 'news', condition_function_id: 'gone::cond' } })
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'news' }).catch(() => ({}))).consumer_count === 1, "(await call(w, 'engine::queue::topic_stats', { topic: 'news' }).catch(() => ({}))).consumer_count === 1")
    await gone.close()
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'news' })).consumer_count === 0, "(await call(w, 'engine::queue::topic_stats', { topic: 'news' })).consumer_count === 0")
    assert.deepEqual(await call(w, 'svc::durable::publish', { topic: 'news', data: { n: 1 } }), { subscriber_count: 1 })
    clock.advance(59_000)
    assert.equal((await call(w, 'engine::queue::topic_stats', { topic: 'news' })).depth, 1)
    clock.advance(1_000)
    await waitFor(async () => (await call(w, 'engine::queue::dlq_messages', { topic: 'news::gone::sub' }).catch(() => [])).length === 1, "(await call(w, 'engine::queue::dlq_messages', { topic: 'news::gone::sub' }).catch(() => [])).length === 1")
    const [dead] = await call(w, 'engine::queue::dlq_messages', { topic: 'news::gone::sub' })
    assert.equal(dead.error.code, 'subscriber_expired')
    assert.deepEqual(await call(w, 'svc::durable::publish', { topic: 'news', data: { n: 2 } }), { subscriber_count: 0 })
  })

  it('a fifo subscriber copy without its group field goes to that DLQ; the publish succeeds; conditions filter', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    const got: unknown[] = []
    w.serve('ledger::apply', (data) => void got.push(data))
    w.serve('ledger::wanted', (data) => data.skip !== true)
    w.send({
      type: 'registertrigger',
      id: 'f',
      trigger_type: 'durable:subscriber',
      function_id: 'ledger::apply',
      config: { topic: 'ledger', condition_function_id: 'ledger::wanted', queue_config: { type: 'fifo', messageGroupField: 'account' } },
    })
    await waitFor(async () => (await call(w, 'engine::queue::topic_stats', { topic: 'ledger' }).catch(() => ({}))).consumer_count === 1, "(await call(w, 'engine::queue::topic_stats', { topic: 'ledger' }).catch(() => ({}))).consumer_count === 1")
    assert.deepEqual(await call(w, 'svc::durable::publish', { topic: 'ledger', data: { n: 1 } }), { subscriber_count: 1 })
    await call(w, 'svc::durable::publish', { topic: 'ledger', data: { account: 'a', n: 2, skip: true } })
    await call(w, 'svc::durable::publish', { topic: 'ledger', data: { account: 'a', n: 3 } })
    await waitFor(() => got.length === 1, 'got.length === 1')
    assert.deepEqual(got, [{ account: 'a', n: 3 }])
    const [dead] = await call(w, 'engine::queue::dlq_messages', { topic: 'ledger' })
    assert.deepEqual(dead.error, { code: 'invalid_message_group', message: "FIFO queue 'ledger::ledger::apply' requires field 'account' in data" })
  })

  it('refuses a subscriber trigger without a topic with INVALID_TRIGGER_CONFIG', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    w.send({ type: 'registertrigger', id: 'bad', trigger_type: 'durable:subscriber', function_id: 'x::y', config: {} })
    const result = await w.next((f) => f.type === 'triggerregistrationresult' && f.id === 'bad')
    assert.deepEqual(result.error, { code: 'INVALID_TRIGGER_CONFIG', message: 'topic is required for durable:subscriber triggers' })
  })
})

describe('queue worker: settings', () => {
  it('applies configuration::set at runtime; refuses bad settings and keeps the previous ones', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' }, queue_configs: { a: {} } })
    const w = await worker(engine)
    assert.equal((await enqueue(w, 'b', 'x::y', {})).error.code, 'queue_not_found')
    await call(w, 'configuration::set', { id: 'queue', value: { adapter: { name: 'memory' }, queue_configs: { a: {}, b: { concurrency: 2 } } } })
    await waitFor(async () => (await enqueue(w, 'b', 'x::y', {})).error === undefined, "(await enqueue(w, 'b', 'x::y', {})).error === undefined")
    const refused = await w.call('configuration::set', { id: 'queue', value: { queue_configs: { c: { type: 'lifo' } } } })
    assert.equal(refused.error.code, 'SCHEMA_INVALID')
    // Passes the schema, fails the §7.1 rule: not applied, reported as last_config_error.
    await call(w, 'configuration::set', { id: 'queue', value: { adapter: { name: 'memory' }, queue_configs: { c: { type: 'fifo' } } } })
    await waitFor(async () => {
      const info = await call(w, 'engine::workers::info', { name: 'queue' }).catch(() => undefined)
      return String(info?.worker?.last_config_error).includes("is of type 'fifo' but 'message_group_field' is not set")
    }, 'the condition')
    assert.equal((await enqueue(w, 'b', 'x::y', {})).error, undefined)
    assert.equal((await enqueue(w, 'c', 'x::y', {})).error.code, 'queue_not_found')
  })

  it('a delivery running while the adapter changes is acknowledged on the backend its message came from (builtins.md §2.9)', async () => {
    const engine = await engineWith({ adapter: { name: 'builtin' }, queue_configs: { jobs: { concurrency: 1 } } })
    const w = await worker(engine)
    let finish!: () => void
    const blocked = new Promise<void>((resolve) => (finish = resolve))
    const seen: unknown[] = []
    w.serve('jobs::run', async (data) => {
      seen.push(data)
      await blocked
    })
    const receipt = (await enqueue(w, 'jobs', 'jobs::run', { n: 1 })).result.messageReceiptId as string
    await waitFor(() => seen.length === 1, 'seen.length === 1')
    await call(w, 'configuration::set', { id: 'queue', value: { adapter: { name: 'memory' }, queue_configs: { jobs: { concurrency: 1 } } } })
    await waitFor(async () => (await call(w, 'engine::queue::list_topics', {})).every((t: { broker_type: string }) => t.broker_type === 'memory'), 'the condition')
    const db = new DatabaseSync(join(engine.dataDir, 'queue.db'), { timeout: 10_000 })
    try {
      const stored = () => (db.prepare('SELECT COUNT(*) AS n FROM queue_messages WHERE id = ?').get(receipt) as { n: number }).n
      assert.equal(stored(), 1, 'the message is in flight in queue.db')
      finish()
      await waitFor(() => stored() === 0, 'stored() === 0')
    } finally {
      db.close()
    }
    // The memory backend serves new messages meanwhile.
    assert.equal((await enqueue(w, 'jobs', 'jobs::run', { n: 2 })).error, undefined)
    await waitFor(() => seen.length === 2, 'seen.length === 2')
  })

  it('queue::define declares a queue at once, reports changed, validates with invalid_queue_config', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    assert.deepEqual(await call(w, 'queue::define', { queue: 'fresh', config: { max_retries: 1 } }), { queue: 'fresh', changed: true })
    assert.equal((await enqueue(w, 'fresh', 'x::y', {})).error, undefined)
    assert.deepEqual(await call(w, 'queue::define', { queue: 'fresh', config: { max_retries: 1 } }), { queue: 'fresh', changed: false })
    const badType = await w.call('queue::define', { queue: 'q', config: { type: 'lifo' } })
    assert.deepEqual(badType.error, { code: 'invalid_queue_config', message: "Queue 'q' has invalid type 'lifo'. Must be 'standard' or 'fifo'" })
    // A value String() cannot turn into text (from JSON: an object whose toString is not a function).
    const objectName = await w.call('queue::define', { queue: { toString: '' }, config: {} })
    assert.deepEqual(objectName.error, { code: 'invalid_queue_config', message: 'Queue name {"toString":""} must match [A-Za-z0-9_.:-]{1,128}' })
    const objectType = await w.call('queue::define', { queue: 'q', config: { type: { toString: 1 } } })
    assert.deepEqual(objectType.error, { code: 'invalid_queue_config', message: 'Queue \'q\' has invalid type {"toString":1}. Must be \'standard\' or \'fifo\'' })
    const noGroup = await w.call('queue::define', { queue: 'q', config: { type: 'fifo' } })
    assert.deepEqual(noGroup.error, { code: 'invalid_queue_config', message: "Queue 'q' is of type 'fifo' but 'message_group_field' is not set" })
    const stored = await call(w, 'configuration::get', { id: 'queue' })
    assert.deepEqual(stored.value.queue_configs.fresh, { max_retries: 1 })
  })

  it('refuses __proto__, constructor and prototype as queue names (queue::define and settings); toString is an ordinary name', async () => {
    const engine = await engineWith({ adapter: { name: 'memory' } })
    const w = await worker(engine)
    for (const name of ['__proto__', 'constructor', 'prototype']) {
      const refused = await w.call('queue::define', { queue: name, config: { max_retries: 1 } })
      assert.deepEqual(refused.error, { code: 'invalid_queue_config', message: `Queue name '${name}' is reserved: __proto__, constructor and prototype cannot name a queue` })
      // The settings entry refuses it too (its schema), whether written whole or as JSON text with an own __proto__ key.
      const value = JSON.parse(`{"adapter": {"name": "memory"}, "queue_configs": {"${name}": {}}}`)
      assert.equal((await w.call('configuration::set', { id: 'queue', value })).error?.code, 'SCHEMA_INVALID')
    }
    const stored = await call(w, 'configuration::get', { id: 'queue', raw: true })
    assert.deepEqual(Object.keys(stored.value.queue_configs ?? {}), [])
    assert.deepEqual(await call(w, 'queue::define', { queue: 'toString', config: {} }), { queue: 'toString', changed: true })
    assert.deepEqual(await call(w, 'queue::define', { queue: 'toString', config: {} }), { queue: 'toString', changed: false })
    assert.equal((await enqueue(w, 'toString', 'x::y', {})).error, undefined)
  })
})

function pick(record: Record<string, string>, ...keys: string[]): Record<string, string> {
  return Object.fromEntries(keys.filter((k) => record[k] !== undefined).map((k) => [k, record[k]!]))
}

after(async () => {
  // Temporary data directories of manual-clock engines.
  for (const e of engines) await rm(e.dataDir, { recursive: true, force: true }).catch(() => {})
})
