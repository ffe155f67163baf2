/**
 * The redis pub/sub adapter against a real `redis-server` (test/support/redis.ts): the shared
 * conformance suite (each transport a key prefix of its own, shared by the adapters opened on it as
 * by several engines), channel names, and behaviour while Redis is away.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { startTestRedis } from '../../../../test/support/redis.ts'
import { runPubSubAdapterConformance } from '../conformance.ts'
import type { PubSubOrigin } from '../types.ts'
import { RedisPubSubAdapter } from './redis.ts'
import { waitFor } from '../../../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0

runPubSubAdapterConformance(
  'redis',
  () => {
    const key_prefix = `conf${++prefixes}:`
    return { open: (context) => RedisPubSubAdapter.open({ url: redis.url, key_prefix }, context) }
  },
  { shared: true },
)
function open(key_prefix = `p${++prefixes}:`) {
  const received: Array<{ topic: string; data: unknown; origin: PubSubOrigin | undefined }> = []
  const adapter = RedisPubSubAdapter.open(
    { url: redis.url, key_prefix },
    { onMessage: (topic, data, origin) => void received.push({ topic, data, origin }) },
  )
  return adapter.then((a) => ({ adapter: a, received }))
}

describe('redis pub/sub adapter (builtins.md §8, §13.4)', () => {
  it('delivers a publish on one adapter to every adapter of the prefix subscribed to the topic, once', async () => {
    const a = await open('fleet1:')
    const b = await open('fleet1:')
    const other = await open('fleet2:')
    try {
      for (const x of [a, b, other]) await x.adapter.subscribe('orders')
      await b.adapter.subscribe('other-topic')
      await a.adapter.publish('orders', { id: 1, list: [1, 'x', null] }, { traceparent: '00-abc-def-01' })
      // Markers after it: Redis pushes messages to a subscriber in the order it handled the publishes.
      await a.adapter.publish('orders', 'marker')
      await other.adapter.publish('orders', 'marker')
      const marked = (x: typeof a) => x.received.some((m) => m.data === 'marker')
      await waitFor(() => marked(a) && marked(b) && marked(other), 'the markers at a, b and the other prefix')
      assert.equal(a.received.length, 2)
      assert.equal(b.received.length, 2)
      assert.equal(other.received.length, 1, 'nothing from another prefix')
      assert.deepEqual(b.received[0], { topic: 'orders', data: { id: 1, list: [1, 'x', null] }, origin: { traceparent: '00-abc-def-01' } })
    } finally {
      await Promise.all([a, b, other].map((x) => x.adapter.close()))
    }
  })

  it('publishes on channel <prefix>pubsub:<topic>', async () => {
    const probe = new Redis(redis.url)
    const { adapter } = await open('chan:')
    try {
      const seen: string[] = []
      await probe.subscribe('chan:pubsub:Topic.A')
      probe.on('message', (channel: string) => seen.push(channel))
      await adapter.publish('Topic.A', 1)
      await waitFor(() => seen.length === 1, 'seen.length === 1')
      assert.deepEqual(seen, ['chan:pubsub:Topic.A'])
    } finally {
      probe.disconnect()
      await adapter.close()
    }
  })

  it('stops receiving an unsubscribed topic', async () => {
    const a = await open()
    try {
      await a.adapter.subscribe('t')
      await a.adapter.subscribe('marker')
      await a.adapter.unsubscribe('t')
      await a.adapter.publish('t', 1)
      await a.adapter.publish('marker', 2) // pushed after anything of 't' would have been
      await waitFor(() => a.received.length > 0, 'the marker')
      assert.deepEqual(a.received.map((m) => m.topic), ['marker'])
    } finally {
      await a.adapter.close()
    }
  })

  it('fails publish with ADAPTER_UNAVAILABLE while Redis is down, and subscribes again once it is back', async () => {
    const a = await open('restart:')
    const b = await open('restart:')
    try {
      await b.adapter.subscribe('r')
      await redis.stop()
      await assert.rejects(a.adapter.publish('r', 1), (error: { code?: string }) => error.code === 'ADAPTER_UNAVAILABLE')
      await redis.start()
      await waitFor(async () => {
        await a.adapter.publish('r', 2).catch(() => {})
        return b.received.length > 0
      }, 'the condition', 20_000)
      assert.equal(b.received.at(-1)!.data, 2)
    } finally {
      await Promise.all([a, b].map((x) => x.adapter.close()))
    }
  })
})
