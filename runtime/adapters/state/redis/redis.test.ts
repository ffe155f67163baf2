/**
 * The redis state adapter against a real `redis-server` (started per file by test/support/redis.ts):
 * the shared conformance suite, the Lua update operations held against runtime/update-ops (shared
 * vectors and random input), the key layout, and behaviour while Redis is unreachable.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { jsonParse } from 'svc-protocol/json'
import { startTestRedis, freePort } from '../../../../test/support/redis.ts'
import { applyUpdateOps } from '../../../update-ops/index.ts'
import { UPDATE_OPS_VECTORS } from '../../../update-ops/vectors.ts'
import { runStateAdapterConformance } from '../conformance.ts'
import type { StateAdapterLogger, StateChange } from '../types.ts'
import { encodeOps, RedisStateAdapter } from './redis.ts'
import { APPLY_OPS_SCRIPT } from './scripts.ts'
import { waitFor } from '../../../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0
const context = { dataDir: '/nonexistent' }
const open = (key_prefix = `t${++prefixes}:`) => RedisStateAdapter.open({ url: redis.url, key_prefix }, context)

runStateAdapterConformance('redis', () => open(), {
  skip: { 'reports a change before the write resolves': 'redis reports changes when the PUBLISH arrives, after the write (types.ts)' },
  openPeer: (adapter) => RedisStateAdapter.open((adapter as RedisStateAdapter).config, context),
})

/** Runs the Lua update operations on `current` without storing anything. */
async function luaApply(client: Redis, current: unknown, ops: unknown[]) {
  const { text, nonfinite } = encodeOps(ops as never)
  const [value, errors] = (await client.eval(
    APPLY_OPS_SCRIPT,
    0,
    current === undefined ? '' : JSON.stringify(current),
    text,
    nonfinite,
  )) as [string, string]
  return { value: jsonParse(value), errors: jsonParse(errors) as unknown[] }
}

/**
 * What a JavaScript store would keep and answer: applyUpdateOps, through JSON. (jsonParse, not
 * JSON.parse: V8 can misread escaped keys, nodejs/node#63785; this test found it.)
 */
function jsApply(current: unknown, ops: unknown[]) {
  const { value, errors } = applyUpdateOps(current, ops)
  return { value: jsonParse(JSON.stringify(value)), errors }
}

describe('redis Lua update operations agree with runtime/update-ops', () => {
  let client: Redis
  before(() => {
    client = new Redis(redis.url)
  })
  after(() => client?.disconnect())

  for (const vector of UPDATE_OPS_VECTORS) {
    it(`vector: ${vector.name}`, async () => {
      const lua = await luaApply(client, vector.current, vector.ops)
      assert.deepEqual(lua, jsApply(vector.current, vector.ops))
      assert.deepEqual(lua.value, vector.value)
    })
  }

  it('random values and random op lists give the same value and errors (fast-check)', async () => {
    const text = (maxLength: number) =>
      fc.string({ unit: fc.constantFrom('a', 'b', 'é', '😀', '\uD83D', '\uDE00', '"', '\\', '\n', '\u0000', '1', '.'), maxLength })
    const segment = fc.oneof(
      fc.constantFrom('a', 'b', 'n', 'list', 's', '__proto__', '', 'a.b', 'é', '😀', '"q"', '\\', 'x'.repeat(257)),
      text(4),
    )
    const path = fc.oneof(fc.constant(undefined), fc.constant(null), segment, fc.array(segment, { maxLength: 4 }))
    const number = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.constantFrom(0.1, 0.2, 1e21, 9007199254740993, 1e-7, 5e-324, 1.7976931348623157e308),
    )
    const { value: json } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constant(null),
        fc.boolean(),
        number,
        text(6),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(fc.oneof(segment, fc.constantFrom('a', 'b', 'n')), tie('value'), { maxKeys: 4 }),
      ),
    }))
    const by = fc.oneof(fc.constant(undefined), fc.constant(null), number, fc.constantFrom('1', true, {}, Number.NaN, Infinity))
    const op = fc.oneof(
      fc.record({ type: fc.constant('set'), path, value: json }),
      fc.record({ type: fc.constant('merge'), path, value: json }),
      fc.record({ type: fc.constantFrom('increment', 'decrement'), path, by }),
      fc.record({ type: fc.constant('append'), path, value: json }),
      fc.record({ type: fc.constant('remove'), path }),
    )
    const current = fc.oneof(fc.constant(undefined), json)
    await fc.assert(
      fc.asyncProperty(current, fc.array(op, { maxLength: 6 }), async (start, ops) => {
        assert.deepEqual(await luaApply(client, start, ops), jsApply(start, ops))
      }),
      { numRuns: 400 },
    )
  })
})

describe('redis state adapter', () => {
  it('keeps one hash per scope, ordered key indexes and JSON text values under the prefix', async (t) => {
    const adapter = await open('layout:')
    t.after(() => adapter.close())
    const client = new Redis(redis.url)
    t.after(() => client.quit())
    await adapter.set('users', 'u1', { name: 'Al', tags: [] })
    await adapter.update('users', 'u2', [{ type: 'set', path: 'n', value: 0.1 }])
    assert.deepEqual(await client.hgetall('layout:state:h:users'), {
      u1: '{"name":"Al","tags":[]}',
      u2: '{"n":0.1}',
    })
    assert.deepEqual(await client.zrange('layout:state:k:users', '0', '-1'), ['u1', 'u2'])
    assert.deepEqual(await client.zrange('layout:state:groups', '0', '-1'), ['users'])
    assert.equal(await client.get('layout:state:seq'), '2')
    await adapter.delete('users', 'u1')
    await adapter.delete('users', 'u2')
    assert.deepEqual(await client.keys('layout:state:[hk]:*'), [])
    assert.deepEqual(await client.zrange('layout:state:groups', '0', '-1'), [])
  })

  it('publishes each change on <prefix>state:events', async (t) => {
    const adapter = await open('chan:')
    t.after(() => adapter.close())
    const listener = new Redis(redis.url)
    t.after(() => listener.quit())
    const messages: unknown[] = []
    listener.on('message', (_channel: string, message: string) => messages.push(JSON.parse(message)))
    await listener.subscribe('chan:state:events')
    await adapter.set('s', 'k', [1], { origin: { traceparent: 'tp' } })
    await adapter.delete('s', 'k')
    await waitFor(() => messages.length >= 2, 'both changes published')
    assert.deepEqual(messages, [
      { seq: 1, scope: 's', key: 'k', new: [1], origin: { traceparent: 'tp' } },
      { seq: 2, scope: 's', key: 'k', old: [1] },
    ])
  })
})

describe('redis state adapter while Redis is unreachable (builtins.md §13.4)', () => {
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
    const started = Date.now()
    const adapter = await RedisStateAdapter.open({ url: late.url, key_prefix: 'late:' }, { dataDir: '/x', log })
    t.after(() => adapter.close())
    assert.ok(Date.now() - started < 5000, 'open took more than 5 s')
    assert.match(warnings.join('\n'), /is unreachable; state calls fail with ADAPTER_UNAVAILABLE/)
    const failedAt = Date.now()
    await assert.rejects(adapter.get('s', 'k'), { code: 'ADAPTER_UNAVAILABLE', message: /redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable \(state get\)/ })
    await assert.rejects(adapter.update('s', 'k', [{ type: 'increment' }]), { code: 'ADAPTER_UNAVAILABLE' })
    assert.ok(Date.now() - failedAt < 5000)

    const changes: StateChange[] = []
    adapter.subscribe((change) => changes.push(change))
    await late.start()
    await waitFor(async () => (await adapter.set('s', 'k', 1).then(() => true, () => false)), "await adapter.set('s', 'k', 1).then(() => true, () => false)", 15_000)
    assert.equal(await adapter.get('s', 'k'), 1)
    // The change feed is subscribed too.
    await adapter.set('s', 'k', 2)
    await waitFor(() => changes.some((c) => c.new_value === 2), 'changes.some((c) => c.new_value === 2)', 5000)
  })

  it('fails calls within 5 s when Redis goes away, reconnects when it is back, and reports changes again', async (t) => {
    const server = await startTestRedis()
    t.after(() => server.close())
    const { log, warnings } = recorder()
    const adapter = await RedisStateAdapter.open({ url: server.url, key_prefix: 'gone:' }, { dataDir: '/x', log })
    t.after(() => adapter.close())
    const changes: StateChange[] = []
    adapter.subscribe((change) => changes.push(change))
    await adapter.set('s', 'k', 1)
    await server.stop()
    const started = Date.now()
    await assert.rejects(adapter.get('s', 'k'), { code: 'ADAPTER_UNAVAILABLE' })
    await assert.rejects(adapter.set('s', 'k', 2), { code: 'ADAPTER_UNAVAILABLE' })
    await assert.rejects(adapter.listGroups(), { code: 'ADAPTER_UNAVAILABLE' })
    assert.ok(Date.now() - started < 5000, `failing took ${Date.now() - started} ms`)

    await server.start()
    await waitFor(async () => (await adapter.get('s', 'k').then(() => true, () => false)), "await adapter.get('s', 'k').then(() => true, () => false)", 15_000)
    await waitFor(async () => {
      await adapter.set('s', 'again', changes.length)
      return changes.some((c) => c.key === 'again')
    }, 'the condition', 10_000)
    assert.match(warnings.join('\n'), /reconnected to .* not reported to triggers/)
  })

  it('fails a call that Redis does not answer within 5 s (a frozen server), and recovers when it answers again', async (t) => {
    const server = await startTestRedis()
    t.after(() => server.close())
    const adapter = await RedisStateAdapter.open({ url: server.url, key_prefix: 'frozen:' }, context)
    t.after(() => adapter.close())
    await adapter.set('s', 'k', 1)
    server.pause()
    const started = Date.now()
    await assert.rejects(adapter.get('s', 'k'), { code: 'ADAPTER_UNAVAILABLE', message: /timed out/ })
    const took = Date.now() - started
    assert.ok(took < 5000, `failing took ${took} ms`)
    server.resume()
    await waitFor(async () => (await adapter.get('s', 'k').then((v) => v === 1, () => false)), "await adapter.get('s', 'k').then((v) => v === 1, () => false)", 10_000)
  })

  it('answers ADAPTER_UNAVAILABLE at once when nothing listens at the address', async (t) => {
    const port = await freePort()
    const adapter = await RedisStateAdapter.open({ url: `redis://127.0.0.1:${port}`, key_prefix: 'x:' }, context)
    t.after(() => adapter.close())
    const started = Date.now()
    await assert.rejects(adapter.listKeys('s', { offset: 0, limit: 1 }), { code: 'ADAPTER_UNAVAILABLE' })
    assert.ok(Date.now() - started < 1000)
  })
})
