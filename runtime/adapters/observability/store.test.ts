import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { LIMITS, log, runStoreConformance, span } from './conformance.ts'
import { SqliteStore } from './sqlite.ts'
import { MemoryStore, NoStore } from './store.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-obs-store-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

runStoreConformance('memory', (limits) => new MemoryStore(limits))
runStoreConformance('builtin', (limits) => new SqliteStore(join(dir, `o${n++}.db`), limits))

describe('builtin observability store', () => {
  it('survives a restart: the window is reloaded from observability.db', async () => {
    const path = join(dir, 'restart.db')
    const a = new SqliteStore(path, LIMITS)
    a.putLog(log('kept'))
    a.putSpan(span('t', 's', null))
    await new Promise((r) => setImmediate(r))
    a.close()
    const b = new SqliteStore(path, LIMITS)
    assert.deepEqual(b.logs().map((l) => l.body), ['kept'])
    assert.equal(b.trace('t').length, 1)
    b.close()
  })

  it('keeps the file under max_disk_bytes under a flood', () => {
    const path = join(dir, 'cap.db')
    const store = new SqliteStore(path, { ...LIMITS, maxDiskBytes: 2 << 20 })
    const body = 'y'.repeat(200)
    for (let i = 0; i < 100_000; i++) {
      store.putLog(log(`${i} ${body}`))
      if (i % 5000 === 4999) store.flush()
    }
    store.sweep(Date.now())
    assert.ok(store.usedBytes() <= 2 << 20, `used ${store.usedBytes()}`)
    store.close()
    assert.ok(statSync(path).size < 8 << 20, `file ${statSync(path).size}`)
  })
})

describe('none store', () => {
  it('keeps nothing', () => {
    const store = new NoStore()
    store.putLog()
    store.putSpan()
    assert.deepEqual(store.counts(), { spans: 0, logs: 0 })
    assert.deepEqual(store.trace(), [])
  })
})
