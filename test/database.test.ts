/**
 * End to end: the database worker in the `svc` process (built CLI), seeded from config.yaml with a
 * placeholder, called by an SDK worker: a SQLite file relative to the project root and a real
 * PostgreSQL server; a settings change through `configuration::set` adds a MariaDB database while
 * svc runs; SIGTERM closes every pool and thread and svc exits 0.
 */
import assert from 'node:assert/strict'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { startEngineProcess, tempProject, type RunningEngine } from './support/processes.ts'
import { startTestMysql, type TestMysql } from './support/mysql.ts'
import { startTestPostgres, type TestPostgres } from './support/postgres.ts'
import { waitFor } from './support/wait.ts'

let pg: TestPostgres
let my: TestMysql
let dir: string
let engine: RunningEngine
let client: SvcClient

before(async () => {
  ;[pg, my] = await Promise.all([startTestPostgres(), startTestMysql()])
  dir = await tempProject(
    '  - name: database\n    config:\n      databases:\n        primary: { url: "sqlite:./data/app.db" }\n        reports: { url: "${REPORTS_URL}", pool: { max: 3 } }\n',
  )
  engine = await startEngineProcess(dir, [], { REPORTS_URL: pg.url })
  client = registerWorker(engine.engineUrl, { workerName: 'database-e2e' })
})

after(async () => {
  await client?.shutdown()
  if (engine && engine.child.exitCode === null) await engine.stop()
  await Promise.all([pg?.close(), my?.close()])
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const call = <T>(function_id: string, payload: unknown) => client.trigger<unknown, T>({ function_id, payload })

describe('database worker in svc (builtins.md §10)', () => {
  it('runs SQLite relative to the project root, off the event loop', async () => {
    await call('database::execute', { sql: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, at DATETIME)' })
    const inserted = await call<{ affected_rows: number; last_insert_id: string }>('database::execute', {
      sql: 'INSERT INTO notes (body, at) VALUES (?, ?)',
      params: ['hello', '2024-05-06 07:08:09'],
    })
    assert.deepEqual(inserted, { affected_rows: 1, last_insert_id: '1', returned_rows: [] })
    const read = await call<{ rows: unknown[] }>('database::query', { sql: 'SELECT body, at FROM notes' })
    assert.deepEqual(read.rows, [{ body: 'hello', at: '2024-05-06T07:08:09' }])
    assert.ok(existsSync(join(dir, 'data', 'app.db')))
  })

  it('reaches PostgreSQL through the expanded URL and answers its errors with §10.4 codes', async () => {
    const result = await call<{ rows: unknown[] }>('database::query', { db: 'reports', sql: 'SELECT $1::int8 AS big, now() IS NOT NULL AS ok', params: ['9007199254740993'] })
    assert.deepEqual(result.rows, [{ big: '9007199254740993', ok: true }])
    await assert.rejects(call('database::query', { db: 'reports', sql: 'SELECT * FROM missing_table' }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'DRIVER_ERROR')
      assert.match(error.message, /42P01: relation "missing_table" does not exist/)
      return true
    })
    await assert.rejects(call('database::query', { db: 'nope', sql: 'SELECT 1' }), { code: 'UNKNOWN_DB' })
  })

  it('adds a MySQL database while running, through configuration::set', async () => {
    const { value } = await call<{ value: { databases: Record<string, unknown> } }>('configuration::get', { id: 'database', raw: true })
    await call('configuration::set', { id: 'database', value: { databases: { ...value.databases, shop: { url: my.url } } } })
    await waitFor(async () => {
      const { databases } = await call<{ databases: Array<{ name: string }> }>('database::list_databases', {})
      return databases.some((d) => d.name === 'shop')
    }, 'shop listed')
    const result = await call<{ committed: boolean; results: Array<{ rows: unknown[] }> }>('database::transaction', {
      db: 'shop',
      statements: [{ sql: 'CREATE TEMPORARY TABLE cart (item VARCHAR(20))' }, { sql: 'INSERT INTO cart VALUES (?)', params: ['tea'] }, { sql: 'SELECT item FROM cart' }],
    })
    assert.equal(result.committed, true)
    assert.deepEqual(result.results[2]!.rows, [{ item: 'tea' }])
  })

  it('closes every database on SIGTERM and exits 0', async () => {
    await client.shutdown()
    assert.equal(await engine.stop(), 0)
  })
})
