/**
 * The behaviour every {@link PubSubAdapter} must show (./types.ts, builtins.md §8, §13.1). Each
 * adapter's test file calls {@link runPubSubAdapterConformance} with a factory of fresh transports.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import type { PubSubAdapter, PubSubAdapterContext, PubSubOrigin } from './types.ts'

/**
 * One transport, apart from every other the factory returns (Redis: a key prefix of its own).
 * `open` opens an adapter on it, as one engine does; adapters opened on the same transport share it
 * when the adapter kind is shared between engines.
 */
export interface PubSubTransport {
  open(context: PubSubAdapterContext): PubSubAdapter | Promise<PubSubAdapter>
}

export interface PubSubConformanceOptions {
  /**
   * True when adapters opened on one transport hear each other's publishes (several engines on
   * one Redis). Cases that need it are skipped otherwise.
   */
  shared?: boolean
  /** Cases this adapter skips, by case name, each with the reason (listed in the test output). */
  skip?: Record<string, string>
}

/** A message as the adapter reported it. */
export interface Received {
  topic: string
  data: unknown
  origin: PubSubOrigin | undefined
}

/** Topic every adapter of a case subscribes, so that a marker published after the messages shows they all arrived. */
const MARKER_TOPIC = 'conformance:marker'

/** An adapter under test with what it received (markers left out). */
interface Opened {
  adapter: PubSubAdapter
  received: Received[]
  markers: unknown[]
}

async function openRecorded(transport: PubSubTransport, t: TestContext): Promise<Opened> {
  const received: Received[] = []
  const markers: unknown[] = []
  const adapter = await transport.open({
    onMessage: (topic, data, origin) => {
      if (topic === MARKER_TOPIC) markers.push(data)
      else received.push({ topic, data, origin })
    },
  })
  t.after(() => adapter.close())
  await adapter.subscribe(MARKER_TOPIC)
  return { adapter, received, markers }
}

let markerCount = 0

/**
 * Publishes a marker through `publisher` and waits until every adapter of `listeners` heard it.
 * Messages from one publisher reach a listener in publish order, so what a listener has not
 * received by then it never will (a missing or doubled message is a failure, not a delay).
 */
async function settled(publisher: PubSubAdapter, listeners: Opened[], timeoutMs = 5000): Promise<void> {
  const marker = `m${++markerCount}`
  await publisher.publish(MARKER_TOPIC, marker)
  const deadline = Date.now() + timeoutMs
  while (!listeners.every((l) => l.markers.includes(marker))) {
    if (Date.now() > deadline) assert.fail(`the marker publish did not arrive within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** JSON text of a value, the comparison the contract asks for ("the same JSON value": -0 is 0). */
const json = (value: unknown) => (value === undefined ? undefined : JSON.stringify(value))

/** JSON values with the numbers, strings and keys that trip encoders up. */
const { value: jsonValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom(0, -0, 1e308, -1e308, 2 ** 53 + 1, 1e-320, true, false, null, '', '\u0000', '\ud800', 'é😀', '"\\'),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'd', 't', 'b')), tie('value'), { maxKeys: 4 }),
  ),
}))

/** Topics: any well-formed text, and names that look like patterns or channel separators. */
const topicText = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
  fc.constantFrom('orders', 'Orders', 'a.b', 'a:b', '*', 'a*', '?', '[ab]', 'pubsub:x', ' ', '\u0000', 'é😀', 'x'.repeat(500)),
)

/**
 * Registers the conformance cases as a `node:test` suite named `<name> pub/sub adapter conformance`.
 *
 * @example
 * runPubSubAdapterConformance('memory', () => ({ open: (context) => new MemoryPubSubAdapter(context) }))
 */
export function runPubSubAdapterConformance(name: string, factory: () => PubSubTransport, options: PubSubConformanceOptions = {}): void {
  const skip = { ...(options.skip ?? {}) }
  const cases = new Set<string>()
  const SHARED = 'a publish on one adapter reaches every adapter of the transport subscribed to its topic, once; no other'
  if (!options.shared && skip[SHARED] === undefined) skip[SHARED] = 'the transport is not shared between engines'

  /** One case on a fresh transport. */
  const check = (title: string, body: (transport: PubSubTransport, t: TestContext) => Promise<void>) => {
    cases.add(title)
    const reason = skip[title]
    it(title, reason ? { skip: reason } : {}, async (t) => body(factory(), t))
  }

  describe(`${name} pub/sub adapter conformance`, () => {
    check('delivers a publish to a subscribed topic with its data and origin', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.subscribe('orders')
      await a.adapter.publish('orders', { id: 1, list: [1, 'x', null], nested: { ok: true } }, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', baggage: 'k=v' })
      await a.adapter.publish('orders', 'text')
      await settled(a.adapter, [a])
      assert.deepEqual(a.received, [
        { topic: 'orders', data: { id: 1, list: [1, 'x', null], nested: { ok: true } }, origin: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', baggage: 'k=v' } },
        { topic: 'orders', data: 'text', origin: a.received[1]?.origin },
      ])
      const origin = a.received[1]!.origin
      assert.ok(origin === undefined || (origin.traceparent === undefined && origin.baggage === undefined), 'no trace context was published')
    })

    check('a publish without data arrives without data', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.subscribe('empty')
      await a.adapter.publish('empty', undefined)
      await settled(a.adapter, [a])
      assert.equal(a.received.length, 1)
      assert.equal(a.received[0]!.data, undefined)
    })

    check('publishing to a topic nobody subscribed resolves and delivers nothing', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.publish('nobody', 1)
      await settled(a.adapter, [a])
      assert.deepEqual(a.received, [])
    })

    check('topics match exactly: case, dots, colons and pattern characters are plain text', async (transport, t) => {
      const a = await openRecorded(transport, t)
      for (const topic of ['orders', 'a*', '[ab]']) await a.adapter.subscribe(topic)
      for (const topic of ['Orders', 'orders.eu', 'orders ', 'ab', 'a', 'a*b', 'b', '[ab]x']) await a.adapter.publish(topic, topic)
      for (const topic of ['orders', 'a*', '[ab]']) await a.adapter.publish(topic, topic)
      await settled(a.adapter, [a])
      assert.deepEqual(a.received.map((m) => [m.topic, m.data]), [['orders', 'orders'], ['a*', 'a*'], ['[ab]', '[ab]']])
    })

    check('subscribe and unsubscribe are idempotent; an unsubscribed topic is not delivered', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.subscribe('t')
      await a.adapter.subscribe('t')
      await a.adapter.publish('t', 1)
      await a.adapter.unsubscribe('t')
      await a.adapter.unsubscribe('t')
      await a.adapter.unsubscribe('never-subscribed')
      await a.adapter.publish('t', 2)
      await settled(a.adapter, [a])
      assert.deepEqual(a.received.map((m) => m.data), [1])
      await a.adapter.subscribe('t')
      await a.adapter.publish('t', 3)
      await settled(a.adapter, [a])
      assert.deepEqual(a.received.map((m) => m.data), [1, 3])
    })

    check('every message published before unsubscribe resolves is delivered', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.subscribe('leaving')
      await Promise.all(Array.from({ length: 50 }, (_, i) => a.adapter.publish('leaving', i)))
      await a.adapter.unsubscribe('leaving')
      await a.adapter.publish('leaving', 'after')
      await settled(a.adapter, [a])
      assert.deepEqual(a.received.map((m) => m.data), Array.from({ length: 50 }, (_, i) => i))
    })

    check('messages of one publisher arrive in publish order', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.subscribe('seq')
      await a.adapter.subscribe('other')
      for (let i = 0; i < 50; i++) await a.adapter.publish(i % 3 === 0 ? 'other' : 'seq', i)
      await settled(a.adapter, [a])
      assert.deepEqual(a.received.map((m) => m.data), Array.from({ length: 50 }, (_, i) => i))
    })

    check('a closed adapter delivers nothing more', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await a.adapter.subscribe('t')
      await a.adapter.close()
      await a.adapter.publish('t', 1).catch(() => {})
      const b = await openRecorded(transport, t)
      await settled(b.adapter, [b])
      assert.deepEqual(a.received, [])
    })

    check(SHARED, async (transport, t) => {
      const a = await openRecorded(transport, t)
      const b = await openRecorded(transport, t)
      const bystander = await openRecorded(transport, t)
      const elsewhere = await openRecorded(factory(), t)
      for (const x of [a, b, elsewhere]) await x.adapter.subscribe('orders')
      await bystander.adapter.subscribe('invoices')
      await a.adapter.publish('orders', { id: 1 }, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })
      await settled(a.adapter, [a, b, bystander])
      for (const x of [a, b]) assert.deepEqual(x.received, [{ topic: 'orders', data: { id: 1 }, origin: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } }])
      assert.deepEqual(bystander.received, [])
      await settled(elsewhere.adapter, [elsewhere])
      assert.deepEqual(elsewhere.received, [], 'another transport heard the publish')
    })

    check('any topic and any JSON data arrive as the same JSON value (fast-check)', async (transport, t) => {
      const a = await openRecorded(transport, t)
      await fc.assert(
        fc.asyncProperty(topicText.filter((topic) => topic !== MARKER_TOPIC), jsonValue, async (topic, data) => {
          a.received.length = 0
          await a.adapter.subscribe(topic)
          await a.adapter.publish(topic, data)
          // A message still on its way when its topic is unsubscribed may be dropped: settle first.
          await settled(a.adapter, [a])
          await a.adapter.unsubscribe(topic)
          assert.equal(a.received.length, 1, `received ${a.received.length} messages on ${JSON.stringify(topic)}`)
          assert.equal(a.received[0]!.topic, topic)
          assert.equal(json(a.received[0]!.data), json(data))
        }),
        { numRuns: 60 },
      )
    })

    it('names every skipped case it knows', () => {
      for (const title of Object.keys(options.skip ?? {})) assert.ok(cases.has(title), `unknown case in skip: ${title}`)
    })
  })
}
