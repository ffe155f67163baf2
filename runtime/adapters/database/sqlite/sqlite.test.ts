/** The SQLite driver: the shared conformance suite and what is SQLite's own (files, threads). */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { SvcError } from 'svc-protocol/errors'
import { runDatabaseDriverConformance } from '../conformance.ts'
import { openDatabaseDriver } from '../index.ts'
import type { DriverOptions, PoolSettings } from '../types.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-driver-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const POOL: PoolSettings = { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 }
let files = 0
const open = (pool?: Partial<PoolSettings>, url = `sqlite:db${++files}.db`, more: Partial<DriverOptions> = {}) =>
  openDatabaseDriver({ name: 'test', url, pool: { ...POOL, ...pool }, tls: { mode: 'disable' }, ...more }, dir)

runDatabaseDriverConformance('sqlite', (pool, limits) => open(pool, undefined, limits ? { limits } : {}), {
  param: () => '?',
  autoId: 'INTEGER PRIMARY KEY',
  types: { bigint: 'INTEGER', decimal: 'NUMERIC', bytes: 'BLOB', timestamp: 'DATETIME', date: 'DATE', text: 'TEXT', longText: 'TEXT' },
  // About 7 million rows a second on a small machine.
  sleep: (seconds) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${Math.round(seconds * 7_000_000)}) SELECT count(*) AS n FROM c`,
  returning: true,
  booleansAsIntegers: true,
  series: (n) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) SELECT x FROM c`,
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

  it('refuses ATTACH, DETACH and VACUUM INTO unless allow_attach, and creates no file', async () => {
    const target = join(dir, 'elsewhere', 'attached.db')
    mkdirSync(join(dir, 'elsewhere'), { recursive: true })
    const db = await open()
    for (const sql of [`ATTACH DATABASE '${target}' AS other`, `VACUUM INTO '${target}'`, 'DETACH DATABASE other', `/* hidden */ ATTACH '${target}' AS other`]) {
      await assert.rejects(db.execute({ sql, params: [] }, { timeoutMs: 5000 }), (error: unknown) => {
        assert.equal((error as SvcError).code, 'DRIVER_ERROR', sql)
        assert.match((error as SvcError).message, /^SQLITE_AUTH: ATTACH, DETACH and VACUUM INTO are not allowed on database 'test'; set databases\.test\.allow_attach: true/)
        return true
      })
    }
    // A parameter naming the file is refused the same way.
    await assert.rejects(db.execute({ sql: 'ATTACH DATABASE ? AS other', params: [target] }, { timeoutMs: 5000 }), { code: 'DRIVER_ERROR' })
    await assert.rejects(db.transaction([{ sql: `ATTACH DATABASE '${target}' AS other`, params: [] }], { timeoutMs: 5000 }).then((r) => (r.committed ? r : Promise.reject(r.error))), { driver_code: 'SQLITE_AUTH' })
    assert.equal(existsSync(target), false)
    // Other statements still run.
    assert.equal((await db.query({ sql: 'SELECT 1 AS one', params: [] }, { timeoutMs: 5000 })).row_count, 1)
    await db.close()

    const allowed = await open(undefined, undefined, { allowAttach: true })
    await allowed.execute({ sql: `ATTACH DATABASE '${target}' AS other`, params: [] }, { timeoutMs: 5000 })
    await allowed.execute({ sql: 'DETACH DATABASE other', params: [] }, { timeoutMs: 5000 })
    await allowed.close()
    assert.equal(existsSync(target), true)
  })

  it('refuses load_extension()', async () => {
    const db = await open()
    await assert.rejects(db.query({ sql: `SELECT load_extension('${join(dir, 'nothing.so')}')`, params: [] }, { timeoutMs: 5000 }), { code: 'DRIVER_ERROR' })
    await db.close()
  })

  it('refuses sql with a second statement (INVALID_ARGUMENTS) and runs none; comments, semicolons and quoted ; are one statement', async () => {
    const db = await open()
    for (const sql of ['CREATE TABLE a (x); CREATE TABLE b (x)', 'CREATE TABLE a (x);\nINSERT INTO nowhere VALUES (1)', 'CREATE TABLE a (x); SELEC nonsense', "CREATE TABLE a (x) /* ; */; -- c\n DROP TABLE a"]) {
      await assert.rejects(db.execute({ sql, params: [] }, { timeoutMs: 5000 }), (error: unknown) => {
        assert.equal((error as SvcError).code, 'INVALID_ARGUMENTS', sql)
        assert.match((error as SvcError).message, /more than one statement/)
        return true
      })
    }
    const none = await db.query({ sql: "SELECT name FROM sqlite_master WHERE name IN ('a', 'b')", params: [] }, { timeoutMs: 5000 })
    assert.deepEqual(none.rows, [])
    for (const sql of ["SELECT ';' AS s;", "SELECT ';' AS s; -- trailing; comment", "SELECT ';' AS s /* ; */ ;;  ", "  SELECT ';' AS s -- no newline"]) {
      assert.deepEqual((await db.query({ sql, params: [] }, { timeoutMs: 5000 })).rows, [{ s: ';' }], sql)
    }
    await db.close()
  })
})
