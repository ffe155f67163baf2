/**
 * The configuration worker (builtins.md §11) and the live settings of the built-ins (§2.7) in a
 * real engine: settings files on disk, a real HTTP listener, raw workers over real WebSockets.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { parse } from 'yaml'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { silentLogger } from '../../engine/logger.ts'
import type { ConfigurationEventData } from 'svc-sdk/configuration'
import { RawWorker, type Frame } from '../../../test/support/raw-worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

const SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: { port: { type: 'integer', maximum: 65535 }, name: { type: 'string' }, tags: { type: 'array' } },
}

async function rejectsWith(promise: Promise<unknown>, code: string, message?: string | RegExp): Promise<void> {
  await assert.rejects(promise, (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message)
    if (typeof message === 'string') assert.equal(error.message, message)
    else if (message) assert.match(error.message!, message)
    return true
  })
}

describe('configuration worker (builtins.md §11)', () => {
  let t: TestEngine
  let dir: string
  let w: RawWorker
  const events: ConfigurationEventData[] = []
  const warnings: string[] = []
  const call = (id: string, data: unknown) => t.engine.inject({ function_id: id, data })

  before(async () => {
    t = await startTestEngine({ settings: { configuration: { debounce_ms: 30 } }, log: { ...silentLogger, warn: (m) => void warnings.push(m) } })
    dir = join(t.dataDir, 'config')
    w = await RawWorker.connect(t.url, { announce: { name: 'config-test', runtime: 'node' } })
    w.serve('on-config', (data) => void events.push(data))
    w.send({ type: 'registertrigger', id: 'cfg-app', trigger_type: 'configuration', function_id: 'on-config', config: { configuration_id: 'app' } })
    await w.call('engine::workers::list', {})
  })

  after(async () => {
    await w?.close()
    await t?.stop()
  })

  it('registers an entry: the initial value is stored in config/<id>.yaml and read back expanded', async () => {
    process.env.SVC_TEST_APP_PORT = '8080'
    const registered = await call('configuration::register', {
      id: 'app', name: 'App', description: 'the app', schema: SCHEMA, initial_value: { port: '${SVC_TEST_APP_PORT:1}', name: 'x' },
    })
    assert.deepEqual(registered, { id: 'app', name: 'App', description: 'the app', schema: SCHEMA, value: { port: '${SVC_TEST_APP_PORT:1}', name: 'x' } })
    assert.deepEqual(await call('configuration::get', { id: 'app' }), { id: 'app', value: { port: 8080, name: 'x' } })
    assert.deepEqual(await call('configuration::get', { id: 'app', raw: true }), { id: 'app', value: { port: '${SVC_TEST_APP_PORT:1}', name: 'x' } })
    const file = parse(await readFile(join(dir, 'app.yaml'), 'utf8'))
    assert.deepEqual(file, { id: 'app', name: 'App', description: 'the app', value: { port: '${SVC_TEST_APP_PORT:1}', name: 'x' } })
    await waitFor(() => events.some((e) => e.event_type === 'configuration:registered'), "events.some((e) => e.event_type === 'configuration:registered')")
    assert.deepEqual(events.find((e) => e.event_type === 'configuration:registered'), {
      type: 'configuration', event_type: 'configuration:registered', id: 'app', name: 'App', description: 'the app',
      old_value: null, new_value: { port: 8080, name: 'x' },
    })
  })

  it('keeps a stored value when registered again, and fires configuration:updated', async () => {
    events.length = 0
    const again = (await call('configuration::register', { id: 'app', name: 'App 2', description: 'd', schema: SCHEMA, initial_value: { name: 'other' } })) as { value: unknown }
    assert.deepEqual(again.value, { port: '${SVC_TEST_APP_PORT:1}', name: 'x' })
    await waitFor(() => events.length === 1, 'events.length === 1')
    assert.equal(events[0]!.event_type, 'configuration:updated')
    assert.equal(events[0]!.name, 'App 2')
  })

  it('sets and updates values that validate, and refuses the others with the violations', async () => {
    events.length = 0
    assert.deepEqual(await call('configuration::set', { id: 'app', value: { port: 1 } }), {
      old_value: { port: '${SVC_TEST_APP_PORT:1}', name: 'x' }, new_value: { port: 1 },
    })
    await rejectsWith(call('configuration::set', { id: 'app', value: { port: 70000, extra: true } }), 'SCHEMA_INVALID',
      "configuration 'app' is invalid: /: unknown key 'extra'; /port: must be <= 65535")
    const updated = await call('configuration::update', { id: 'app', ops: [{ type: 'increment', path: 'port', by: 2 }, { type: 'append', path: 'port', value: 'x' }] })
    assert.deepEqual((updated as { new_value: unknown }).new_value, { port: 3 })
    assert.equal((updated as { errors: Array<{ code: string }> }).errors[0]!.code, 'append.type_mismatch')
    await rejectsWith(call('configuration::update', { id: 'app', ops: [{ type: 'set', path: 'port', value: 'x' }] }), 'SCHEMA_INVALID', /\/port: must be integer/)
    assert.deepEqual(await call('configuration::get', { id: 'app' }), { id: 'app', value: { port: 3 } })
    // An unset placeholder without default fails the write (§2.8).
    delete process.env.SVC_TEST_UNSET
    await rejectsWith(call('configuration::set', { id: 'app', value: { name: '${SVC_TEST_UNSET}' } }), 'EXPAND_FAILED', /environment variable SVC_TEST_UNSET is not set/)
    await waitFor(() => events.length === 2, 'events.length === 2')
    assert.deepEqual(events.map((e) => e.new_value), [{ port: 1 }, { port: 3 }])
  })

  it('answers with the spec codes for bad ids, unknown and unregistered entries', async () => {
    await rejectsWith(call('configuration::get', { id: 'Bad Id' }), 'INVALID_ID')
    await rejectsWith(call('configuration::get', {}), 'INVALID_ARGUMENTS', 'id is required')
    await rejectsWith(call('configuration::get', { id: 'nope' }), 'NOT_FOUND', "configuration 'nope' not found")
    await rejectsWith(call('configuration::set', { id: 'nope', value: {} }), 'NOT_REGISTERED')
    await rejectsWith(call('configuration::register', { id: 'bad-schema', schema: { type: 'nonsense' } }), 'INVALID_ARGUMENTS', /not a valid JSON Schema/)
    // A file written by hand before anyone registered the entry: readable raw, not validated.
    await writeFile(join(dir, 'orphan.yaml'), 'id: orphan\nname: Orphan\ndescription: ""\nvalue: { a: 1 }\n')
    await waitFor(async () => {
      const { configurations } = (await call('configuration::list', {})) as { configurations: Array<{ id: string }> }
      return configurations.some((c) => c.id === 'orphan')
    }, 'the condition')
    assert.deepEqual(await call('configuration::get', { id: 'orphan', raw: true }), { id: 'orphan', value: { a: 1 } })
    await rejectsWith(call('configuration::get', { id: 'orphan' }), 'SCHEMA_UNAVAILABLE')
    await rejectsWith(call('configuration::set', { id: 'orphan', value: {} }), 'SCHEMA_UNAVAILABLE')
    await rejectsWith(call('configuration::schema', { id: 'orphan' }), 'SCHEMA_UNAVAILABLE')
  })

  it('lists entries sorted by id without values, with the built-ins among them', async () => {
    const { configurations } = (await call('configuration::list', {})) as { configurations: Array<Record<string, unknown>> }
    const ids = configurations.map((c) => c.id)
    assert.deepEqual(ids, [...ids].sort())
    for (const id of ['app', 'svc-http', 'svc-state']) assert.ok(ids.includes(id), id)
    assert.ok(configurations.every((c) => !('value' in c)))
    const http = configurations.find((c) => c.id === 'svc-http')!
    assert.equal(http.name, 'HTTP')
    assert.equal(typeof (http.metadata as { seed_hash?: unknown }).seed_hash, 'string')
    assert.deepEqual(await call('configuration::schema', { id: 'app' }), { id: 'app', name: 'App 2', description: 'd', schema: SCHEMA })
  })

  it('picks up hand edits, rejects invalid ones and keeps the previous value', async () => {
    events.length = 0
    await writeFile(join(dir, 'app.yaml'), 'id: app\nname: App 2\ndescription: d\nvalue:\n  port: 9\n')
    await waitFor(async () => ((await call('configuration::get', { id: 'app' })) as { value: { port: number } }).value.port === 9, "((await call('configuration::get', { id: 'app' })) as { value: { port: number } }).value.port === 9")
    await waitFor(() => events.length === 1, 'events.length === 1')
    assert.deepEqual(events[0]!.old_value, { port: 3 })
    // Fails the schema, then fails to parse, then names another id: all ignored.
    // Each rejected file is reported as a warning: that is when the watcher is done with it.
    const rejected = (file: string) => warnings.filter((m) => m.includes(file) && m.includes('rejected')).length
    const [app, other] = [rejected('app.yaml'), rejected('other.yaml')]
    await writeFile(join(dir, 'app.yaml'), 'id: app\nname: App\ndescription: d\nvalue:\n  port: nine\n')
    await writeFile(join(dir, 'other.yaml'), 'id: app\nvalue: {}\n')
    await waitFor(() => rejected('app.yaml') > app && rejected('other.yaml') > other, () => `both files rejected; warnings: ${warnings.join('\n')}`)
    await writeFile(join(dir, 'app.yaml'), 'id: app\nvalue: [unclosed\n')
    await waitFor(() => rejected('app.yaml') > app + 1, () => `the unparsable file rejected; warnings: ${warnings.join('\n')}`)
    assert.deepEqual(await call('configuration::get', { id: 'app' }), { id: 'app', value: { port: 9 } })
    assert.equal(events.length, 1)
  })

  it('fires configuration:deleted when the file is removed and only then', async () => {
    events.length = 0
    await unlink(join(dir, 'app.yaml'))
    await waitFor(() => events.length === 1, 'events.length === 1')
    assert.equal(events[0]!.event_type, 'configuration:deleted')
    assert.equal(events[0]!.new_value, null)
    await rejectsWith(call('configuration::get', { id: 'app' }), 'NOT_FOUND')
  })

  it('refuses bad trigger configs', async () => {
    w.send({ type: 'registertrigger', id: 'cfg-bad', trigger_type: 'configuration', function_id: 'on-config', config: { event_types: ['configuration:exploded'] } })
    const result = await w.next((f) => f.type === 'triggerregistrationresult' && f.id === 'cfg-bad')
    assert.equal(result.error.code, 'INVALID_TRIGGER_CONFIG')
  })
})

describe('built-in settings through the configuration worker (builtins.md §2.7)', () => {
  let t: TestEngine
  let w: RawWorker
  let dataDir: string
  const call = (id: string, data: unknown) => t.engine.inject({ function_id: id, data })
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${t.httpUrl}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } })

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-config-'))
    t = await startTestEngine({ dataDir, settings: { configuration: { debounce_ms: 30 }, 'svc-http': { max_body_bytes: 1000 } } })
    w = await RawWorker.connect(t.url, { announce: { name: 'http-app', runtime: 'node' } })
    w.serve('echo', (data) => ({ body: { size: JSON.stringify(data.body ?? null).length } }))
    w.send({ type: 'registertrigger', id: 'r1', trigger_type: 'http', function_id: 'echo', config: { api_path: 'echo', http_method: 'POST' } })
    await w.call('engine::workers::list', {})
  })

  after(async () => {
    await w?.close()
    await t?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const workerInfo = async (name: string) => {
    return ((await call('engine::workers::info', { name })) as { worker: Record<string, unknown> }).worker
  }

  it('seeds svc-http from config.yaml and applies configuration::set without a restart', async () => {
    const body = JSON.stringify({ text: 'x'.repeat(2000) })
    assert.equal((await post('/echo', body)).status, 413)
    await call('configuration::set', { id: 'svc-http', value: { port: 0, max_body_bytes: 100000 } })
    await waitFor(async () => (await post('/echo', body)).status === 200, "(await post('/echo', body)).status === 200")
  })

  it('applies hand edits of config/svc-http.yaml: CORS and the request timeout', async () => {
    const file = join(dataDir, 'config', 'svc-http.yaml')
    const stored = parse(await readFile(file, 'utf8'))
    stored.value = { ...stored.value, cors: { allowed_origins: ['https://app.test'] } }
    await writeFile(file, JSON.stringify(stored))
    await waitFor(async () => (await post('/echo', '{}', { origin: 'https://app.test' })).headers.get('access-control-allow-origin') === 'https://app.test', 'the condition')
    // A handler slower than the new default_timeout is cut off with 504.
    w.serve('slow', () => new Promise((resolve) => setTimeout(() => resolve({ body: {} }), 1500)))
    w.send({ type: 'registertrigger', id: 'r2', trigger_type: 'http', function_id: 'slow', config: { api_path: 'slow', http_method: 'POST' } })
    await w.call('engine::workers::list', {})
    await call('configuration::update', { id: 'svc-http', ops: [{ type: 'set', path: 'default_timeout', value: 200 }] })
    await waitFor(async () => (await post('/slow', '{}')).status === 504, "(await post('/slow', '{}')).status === 504", 10000)
  })

  it('refuses an invalid change with the schema error and keeps the previous settings', async () => {
    await rejectsWith(call('configuration::set', { id: 'svc-http', value: { port: 0, max_body_bytes: -5 } }), 'SCHEMA_INVALID', /\/max_body_bytes: must be >= 1/)
    assert.equal((await post('/echo', JSON.stringify({ text: 'x'.repeat(2000) }))).status, 200)
  })

  it('reports an apply that fails (port in use) as last_config_error and keeps serving', async () => {
    const blocker: Server = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      await call('configuration::update', { id: 'svc-http', ops: [{ type: 'set', path: 'port', value: port }] })
      await waitFor(async () => typeof (await workerInfo('svc-http')).last_config_error === 'string', "typeof (await workerInfo('svc-http')).last_config_error === 'string'")
      assert.match(String((await workerInfo('svc-http')).last_config_error), /^port: /)
      assert.equal((await post('/echo', '{}')).status, 200)
      await call('configuration::update', { id: 'svc-http', ops: [{ type: 'set', path: 'port', value: 0 }] })
      await waitFor(async () => (await workerInfo('svc-http')).last_config_error === undefined, "(await workerInfo('svc-http')).last_config_error === undefined")
    } finally {
      blocker.close()
    }
  })

  it('applies svc-state settings live (max_value_bytes)', async () => {
    await call('state::set', { scope: 's', key: 'k', value: 'x'.repeat(100) })
    await call('configuration::set', { id: 'svc-state', value: { max_value_bytes: 10 } })
    await waitFor(async () => {
      try {
        await call('state::set', { scope: 's', key: 'k', value: 'x'.repeat(100) })
        return false
      } catch (error) {
        return (error as { code?: string }).code === 'VALUE_TOO_LARGE'
      }
    }, 'the condition')
  })

  it('applies svc-stream settings live (max_item_bytes, auth_function for new connections)', async () => {
    const item = { stream_name: 'room', group_id: 'g', item_id: 'i', data: 'x'.repeat(100) }
    await call('stream::set', item)
    await call('configuration::update', { id: 'svc-stream', ops: [{ type: 'set', path: 'max_item_bytes', value: 10 }] })
    await waitFor(async () => {
      try {
        await call('stream::set', item)
        return false
      } catch (error) {
        return (error as { code?: string }).code === 'VALUE_TOO_LARGE'
      }
    }, 'the condition')
    // An auth function that refuses: new client connections get 401.
    w.serve('deny-all', () => {
      throw Object.assign(new Error('no'), { code: 'DENIED' })
    })
    await call('configuration::update', { id: 'svc-stream', ops: [{ type: 'set', path: 'auth_function', value: 'deny-all' }] })
    const streamUrl = () => t.engine.listenUrls('svc-stream')[0]!
    const upgradeStatus = () =>
      new Promise<number>((resolve) => {
        const client = new WebSocket(streamUrl())
        client.on('open', () => {
          client.close()
          resolve(101)
        })
        client.on('unexpected-response', (_request, response) => {
          resolve(response.statusCode ?? 0)
          client.terminate()
        })
        client.on('error', () => resolve(0))
      })
    await waitFor(async () => (await upgradeStatus()) === 401, '(await upgradeStatus()) === 401')
  })

  it('applies svc-cron settings live: an unknown default_timezone is refused by the worker and reported, a valid one clears it', async () => {
    await call('configuration::set', { id: 'svc-cron', value: { default_timezone: 'Mars/Olympus_Mons' } })
    await waitFor(async () => /default_timezone/.test(String((await workerInfo('svc-cron')).last_config_error)), "/default_timezone/.test(String((await workerInfo('svc-cron')).last_config_error))")
    await call('configuration::set', { id: 'svc-cron', value: { default_timezone: 'Europe/Paris' } })
    await waitFor(async () => (await workerInfo('svc-cron')).last_config_error === undefined, "(await workerInfo('svc-cron')).last_config_error === undefined")
  })

  it('resets an entry to its seed when its settings file is deleted', async () => {
    await unlink(join(dataDir, 'config', 'svc-state.yaml'))
    await waitFor(async () => {
      try {
        return JSON.stringify((await call('configuration::get', { id: 'svc-state' })) as object) === JSON.stringify({ id: 'svc-state', value: {} })
      } catch {
        return false
      }
    }, 'the condition')
    await waitFor(async () => {
      try {
        await call('state::set', { scope: 's', key: 'k', value: 'x'.repeat(100) })
        return true
      } catch {
        return false
      }
    }, 'the condition')
  })

  it('keeps hand edits across a restart with the same config.yaml block, and applies a changed block', async () => {
    await w.close()
    await t.stop()
    // Same seed: the stored value (max_body_bytes 100000 and the rest) stays.
    t = await startTestEngine({ dataDir, settings: { configuration: { debounce_ms: 30 }, 'svc-http': { max_body_bytes: 1000 } } })
    const kept = (await call('configuration::get', { id: 'svc-http' })) as { value: { max_body_bytes: number; cors?: unknown } }
    assert.equal(kept.value.max_body_bytes, 100000)
    assert.ok(kept.value.cors)
    await t.stop()
    // A changed block is the new value.
    t = await startTestEngine({ dataDir, settings: { configuration: { debounce_ms: 30 }, 'svc-http': { max_body_bytes: 2000 } } })
    assert.deepEqual(await call('configuration::get', { id: 'svc-http' }), { id: 'svc-http', value: { port: 0, max_body_bytes: 2000 } })
    w = await RawWorker.connect(t.url, { announce: { name: 'http-app', runtime: 'node' } })
  })
})
