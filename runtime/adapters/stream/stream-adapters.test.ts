import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, it } from 'node:test'
import { MemoryStateAdapter } from '../state/memory/memory.ts'
import { runStreamAdapterConformance } from './conformance.ts'
import { openStreamAdapter, parseStreamAdapterEntry, StateBackedStreamAdapter, streamAdapterIdentity } from './index.ts'

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

it('adapter entries: aliases, redis refused with a clear message', () => {
  assert.deepEqual(parseStreamAdapterEntry(undefined), { name: 'builtin', config: {} })
  assert.deepEqual(parseStreamAdapterEntry({ name: 'in_memory' }), { name: 'memory', config: {} })
  assert.throws(() => parseStreamAdapterEntry({ name: 'redis' }), /adapter\.name 'redis' is not available for svc-stream yet/)
  assert.throws(() => parseStreamAdapterEntry({ name: 'memory', extra: 1 }), /adapter\.extra is not allowed/)
})
