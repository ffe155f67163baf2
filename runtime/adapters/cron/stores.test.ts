/** The cron slot stores against the shared conformance suite, and the SQLite file's durability. */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, it } from 'node:test'
import { runCronSlotStoreConformance } from './conformance.ts'
import { MemoryCronSlotStore } from './memory/memory.ts'
import { SqliteCronSlotStore } from './sqlite/sqlite.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-cron-store-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

runCronSlotStoreConformance('memory', () => new MemoryCronSlotStore())
runCronSlotStoreConformance('builtin (sqlite)', () => SqliteCronSlotStore.open({ path: `c${++files}.db` }, { dataDir: dir }))

it('builtin keeps the last slot across a reopen of the file', async () => {
  const first = SqliteCronSlotStore.open({}, { dataDir: dir })
  assert.equal(await first.claim('s', 1000), true)
  await first.close()
  const second = SqliteCronSlotStore.open({}, { dataDir: dir })
  assert.equal(second.path, join(dir, 'cron.db'))
  assert.equal(await second.claim('s', 1000), false)
  assert.equal(await second.lastSlot('s'), 1000)
  await second.close()
})
