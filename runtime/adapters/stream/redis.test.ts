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
import { waitFor } from '../../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0
const open = (key_prefix = `t${++prefixes}:`) => RedisStreamAdapter.open({ url: redis.url, key_prefix })

runStreamAdapterConformance('redis', () => open())

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
    await waitFor(() => seenByA.length === 4 && seenByB.length === 4, 'seenByA.length === 4 && seenByB.length === 4', 5000)
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
    await waitFor(async () => adapter.set('s', 'g', 'i', 1).then(() => true, () => false), "adapter.set('s', 'g', 'i', 1).then(() => true, () => false)", 15_000)
    assert.equal(await adapter.get('s', 'g', 'i'), 1)
    await waitFor(async () => {
      await adapter.set('s', 'g', 'again', changes.length)
      return changes.some((c) => c.kind === 'item' && c.item_id === 'again')
    }, 'the condition', 10_000)
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
    }, 'the condition', 20_000)
    assert.equal(await adapter.get('s', 'g', 'back'), true)
    assert.match(warnings.join('\n'), /reconnected to .* not delivered/)
  })

  it('losing only the event connection: writes go on, and changes are reported again once it is back', async (t) => {
    const adapter = await open('killed:')
    t.after(() => adapter.close())
    const client = new Redis(redis.url)
    t.after(() => client.quit())
    const changes = record(adapter)
    await adapter.set('s', 'g', 'before', 1)
    assert.equal(changes.length, 1)
    assert.ok(Number(await client.client('KILL', 'TYPE', 'pubsub')) >= 1)
    await adapter.set('s', 'g', 'during', 2)
    assert.equal(await adapter.get('s', 'g', 'during'), 2)
    await waitFor(async () => {
      await adapter.set('s', 'g', 'after', changes.length)
      return changes.some((c) => c.kind === 'item' && c.item_id === 'after')
    }, 'the condition', 10_000)
  })

  it('answers ADAPTER_UNAVAILABLE at once when nothing listens at the address', async (t) => {
    const port = await freePort()
    const adapter = await RedisStreamAdapter.open({ url: `redis://127.0.0.1:${port}`, key_prefix: 'x:' })
    t.after(() => adapter.close())
    await assert.rejects(adapter.list('s', 'g'), { code: 'ADAPTER_UNAVAILABLE' })
  })
})

describe('redis stream adapter: hostile input against real Redis (fast-check)', () => {
  // Well-formed names only: the worker refuses the others before any adapter sees them.
  const hostileName = fc.oneof(
    fc.constantFrom('[', ']', '"', '\\', ',', '","', '["a","b"]', '\u0000', '*', '?', '[a-z]', ':', 'svc:', '{tag}', '\n', '\uFFFF', '\uFFFD', '😀', 'é', 'e\u0301', ' ', '\u2028'),
    fc.string({ unit: fc.constantFrom('a', 'b', '"', '\\', ',', '[', '\u0000', 'é', '😀', '\u007f', ':'), minLength: 1, maxLength: 6 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }),
    fc.integer({ min: 300, max: 3000 }).map((n) => 'x'.repeat(n)),
  )
  const data = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(0.1, -0, 1e21, 5e-324, '\u0000', '😀', [], {}))
  const op = fc.oneof(
    fc.record({ type: fc.constant('set' as const), stream: hostileName, group: hostileName, item: hostileName, data }),
    fc.record({ type: fc.constant('delete' as const), stream: hostileName, group: hostileName, item: hostileName }),
    fc.record({ type: fc.constant('send' as const), stream: hostileName, group: hostileName, id: fc.option(hostileName, { nil: null }), data }),
  )

  it('hostile stream, group and item ids: a peer engine and a memory model agree on every read and every change (fast-check)', async () => {
    const { MemoryStateAdapter } = await import('../state/memory/memory.ts')
    const { StateBackedStreamAdapter } = await import('./state-backed.ts')
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const writer = await open()
        const reader = await RedisStreamAdapter.open(writer.config)
        const model = new StateBackedStreamAdapter(new MemoryStateAdapter())
        try {
          const heard = record(reader)
          const expected = record(model as never)
          for (const o of ops) {
            if (o.type === 'set') {
              assert.deepEqual(await writer.set(o.stream, o.group, o.item, o.data), await model.set(o.stream, o.group, o.item, o.data))
            } else if (o.type === 'delete') {
              assert.deepEqual(await writer.delete(o.stream, o.group, o.item), await model.delete(o.stream, o.group, o.item))
            } else {
              const event = { stream_name: o.stream, group_id: o.group, id: o.id, type: 'hostile', data: o.data }
              await writer.publish(event)
              await model.publish(event)
            }
          }
          await waitFor(() => heard.length >= expected.length, 'heard.length >= expected.length', 5000)
          // JSON is what travels: -0 becomes 0 both in storage and in events.
          const json = (value: unknown) => JSON.parse(JSON.stringify(value ?? null))
          assert.deepEqual(json(heard), json(expected))
          for (const o of ops) {
            assert.deepEqual(json(await reader.get(o.stream, o.group, 'item' in o ? o.item : '-')), json(await model.get(o.stream, o.group, 'item' in o ? o.item : '-')))
            assert.deepEqual(json(await reader.list(o.stream, o.group)), json(await model.list(o.stream, o.group)))
            assert.deepEqual(await reader.listGroups(o.stream), await model.listGroups(o.stream))
          }
          assert.deepEqual(await reader.listAll(), await model.listAll())
        } finally {
          await Promise.all([writer.close(), reader.close(), model.close()])
        }
      }),
      { numRuns: 60 },
    )
  })

  it('any adapter entry: refused naming an adapter field, or a redis store that works under its own prefix (fast-check)', async () => {
    const { parseStreamAdapterEntry, openStreamAdapter } = await import('./index.ts')
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.constantFrom('', '*', '[', '{x}', ':', '\u0000', 'svc:', 'svc:stream:', 'a\ud800', 'a\udc00', '\ud800', '\udc00', 'redis://', 'http://h', 'rediss://h:99999', redis.url),
    )
    const value = fc.oneof(text, fc.integer(), fc.constant(null), fc.boolean(), fc.array(text, { maxLength: 2 }), fc.dictionary(text, text, { maxKeys: 2 }))
    const config = fc.dictionary(fc.oneof(fc.constantFrom('url', 'redis_url', 'key_prefix', 'path', '__proto__'), text), value, { maxKeys: 3 })
      // Point every URL that parses at the test server so that accepted blocks can be exercised.
      .map((block) => (typeof block.url === 'string' || typeof block.redis_url === 'string' ? block : { ...block, url: redis.url }))
    // Prefixes that differ only in lone surrogates, binary text, Redis glob and hash-tag characters.
    const prefix = fc.oneof(
      fc.constantFrom('', 'a\ud800', 'a\udc00', 'a\udfff', '\ud800:', '\udbff:', 'a\uFFFD', '*', '{x}', 'svc:stream:', 'p\u0000'),
      fc.string({ unit: 'binary', maxLength: 8 }),
    )
    const entry = fc.oneof(
      fc.record({ name: fc.constant('redis'), config: fc.record({ url: fc.constant(redis.url), key_prefix: prefix }) }),
      fc.record({ name: fc.constantFrom('redis', 'REDIS', 'kv', 'nope', ''), config }, { requiredKeys: ['name'] }),
      fc.record({ name: fc.constant('redis'), config, extra: value }, { requiredKeys: ['name'] }),
      value,
    )
    const seenPrefixes = new Map<string, string>()
    await fc.assert(
      fc.asyncProperty(entry, async (raw) => {
        let spec
        try {
          spec = parseStreamAdapterEntry(raw)
        } catch (error) {
          assert.ok(error instanceof Error && /^adapter\b/.test(error.message), String(error))
          return
        }
        if (spec.name !== 'redis' || spec.config.url !== redis.url) return
        const adapter = await openStreamAdapter(spec, { dataDir: '/nonexistent' })
        try {
          // Every distinct prefix is its own store: the one item written under it is the only one found.
          if (!seenPrefixes.has(spec.config.key_prefix)) seenPrefixes.set(spec.config.key_prefix, `m${seenPrefixes.size}`)
          const marker = seenPrefixes.get(spec.config.key_prefix)!
          await adapter.set('fuzz', 'g', marker, marker)
          assert.deepEqual(await adapter.list('fuzz', 'g'), [marker], `key_prefix ${JSON.stringify(spec.config.key_prefix)}`)
        } finally {
          await adapter.close()
        }
      }),
      { numRuns: 300 },
    )
  })
})
