/**
 * The behaviour every {@link DatabaseDriver} must show (./types.ts, builtins.md §10.2–§10.4). Each
 * driver's test file calls {@link runDatabaseDriverConformance} with a factory and its dialect.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import type { ResultLimits } from './limits.ts'
import type { DatabaseDriver, Parameter, PoolSettings, Statement } from './types.ts'
import { toParameter } from './values.ts'

/** How the cases write SQL for one database. */
export interface ConformanceDialect {
  /** The placeholder of parameter `n` (1-based): `?` or `$n`. */
  param(n: number): string
  /** An auto-numbered integer primary key column type. */
  autoId: string
  /** Column types for §10.3 mapping. */
  types: { bigint: string; decimal: string; bytes: string; timestamp: string; date: string; text: string; longText: string }
  /** A statement that takes `seconds` to run. */
  sleep(seconds: number): string
  /** True when INSERT … RETURNING is supported. */
  returning: boolean
  /** SQLite does not bind booleans. */
  booleansAsIntegers: boolean
  /** A query returning `n` rows of one integer column `x`, 1 to n. */
  series(n: number): string
}

/** Opens a driver on a database shared by the cases (tables get unique names), with the default result limits unless given. */
export type DatabaseDriverFactory = (pool?: Partial<PoolSettings>, limits?: ResultLimits) => Promise<DatabaseDriver>

export interface ConformanceOptions {
  /** Cases this driver skips, by case name, each with the reason (listed in the test output). */
  skip?: Record<string, string>
}

let tables = 0
const TIMEOUT = { timeoutMs: 10_000 }

/** Runs the conformance suite for one driver. */
export function runDatabaseDriverConformance(name: string, open: DatabaseDriverFactory, dialect: ConformanceDialect, options: ConformanceOptions = {}): void {
  const opened: DatabaseDriver[] = []
  const fresh = async (pool?: Partial<PoolSettings>, limits?: ResultLimits) => {
    const driver = await open(pool, limits)
    opened.push(driver)
    return driver
  }
  const table = () => `conf_${process.pid}_${++tables}`
  const p = dialect.param
  const stmt = (sql: string, ...params: unknown[]): Statement => ({
    sql,
    params: params.map((v) => toParameter(v, { booleansAsIntegers: dialect.booleansAsIntegers })) as Parameter[],
  })
  const test = (title: string, body: () => Promise<void>) => {
    const reason = options.skip?.[title]
    if (reason !== undefined) it(title, { skip: reason }, () => {})
    else it(title, body)
  }

  describe(`database driver conformance: ${name}`, () => {
    after(async () => {
      await Promise.all(opened.map((d) => d.close()))
    })

    test('query returns rows, row_count and named columns', async () => {
      const db = await fresh()
      const t = table()
      await db.execute(stmt(`CREATE TABLE ${t} (id ${dialect.autoId}, email ${dialect.types.text})`), TIMEOUT)
      await db.execute(stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'a@example.com'), TIMEOUT)
      const result = await db.query(stmt(`SELECT id, email FROM ${t} WHERE email = ${p(1)}`, 'a@example.com'), TIMEOUT)
      assert.deepEqual(result.rows, [{ id: 1, email: 'a@example.com' }])
      assert.equal(result.row_count, 1)
      assert.deepEqual(result.columns.map((c) => c.name), ['id', 'email'])
      for (const column of result.columns) assert.ok(column.type === null || typeof column.type === 'string')
    })

    test('execute reports affected rows and the inserted id', async () => {
      const db = await fresh()
      const t = table()
      await db.execute(stmt(`CREATE TABLE ${t} (id ${dialect.autoId}, n INTEGER)`), TIMEOUT)
      const inserted = await db.execute(
        stmt(`INSERT INTO ${t} (n) VALUES (${p(1)}), (${p(2)})${dialect.returning ? ' RETURNING id' : ''}`, 1, 2),
        TIMEOUT,
      )
      assert.equal(inserted.affected_rows, 2)
      assert.equal(typeof inserted.last_insert_id, 'string')
      if (dialect.returning) assert.deepEqual(inserted.returned_rows, [{ id: 1 }, { id: 2 }])
      else assert.deepEqual(inserted.returned_rows, [])
      const updated = await db.execute(stmt(`UPDATE ${t} SET n = n + 1`), TIMEOUT)
      assert.deepEqual(updated, { affected_rows: 2, last_insert_id: null, returned_rows: [] })
    })

    test('maps values per §10.3', async () => {
      const db = await fresh()
      const t = table()
      const { bigint, decimal, bytes, timestamp, date, text } = dialect.types
      await db.execute(stmt(`CREATE TABLE ${t} (big ${bigint}, amount ${decimal}, fl DOUBLE PRECISION, txt ${text}, bin ${bytes}, ts ${timestamp}, d ${date}, flag INTEGER, doc ${text}, empty ${text})`), TIMEOUT)
      await db.execute(
        stmt(
          `INSERT INTO ${t} VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${name === 'postgres' ? `decode(${p(5)}, 'base64')` : name === 'mysql' ? `FROM_BASE64(${p(5)})` : `unhex(${p(5)})`}, ${p(6)}, ${p(7)}, ${p(8)}, ${p(9)}, ${p(10)})`,
          '9007199254740993',
          '12.50',
          1.5,
          'héllo \u{1F600}',
          name === 'sqlite' ? '00FF10' : Buffer.from([0, 255, 16]).toString('base64'),
          '2024-01-02 03:04:05',
          '2024-01-02',
          name === 'postgres' ? 1 : true,
          { a: [1, 'x'] },
          null,
        ),
        TIMEOUT,
      )
      const [row] = (await db.query(stmt(`SELECT big, amount, fl, txt, bin, ts, d, flag, doc, empty, ${p(1)} AS small FROM ${t}`, 42), TIMEOUT)).rows
      assert.ok(row)
      assert.equal(row.big, '9007199254740993')
      assert.equal(row.amount, name === 'sqlite' ? 12.5 : '12.50')
      assert.equal(row.fl, 1.5)
      assert.equal(row.txt, 'héllo \u{1F600}')
      assert.equal(row.bin, Buffer.from([0, 255, 16]).toString('base64'))
      assert.match(String(row.ts), /^2024-01-02T03:04:05/)
      assert.match(String(row.d), /^2024-01-02/)
      assert.equal(row.flag, 1)
      assert.deepEqual(JSON.parse(String(row.doc)), { a: [1, 'x'] })
      assert.equal(row.empty, null)
      assert.equal(Number(row.small), 42)
    })

    test('bad SQL fails with DRIVER_ERROR "<driver code>: <message>"', async () => {
      const db = await fresh()
      await assert.rejects(db.query(stmt('SELEC nonsense'), TIMEOUT), (error: unknown) => {
        assert.ok(error instanceof SvcError)
        assert.equal(error.code, 'DRIVER_ERROR')
        assert.match(error.message, /^[A-Za-z0-9_]+: ./)
        return true
      })
      // The driver is still usable.
      assert.equal((await db.query(stmt('SELECT 1 AS one'), TIMEOUT)).row_count, 1)
    })

    test('a transaction commits every statement', async () => {
      const db = await fresh()
      const t = table()
      await db.execute(stmt(`CREATE TABLE ${t} (id ${dialect.autoId}, email ${dialect.types.text} UNIQUE)`), TIMEOUT)
      const result = await db.transaction(
        [stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'a'), stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'b'), stmt(`SELECT email FROM ${t} ORDER BY email`)],
        { ...TIMEOUT, isolation: 'serializable' },
      )
      assert.equal(result.committed, true)
      if (!result.committed) return
      assert.equal(result.results.length, 3)
      assert.equal(result.results[0]!.affected_rows, 1)
      assert.deepEqual(result.results[0]!.rows, [])
      assert.deepEqual(result.results[2]!.rows, [{ email: 'a' }, { email: 'b' }])
      assert.equal((await db.query(stmt(`SELECT * FROM ${t}`), TIMEOUT)).row_count, 2)
    })

    test('a failing statement rolls the transaction back and is reported, not thrown', async () => {
      const db = await fresh()
      const t = table()
      await db.execute(stmt(`CREATE TABLE ${t} (id ${dialect.autoId}, email ${dialect.types.text} UNIQUE)`), TIMEOUT)
      await db.execute(stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'taken'), TIMEOUT)
      const result = await db.transaction(
        [stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'new'), stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'taken'), stmt(`INSERT INTO ${t} (email) VALUES (${p(1)})`, 'never')],
        TIMEOUT,
      )
      assert.equal(result.committed, false)
      if (result.committed) return
      assert.equal(result.failed_index, 1)
      assert.equal(result.error.code, 'DRIVER_ERROR')
      assert.equal(typeof result.error.driver_code, 'string')
      assert.ok(result.error.message.length > 0)
      const rows = (await db.query(stmt(`SELECT email FROM ${t} ORDER BY email`), TIMEOUT)).rows
      assert.deepEqual(rows, [{ email: 'taken' }])
    })

    test('a call over its timeout fails with QUERY_TIMEOUT and the driver goes on', async () => {
      const db = await fresh()
      const started = Date.now()
      await assert.rejects(db.query(stmt(dialect.sleep(5)), { timeoutMs: 300 }), { code: 'QUERY_TIMEOUT' })
      assert.ok(Date.now() - started < 3000, 'the timeout answers without waiting for the statement')
      assert.equal((await db.query(stmt('SELECT 1 AS one'), TIMEOUT)).row_count, 1)
    })

    test('no free connection within acquire_timeout_ms fails with POOL_TIMEOUT', async () => {
      const db = await fresh({ max: 1, acquire_timeout_ms: 200 })
      const slow = db.query(stmt(dialect.sleep(1)), TIMEOUT)
      await assert.rejects(db.query(stmt('SELECT 1 AS one'), TIMEOUT), { code: 'POOL_TIMEOUT' })
      await slow
    })

    test('strings with lone surrogates and large parameters do not break the driver', async () => {
      const db = await fresh()
      const t = table()
      await db.execute(stmt(`CREATE TABLE ${t} (v ${dialect.types.longText})`), TIMEOUT)
      await db.execute(stmt(`INSERT INTO ${t} VALUES (${p(1)})`, 'a\uD800b'), TIMEOUT).catch((error: unknown) => assert.equal((error as SvcError).code, 'DRIVER_ERROR'))
      const big = 'x'.repeat(200_000)
      await db.execute(stmt(`INSERT INTO ${t} VALUES (${p(1)})`, big), TIMEOUT)
      const rows = (await db.query(stmt(`SELECT v FROM ${t} WHERE v = ${p(1)}`, big), TIMEOUT)).rows
      assert.equal(rows.length, 1)
    })

    test('concurrent calls all complete', async () => {
      const db = await fresh({ max: 4 })
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => db.query(stmt(`SELECT ${p(1)} AS n`, i), TIMEOUT)))
      assert.deepEqual(results.map((r) => Number(r.rows[0]!.n)), Array.from({ length: 20 }, (_, i) => i))
    })

    test('a result over max_rows fails with QUERY_RESULT_TOO_LARGE without reading it all, and the driver goes on', async () => {
      const db = await fresh(undefined, { maxRows: 1000, maxBytes: 1024 * 1024 * 1024 })
      await assert.rejects(db.query(stmt(dialect.series(1_000_000)), TIMEOUT), (error: unknown) => {
        assert.ok(error instanceof SvcError)
        assert.equal(error.code, 'QUERY_RESULT_TOO_LARGE')
        assert.match(error.message, /max_rows 1000\b/)
        return true
      })
      assert.equal((await db.query(stmt(dialect.series(1000)), TIMEOUT)).row_count, 1000)
      assert.equal((await db.query(stmt('SELECT 1 AS one'), TIMEOUT)).row_count, 1)
    })

    test('a result over max_result_bytes fails with QUERY_RESULT_TOO_LARGE', async () => {
      const db = await fresh(undefined, { maxRows: 1_000_000, maxBytes: 4096 })
      await assert.rejects(db.query(stmt(dialect.series(10_000)), TIMEOUT), (error: unknown) => {
        assert.ok(error instanceof SvcError)
        assert.equal(error.code, 'QUERY_RESULT_TOO_LARGE')
        assert.match(error.message, /max_result_bytes 4096\b/)
        return true
      })
      assert.equal((await db.query(stmt(dialect.series(10)), TIMEOUT)).row_count, 10)
    })

    test('a transaction over the result limits fails and commits nothing', async () => {
      const db = await fresh(undefined, { maxRows: 100, maxBytes: 1024 * 1024 })
      const t = table()
      await db.execute(stmt(`CREATE TABLE ${t} (n INTEGER)`), TIMEOUT)
      await assert.rejects(db.transaction([stmt(`INSERT INTO ${t} VALUES (${p(1)})`, 1), stmt(dialect.series(60)), stmt(dialect.series(60))], TIMEOUT), { code: 'QUERY_RESULT_TOO_LARGE' })
      assert.equal((await db.query(stmt(`SELECT n FROM ${t}`), TIMEOUT)).row_count, 0)
    })

    test('sql holding two statements is refused and runs neither', async () => {
      const db = await fresh()
      const t = table()
      await assert.rejects(db.execute(stmt(`CREATE TABLE ${t} (n INTEGER); CREATE TABLE ${t}_b (n INTEGER)`), TIMEOUT), (error: unknown) => {
        assert.ok(error instanceof SvcError)
        assert.ok(['INVALID_ARGUMENTS', 'DRIVER_ERROR'].includes(error.code), error.code)
        return true
      })
      await assert.rejects(db.query(stmt(`SELECT n FROM ${t}`), TIMEOUT), { code: 'DRIVER_ERROR' })
    })

    test('a column named __proto__ or constructor is an ordinary column of the row', async () => {
      const db = await fresh()
      const [row] = (await db.query(stmt('SELECT 1 AS "__proto__", 2 AS "constructor", 3 AS b'), TIMEOUT)).rows
      assert.ok(row)
      assert.deepEqual(Object.keys(row), ['__proto__', 'constructor', 'b'])
      assert.equal(JSON.stringify(row), '{"__proto__":1,"constructor":2,"b":3}')
      assert.equal(Object.getPrototypeOf(row), Object.prototype)
    })

    test('close waits for running calls, then refuses new ones', async () => {
      const db = await open()
      const running = db.query(stmt(dialect.sleep(0.3)), TIMEOUT)
      const closed = db.close()
      await running
      await closed
      await assert.rejects(db.query(stmt('SELECT 1 AS one'), TIMEOUT), SvcError)
    })
  })
}
