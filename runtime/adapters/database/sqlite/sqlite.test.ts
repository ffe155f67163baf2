/** The SQLite driver: the shared conformance suite and what is SQLite's own (files, threads). */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { runDatabaseDriverConformance } from '../conformance.ts'
import { openDatabaseDriver } from '../index.ts'
import type { PoolSettings } from '../types.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-driver-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const POOL: PoolSettings = { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 }
let files = 0
const open = (pool?: Partial<PoolSettings>, url = `sqlite:db${++files}.db`) =>
  openDatabaseDriver({ name: 'test', url, pool: { ...POOL, ...pool }, tls: { mode: 'disable' } }, dir)

runDatabaseDriverConformance('sqlite', (pool) => open(pool), {
  param: () => '?',
  autoId: 'INTEGER PRIMARY KEY',
  types: { bigint: 'INTEGER', decimal: 'NUMERIC', bytes: 'BLOB', timestamp: 'DATETIME', date: 'DATE', text: 'TEXT', longText: 'TEXT' },
  // About 7 million rows a second on a small machine.
  sleep: (seconds) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${Math.round(seconds * 7_000_000)}) SELECT count(*) AS n FROM c`,
  returning: true,
  booleansAsIntegers: true,
}, {
  skip: { 'no free connection within acquire_timeout_ms fails with POOL_TIMEOUT': 'SQLite has one connection per database; statements queue in its thread' },
})

describe('sqlite driver', () => {
  it('resolves relative paths against the root, creating directories, and opens in WAL mode', async () => {
    const db = await open(undefined, 'sqlite:./nested/dir/app.db')
    const mode = await db.query({ sql: 'PRAGMA journal_mode', params: [] }, { timeoutMs: 5000 })
    assert.deepEqual(mode.rows, [{ journal_mode: 'wal' }])
    await db.close()
    assert.ok(existsSync(join(dir, 'nested', 'dir', 'app.db')))
  })

  it('opens absolute paths and in-memory databases', async () => {
    const absolute = await open(undefined, `sqlite:///${join(dir, 'abs.db').slice(1)}`)
    await absolute.execute({ sql: 'CREATE TABLE t (x)', params: [] }, { timeoutMs: 5000 })
    await absolute.close()
    assert.ok(existsSync(join(dir, 'abs.db')))
    const memory = await open(undefined, 'sqlite::memory:')
    assert.deepEqual((await memory.query({ sql: 'SELECT 2 AS two', params: [] }, { timeoutMs: 5000 })).rows, [{ two: 2 }])
    await memory.close()
  })

  it('refuses a file that cannot be opened with CONFIG_ERROR', async () => {
    writeFileSync(join(dir, 'plain-file'), 'not a database '.repeat(300))
    await assert.rejects(open(undefined, `sqlite:${join(dir, 'plain-file', 'x.db')}`), { code: 'CONFIG_ERROR' })
    await assert.rejects(open(undefined, `sqlite:${join(dir, 'plain-file')}`), { code: 'CONFIG_ERROR' })
  })

  it('keeps the event loop free while a long statement runs', async () => {
    const db = await open()
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    await db.query({ sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c', params: [] }, { timeoutMs: 10_000 })
    clearInterval(timer)
    await db.close()
    assert.ok(ticks >= 5, `the event loop ran ${ticks} timer ticks during the statement`)
  })
})
