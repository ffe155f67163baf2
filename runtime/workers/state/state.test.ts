/**
 * The state worker through a real engine: every function over `engine.invoke`, `state` triggers
 * delivered to a raw WebSocket worker, settings applied at runtime, and durability across an
 * engine restart on the same data directory.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, before, describe, it } from 'node:test'
import type { Logger } from '../../engine/types.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker, type Frame } from '../../../test/support/raw-worker.ts'
import { recordingLogger } from '../../../test/support/recording-log.ts'
import { rejection } from '../../../test/support/sdk-harness.ts'
import { StateWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'


async function startStateEngine(
  options: { settings?: unknown; dataDir?: string; timeoutMs?: number; log?: Logger } = {},
): Promise<{ test: TestEngine; worker: StateWorker }> {
  const worker = new StateWorker()
  const engineOptions: Parameters<typeof startTestEngine>[0] = { builtins: [worker], settings: {} }
  if (options.settings !== undefined) engineOptions.settings = { 'svc-state': options.settings }
  if (options.dataDir !== undefined) engineOptions.dataDir = options.dataDir
  if (options.timeoutMs !== undefined) engineOptions.config = { internal_invocation_timeout_ms: options.timeoutMs }
  if (options.log !== undefined) engineOptions.log = options.log
  return { test: await startTestEngine(engineOptions), worker }
}

const failure = rejection

describe('state functions over engine.invoke (builtins.md §4.2)', () => {
  let test: TestEngine
  const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })

  before(async () => {
    ;({ test } = await startStateEngine())
  })
  after(() => test.stop())

  it('get of an absent key returns no result', async () => {
    assert.equal(await call('state::get', { scope: 'users', key: 'nobody' }), undefined)
  })

  it('set returns {old_value: null, new_value} for a new key, then the previous value', async () => {
    assert.deepEqual(await call('state::set', { scope: 'users', key: 'u1', value: { name: 'Al' } }), {
      old_value: null,
      new_value: { name: 'Al' },
    })
    assert.deepEqual(await call('state::set', { scope: 'users', key: 'u1', value: { name: 'Alice' } }), {
      old_value: { name: 'Al' },
      new_value: { name: 'Alice' },
    })
    assert.deepEqual(await call('state::get', { scope: 'users', key: 'u1' }), { name: 'Alice' })
  })

  it('set accepts data for value, and null as a value', async () => {
    await call('state::set', { scope: 'alias', key: 'k', data: [1, 2] })
    assert.deepEqual(await call('state::get', { scope: 'alias', key: 'k' }), [1, 2])
    assert.deepEqual(await call('state::set', { scope: 'alias', key: 'k', value: null }), {
      old_value: [1, 2],
      new_value: null,
    })
    assert.equal(await call('state::get', { scope: 'alias', key: 'k' }), null)
  })

  it('delete returns {old_value}, and {} when the key was absent', async () => {
    await call('state::set', { scope: 'del', key: 'k', value: 'v' })
    assert.deepEqual(await call('state::delete', { scope: 'del', key: 'k' }), { old_value: 'v' })
    assert.deepEqual(await call('state::delete', { scope: 'del', key: 'k' }), {})
    assert.equal(await call('state::get', { scope: 'del', key: 'k' }), undefined)
  })

  it('update applies ops atomically and returns {old_value, new_value} without errors when all applied', async () => {
    const first = await call('state::update', {
      scope: 'counters',
      key: 'c',
      ops: [{ type: 'increment', path: 'hits' }, { type: 'append', path: 'log', value: 'a' }],
    })
    assert.deepEqual(first, { old_value: null, new_value: { hits: 1, log: 'a' } })
    const second = await call('state::update', {
      scope: 'counters',
      key: 'c',
      ops: [{ type: 'increment', path: 'hits', by: 2 }],
    })
    assert.deepEqual(second, { old_value: { hits: 1, log: 'a' }, new_value: { hits: 3, log: 'a' } })
  })

  it('update reports skipped ops in errors and still stores the result (§5.3)', async () => {
    await call('state::set', { scope: 'counters', key: 'mixed', value: { count: 1, name: 'Al' } })
    const result = await call('state::update', {
      scope: 'counters',
      key: 'mixed',
      ops: [
        { type: 'increment', path: 'count' },
        { type: 'set', path: 'tags', value: ['a'] },
        { type: 'increment', path: 'name' },
      ],
    })
    assert.deepEqual(result, {
      old_value: { count: 1, name: 'Al' },
      new_value: { count: 2, name: 'Al', tags: ['a'] },
      errors: [
        { op_index: 2, code: 'increment.not_number', message: "increment at path 'name' expects a number, found string" },
      ],
    })
    assert.deepEqual(await call('state::get', { scope: 'counters', key: 'mixed' }), {
      count: 2,
      name: 'Al',
      tags: ['a'],
    })
  })

  it('update of an absent key with no effective op stores {}', async () => {
    assert.deepEqual(await call('state::update', { scope: 'counters', key: 'empty', ops: [] }), {
      old_value: null,
      new_value: {},
    })
    assert.deepEqual(await call('state::get', { scope: 'counters', key: 'empty' }), {})
  })

  it('concurrent updates of one key lose no increment', async () => {
    await Promise.all(
      Array.from({ length: 50 }, () =>
        call('state::update', { scope: 'counters', key: 'race', ops: [{ type: 'increment', path: 'n' }] }),
      ),
    )
    assert.deepEqual(await call('state::get', { scope: 'counters', key: 'race' }), { n: 50 })
  })

  it('list returns the values ordered by key byte-wise, [] for an unknown scope', async () => {
    for (const key of ['😀', 'b', '\uFFFD', 'a', 'é', 'B']) await call('state::set', { scope: 'order', key, value: key })
    assert.deepEqual(await call('state::list', { scope: 'order' }), ['B', 'a', 'b', 'é', '\uFFFD', '😀'])
    assert.deepEqual(await call('state::list', { scope: 'nothing-here' }), [])
  })

  it('list_keys and list_entries page by prefix with total, offset and limit', async () => {
    for (const key of ['item:3', 'item:1', 'item:2', 'other']) {
      await call('state::set', { scope: 'paged', key, value: { key } })
    }
    assert.deepEqual(await call('state::list_keys', { scope: 'paged' }), {
      keys: ['item:1', 'item:2', 'item:3', 'other'],
      total: 4,
      offset: 0,
      limit: 100,
    })
    assert.deepEqual(await call('state::list_keys', { scope: 'paged', prefix: 'item:', offset: 1, limit: 1 }), {
      keys: ['item:2'],
      total: 3,
      offset: 1,
      limit: 1,
    })
    assert.deepEqual(await call('state::list_entries', { scope: 'paged', prefix: 'item:', limit: 2 }), {
      entries: [
        { key: 'item:1', value: { key: 'item:1' } },
        { key: 'item:2', value: { key: 'item:2' } },
      ],
      total: 3,
      offset: 0,
      limit: 2,
    })
    assert.deepEqual(await call('state::list_keys', { scope: 'paged', limit: 1000 }), {
      keys: ['item:1', 'item:2', 'item:3', 'other'],
      total: 4,
      offset: 0,
      limit: 1000,
    })
  })

  it('list_groups returns the scopes holding at least one key, sorted', async () => {
    await call('state::set', { scope: 'zz-last', key: 'k', value: 1 })
    await call('state::set', { scope: 'gone', key: 'k', value: 1 })
    await call('state::delete', { scope: 'gone', key: 'k' })
    const { groups } = (await call('state::list_groups', {})) as { groups: string[] }
    assert.ok(groups.includes('users') && groups.includes('zz-last'))
    assert.ok(!groups.includes('gone'))
    assert.deepEqual(groups, [...groups].sort())
    assert.deepEqual(await call('state::list_groups', undefined), { groups })
  })

  it('refuses missing and ill-typed fields with INVALID_ARGUMENTS and the field name (§2.1)', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['state::get', { key: 'k' }, 'scope is required'],
      ['state::get', { scope: 's' }, 'key is required'],
      ['state::get', { scope: '', key: 'k' }, 'scope must be a non-empty string'],
      ['state::delete', { scope: 's', key: 7 }, 'key must be a non-empty string'],
      ['state::set', { scope: 's', key: 'k' }, 'value is required'],
      ['state::set', 'scope', 'payload must be an object'],
      ['state::update', { scope: 's', key: 'k' }, 'ops is required'],
      ['state::update', { scope: 's', key: 'k', ops: { type: 'set' } }, 'ops must be an array'],
      [
        'state::update',
        { scope: 's', key: 'k', ops: [{ type: 'multiply' }] },
        'ops[0].type must be one of set, merge, increment, decrement, append, remove',
      ],
      ['state::list', {}, 'scope is required'],
      ['state::list_keys', { scope: 's', limit: 1001 }, 'limit must be an integer from 0 to 1000'],
      ['state::list_keys', { scope: 's', limit: 1.5 }, 'limit must be an integer from 0 to 1000'],
      ['state::list_entries', { scope: 's', offset: -1 }, 'offset must be a non-negative integer'],
      ['state::list_entries', { scope: 's', prefix: 3 }, 'prefix must be a string'],
    ]
    for (const [id, data, message] of cases) {
      const error = await failure(call(id, data))
      assert.equal(error.code, 'INVALID_ARGUMENTS', `${id} ${JSON.stringify(data)}`)
      assert.equal(error.message, message, `${id} ${JSON.stringify(data)}`)
    }
  })

  it('stores nothing when an update call is malformed', async () => {
    await failure(call('state::update', { scope: 'untouched', key: 'k', ops: [{ type: 'set', value: 1 }, 5] }))
    assert.equal(await call('state::get', { scope: 'untouched', key: 'k' }), undefined)
  })
})

describe('state settings (builtins.md §4.1)', () => {
  it('refuses writes larger than max_value_bytes with VALUE_TOO_LARGE and stores nothing', async (t) => {
    const { test } = await startStateEngine({ settings: { max_value_bytes: 20 } })
    t.after(() => test.stop())
    const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })

    // {"text":"aaaaaaaaa"} is exactly 20 bytes; {"text":"ééééé"} is 21 bytes (é takes two in
    // UTF-8) although only 16 characters long.
    assert.deepEqual(await call('state::set', { scope: 's', key: 'k', value: { text: 'aaaaaaaaa' } }), {
      old_value: null,
      new_value: { text: 'aaaaaaaaa' },
    })
    const tooBig = await failure(call('state::set', { scope: 's', key: 'k', value: { text: 'ééééé' } }))
    assert.equal(tooBig.code, 'VALUE_TOO_LARGE')
    assert.equal(tooBig.message, 'value of 21 bytes exceeds max_value_bytes 20')
    const update = await failure(
      call('state::update', { scope: 's', key: 'k', ops: [{ type: 'append', path: 'text', value: 'aa' }] }),
    )
    assert.equal(update.code, 'VALUE_TOO_LARGE')
    assert.deepEqual(await call('state::get', { scope: 's', key: 'k' }), { text: 'aaaaaaaaa' })
  })

  it('refuses invalid settings, keeping the previous ones in effect', async (t) => {
    const { test, worker } = await startStateEngine({ settings: { max_value_bytes: 10 } })
    t.after(() => test.stop())
    const cases: Array<[unknown, RegExp]> = [
      [{ adapter: { name: 'redis', config: { url: 'localhost:6379' } } }, /^adapter\.config\.url must be a redis:\/\/ or rediss:\/\/ URL/],
      [{ adapter: { name: 'postgres' } }, /^adapter\.name 'postgres' is unknown/],
      [{ adapter: { name: 'builtin', extra: 1 } }, /^adapter\.extra is not allowed/],
      [{ adapter: { name: 'memory', config: { path: 'x' } } }, /^adapter\.config\.path is not a memory adapter option/],
      [{ triggers_enabled: 'yes' }, /^triggers_enabled must be a boolean/],
      [{ max_value_bytes: 0 }, /^max_value_bytes must be an integer >= 1 or null/],
      [{ max_value_bytes: 1000, adapter: {} }, /^adapter\.name is required/],
      ['everything', /^svc-state settings must be an object/],
    ]
    for (const [settings, message] of cases) {
      await assert.rejects(worker.applySettings(settings), { code: 'INVALID_ARGUMENTS', message })
    }
    // Still the first settings: the 10-byte limit holds.
    const error = await failure(test.engine.inject({ function_id: 'state::set', data: { scope: 's', key: 'k', value: 'x'.repeat(20) } }))
    assert.equal(error.code, 'VALUE_TOO_LARGE')
  })

  it('refuses an adapter that cannot open with STORAGE_ERROR, keeping the old adapter', async (t) => {
    const { test, worker } = await startStateEngine()
    t.after(() => test.stop())
    await test.engine.inject({ function_id: 'state::set', data: { scope: 's', key: 'k', value: 1 } })
    // A directory where the database file should be.
    await assert.rejects(worker.applySettings({ adapter: { name: 'builtin', config: { path: '.' } } }), {
      code: 'STORAGE_ERROR',
    })
    assert.equal(await test.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' } }), 1)
  })

  it('switches adapters at runtime without migrating data (§2.9), aliases included', async (t) => {
    const { test, worker } = await startStateEngine()
    t.after(() => test.stop())
    const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })
    await call('state::set', { scope: 's', key: 'on-disk', value: 1 })

    await worker.applySettings({ adapter: { name: 'in_memory' } })
    assert.equal(await call('state::get', { scope: 's', key: 'on-disk' }), undefined)
    await call('state::set', { scope: 's', key: 'in-memory', value: 2 })

    await worker.applySettings({ adapter: { name: 'kv' } })
    assert.equal(await call('state::get', { scope: 's', key: 'on-disk' }), 1)
    assert.equal(await call('state::get', { scope: 's', key: 'in-memory' }), undefined)
  })

  it('keeps the running adapter when equivalent settings are applied again', async (t) => {
    const { test, worker } = await startStateEngine({ settings: { adapter: { name: 'memory' } } })
    t.after(() => test.stop())
    await test.engine.inject({ function_id: 'state::set', data: { scope: 's', key: 'k', value: 1 } })
    await worker.applySettings({ adapter: { name: 'in_memory' }, max_value_bytes: 100 })
    assert.equal(await test.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' } }), 1)
  })

  it('honours adapter.config.path for builtin', async (t) => {
    const { test } = await startStateEngine({ settings: { adapter: { name: 'builtin', config: { path: 'custom/state.sqlite' } } } })
    t.after(() => test.stop())
    await test.engine.inject({ function_id: 'state::set', data: { scope: 's', key: 'k', value: 'here' } })
    const db = new DatabaseSync(join(test.dataDir, 'custom', 'state.sqlite'), { readOnly: true })
    t.after(() => db.close())
    assert.deepEqual({ ...db.prepare('SELECT value FROM state_values').get() }, { value: '"here"' })
  })
})

describe('state storage failures', () => {
  it('reports an adapter failure as STORAGE_ERROR naming the operation', async (t) => {
    const { test } = await startStateEngine()
    t.after(() => test.stop())
    await test.engine.inject({ function_id: 'state::set', data: { scope: 's', key: 'k', value: 1 } })
    // Another process damages the store: the table disappears under the engine.
    const db = new DatabaseSync(join(test.dataDir, 'state.db'))
    db.exec('DROP TABLE state_values')
    db.close()
    const error = await failure(test.engine.inject({ function_id: 'state::get', data: { scope: 's', key: 'k' } }))
    assert.equal(error.code, 'STORAGE_ERROR')
    assert.match(error.message, /^state::get failed: .*no such table/)
    const write = await failure(test.engine.inject({ function_id: 'state::set', data: { scope: 's', key: 'k', value: 2 } }))
    assert.match(write.message, /^state::set failed: /)
  })
})

describe('state durability', () => {
  it('keeps acknowledged writes when a new engine opens the same data directory', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-state-durable-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))

    const first = await startStateEngine({ dataDir })
    const call1 = (function_id: string, data: unknown) => first.test.engine.inject({ function_id, data })
    await call1('state::set', { scope: 'users', key: 'u1', value: { name: 'Alice' } })
    await call1('state::update', { scope: 'counters', key: 'visits', ops: [{ type: 'increment', by: 41 }] })
    await call1('state::update', { scope: 'counters', key: 'visits', ops: [{ type: 'increment' }] })
    await call1('state::set', { scope: 'users', key: 'gone', value: 1 })
    await call1('state::delete', { scope: 'users', key: 'gone' })
    await first.test.stop()

    const second = await startStateEngine({ dataDir })
    t.after(() => second.test.stop())
    const call2 = (function_id: string, data: unknown) => second.test.engine.inject({ function_id, data })
    assert.deepEqual(await call2('state::get', { scope: 'users', key: 'u1' }), { name: 'Alice' })
    assert.equal(await call2('state::get', { scope: 'counters', key: 'visits' }), 42)
    assert.equal(await call2('state::get', { scope: 'users', key: 'gone' }), undefined)
    assert.deepEqual(await call2('state::list_groups', {}), { groups: ['counters', 'users'] })
  })
})

// ---------------------------------------------------------------------------------------------
// Triggers (builtins.md §4.3, §2.5, §2.2)

interface Delivered {
  data: any
  frame: Frame
}

/** A raw worker announced in `namespace` that records what its functions receive. */
async function consumer(test: TestEngine, namespace = 'default') {
  const worker = await RawWorker.connect(test.url, { announce: { name: 'state-consumer', namespace } })
  const received = new Map<string, Delivered[]>()
  const serve = (id: string, answer: (data: any) => unknown = () => undefined) => {
    received.set(id, [])
    worker.serve(id, (data, frame) => {
      received.get(id)!.push({ data, frame })
      return answer(data)
    })
  }
  let triggers = 0
  const bind = (function_id: string, config: unknown, extra: Frame = {}) => {
    const id = `trigger-${++triggers}-${Math.random().toString(16).slice(2)}`
    worker.send({ type: 'registertrigger', id, trigger_type: 'state', function_id, config, ...extra })
    return id
  }
  /** Resolves once the engine has applied every frame sent so far (frames of a connection apply in order). */
  const settled = async () => {
    const reply = await worker.call('state::list_groups', {})
    assert.equal(reply.error, undefined)
  }
  return { worker, received, serve, bind, settled, events: (id: string) => received.get(id)!.map((d) => d.data) }
}

describe('state triggers (builtins.md §4.3)', () => {
  let test: TestEngine
  const call = (function_id: string, data: unknown, extra: Record<string, unknown> = {}) =>
    test.engine.inject({ function_id, data, ...extra })

  before(async () => {
    ;({ test } = await startStateEngine({ settings: { adapter: { name: 'memory' } } }))
  })
  after(() => test.stop())

  it('delivers created, updated and deleted events with the payload of §4.3, and none for an absent delete', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    c.serve('audit::on-user')
    c.bind('audit::on-user', { scope: 'users', key: 'u1' })
    await c.settled()

    await call('state::set', { scope: 'users', key: 'u1', value: { name: 'Al' } })
    await call('state::set', { scope: 'users', key: 'u1', value: { name: 'Alice' } })
    await call('state::update', { scope: 'users', key: 'u1', ops: [{ type: 'increment', path: 'name' }] })
    await call('state::delete', { scope: 'users', key: 'u1' })
    await call('state::delete', { scope: 'users', key: 'u1' })
    await call('state::set', { scope: 'users', key: 'u2', value: 'other key' })
    await call('state::set', { scope: 'users', key: 'u1', value: 'marker' })

    await waitFor(() => c.events('audit::on-user').length === 5, "c.events('audit::on-user').length === 5")
    const base = { type: 'state', message_type: 'state', scope: 'users', key: 'u1' }
    assert.deepEqual(c.events('audit::on-user'), [
      { ...base, event_type: 'state:created', old_value: null, new_value: { name: 'Al' } },
      { ...base, event_type: 'state:updated', old_value: { name: 'Al' }, new_value: { name: 'Alice' } },
      // Updated even though the only op failed and the value did not change.
      { ...base, event_type: 'state:updated', old_value: { name: 'Alice' }, new_value: { name: 'Alice' } },
      { ...base, event_type: 'state:deleted', old_value: { name: 'Alice' }, new_value: null },
      { ...base, event_type: 'state:created', old_value: null, new_value: 'marker' },
    ])
  })

  it('matches scope and key exactly; absent filters match all, an empty-string filter matches nothing', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    for (const id of ['f::all', 'f::scope', 'f::key', 'f::empty']) c.serve(id)
    c.bind('f::all', {})
    c.bind('f::scope', { scope: 'filter-a' })
    c.bind('f::key', { key: 'k2' })
    c.bind('f::empty', { scope: '' })
    await c.settled()

    await call('state::set', { scope: 'filter-a', key: 'k1', value: 1 })
    await call('state::set', { scope: 'filter-b', key: 'k2', value: 2 })
    await call('state::set', { scope: 'filter-a', key: 'k2', value: 3 })

    await waitFor(
      () => c.events('f::all').length === 3 && c.events('f::scope').length === 2 && c.events('f::key').length === 2, "c.events('f::all').length === 3 && c.events('f::scope').length === 2 && c.events('f::key').length === 2",
    )
    const values = (id: string) => c.events(id).map((e) => e.new_value)
    assert.deepEqual(values('f::all'), [1, 2, 3])
    assert.deepEqual(values('f::scope'), [1, 3])
    assert.deepEqual(values('f::key'), [2, 3])
    assert.deepEqual(values('f::empty'), [])
  })

  it('sends the trigger metadata with the invocation, never inside the payload (§2.3)', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    c.serve('meta::with')
    c.serve('meta::without')
    c.bind('meta::with', { scope: 'meta' }, { metadata: { team: 'platform' } })
    c.bind('meta::without', { scope: 'meta' })
    await c.settled()

    await call('state::set', { scope: 'meta', key: 'k', value: 1 })
    await waitFor(() => c.received.get('meta::with')!.length === 1 && c.received.get('meta::without')!.length === 1, "c.received.get('meta::with')!.length === 1 && c.received.get('meta::without')!.length === 1")
    const [withMeta] = c.received.get('meta::with')!
    const [withoutMeta] = c.received.get('meta::without')!
    assert.deepEqual(withMeta!.frame.metadata, { team: 'platform' })
    assert.equal('team' in withMeta!.data, false)
    assert.equal('metadata' in withoutMeta!.frame, false)
  })

  it('passes the writer trace context to the delivery (§2.5 rule 7)', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    c.serve('trace::on')
    c.bind('trace::on', { scope: 'traced' })
    await c.settled()
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    await call('state::set', { scope: 'traced', key: 'k', value: 1 }, { traceparent })
    await waitFor(() => c.received.get('trace::on')!.length === 1, "c.received.get('trace::on')!.length === 1")
    assert.equal(c.received.get('trace::on')![0]!.frame.traceparent, traceparent)
  })

  it('runs the condition with the same payload and metadata; only false skips (§2.2)', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    // The condition answers whatever the written value asks it to.
    c.serve('cond::check', (data) => data.new_value?.verdict)
    c.serve('cond::handler')
    c.bind('cond::handler', { scope: 'cond', condition_function_id: 'cond::check' }, { metadata: { m: 1 } })
    await c.settled()

    const verdicts = [false, true, null, 0, '', {}, 'no']
    for (const [i, verdict] of verdicts.entries()) {
      await call('state::set', { scope: 'cond', key: `k${i}`, value: { verdict } })
    }
    await call('state::set', { scope: 'cond', key: 'absent-verdict', value: {} })

    await waitFor(() => c.events('cond::handler').length === verdicts.length, "c.events('cond::handler').length === verdicts.length")
    assert.deepEqual(
      c.events('cond::handler').map((e) => e.key),
      ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'absent-verdict'],
    )
    const checks = c.received.get('cond::check')!
    assert.equal(checks.length, verdicts.length + 1)
    // The condition for k1 saw exactly what the handler then received.
    assert.deepEqual(checks[1]!.data, c.events('cond::handler')[0])
    assert.equal(checks[1]!.data.event_type, 'state:created')
    assert.deepEqual(checks[0]!.frame.metadata, { m: 1 })
  })

  it('skips the handler and logs when the condition fails or is missing', async (t) => {
    const { log, entries } = recordingLogger()
    const { test: own } = await startStateEngine({ settings: { adapter: { name: 'memory' } }, log })
    t.after(() => own.stop())
    const c = await consumer(own)
    t.after(() => c.worker.close())
    c.serve('cond::throws', () => {
      throw Object.assign(new Error('condition exploded'), { code: 'BOOM' })
    })
    c.serve('cond::after-throw')
    c.serve('cond::after-missing')
    const failingId = c.bind('cond::after-throw', { scope: 'c2', condition_function_id: 'cond::throws' })
    c.bind('cond::after-missing', { scope: 'c2', condition_function_id: 'cond::not-registered' })
    await c.settled()

    await own.engine.inject({ function_id: 'state::set', data: { scope: 'c2', key: 'k', value: 1 } })
    await waitFor(() => entries.filter((e) => e.level === 'error').length === 2, "entries.filter((e) => e.level === 'error').length === 2")
    assert.deepEqual(c.events('cond::after-throw'), [])
    assert.deepEqual(c.events('cond::after-missing'), [])
    const thrown = entries.find((e) => e.data?.trigger_id === failingId)!
    assert.deepEqual(thrown.data, {
      trigger_id: failingId,
      function_id: 'cond::throws',
      code: 'BOOM',
      message: 'condition exploded',
    })
    assert.ok(entries.some((e) => e.data?.function_id === 'cond::not-registered' && e.data?.code === 'function_not_found'))
  })

  it('answers the writer before delivering, and delivers one event at a time per trigger in commit order (§2.5)', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let running = 0
    let maxRunning = 0
    c.serve('fifo::slow', async () => {
      running++
      maxRunning = Math.max(maxRunning, running)
      await gate
      running--
    })
    c.serve('fifo::fast')
    c.bind('fifo::slow', { scope: 'fifo' })
    c.bind('fifo::fast', { scope: 'fifo' })
    await c.settled()

    // Every write returns while the slow handler is still blocked on the first event.
    for (let i = 0; i < 20; i++) await call('state::set', { scope: 'fifo', key: 'k', value: i })
    // The other trigger is not held up by the slow one.
    await waitFor(() => c.events('fifo::fast').length === 20, "c.events('fifo::fast').length === 20")
    assert.equal(c.events('fifo::slow').length, 1)
    release()
    await waitFor(() => c.events('fifo::slow').length === 20, "c.events('fifo::slow').length === 20")
    const expected = Array.from({ length: 20 }, (_, i) => i)
    assert.deepEqual(c.events('fifo::slow').map((e) => e.new_value), expected)
    assert.deepEqual(c.events('fifo::fast').map((e) => e.new_value), expected)
    assert.equal(maxRunning, 1)
  })

  it('logs a failed or timed-out handler and goes on with the next event (§2.5 rule 4)', async (t) => {
    const { log, entries } = recordingLogger()
    const { test: own } = await startStateEngine({ settings: { adapter: { name: 'memory' } }, log, timeoutMs: 200 })
    t.after(() => own.stop())
    const c = await consumer(own)
    t.after(() => c.worker.close())
    c.serve('err::handler', (data) => {
      if (data.new_value === 'throw') throw Object.assign(new Error('handler exploded'), { code: 'E_HANDLER' })
      if (data.new_value === 'hang') return new Promise(() => {})
      return undefined
    })
    const id = c.bind('err::handler', { scope: 'errs' })
    await c.settled()

    for (const value of ['throw', 'hang', 'after']) {
      await own.engine.inject({ function_id: 'state::set', data: { scope: 'errs', key: 'k', value } })
    }
    await waitFor(() => c.events('err::handler').length === 3, "c.events('err::handler').length === 3")
    assert.deepEqual(c.events('err::handler').map((e) => e.new_value), ['throw', 'hang', 'after'])
    await waitFor(() => entries.filter((e) => e.level === 'error').length === 2, "entries.filter((e) => e.level === 'error').length === 2")
    const logged = entries.filter((e) => e.level === 'error').map((e) => e.data)
    assert.deepEqual(logged[0], { trigger_id: id, function_id: 'err::handler', code: 'E_HANDLER', message: 'handler exploded' })
    assert.deepEqual(logged[1], { trigger_id: id, function_id: 'err::handler', code: 'TIMEOUT', message: 'invocation timed out after 200ms' })
  })

  it('drops the oldest event beyond 10 000 undelivered ones, with a warning (§2.5 rule 5)', async (t) => {
    const { log, entries } = recordingLogger()
    const { test: own } = await startStateEngine({ settings: { adapter: { name: 'memory' } }, log })
    t.after(() => own.stop())
    const c = await consumer(own)
    t.after(() => c.worker.close())
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    c.serve('flood::handler', () => gate)
    const id = c.bind('flood::handler', { scope: 'flood' })
    await c.settled()

    // The first event is taken by the handler (blocked); 10 001 more wait, one too many.
    await own.engine.inject({ function_id: 'state::set', data: { scope: 'flood', key: 'k', value: 0 } })
    await waitFor(() => c.events('flood::handler').length === 1, "c.events('flood::handler').length === 1")
    for (let i = 1; i <= 10_001; i++) {
      await own.engine.inject({ function_id: 'state::set', data: { scope: 'flood', key: 'k', value: i } })
    }
    const warnings = entries.filter((e) => e.level === 'warn' && e.data?.trigger_id === id)
    assert.equal(warnings.length, 1)
    assert.equal(warnings[0]!.data!.dropped, 1)
    release()
    await waitFor(() => c.events('flood::handler').length === 10_001, "c.events('flood::handler').length === 10_001", 30_000)
    const values = c.events('flood::handler').map((e) => e.new_value as number)
    assert.deepEqual(values.slice(0, 3), [0, 2, 3])
    assert.equal(values.at(-1), 10_001)
  })

  it('stops delivery while triggers_enabled is false and drops the events of that time', async (t) => {
    const { test: own, worker } = await startStateEngine({ settings: { adapter: { name: 'memory' } } })
    t.after(() => own.stop())
    const c = await consumer(own)
    t.after(() => c.worker.close())
    c.serve('toggle::handler')
    c.bind('toggle::handler', { scope: 'toggle' })
    await c.settled()
    const set = (value: unknown) => own.engine.inject({ function_id: 'state::set', data: { scope: 'toggle', key: 'k', value } })

    await worker.applySettings({ adapter: { name: 'memory' }, triggers_enabled: false })
    await set('while disabled')
    await worker.applySettings({ adapter: { name: 'memory' } })
    await set('after')
    await waitFor(() => c.events('toggle::handler').length === 1, "c.events('toggle::handler').length === 1")
    assert.deepEqual(c.events('toggle::handler')[0]!.new_value, 'after')
    // The stored value kept changing all along.
    assert.deepEqual(c.events('toggle::handler')[0]!.old_value, 'while disabled')
  })

  it('keeps firing after an adapter change', async (t) => {
    const { test: own, worker } = await startStateEngine()
    t.after(() => own.stop())
    const c = await consumer(own)
    t.after(() => c.worker.close())
    c.serve('switch::handler')
    c.bind('switch::handler', { scope: 'switch' })
    await c.settled()
    await own.engine.inject({ function_id: 'state::set', data: { scope: 'switch', key: 'k', value: 'sqlite' } })
    await worker.applySettings({ adapter: { name: 'memory' } })
    await own.engine.inject({ function_id: 'state::set', data: { scope: 'switch', key: 'k', value: 'memory' } })
    await waitFor(() => c.events('switch::handler').length === 2, "c.events('switch::handler').length === 2")
    assert.deepEqual(
      c.events('switch::handler').map((e) => [e.event_type, e.new_value]),
      [
        ['state:created', 'sqlite'],
        ['state:created', 'memory'],
      ],
    )
  })

  it('resolves the handler and condition in the trigger namespace (§2.4)', async (t) => {
    const c = await consumer(test, 'tenant-a')
    t.after(() => c.worker.close())
    c.serve('ns::cond', () => true)
    c.serve('ns::handler')
    c.bind('ns::handler', { scope: 'ns', condition_function_id: 'ns::cond' }, { namespace: 'tenant-a' })
    await c.settled()
    await call('state::set', { scope: 'ns', key: 'k', value: 1 })
    await waitFor(() => c.events('ns::handler').length === 1, "c.events('ns::handler').length === 1")
    assert.equal(c.received.get('ns::cond')!.length, 1)
  })

  it('refuses an invalid config with INVALID_TRIGGER_CONFIG naming the field (§2.6)', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    const cases: Array<[unknown, string]> = [
      [{ scope: 5 }, 'scope must be a string for state triggers'],
      [{ key: ['a'] }, 'key must be a string for state triggers'],
      [{ condition_function_id: '' }, 'condition_function_id must be a non-empty string for state triggers'],
      ['users', 'config must be an object for state triggers'],
    ]
    for (const [config, message] of cases) {
      const id = c.bind('bad::handler', config)
      const result = await c.worker.next((f) => f.type === 'triggerregistrationresult' && f.id === id)
      assert.deepEqual(result.error, { code: 'INVALID_TRIGGER_CONFIG', message })
    }
  })

  it('stops delivering to a trigger once it is unregistered', async (t) => {
    const c = await consumer(test)
    t.after(() => c.worker.close())
    c.serve('unreg::gone')
    c.serve('unreg::kept')
    const gone = c.bind('unreg::gone', { scope: 'unreg' })
    c.bind('unreg::kept', { scope: 'unreg' })
    await c.settled()
    c.worker.send({ type: 'unregistertrigger', id: gone })
    await c.settled()
    await call('state::set', { scope: 'unreg', key: 'k', value: 1 })
    await waitFor(() => c.events('unreg::kept').length === 1, "c.events('unreg::kept').length === 1")
    assert.deepEqual(c.events('unreg::gone'), [])
  })
})
