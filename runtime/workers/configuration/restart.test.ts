/**
 * What the configuration worker acknowledges survives a restart (issue 16, item 2): one limit on
 * what `set`, `update` and `register` store — the bytes of the settings file's YAML and the
 * nesting of the value — and a loader that never drops or overwrites a file it cannot read.
 * Real engines on a real settings directory, stopped and started again on it.
 */
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { billionLaughs } from '../../../test/support/hostile-yaml.ts'
import { recordingLogger } from '../../../test/support/recording-log.ts'
import { MAX_SETTINGS_FILE_BYTES, MAX_SETTINGS_VALUE_DEPTH } from './files.ts'
import { waitFor } from '../../../test/support/wait.ts'

const SCHEMA = { type: 'object' }

async function rejectsWith(promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message)
    if (message) assert.match(error.message!, message)
    return true
  })
}

/** A value nested `levels` arrays deep (`[[…]]`). */
function nested(levels: number): unknown {
  let value: unknown = []
  for (let level = 1; level < levels; level++) value = [value]
  return value
}

describe('configuration: what set acknowledges survives a restart (issue 16)', () => {
  let dataDir: string
  let t: TestEngine
  const call = (id: string, data: unknown) => t.engine.inject({ function_id: id, data })
  const file = () => join(dataDir, 'config', 'blob.yaml')
  const start = async () => {
    t = await startTestEngine({ dataDir, settings: { configuration: { debounce_ms: 30 } } })
    // Its owner registers the entry at every start, as built-ins do.
    await call('configuration::register', { id: 'blob', name: 'Blob', description: 'big values', schema: SCHEMA })
  }
  const restart = async () => {
    await t.stop()
    await start()
  }

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-config-restart-'))
    await start()
  })
  after(async () => {
    await t?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  it('refuses a value one byte of YAML over the limit and writes nothing; one at the limit reads back after a restart', async () => {
    await call('configuration::set', { id: 'blob', value: { text: 'x' } })
    const overhead = (await stat(file())).size - 1
    const fits = MAX_SETTINGS_FILE_BYTES - overhead
    const before = await readFile(file(), 'utf8')
    await rejectsWith(
      call('configuration::set', { id: 'blob', value: { text: 'x'.repeat(fits + 1) } }),
      'VALUE_TOO_LARGE',
      new RegExp(`^configuration 'blob' cannot be stored: its settings file would be ${MAX_SETTINGS_FILE_BYTES + 1} bytes of YAML, more than the ${MAX_SETTINGS_FILE_BYTES}-byte limit$`),
    )
    assert.equal(await readFile(file(), 'utf8'), before, 'nothing written')
    assert.deepEqual(await call('configuration::get', { id: 'blob' }), { id: 'blob', value: { text: 'x' } })

    await call('configuration::set', { id: 'blob', value: { text: 'x'.repeat(fits) } })
    assert.equal((await stat(file())).size, MAX_SETTINGS_FILE_BYTES)
    await restart()
    const { value } = (await call('configuration::get', { id: 'blob' })) as { value: { text: string } }
    assert.equal(value.text.length, fits)
  })

  it('refuses a 5 MiB value (it was acknowledged, then gone after a restart)', async () => {
    await call('configuration::set', { id: 'blob', value: { text: 'small' } })
    await rejectsWith(call('configuration::set', { id: 'blob', value: { text: 'x'.repeat(5 * 1024 * 1024) } }), 'VALUE_TOO_LARGE', /more than 1048576 bytes of YAML/)
    await restart()
    assert.deepEqual(await call('configuration::get', { id: 'blob' }), { id: 'blob', value: { text: 'small' } })
  })

  it('measures the YAML as written, which can be far larger than the JSON', async () => {
    // 5,000 short strings 100 mappings deep: about 40 KB of JSON, over 1 MiB of indented YAML.
    let value: unknown = Array.from({ length: 5000 }, (_, i) => `s${i}`)
    for (let level = 0; level < 100; level++) value = { a: value }
    assert.ok(JSON.stringify(value).length < 64 * 1024)
    await rejectsWith(call('configuration::set', { id: 'blob', value }), 'VALUE_TOO_LARGE', /its settings file would be \d+ bytes of YAML/)
  })

  it(`keeps a value nested ${MAX_SETTINGS_VALUE_DEPTH} levels across a restart, and refuses one level more`, async () => {
    await call('configuration::set', { id: 'blob', value: { deep: nested(MAX_SETTINGS_VALUE_DEPTH - 1) } })
    await rejectsWith(
      call('configuration::set', { id: 'blob', value: { deep: nested(MAX_SETTINGS_VALUE_DEPTH) } }),
      'VALUE_TOO_LARGE',
      new RegExp(`^configuration 'blob' cannot be stored: its value nests deeper than ${MAX_SETTINGS_VALUE_DEPTH} levels$`),
    )
    await rejectsWith(call('configuration::set', { id: 'blob', value: {}, metadata: { deep: nested(MAX_SETTINGS_VALUE_DEPTH) } }), 'VALUE_TOO_LARGE', /its metadata nests deeper/)
    await restart()
    const { value } = (await call('configuration::get', { id: 'blob' })) as { value: { deep: unknown } }
    assert.deepEqual(value.deep, nested(MAX_SETTINGS_VALUE_DEPTH - 1))
  })

  it('keeps a hand-written file that reads back but would be written larger, and registers its entry', async () => {
    // 9,000 items 60 mappings deep: 20 KB as a flow list, over 1 MiB as an indented block list.
    const flow = `id: flow\nname: Flow\ndescription: ''\nvalue: ${'{a: '.repeat(60)}[${Array(9000).fill('x').join(',')}]${'}'.repeat(60)}\n`
    await writeFile(join(dataDir, 'config', 'flow.yaml'), flow)
    await restart()
    const registered = (await call('configuration::register', { id: 'flow', schema: SCHEMA })) as { value: unknown }
    let items = registered.value
    for (let level = 0; level < 60; level++) items = (items as { a: unknown }).a
    assert.equal((items as unknown[]).length, 9000)
    assert.equal(await readFile(join(dataDir, 'config', 'flow.yaml'), 'utf8'), flow, 'the file is kept as written')
  })

  it('refuses an update that grows the value past the limit, and an initial_value over it, storing nothing', async () => {
    await call('configuration::set', { id: 'blob', value: { text: 'x'.repeat(MAX_SETTINGS_FILE_BYTES - 1000) } })
    await rejectsWith(call('configuration::update', { id: 'blob', ops: [{ type: 'set', path: 'more', value: 'y'.repeat(2000) }] }), 'VALUE_TOO_LARGE')
    await rejectsWith(call('configuration::register', { id: 'huge', schema: SCHEMA, initial_value: { text: 'x'.repeat(MAX_SETTINGS_FILE_BYTES) } }), 'VALUE_TOO_LARGE')
    await rejectsWith(call('configuration::get', { id: 'huge' }), 'NOT_FOUND')
    await assert.rejects(stat(join(dataDir, 'config', 'huge.yaml')), { code: 'ENOENT' })
    await restart()
    const { value } = (await call('configuration::get', { id: 'blob' })) as { value: Record<string, unknown> }
    assert.deepEqual(Object.keys(value), ['text'])
  })
})

describe('a settings file that cannot be read at start (issue 16)', () => {
  let dataDir: string
  let t: TestEngine
  const call = (id: string, data: unknown) => t.engine.inject({ function_id: id, data })
  const path = () => join(dataDir, 'config', 'svc-state.yaml')
  const { log, entries } = recordingLogger()
  const broken = `id: svc-state\nname: State\ndescription: ''\nvalue:\n  max_value_bytes: 1000\n${billionLaughs('  ')}`

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-config-unreadable-'))
    await mkdir(join(dataDir, 'config'))
    await writeFile(path(), broken)
    t = await startTestEngine({ dataDir, log, settings: { configuration: { debounce_ms: 30 }, 'svc-state': { max_value_bytes: 10 } } })
  })
  after(async () => {
    await t?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  it('is kept as it is, reported with its place, and its owner runs on the config.yaml block', async () => {
    assert.equal(await readFile(path(), 'utf8'), broken, 'the seed is not written over the file')
    const place = new RegExp(`${path().replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:10:\\d+: alias \\*lol4 expands the document too much`)
    assert.ok(entries.some((e) => e.level === 'error' && place.test(e.message)), entries.map((e) => e.message).join('\n'))
    await rejectsWith(call('configuration::get', { id: 'svc-state' }), 'STORAGE_ERROR', place)
    const info = (await call('engine::workers::info', { name: 'svc-state' })) as { worker: { last_config_error?: string } }
    assert.match(info.worker.last_config_error ?? '', place)
    // The seed is in effect: max_value_bytes 10.
    await rejectsWith(call('state::set', { scope: 's', key: 'k', value: 'x'.repeat(100) }), 'VALUE_TOO_LARGE')
    // update cannot apply operations to a value it could not read.
    await rejectsWith(call('configuration::update', { id: 'svc-state', ops: [{ type: 'set', path: 'max_value_bytes', value: 5 }] }), 'STORAGE_ERROR')
    assert.equal(await readFile(path(), 'utf8'), broken)
  })

  it('is picked up once fixed: the value applies and last_config_error clears', async () => {
    await writeFile(path(), 'id: svc-state\nname: State\ndescription: ""\nvalue:\n  max_value_bytes: 1000\n')
    await waitFor(async () => {
      try {
        await call('state::set', { scope: 's', key: 'k', value: 'x'.repeat(100) })
        return true
      } catch {
        return false
      }
    }, 'the condition')
    await waitFor(async () => ((await call('engine::workers::info', { name: 'svc-state' })) as { worker: { last_config_error?: string } }).worker.last_config_error === undefined, 'the condition')
    assert.deepEqual(await call('configuration::get', { id: 'svc-state' }), { id: 'svc-state', value: { max_value_bytes: 1000 } })
  })
})

