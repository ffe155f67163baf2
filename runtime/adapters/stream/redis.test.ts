/**
 * The redis stream adapter against a real `redis-server` (started per file by test/support/redis.ts):
 * the shared conformance suite, two adapters on one Redis acting as two engines of a fleet, the key
 * layout, behaviour while Redis is unreachable, and hostile names and config blocks (fast-check).
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { startTestRedis, freePort } from '../../../test/support/redis.ts'
import { parseRedisConfig } from '../redis.ts'
import type { StateAdapterLogger } from '../state/types.ts'
import { runStreamAdapterConformance } from './conformance.ts'
import { RedisStreamAdapter } from './redis.ts'
import type { StreamAdapterChange } from './types.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0
const open = (key_prefix = `t${++prefixes}:`) => RedisStreamAdapter.open({ url: redis.url, key_prefix })

runStreamAdapterConformance('redis', () => open())

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`condition not met within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const record = (adapter: RedisStreamAdapter) => {
  const changes: StreamAdapterChange[] = []
  adapter.subscribe((change) => changes.push(change))
  return changes
}

describe('redis stream adapter: two engines on one Redis', () => {
  it('a write or send through one is seen by the other, in commit order, and by its reads', async (t) => {
    const a = await open('fleet:')
    const b = await RedisStreamAdapter.open(a.config)
    t.after(() => Promise.all([a.close(), b.close()]))
    const seenByA = record(a)
    const seenByB = record(b)
    await a.set('chat', 'room', 'm1', { text: 'hi' }, { origin: { traceparent: 'tp-a' } })
    await b.update('chat', 'room', 'm1', [{ type: 'set', path: 'text', value: 'hello' }])
    await a.publish({ stream_name: 'chat', group_id: 'room', id: null, type: 'typing', data: { who: 'al' } })
    await b.delete('chat', 'room', 'm1')
    const expected = [
      { kind: 'item', stream_name: 'chat', group_id: 'room', item_id: 'm1', old_value: undefined, new_value: { text: 'hi' }, origin: { traceparent: 'tp-a' } },
      { kind: 'item', stream_name: 'chat', group_id: 'room', item_id: 'm1', old_value: { text: 'hi' }, new_value: { text: 'hello' } },
      { kind: 'send', stream_name: 'chat', group_id: 'room', id: null, type: 'typing', data: { who: 'al' } },
      { kind: 'item', stream_name: 'chat', group_id: 'room', item_id: 'm1', old_value: { text: 'hello' }, new_value: undefined },
    ]
    // b's own writes are reported before they resolve; a's reach b when the PUBLISH arrives.
    await waitFor(() => seenByA.length === 4 && seenByB.length === 4, 5000)
    assert.deepEqual(seenByA, expected)
    assert.deepEqual(seenByB, expected)

    await a.set('chat', 'room', 'm2', 2)
    await a.set('chat', 'lobby', 'm3', 3)
    assert.equal(await b.get('chat', 'room', 'm2'), 2)
    assert.deepEqual(await b.list('chat', 'room'), [2])
    assert.deepEqual(await b.listGroups('chat'), ['lobby', 'room'])
    assert.deepEqual(await b.listAll(), [{ stream_name: 'chat', groups: ['lobby', 'room'] }])
  })

  it('a different key prefix is a different store and feed', async (t) => {
    const a = await open('iso-a:')
    const b = await open('iso-b:')
    t.after(() => Promise.all([a.close(), b.close()]))
    const seenByB = record(b)
    await a.set('s', 'g', 'i', 1)
    await b.set('s', 'g', 'mine', 2)
    assert.equal(await b.get('s', 'g', 'i'), undefined)
    assert.deepEqual(seenByB.map((c) => c.kind === 'item' && c.item_id), ['mine'])
  })

  it('keeps one hash per group, an ordered item index and JSON text under <prefix>stream:', async (t) => {
    const adapter = await open('layout:')
    t.after(() => adapter.close())
    const client = new Redis(redis.url)
    t.after(() => client.quit())
    await adapter.set('s', 'g', 'b', { n: 0.1 })
    await adapter.set('s', 'g', 'a', [])
    assert.deepEqual(await client.hgetall('layout:stream:h:["s","g"]'), { a: '[]', b: '{"n":0.1}' })
    assert.deepEqual(await client.zrange('layout:stream:k:["s","g"]', '0', '-1'), ['a', 'b'])
    assert.deepEqual(await client.zrange('layout:stream:groups', '0', '-1'), ['["s","g"]'])
    await adapter.delete('s', 'g', 'a')
    await adapter.delete('s', 'g', 'b')
    assert.deepEqual(await client.keys('layout:stream:[hk]:*'), [])
    assert.deepEqual(await client.zrange('layout:stream:groups', '0', '-1'), [])
  })
})

describe('redis stream adapter while Redis is unreachable (builtins.md §13.4)', () => {
  const recorder = () => {
    const warnings: string[] = []
    const log: StateAdapterLogger = { info() {}, warn: (message) => warnings.push(message), error() {} }
    return { log, warnings }
  }

  it('opens anyway with a warning, fails calls with ADAPTER_UNAVAILABLE, and works once Redis is there', async (t) => {
    const late = await startTestRedis()
    t.after(() => late.close())
    await late.stop()
    const { log, warnings } = recorder()
    const adapter = await RedisStreamAdapter.open({ url: late.url, key_prefix: 'late:' }, { log })
    t.after(() => adapter.close())
    assert.match(warnings.join('\n'), /is unreachable; stream calls fail with ADAPTER_UNAVAILABLE/)
    await assert.rejects(adapter.get('s', 'g', 'i'), { code: 'ADAPTER_UNAVAILABLE', message: /redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable \(stream get\)/ })
    await assert.rejects(adapter.set('s', 'g', 'i', 1), { code: 'ADAPTER_UNAVAILABLE' })
    await assert.rejects(adapter.publish({ stream_name: 's', group_id: 'g', id: null, type: 't', data: 1 }), { code: 'ADAPTER_UNAVAILABLE' })
    const changes = record(adapter)
    await late.start()
    await waitFor(async () => adapter.set('s', 'g', 'i', 1).then(() => true, () => false), 15_000)
    assert.equal(await adapter.get('s', 'g', 'i'), 1)
    await waitFor(async () => {
      await adapter.set('s', 'g', 'again', changes.length)
      return changes.some((c) => c.kind === 'item' && c.item_id === 'again')
    }, 10_000)
  })

  it('fails calls within 5 s when Redis goes away and recovers by itself, change feed included', async (t) => {
    const server = await startTestRedis()
    t.after(() => server.close())
    const { log, warnings } = recorder()
    const adapter = await RedisStreamAdapter.open({ url: server.url, key_prefix: 'gone:' }, { log })
    const peer = await RedisStreamAdapter.open(adapter.config)
    t.after(() => Promise.all([adapter.close(), peer.close()]))
    const changes = record(adapter)
    await adapter.set('s', 'g', 'i', 1)
    await server.stop()
    const started = Date.now()
    await assert.rejects(adapter.get('s', 'g', 'i'), { code: 'ADAPTER_UNAVAILABLE' })
    await assert.rejects(adapter.update('s', 'g', 'i', [{ type: 'increment' }]), { code: 'ADAPTER_UNAVAILABLE' })
    await assert.rejects(adapter.listAll(), { code: 'ADAPTER_UNAVAILABLE' })
    assert.ok(Date.now() - started < 5000, `failing took ${Date.now() - started} ms`)
    await server.start()
    // A write through the peer reaches this adapter's listeners once both are back.
    await waitFor(async () => {
      await peer.set('s', 'g', 'back', true).catch(() => {})
      return changes.some((c) => c.kind === 'item' && c.item_id === 'back')
    }, 20_000)
    assert.equal(await adapter.get('s', 'g', 'back'), true)
    assert.match(warnings.join('\n'), /reconnected to .* not delivered/)
  })

  it('answers ADAPTER_UNAVAILABLE at once when nothing listens at the address', async (t) => {
    const port = await freePort()
    const adapter = await RedisStreamAdapter.open({ url: `redis://127.0.0.1:${port}`, key_prefix: 'x:' })
    t.after(() => adapter.close())
    await assert.rejects(adapter.list('s', 'g'), { code: 'ADAPTER_UNAVAILABLE' })
  })
})
