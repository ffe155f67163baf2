/**
 * The behaviour every {@link QueueBackend} must show (./types.ts). Each backend's test file calls
 * {@link runQueueBackendConformance} with a factory returning a fresh, empty store.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { RawJson } from 'svc-protocol/codec'
import { type QueueBackend, type QueueMessageInput } from './types.ts'

export type QueueBackendFactory = () => QueueBackend | Promise<QueueBackend>

const T0 = 1_700_000_000_000

/** A message input with defaults: queue `q`, target `t::f` in `default`, ready at T0. */
export function input(fields: Partial<QueueMessageInput> = {}): QueueMessageInput {
  return { id: randomUUID(), queue: 'q', function_id: 't::f', namespace: 'default', data: { n: 0 }, enqueued_at: T0, ready_at: T0, ...fields }
}

const ids = (messages: Array<{ id: string }>) => messages.map((m) => m.id)

/**
 * Registers the cases as a `node:test` suite named `<name> queue backend conformance`.
 * @example runQueueBackendConformance('memory', () => openMemoryQueue())
 */
export function runQueueBackendConformance(name: string, factory: QueueBackendFactory): void {
  describe(`${name} queue backend conformance`, () => {
    const withBackend = (title: string, body: (b: QueueBackend) => Promise<void>) =>
      it(title, async () => {
        const backend = await factory()
        try {
          await body(backend)
        } finally {
          await backend.close()
        }
      })

    withBackend('enqueue, reserve in order with attempt 1, ack deletes', async (b) => {
      const a = input({ data: { n: 1 } })
      const c = input({ data: { n: 2 } })
      assert.deepEqual(await b.enqueue([a, c]), [
        { id: a.id, duplicate: false },
        { id: c.id, duplicate: false },
      ])
      const got = await b.reserve('q', { now: T0, limit: 10 })
      assert.deepEqual(ids(got), [a.id, c.id])
      assert.equal(got[0]!.attempts, 1)
      assert.equal(got[0]!.state, 'in_flight')
      assert.deepEqual(got[0]!.data.value, { n: 1 })
      assert.equal(got[0]!.data.text, '{"n":1}')
      assert.equal(got[0]!.size_bytes, 7)
      assert.deepEqual(await b.counts('q', T0), { pending: 0, delayed: 0, in_flight: 2, dead: 0 })
      assert.equal(await b.ack(a.id), true)
      assert.equal(await b.ack(a.id), false)
      assert.equal(await b.get(a.id), undefined)
      assert.deepEqual(await b.reserve('q', { now: T0, limit: 10 }), [])
    })

    withBackend('a payload given as JSON text is stored and delivered as that text, digits and spaces kept', async (b) => {
      // What a producer's frame carried: a 64-bit id that a decode and re-encode would round (…567891 → …567000).
      const text = '{ "id": 12345678901234567891, "price": 1.10, "name": "caf\\u00e9", "nested": {"data": [1, 2]} }'
      const exact = input({ data: new RawJson(text) })
      // A text with a lone surrogate (no WebSocket frame has one; an in-process caller's may): encoded, so that UTF-8 storage keeps it.
      const lone = input({ data: new RawJson('"a\ud800"') })
      const value = input({ data: { s: 'b\udc00' } })
      await b.enqueue([exact, lone, value])
      const got = await b.reserve('q', { now: T0, limit: 10 })
      assert.deepEqual(ids(got), [exact.id, lone.id, value.id])
      assert.equal(got[0]!.data.text, text)
      assert.equal(got[0]!.size_bytes, Buffer.byteLength(text))
      assert.equal(got[1]!.data.value, 'a\ud800')
      assert.deepEqual(got[2]!.data.value, { s: 'b\udc00' })
      assert.equal((await b.get(exact.id))!.data.text, text)
    })

    withBackend('reserve honours limit and leaves the rest pending', async (b) => {
      const msgs = [input(), input(), input()]
      await b.enqueue(msgs)
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 2 })), ids(msgs.slice(0, 2)))
      assert.deepEqual(await b.counts('q', T0), { pending: 1, delayed: 0, in_flight: 2, dead: 0 })
    })

    withBackend('delayed visibility: a message is not reserved before ready_at', async (b) => {
      const late = input({ ready_at: T0 + 1000 })
      const now = input()
      await b.enqueue([late, now])
      assert.deepEqual(await b.counts('q', T0), { pending: 1, delayed: 1, in_flight: 0, dead: 0 })
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 10 })), [now.id])
      assert.equal(await b.nextReadyAt('q', T0), T0 + 1000)
      assert.deepEqual(ids(await b.reserve('q', { now: T0 + 1000, limit: 10 })), [late.id])
    })

    withBackend('nextReadyAt still reports a message that came due after the last reserve', async (b) => {
      // The worker reserves, finds nothing, then asks when to look again; the clock may have
      // passed the message's ready_at in between. Losing it here would stall the queue.
      const soon = input({ ready_at: T0 + 5 })
      await b.enqueue([soon])
      assert.deepEqual(await b.reserve('q', { now: T0, limit: 10 }), [])
      const next = await b.nextReadyAt('q', T0 + 10)
      assert.ok(next !== undefined && next <= T0 + 10, `nextReadyAt gave ${next}`)
      assert.deepEqual(ids(await b.reserve('q', { now: T0 + 10, limit: 10 })), [soon.id])
    })

    withBackend('release (nack) with a delay keeps the attempt, refund gives it back', async (b) => {
      const m = input()
      await b.enqueue([m])
      await b.reserve('q', { now: T0, limit: 1 })
      assert.equal(await b.release(m.id, { ready_at: T0 + 500 }), true)
      assert.deepEqual(await b.reserve('q', { now: T0 + 499, limit: 1 }), [])
      const again = await b.reserve('q', { now: T0 + 500, limit: 1 })
      assert.equal(again[0]!.attempts, 2)
      await b.release(m.id, { ready_at: T0 + 500, refund: true })
      assert.equal((await b.reserve('q', { now: T0 + 500, limit: 1 }))[0]!.attempts, 2)
    })

    withBackend('standard queues start oldest-ready first', async (b) => {
      const first = input({ ready_at: T0 + 20 })
      const second = input({ ready_at: T0 + 10 })
      const third = input({ ready_at: T0 + 30 })
      await b.enqueue([first, second, third])
      assert.deepEqual(ids(await b.reserve('q', { now: T0 + 100, limit: 10 })), [second.id, first.id, third.id])
    })

    withBackend('fifo groups: one in flight per group, enqueue order, retried in place', async (b) => {
      const a1 = input({ group: 'a' })
      const a2 = input({ group: 'a' })
      const b1 = input({ group: 'b' })
      await b.enqueue([a1, a2, b1])
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 10 })), [a1.id, b1.id])
      await b.release(a1.id, { ready_at: T0 + 100 })
      // a1 is delayed at the head of its group: a2 must wait.
      assert.deepEqual(await b.reserve('q', { now: T0 + 50, limit: 10 }), [])
      assert.deepEqual(ids(await b.reserve('q', { now: T0 + 100, limit: 10 })), [a1.id])
      await b.ack(a1.id)
      assert.deepEqual(ids(await b.reserve('q', { now: T0 + 100, limit: 10 })), [a2.id])
    })

    withBackend('concurrency keys: one in flight per key, others pass', async (b) => {
      const x1 = input({ key: 'x' })
      const x2 = input({ key: 'x' })
      const y1 = input({ key: 'y' })
      const free = input()
      await b.enqueue([x1, x2, y1, free])
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 10 })), [x1.id, y1.id, free.id])
      await b.ack(x1.id)
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 10 })), [x2.id])
    })

    withBackend('a reserve for fewer messages than the blocked ones ahead still reaches the first startable one behind them', async (b) => {
      const held = input({ key: 'x' })
      await b.enqueue([held])
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 1 })), [held.id])
      const blocked = Array.from({ length: 3 }, () => input({ key: 'x' }))
      const free = input()
      await b.enqueue([...blocked, free])
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 1 })), [free.id])
      assert.deepEqual(await b.counts('q', T0), { pending: 3, delayed: 0, in_flight: 2, dead: 0 })
    })

    withBackend('targets that are not startable are skipped and keep their place', async (b) => {
      const gone = input({ function_id: 'gone::f' })
      const goneHead = input({ function_id: 'gone::f', group: 'g' })
      const here = input()
      await b.enqueue([gone, goneHead, here])
      const startable = (namespace: string, functionId: string) => !(namespace === 'default' && functionId === 'gone::f')
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 10, startable })), [here.id])
      assert.deepEqual((await b.get(gone.id))?.attempts, 0)
      assert.deepEqual(await b.counts('q', T0), { pending: 2, delayed: 0, in_flight: 1, dead: 0 })
      assert.deepEqual(ids(await b.reserve('q', { now: T0, limit: 10 })).sort(), [gone.id, goneHead.id].sort())
    })

    withBackend('dead-letter, list most recent first, redrive one from the middle, discard', async (b) => {
      const msgs = [input(), input(), input()]
      await b.enqueue(msgs)
      await b.reserve('q', { now: T0, limit: 3 })
      for (const [i, m] of msgs.entries()) assert.equal(await b.deadLetter(m.id, { code: 'boom', message: `no ${i}` }, T0 + i), true)
      const dlq = await b.deadLetters('q', 0, 10)
      assert.deepEqual(ids(dlq), ids([...msgs].reverse()))
      assert.deepEqual(dlq[0]!.error, { code: 'boom', message: 'no 2' })
      // The handler's stack stays with the entry (issue 21: the DLQ points at the user's code).
      const failing = input()
      await b.enqueue([failing])
      await b.reserve('q', { now: T0, limit: 1 })
      assert.equal(await b.deadLetter(failing.id, { code: 'boom', message: 'with stack', stacktrace: 'Error: with stack\n    at charge (/app/pay.js:3:9)' }, T0 + 5), true)
      assert.deepEqual((await b.deadLetters('q', 0, 1))[0]!.error, { code: 'boom', message: 'with stack', stacktrace: 'Error: with stack\n    at charge (/app/pay.js:3:9)' })
      assert.equal(await b.discard('q', failing.id), true)
      assert.equal(dlq[0]!.failed_at, T0 + 2)
      assert.deepEqual(ids(await b.deadLetters('q', 1, 1)), [msgs[1]!.id])
      assert.equal(await b.redriveMessage('q', msgs[1]!.id, T0 + 10), true)
      assert.equal(await b.redriveMessage('q', msgs[1]!.id, T0 + 10), false)
      assert.equal(await b.redriveMessage('other', msgs[0]!.id, T0 + 10), false)
      const back = await b.reserve('q', { now: T0 + 10, limit: 10 })
      assert.deepEqual(ids(back), [msgs[1]!.id])
      assert.equal(back[0]!.attempts, 1)
      assert.equal(await b.discard('q', msgs[0]!.id), true)
      assert.equal(await b.discard('q', msgs[0]!.id), false)
      assert.deepEqual(ids(await b.deadLetters('q', 0, 10)), [msgs[2]!.id])
      assert.equal(await b.redrive('q', T0 + 20), 1)
      assert.deepEqual(await b.counts('q', T0 + 20), { pending: 1, delayed: 0, in_flight: 1, dead: 0 })
    })

    withBackend('enqueue straight to the DLQ, and dead-lettering a whole queue', async (b) => {
      const dead = input({ queue: 'topic', dead: { code: 'no_subscribers', message: 'none' } })
      await b.enqueue([dead])
      assert.deepEqual(await b.counts('topic', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 1 })
      await b.enqueue([input(), input({ ready_at: T0 + 99 }), input({ group: 'g' })])
      assert.equal(await b.deadLetterQueue('q', { code: 'subscriber_expired', message: 'gone' }, T0), 3)
      assert.deepEqual(await b.counts('q', T0), { pending: 0, delayed: 0, in_flight: 0, dead: 3 })
      assert.deepEqual((await b.queues()).sort(), ['q', 'topic'])
    })

    withBackend('idempotency keys return the first id within the window and store nothing', async (b) => {
      const first = input({ idempotency: { key: 'k', expires_at: T0 + 1000 } })
      const second = input({ idempotency: { key: 'k', expires_at: T0 + 1000 } })
      const otherQueue = input({ queue: 'q2', idempotency: { key: 'k', expires_at: T0 + 1000 } })
      assert.deepEqual(await b.enqueue([first]), [{ id: first.id, duplicate: false }])
      assert.deepEqual(await b.enqueue([second, otherQueue]), [
        { id: first.id, duplicate: true },
        { id: otherQueue.id, duplicate: false },
      ])
      assert.equal((await b.counts('q', T0)).pending, 1)
      const late = input({ enqueued_at: T0 + 1000, ready_at: T0 + 1000, idempotency: { key: 'k', expires_at: T0 + 2000 } })
      assert.deepEqual(await b.enqueue([late]), [{ id: late.id, duplicate: false }])
    })

    withBackend('recover: in flight back to pending with attempts kept, exhausted to the DLQ', async (b) => {
      const keep = input()
      const spent = input({ queue: 'tight' })
      await b.enqueue([keep, spent])
      await b.reserve('q', { now: T0, limit: 1 })
      await b.reserve('tight', { now: T0, limit: 1 })
      assert.deepEqual(await b.recover(T0 + 5, (q) => (q === 'tight' ? 1 : 4)), { requeued: 1, deadLettered: 1 })
      const again = await b.reserve('q', { now: T0 + 5, limit: 1 })
      assert.equal(again[0]!.attempts, 2)
      assert.equal((await b.deadLetters('tight', 0, 1))[0]!.error!.code, 'delivery_interrupted')
    })

    withBackend('subscriber records are saved, replaced and deleted', async (b) => {
      await b.saveSubscriber({ queue: 't::f', topic: 't', namespace: 'default', function_id: 'f' })
      await b.saveSubscriber({ queue: 't::f', topic: 't', namespace: 'default', function_id: 'f', detached_at: 5 })
      assert.deepEqual(await b.subscribers(), [{ queue: 't::f', topic: 't', namespace: 'default', function_id: 'f', detached_at: 5 }])
      await b.deleteSubscriber('t::f')
      assert.deepEqual(await b.subscribers(), [])
    })

    withBackend('ack, release and dead-letter of unknown ids answer false', async (b) => {
      assert.equal(await b.ack('nope'), false)
      assert.equal(await b.release('nope', { ready_at: T0 }), false)
      assert.equal(await b.deadLetter('nope', { code: 'x', message: 'y' }, T0), false)
    })
  })
}
