/**
 * The database worker in a real engine (builtins.md §10), against SQLite, a real PostgreSQL server
 * and a real MariaDB server started by this file (test/support/postgres.ts, test/support/mysql.ts):
 * the functions and their shapes, errors, and settings changed at runtime through the
 * configuration worker.
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { startTestMysql, type TestMysql } from '../../../test/support/mysql.ts'
import { startTestPostgres, type TestPostgres } from '../../../test/support/postgres.ts'
import { waitFor } from '../../../test/support/wait.ts'

let pg: TestPostgres
let my: TestMysql
let t: TestEngine

const invoke = (function_id: string, data: unknown) => t.engine.inject({ function_id, data })
const settingsOf = (databases: Record<string, unknown>) => ({ databases })
const set = (value: unknown) => invoke('configuration::set', { id: 'database', value })

const listed = async () =>
  ((await invoke('database::list_databases', {})) as { databases: Array<{ name: string; driver: string; url: string; tls_mode: string; pool: unknown }> }).databases

before(async () => {
  ;[pg, my] = await Promise.all([startTestPostgres(), startTestMysql()])
  t = await startTestEngine({
    settings: {
      database: settingsOf({
        primary: { url: 'sqlite:./app.db' },
        pg: { url: pg.url, pool: { max: 4 } },
        my: { url: my.url },
      }),
    },
  })
})

after(async () => {
  await t?.stop()
  await Promise.all([pg?.close(), my?.close()])
})

/** The three databases with their placeholder style and auto-increment column type. */
const DIALECTS = [
  { db: 'primary', param: () => '?', autoId: 'INTEGER PRIMARY KEY', text: 'TEXT' },
  { db: 'pg', param: (n: number) => `$${n}`, autoId: 'SERIAL PRIMARY KEY', text: 'TEXT' },
  { db: 'my', param: () => '?', autoId: 'INT AUTO_INCREMENT PRIMARY KEY', text: 'VARCHAR(100)' },
] as const

for (const { db, param: p, autoId, text } of DIALECTS) {
  describe(`database worker on ${db}`, () => {
    const table = `users_${db}`
    it('creates, inserts with execute and reads with query', async () => {
      await invoke('database::execute', { db, sql: `CREATE TABLE ${table} (id ${autoId}, email ${text} UNIQUE, age INTEGER)` })
      const inserted = (await invoke('database::execute', {
        db,
        sql: `INSERT INTO ${table} (email, age) VALUES (${p(1)}, ${p(2)})${db === 'pg' ? ' RETURNING id' : ''}`,
        params: ['a@example.com', 30],
      })) as Record<string, unknown>
      assert.equal(inserted.affected_rows, 1)
      assert.equal(inserted.last_insert_id, '1')
      const result = (await invoke('database::query', { db, sql: `SELECT id, email, age FROM ${table} WHERE age > ${p(1)}`, params: '[18]' })) as Record<string, unknown>
      assert.deepEqual(result.rows, [{ id: 1, email: 'a@example.com', age: 30 }])
      assert.equal(result.row_count, 1)
      assert.deepEqual((result.columns as Array<{ name: string }>).map((c) => c.name), ['id', 'email', 'age'])
    })

    it('commits a transaction', async () => {
      const result = (await invoke('database::transaction', {
        db,
        isolation: 'serializable',
        statements: [
          { sql: `INSERT INTO ${table} (email, age) VALUES (${p(1)}, ${p(2)})`, params: ['b@example.com', 20] },
          { sql: `UPDATE ${table} SET age = age + 1 WHERE email = ${p(1)}`, params: ['b@example.com'] },
          { sql: `SELECT age FROM ${table} WHERE email = ${p(1)}`, params: ['b@example.com'] },
        ],
      })) as { committed: boolean; results: Array<{ affected_rows: number; last_insert_id: string | null; rows: unknown[] }> }
      assert.equal(result.committed, true)
      assert.equal(result.results.length, 3)
      assert.equal(result.results[1]!.affected_rows, 1)
      assert.deepEqual(result.results[2]!.rows, [{ age: 21 }])
    })

    it('rolls a transaction back when a statement fails, as a successful call', async () => {
      const result = (await invoke('database::transaction', {
        db,
        statements: [
          { sql: `INSERT INTO ${table} (email, age) VALUES (${p(1)}, 1)`, params: ['c@example.com'] },
          { sql: `INSERT INTO ${table} (email, age) VALUES (${p(1)}, 1)`, params: ['a@example.com'] },
        ],
      })) as { committed: boolean; failed_index: number; error: { code: string; driver_code: string; message: string } }
      assert.equal(result.committed, false)
      assert.equal(result.failed_index, 1)
      assert.equal(result.error.code, 'DRIVER_ERROR')
      assert.ok(result.error.driver_code)
      const rows = (await invoke('database::query', { db, sql: `SELECT email FROM ${table} WHERE email = ${p(1)}`, params: ['c@example.com'] })) as { rows: unknown[] }
      assert.deepEqual(rows.rows, [])
    })

    it('answers bad SQL with DRIVER_ERROR "<driver code>: <message>"', async () => {
      await assert.rejects(invoke('database::query', { db, sql: 'SELECT FROM WHERE nothing' }), (error: Error & { code?: string }) => {
        assert.equal(error.code, 'DRIVER_ERROR')
        assert.match(error.message, /^[A-Za-z0-9_]+: \S/)
        return true
      })
    })
  })
}

describe('database worker: payloads and errors (§10.2, §10.4)', () => {
  it('uses primary when db is omitted', async () => {
    const result = (await invoke('database::query', { sql: 'SELECT 1 AS one' })) as { rows: unknown[] }
    assert.deepEqual(result.rows, [{ one: 1 }])
  })

  it('answers an unknown db with UNKNOWN_DB listing the configured names', async () => {
    await assert.rejects(invoke('database::query', { db: 'nope', sql: 'SELECT 1' }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'UNKNOWN_DB')
      assert.match(error.message, /primary, pg, my/)
      return true
    })
  })

  it('refuses transaction control, empty SQL, malformed params and a bad isolation with INVALID_ARGUMENTS', async () => {
    const refused = async (function_id: string, data: unknown, message: RegExp) =>
      assert.rejects(invoke(function_id, data), (error: Error & { code?: string }) => {
        assert.equal(error.code, 'INVALID_ARGUMENTS')
        assert.match(error.message, message)
        return true
      })
    await refused('database::query', { sql: 'BEGIN' }, /BEGIN is not allowed in database::query/)
    await refused('database::execute', { sql: '  -- comment\n commit' }, /COMMIT is not allowed/)
    await refused('database::execute', { sql: 'SAVEPOINT a' }, /SAVEPOINT/)
    await refused('database::query', { sql: '   ' }, /sql must be a non-empty string/)
    await refused('database::query', {}, /sql is required/)
    await refused('database::query', { sql: 'SELECT ?', params: '{"a":1}' }, /params must be an array/)
    await refused('database::query', { sql: 'SELECT ?', params: 'not json' }, /params must be a JSON array/)
    await refused('database::query', { sql: 'SELECT 1', timeout_ms: 0 }, /timeout_ms/)
    await refused('database::transaction', { statements: [] }, /statements must be a non-empty array/)
    await refused('database::transaction', { statements: [{ sql: 'ROLLBACK' }] }, /statements\[0\]\.sql: ROLLBACK/)
    await refused('database::transaction', { statements: [{ sql: 'SELECT 1' }], isolation: 'chaos' }, /isolation must be one of/)
    await refused('database::query', 'SELECT 1', /payload must be an object/)
  })

  it('maps parameters per §10.3 (booleans, objects as JSON text, null)', async () => {
    const result = (await invoke('database::query', { db: 'pg', sql: 'SELECT $1::boolean AS b, $2::jsonb AS j, $3::text AS n, $4::float8 AS f', params: [true, { a: [1] }, null, 1.25] })) as { rows: unknown[] }
    assert.deepEqual(result.rows, [{ b: true, j: { a: [1] }, n: null, f: 1.25 }])
    const sqlite = (await invoke('database::query', { sql: 'SELECT ? AS b, ? AS j', params: [true, [1, 'x']] })) as { rows: unknown[] }
    assert.deepEqual(sqlite.rows, [{ b: 1, j: '[1,"x"]' }])
  })

  it('times out with QUERY_TIMEOUT and goes on', async () => {
    await assert.rejects(invoke('database::query', { db: 'pg', sql: 'SELECT pg_sleep(5)', timeout_ms: 200 }), { code: 'QUERY_TIMEOUT' })
    await assert.rejects(invoke('database::query', { db: 'my', sql: 'SELECT SLEEP(5)', timeout_ms: 200 }), { code: 'QUERY_TIMEOUT' })
    assert.equal(((await invoke('database::query', { db: 'pg', sql: 'SELECT 1 AS one' })) as { row_count: number }).row_count, 1)
  })

  it('lists the databases without credentials', async () => {
    const databases = await listed()
    assert.deepEqual(databases.map((d) => [d.name, d.driver, d.tls_mode]), [
      ['primary', 'sqlite', 'disable'],
      ['pg', 'postgres', 'disable'],
      ['my', 'mysql', 'disable'],
    ])
    assert.deepEqual(databases[0]!.pool, { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 })
  })
})

describe('database worker: bounded results, one statement per call, no ATTACH (issue 16)', () => {
  const connected: RawWorker[] = []
  after(async () => {
    for (const w of connected) await w.close().catch(() => {})
  })
  const caller = async () => {
    const w = await RawWorker.connect(t.url)
    connected.push(w)
    return w
  }

  it('answers a 1M-row query with QUERY_RESULT_TOO_LARGE while another caller keeps being answered', async () => {
    const big = await caller()
    const other = await caller()
    let settled = false
    const answer = big.call('database::query', { sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x FROM c' }).finally(() => (settled = true))
    let answeredBefore = 0
    while (!settled) {
      const frame = await other.call('state::get', { scope: 'limits', key: 'k' })
      assert.equal(frame.error, undefined)
      if (!settled) answeredBefore++
    }
    const frame = await answer
    assert.equal(frame.error?.code, 'QUERY_RESULT_TOO_LARGE')
    assert.match(frame.error.message, /database 'primary' has more than max_rows 100000 rows/)
    assert.ok(answeredBefore >= 1, 'no call of the other caller was answered while the query ran')
    // The caller's connection is still there.
    assert.equal((await big.call('database::query', { sql: 'SELECT 1 AS one' })).result.row_count, 1)
  })

  it('answers an 80 MB result with QUERY_RESULT_TOO_LARGE instead of dropping the connection', async () => {
    const w = await caller()
    const frame = await w.call('database::query', { sql: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 40) SELECT x, hex(zeroblob(1000000)) AS h FROM c' })
    assert.equal(frame.error?.code, 'QUERY_RESULT_TOO_LARGE')
    assert.match(frame.error.message, /max_result_bytes 33554432 bytes/)
    assert.equal((await w.call('database::query', { sql: 'SELECT 2 AS two' })).result.row_count, 1)
  })

  it('refuses a second statement in sql with INVALID_ARGUMENTS (SQLite) and runs neither', async () => {
    await assert.rejects(invoke('database::execute', { sql: 'CREATE TABLE multi_a (x); CREATE TABLE multi_b (x)' }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'INVALID_ARGUMENTS')
      assert.match(error.message, /more than one statement/)
      return true
    })
    const tables = (await invoke('database::query', { sql: "SELECT name FROM sqlite_master WHERE name LIKE 'multi_%'" })) as { row_count: number }
    assert.equal(tables.row_count, 0)
  })

  it('refuses ATTACH to a file anywhere with DRIVER_ERROR and creates nothing', async () => {
    const target = join(t.dataDir, 'attached-elsewhere.db')
    await assert.rejects(invoke('database::execute', { sql: 'ATTACH DATABASE ? AS other', params: [target] }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'DRIVER_ERROR')
      assert.match(error.message, /allow_attach/)
      return true
    })
    assert.equal(existsSync(target), false)
  })

  it('keeps a column named __proto__ in the row', async () => {
    const result = (await invoke('database::query', { sql: 'SELECT 1 AS "__proto__", 2 AS b' })) as { rows: object[] }
    assert.equal(JSON.stringify(result.rows), '[{"__proto__":1,"b":2}]')
  })
})

describe('database worker: settings at runtime (§10.1, §2.7)', () => {
  const base = () => ({
    primary: { url: 'sqlite:./app.db' },
    pg: { url: pg.url, pool: { max: 4 } },
    my: { url: my.url },
  })

  it('refuses invalid settings through configuration::set with the schema error', async () => {
    for (const bad of [
      settingsOf({ x: { url: 'redis://localhost' } }),
      settingsOf({ x: { url: 'sqlite::memory:', pool: { max: 0 } } }),
      settingsOf({ 'bad name!': { url: 'sqlite::memory:' } }),
      settingsOf({ x: { url: 'sqlite::memory:', tls: { mode: 'sometimes' } } }),
      settingsOf({ x: {} }),
      settingsOf({ constructor: { url: 'sqlite::memory:' } }),
      settingsOf({ x: { url: 'sqlite::memory:', max_rows: 0 } }),
      settingsOf({ x: { url: 'sqlite::memory:', allow_attach: 'yes' } }),
    ]) {
      await assert.rejects(set(bad), { code: 'SCHEMA_INVALID' })
    }
    assert.equal((await listed()).length, 3)
  })

  it('adds a database without restart, and removes it again', async () => {
    await set(settingsOf({ ...base(), extra: { url: 'sqlite:data/extra.db' } }))
    await waitFor(async () => (await listed()).some((d) => d.name === 'extra'), "(await listed()).some((d) => d.name === 'extra')")
    await invoke('database::execute', { db: 'extra', sql: 'CREATE TABLE x (v INTEGER)' })
    assert.equal(((await invoke('database::execute', { db: 'extra', sql: 'INSERT INTO x VALUES (?)', params: [7] })) as { affected_rows: number }).affected_rows, 1)
    await set(settingsOf(base()))
    await waitFor(async () => !(await listed()).some((d) => d.name === 'extra'), "!(await listed()).some((d) => d.name === 'extra')")
    await assert.rejects(invoke('database::query', { db: 'extra', sql: 'SELECT 1' }), { code: 'UNKNOWN_DB' })
  })

  it('lets a running query finish on the old pool when its database changes', async () => {
    const sql = 'SELECT pg_sleep(1), 42 AS answer'
    const running = invoke('database::query', { db: 'pg', sql })
    const active = async () => ((await invoke('database::query', { db: 'pg', sql: 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = $1', params: [sql] })) as { rows: Array<{ n: number }> }).rows[0]!.n
    await waitFor(async () => (await active()) === 1, 'the slow query running on the old pool')
    await set(settingsOf({ ...base(), pg: { url: pg.url, pool: { max: 2 } } }))
    await waitFor(async () => JSON.stringify((await listed()).find((d) => d.name === 'pg')?.pool).includes('"max":2'), 'JSON.stringify((await listed()).find((d) => d.name === \'pg\')?.pool).includes(\'"max":2\')')
    const result = (await running) as { rows: Array<{ answer: number }> }
    assert.equal(result.rows[0]!.answer, 42)
    assert.equal(((await invoke('database::query', { db: 'pg', sql: 'SELECT 1 AS one' })) as { row_count: number }).row_count, 1)
  })

  it('keeps the previous settings when a database cannot be opened', async () => {
    writeFileSync(join(t.dataDir, 'not-a-dir'), 'x')
    await set(settingsOf({ ...base(), broken: { url: 'sqlite:not-a-dir/x.db' } }))
    const info = async () => ((await invoke('engine::workers::info', { name: 'database' })) as { worker: { last_config_error?: string } }).worker
    await waitFor(async () => typeof (await info()).last_config_error === 'string', "typeof (await info()).last_config_error === 'string'")
    assert.match(String((await info()).last_config_error), /^databases\.broken/)
    assert.ok(!(await listed()).some((d) => d.name === 'broken'))
    assert.equal(((await invoke('database::query', { sql: 'SELECT 1 AS one' })) as { row_count: number }).row_count, 1)
    await set(settingsOf(base()))
    await waitFor(async () => (await info()).last_config_error === undefined, '(await info()).last_config_error === undefined')
  })

  it('answers MISSING_DB when several databases are configured and none is primary', async () => {
    await set(settingsOf({ a: { url: 'sqlite::memory:' }, b: { url: 'sqlite::memory:' } }))
    await waitFor(async () => (await listed()).length === 2, '(await listed()).length === 2')
    await assert.rejects(invoke('database::query', { sql: 'SELECT 1' }), { code: 'MISSING_DB' })
    await set(settingsOf({ only: { url: 'sqlite::memory:' } }))
    await waitFor(async () => (await listed()).length === 1, '(await listed()).length === 1')
    assert.equal(((await invoke('database::query', { sql: 'SELECT 1 AS one' })) as { row_count: number }).row_count, 1)
    await set(settingsOf(base()))
    await waitFor(async () => (await listed()).length === 3, '(await listed()).length === 3')
  })
})
