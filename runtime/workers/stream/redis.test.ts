/**
 * The stream worker on the `redis` adapter (builtins.md §13.4), end to end: two engines, each with
 * its own svc-stream and WebSocket listener, on one real `redis-server` and key prefix. A client
 * or a stream trigger of one engine hears the writes and sends made through the other, and both
 * read the same items.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import { startTestRedis } from '../../../test/support/redis.ts'
import { startStreamEngine, StreamSocket } from './test-support/stream.ts'
import { waitFor } from '../../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

describe('svc-stream with adapter redis: two engines on one Redis', () => {
  it('a client on engine A sees writes and sends made through engine B, in order; reads agree', async (t) => {
    const adapter = { name: 'redis', config: { redis_url: redis.url, key_prefix: 'e2e:' } }
    const a = await startStreamEngine({ settings: { adapter } })
    t.after(() => a.test.stop())
    const b = await startStreamEngine({ settings: { adapter } })
    t.after(() => b.test.stop())
    const callB = (function_id: string, data: unknown) => b.test.engine.inject({ function_id, data })
    const callA = (function_id: string, data: unknown) => a.test.engine.inject({ function_id, data })

    await callB('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'a', data: 'A' })
    const socket = await StreamSocket.open(a.worker.urls[0]!)
    t.after(() => socket.close())
    socket.join('all', 'docs', 'g')
    // The sync on engine A lists what engine B wrote.
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 'all')).event, { type: 'sync', data: ['A'] })

    await callB('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'b', data: 1 })
    await callB('stream::update', { stream_name: 'docs', group_id: 'g', item_id: 'b', ops: [{ type: 'increment' }] })
    await callB('stream::delete', { stream_name: 'docs', group_id: 'g', item_id: 'b' })
    await callB('stream::set', { stream_name: 'docs', group_id: 'other', item_id: 'b', data: 1 })
    await callB('stream::send', { stream_name: 'docs', group_id: 'g', type: 'ping', data: { n: 1 } })
    await socket.next((f) => f.subscriptionId === 'all' && f.event.type === 'event')
    const frames = socket.frames.filter((f) => f.subscriptionId === 'all').slice(1)
    assert.deepEqual(frames.map((f) => [f.event.type, f.id ?? null, f.event.data ?? f.event.event]), [
      ['create', 'b', 1],
      ['update', 'b', 2],
      ['delete', 'b', 2],
      ['event', null, { type: 'ping', data: { n: 1 } }],
    ])

    assert.deepEqual(await callA('stream::list', { stream_name: 'docs', group_id: 'g' }), ['A'])
    assert.deepEqual(await callA('stream::list_groups', { stream_name: 'docs' }), ['g', 'other'])
    assert.deepEqual(await callA('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'a', data: 'A2' }), { old_value: 'A', new_value: 'A2' })
    assert.equal(await callB('stream::get', { stream_name: 'docs', group_id: 'g', item_id: 'a' }), 'A2')
  })

  it('a stream trigger of a worker on engine A fires for writes made through engine B, in commit order', async (t) => {
    const adapter = { name: 'redis', config: { url: redis.url, key_prefix: 'e2e-trig:' } }
    const a = await startStreamEngine({ settings: { adapter } })
    t.after(() => a.test.stop())
    const b = await startStreamEngine({ settings: { adapter } })
    t.after(() => b.test.stop())
    const received: Array<Record<string, any>> = []
    const client = registerWorker(a.test.url, { workerName: 'fleet-trigger' })
    t.after(() => client.shutdown())
    client.registerFunction('t::on-change', async (event: Record<string, any>) => {
      received.push(event)
    })
    client.registerTrigger({ type: 'stream', function_id: 't::on-change', config: { stream_name: 'orders' } })
    const callB = (function_id: string, data: unknown) => b.test.engine.inject({ function_id, data })
    // Until the trigger is registered on A, B's probes go unheard.
    await waitFor(async () => {
      await callB('stream::set', { stream_name: 'orders', group_id: 'probe', item_id: 'p', data: Date.now() })
      return received.length > 0
    }, 'the condition')
    received.length = 0
    for (let i = 0; i < 10; i++) await callB('stream::set', { stream_name: 'orders', group_id: 'g', item_id: 'o', data: i })
    await callB('stream::delete', { stream_name: 'orders', group_id: 'g', item_id: 'o' })
    await waitFor(() => received.filter((e) => e.groupId === 'g').length >= 11, "received.filter((e) => e.groupId === 'g').length >= 11")
    const events = received.filter((e) => e.groupId === 'g')
    assert.deepEqual(events.map((e) => e.event.type), ['create', ...Array(9).fill('update'), 'delete'])
    assert.deepEqual(events.slice(0, 10).map((e) => e.event.data), Array.from({ length: 10 }, (_, i) => i))
  })

  it('an unreachable Redis: the worker starts, calls fail with ADAPTER_UNAVAILABLE', async (t) => {
    const down = await startTestRedis()
    t.after(() => down.close())
    await down.stop()
    const { test } = await startStreamEngine({ settings: { adapter: { name: 'redis', config: { url: down.url } } } })
    t.after(() => test.stop())
    await assert.rejects(test.engine.inject({ function_id: 'stream::get', data: { stream_name: 's', group_id: 'g', item_id: 'i' } }), {
      code: 'ADAPTER_UNAVAILABLE',
    })
  })
})
