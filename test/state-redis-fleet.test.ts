/**
 * Two engines, one Redis (builtins.md §13.4, §13.5): real engines with the `redis` state adapter,
 * real workers connected over WebSocket, a real `redis-server` of this file's own.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Logger } from '../runtime/engine/types.ts'
import { StateWorker } from '../runtime/workers/state/worker.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { startTestRedis, type TestRedis } from './support/redis.ts'
import { waitFor } from './support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

function redisSettings(server: TestRedis, key_prefix: string) {
  return { 'svc-state': { adapter: { name: 'redis', config: { url: server.url, key_prefix } } } }
}

/** A worker on one engine with a `state` trigger that records what it is sent. */
async function stateWatcher(engine: TestEngine, name: string) {
  const worker = await RawWorker.connect(engine.url, { announce: { name } })
  const events: Array<Record<string, unknown>> = []
  worker.serve(`${name}::on-change`, (data) => {
    events.push(data as Record<string, unknown>)
    return undefined
  })
  worker.send({ type: 'registertrigger', id: `${name}-trigger`, trigger_type: 'state', function_id: `${name}::on-change`, config: {} })
  // Frames of one connection apply in order: once this answers, the trigger is bound.
  assert.equal((await worker.call('state::list_groups', {})).error, undefined)
  return { worker, events }
}

/** Calls a function through a worker connection and returns its result, failing on an error. */
async function ok(worker: RawWorker, function_id: string, data: unknown): Promise<unknown> {
  const reply = await worker.call(function_id, data)
  assert.equal(reply.error, undefined, `${function_id} failed: ${JSON.stringify(reply.error)}`)
  return reply.result
}

/** Writes a marker through `writer` and waits until every watcher saw it; returns what each saw before it. */
async function settle(writer: RawWorker, watchers: Array<{ events: Array<Record<string, unknown>> }>) {
  const key = `marker-${Math.random().toString(16).slice(2)}`
  await ok(writer, 'state::set', { scope: 'markers', key, value: true })
  await waitFor(() => watchers.every((w) => w.events.some((e) => e.key === key)), 'watchers.every((w) => w.events.some((e) => e.key === key))', 5000)
  return watchers.map((w) => {
    const seen = w.events.slice(0, w.events.findIndex((e) => e.key === key))
    w.events.splice(0, w.events.length)
    return seen.filter((e) => e.scope !== 'markers')
  })
}

function recordingLogger() {
  const entries: Array<{ level: string; message: string }> = []
  const at = (level: string) => (message: string) => void entries.push({ level, message })
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
  return { log, entries }
}

describe('two engines, one Redis (builtins.md §13.4)', () => {
  let a: TestEngine
  let b: TestEngine
  let onA: Awaited<ReturnType<typeof stateWatcher>>
  let onB: Awaited<ReturnType<typeof stateWatcher>>

  before(async () => {
    a = await startTestEngine({ settings: redisSettings(redis, 'fleet:') })
    b = await startTestEngine({ settings: redisSettings(redis, 'fleet:') })
    onA = await stateWatcher(a, 'watcher-a')
    onB = await stateWatcher(b, 'watcher-b')
  })
  after(async () => {
    await onA?.worker.close()
    await onB?.worker.close()
    await a?.stop()
    await b?.stop()
  })

  const base = { type: 'state', message_type: 'state', scope: 'users' }

  it("a write through engine A fires the triggers of A's worker and B's worker exactly once each", async () => {
    assert.deepEqual(await ok(onA.worker, 'state::set', { scope: 'users', key: 'u1', value: { name: 'Al' } }), {
      old_value: null,
      new_value: { name: 'Al' },
    })
    const [seenA, seenB] = await settle(onA.worker, [onA, onB])
    const expected = [{ ...base, key: 'u1', event_type: 'state:created', old_value: null, new_value: { name: 'Al' } }]
    assert.deepEqual(seenA, expected)
    assert.deepEqual(seenB, expected)
  })

  it('writes through engine B (set, update, delete) likewise reach both workers once each, in order', async () => {
    await ok(onB.worker, 'state::set', { scope: 'users', key: 'u2', value: { visits: 1, tags: [] } })
    assert.deepEqual(
      await ok(onB.worker, 'state::update', {
        scope: 'users',
        key: 'u2',
        ops: [{ type: 'increment', path: 'visits' }, { type: 'append', path: 'tags', value: 'vip' }, { type: 'increment', path: 'tags' }],
      }),
      {
        old_value: { visits: 1, tags: [] },
        new_value: { visits: 2, tags: ['vip'] },
        errors: [{ op_index: 2, code: 'increment.not_number', message: "increment at path 'tags' expects a number, found array" }],
      },
    )
    assert.deepEqual(await ok(onB.worker, 'state::delete', { scope: 'users', key: 'u2' }), { old_value: { visits: 2, tags: ['vip'] } })
    assert.deepEqual(await ok(onB.worker, 'state::delete', { scope: 'users', key: 'u2' }), {})
    const [seenA, seenB] = await settle(onB.worker, [onA, onB])
    const expected = [
      { ...base, key: 'u2', event_type: 'state:created', old_value: null, new_value: { visits: 1, tags: [] } },
      { ...base, key: 'u2', event_type: 'state:updated', old_value: { visits: 1, tags: [] }, new_value: { visits: 2, tags: ['vip'] } },
      { ...base, key: 'u2', event_type: 'state:deleted', old_value: { visits: 2, tags: ['vip'] }, new_value: null },
    ]
    assert.deepEqual(seenA, expected)
    assert.deepEqual(seenB, expected)
  })

  it('reads through either engine see every acknowledged write of the other', async () => {
    for (let i = 0; i < 20; i++) {
      const [writer, reader] = i % 2 === 0 ? [onA.worker, onB.worker] : [onB.worker, onA.worker]
      await ok(writer, 'state::set', { scope: 'reads', key: `k${i % 3}`, value: { i, n: 0.1 * i, list: [] } })
      assert.deepEqual(await ok(reader, 'state::get', { scope: 'reads', key: `k${i % 3}` }), { i, n: 0.1 * i, list: [] })
    }
    assert.deepEqual(await ok(onA.worker, 'state::list_keys', { scope: 'reads' }), { keys: ['k0', 'k1', 'k2'], total: 3, offset: 0, limit: 100 })
    assert.deepEqual(await ok(onB.worker, 'state::list_groups', {}), { groups: ['markers', 'reads', 'users'] })
    await settle(onA.worker, [onA, onB])
  })

  it('concurrent updates through both engines lose nothing, and both workers see the same commit order', async () => {
    const bumps: Array<Promise<unknown>> = []
    for (let i = 0; i < 40; i++) {
      bumps.push(ok(i % 2 === 0 ? onA.worker : onB.worker, 'state::update', { scope: 'counters', key: 'hits', ops: [{ type: 'increment' }] }))
    }
    await Promise.all(bumps)
    assert.equal(await ok(onB.worker, 'state::get', { scope: 'counters', key: 'hits' }), 40)
    const [seenA, seenB] = await settle(onA.worker, [onA, onB])
    const values = Array.from({ length: 40 }, (_, i) => i + 1)
    assert.deepEqual(seenA.map((e) => e.new_value), values)
    assert.deepEqual(seenB.map((e) => e.new_value), values)
  })
})

describe('switching an engine to redis at runtime (builtins.md §2.9)', () => {
  it('joins the fleet: sees its data and its changes; a failed switch keeps redis in use', async (t) => {
    const first = await startTestEngine({ settings: redisSettings(redis, 'switch:') })
    t.after(() => first.stop())
    const state = new StateWorker()
    const second = await startTestEngine({ builtins: [state], settings: { 'svc-state': { adapter: { name: 'memory' } } } })
    t.after(() => second.stop())
    const onFirst = await stateWatcher(first, 'switch-first')
    t.after(() => onFirst.worker.close())
    const onSecond = await stateWatcher(second, 'switch-second')
    t.after(() => onSecond.worker.close())
    await ok(onFirst.worker, 'state::set', { scope: 'shared', key: 'k', value: 'from first' })
    assert.equal(await ok(onSecond.worker, 'state::get', { scope: 'shared', key: 'k' }), undefined)

    await state.applySettings(redisSettings(redis, 'switch:')['svc-state'])
    assert.equal(await ok(onSecond.worker, 'state::get', { scope: 'shared', key: 'k' }), 'from first')
    await ok(onFirst.worker, 'state::set', { scope: 'shared', key: 'k', value: 'again' })
    const [, seenSecond] = await settle(onFirst.worker, [onFirst, onSecond])
    assert.deepEqual(seenSecond.map((e) => e.new_value), ['again'])

    // A directory where the SQLite file should be: the switch fails and redis stays in use.
    await assert.rejects(state.applySettings({ adapter: { name: 'builtin', config: { path: '.' } } }), { code: 'STORAGE_ERROR' })
    assert.equal(await ok(onSecond.worker, 'state::get', { scope: 'shared', key: 'k' }), 'again')
  })
})

describe('state on redis while Redis is unavailable (builtins.md §13.4)', () => {
  it('fails state::get with ADAPTER_UNAVAILABLE within 5 s, stays up, and works again once Redis is back', async (t) => {
    const server = await startTestRedis()
    t.after(() => server.close())
    const engine = await startTestEngine({ settings: redisSettings(server, 'outage:') })
    t.after(() => engine.stop())
    const watcher = await stateWatcher(engine, 'outage-watcher')
    t.after(() => watcher.worker.close())
    await ok(watcher.worker, 'state::set', { scope: 's', key: 'k', value: 'before' })

    const health = async () => (await ok(watcher.worker, 'engine::health::check', {})) as { status: string; components: Record<string, { status: string; detail?: string }> }
    assert.equal((await health()).components.redis?.status, 'healthy')
    await server.stop()
    const started = Date.now()
    const reply: Frame = await watcher.worker.call('state::get', { scope: 's', key: 'k' })
    assert.equal(reply.error?.code, 'ADAPTER_UNAVAILABLE')
    assert.match(reply.error?.message, /^redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable \(state get\)/)
    assert.ok(Date.now() - started < 5000, `the call took ${Date.now() - started} ms`)
    // The engine is still up: the connection answers, and so do other functions.
    assert.equal((await watcher.worker.call('state::update', { scope: 's', key: 'k', ops: [] })).error?.code, 'ADAPTER_UNAVAILABLE')
    assert.equal((await watcher.worker.call('state::update', { scope: 's', key: 'k', ops: 'x' })).error?.code, 'INVALID_ARGUMENTS')

    // Health says so, naming the server without its password.
    await waitFor(async () => (await health()).components.redis?.status === 'degraded', "(await health()).components.redis?.status === 'degraded'", 10_000)
    const degraded = await health()
    assert.equal(degraded.status, 'degraded')
    assert.match(degraded.components.redis!.detail!, /not connected to redis:\/\/127\.0\.0\.1:\d+/)

    await server.start()
    await waitFor(async () => (await health()).components.redis?.status === 'healthy', "(await health()).components.redis?.status === 'healthy'", 20_000)
    // Redis restarted empty (no persistence in tests); calls work again after the reconnect backoff.
    await waitFor(async () => (await watcher.worker.call('state::set', { scope: 's', key: 'k', value: 'after' })).error === undefined, "(await watcher.worker.call('state::set', { scope: 's', key: 'k', value: 'after' })).error === undefined", 20_000)
    assert.equal(await ok(watcher.worker, 'state::get', { scope: 's', key: 'k' }), 'after')
    // And triggers fire again: the change feed is subscribed again.
    await waitFor(async () => {
      await ok(watcher.worker, 'state::set', { scope: 's', key: 'again', value: Date.now() })
      return watcher.events.some((e) => e.key === 'again')
    }, 'the condition', 10_000)
  })

  it('starts an engine whose Redis is down, with a warning, and serves state as soon as Redis is there', async (t) => {
    const server = await startTestRedis()
    t.after(() => server.close())
    await server.stop()
    const { log, entries } = recordingLogger()
    const started = Date.now()
    const engine = await startTestEngine({ settings: redisSettings(server, 'late:'), log })
    t.after(() => engine.stop())
    assert.ok(Date.now() - started < 10_000)
    assert.ok(
      entries.some((e) => e.level === 'warn' && /is unreachable; state calls fail with ADAPTER_UNAVAILABLE/.test(e.message)),
      JSON.stringify(entries),
    )
    const worker = await RawWorker.connect(engine.url, { announce: { name: 'late-worker' } })
    t.after(() => worker.close())
    assert.equal((await worker.call('state::get', { scope: 's', key: 'k' })).error?.code, 'ADAPTER_UNAVAILABLE')

    await server.start()
    await waitFor(async () => (await worker.call('state::set', { scope: 's', key: 'k', value: 1 })).error === undefined, "(await worker.call('state::set', { scope: 's', key: 'k', value: 1 })).error === undefined", 20_000)
    assert.equal(await ok(worker, 'state::get', { scope: 's', key: 'k' }), 1)
  })
})
