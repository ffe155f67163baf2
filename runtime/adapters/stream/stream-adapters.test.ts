import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, it } from 'node:test'
import { MemoryStateAdapter } from '../state/memory/memory.ts'
import { runStreamAdapterConformance } from './conformance.ts'
import { describeStreamAdapter, openStreamAdapter, parseStreamAdapterEntry, StateBackedStreamAdapter, streamAdapterIdentity } from './index.ts'

const dataDir = await mkdtemp(join(tmpdir(), 'svc-stream-adapter-'))
after(() => rm(dataDir, { recursive: true, force: true }))
let files = 0

runStreamAdapterConformance('memory', () => new StateBackedStreamAdapter(new MemoryStateAdapter()))
runStreamAdapterConformance('builtin', () => openStreamAdapter({ name: 'builtin', config: { path: `s${++files}.db` } }, { dataDir }))

it('builtin keeps items in <data_dir>/stream.db across reopen', async () => {
  const first = await openStreamAdapter({ name: 'builtin', config: {} }, { dataDir })
  await first.set('s', 'g', 'i', { kept: true })
  await first.close()
  const second = await openStreamAdapter(parseStreamAdapterEntry({ name: 'kv' }), { dataDir })
  assert.deepEqual(await second.get('s', 'g', 'i'), { kept: true })
  await second.close()
  assert.equal(streamAdapterIdentity({ name: 'builtin', config: {} }, { dataDir }), `builtin:${join(dataDir, 'stream.db')}`)
})

it('adapter entries: aliases, redis with its defaults and redis_url, bad redis config refused by field', () => {
  assert.deepEqual(parseStreamAdapterEntry(undefined), { name: 'builtin', config: {} })
  assert.deepEqual(parseStreamAdapterEntry({ name: 'in_memory' }), { name: 'memory', config: {} })
  assert.deepEqual(parseStreamAdapterEntry({ name: 'redis' }), { name: 'redis', config: { url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' } })
  const spec = parseStreamAdapterEntry({ name: 'redis', config: { redis_url: 'redis://:secret@cache:6380', key_prefix: 'app:' } })
  assert.deepEqual(spec, { name: 'redis', config: { url: 'redis://:secret@cache:6380', key_prefix: 'app:' } })
  assert.equal(describeStreamAdapter(spec, { dataDir }), 'redis:redis://:***@cache:6380#app:')
  assert.notEqual(streamAdapterIdentity(spec, { dataDir }), streamAdapterIdentity(parseStreamAdapterEntry({ name: 'redis', config: { url: 'redis://:other@cache:6380', key_prefix: 'app:' } }), { dataDir }))
  assert.throws(() => parseStreamAdapterEntry({ name: 'redis', config: { url: 'cache:6379' } }), /adapter\.config\.url must be a redis:\/\/ or rediss:\/\/ URL/)
  assert.throws(() => parseStreamAdapterEntry({ name: 'redis', config: { path: 'x.db' } }), /adapter\.config\.path is not a redis adapter option/)
  assert.throws(() => parseStreamAdapterEntry({ name: 'memory', extra: 1 }), /adapter\.extra is not allowed/)
})
