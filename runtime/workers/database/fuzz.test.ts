/**
 * Hostile input to `database::*` (builtins.md §2.1, §10): random payloads, huge and deeply nested
 * parameters, lone surrogates, unknown databases and bad SQL answer with a §10.4 code or a result,
 * never an engine failure, and the engine keeps answering.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { parseDatabaseSettings } from './settings.ts'

const ALLOWED = new Set(['INVALID_ARGUMENTS', 'DRIVER_ERROR', 'UNKNOWN_DB', 'MISSING_DB', 'QUERY_TIMEOUT', 'QUERY_RESULT_TOO_LARGE'])
/** Names that reach Object.prototype as object keys (issue 16). */
const RESERVED = ['__proto__', 'constructor', 'prototype'] as const
/** Files a refused ATTACH or VACUUM INTO would have created (relative: the engine's working directory). */
const ATTACH_TARGETS = ['fuzz-attached.db', 'fuzz-vacuumed.db']
let t: TestEngine

before(async () => {
  t = await startTestEngine({ settings: { database: { databases: { primary: { url: 'sqlite::memory:' }, other: { url: 'sqlite:fuzz.db' } } } } })
  await t.engine.inject({ function_id: 'database::execute', data: { sql: 'CREATE TABLE t (a, b)' } })
})
after(() => t?.stop())

/** Invokes and returns the error code, or `ok`. */
async function outcome(function_id: string, data: unknown): Promise<string> {
  try {
    await t.engine.inject({ function_id, data, timeoutMs: 20_000 })
    return 'ok'
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'none'
    assert.ok(ALLOWED.has(code), `${function_id} failed with ${code}: ${(error as Error).message}`)
    return code
  }
}

async function stillAnswers(): Promise<void> {
  const result = (await t.engine.inject({ function_id: 'database::query', data: { sql: 'SELECT 1 AS one' } })) as { rows: unknown[] }
  assert.deepEqual(result.rows, [{ one: 1 }])
}

const hostile = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('\ud800', '\udfff\ud800', '\u0000', 1e308, -0, Number.MAX_SAFE_INTEGER + 2, 'primary', 'other', 'nope', ''),
  fc.integer({ min: 1, max: 120 }).map((levels) => JSON.parse('['.repeat(levels) + ']'.repeat(levels)) as unknown),
)
const sql = fc.oneof(
  hostile,
  fc.constantFrom('SELECT ? AS v', 'INSERT INTO t VALUES (?, ?)', 'SELECT * FROM t WHERE a = ?', 'UPDATE t SET b = ? RETURNING *', 'BEGIN', 'select', ';', '/* */', 'SELECT \ud800'),
  // Several statements, ATTACH and friends, reserved column names, results over the limits (issue 16).
  fc.constantFrom(
    'SELECT 1; SELECT 2',
    "SELECT ';' AS s; DELETE FROM t",
    'SELECT 1 -- ; DELETE FROM t',
    'SELECT 1 /* ; */; ;',
    'INSERT INTO t VALUES (1, 2); DROP TABLE t',
    `ATTACH DATABASE '${ATTACH_TARGETS[0]}' AS fz`,
    `VACUUM INTO '${ATTACH_TARGETS[1]}'`,
    'DETACH DATABASE fz',
    "SELECT load_extension('fuzz-nothing')",
    'SELECT 1 AS "__proto__", 2 AS "constructor", 3 AS "prototype"',
    'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150000) SELECT x FROM c',
    'SELECT hex(zeroblob(10000000)) AS h, hex(zeroblob(10000000)) AS i',
  ),
)

describe('database::* under hostile input', () => {
  it('answers random payloads with a result or a §10.4 code (fast-check)', async () => {
    const seen = new Map<string, number>()
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('database::query', 'database::execute', 'database::transaction', 'database::list_databases'),
        fc.record(
          {
            db: hostile,
            sql,
            params: fc.oneof(hostile, fc.array(hostile, { maxLength: 5 }), fc.array(hostile, { maxLength: 3 }).map((a) => JSON.stringify(a))),
            timeout_ms: fc.oneof(hostile, fc.integer({ min: -5, max: 5000 })),
            isolation: fc.oneof(hostile, fc.constantFrom('read_committed', 'serializable')),
            statements: fc.oneof(hostile, fc.array(fc.record({ sql, params: fc.oneof(hostile, fc.array(hostile, { maxLength: 3 })) }, { requiredKeys: [] }), { maxLength: 4 })),
          },
          { requiredKeys: [] },
        ),
        async (function_id, payload) => {
          const code = await outcome(function_id, payload)
          seen.set(code, (seen.get(code) ?? 0) + 1)
        },
      ),
      { numRuns: 400 },
    )
    // The runs reach the database, not only the validation.
    assert.ok((seen.get('ok') ?? 0) > 0 && (seen.get('DRIVER_ERROR') ?? 0) > 0, JSON.stringify([...seen]))
    for (const file of ATTACH_TARGETS) for (const dir of [process.cwd(), t.dataDir]) assert.equal(existsSync(join(dir, file)), false, `${file} was created in ${dir}`)
    await stillAnswers()
  })

  it('answers each hostile statement with its code and leaves no attached file', async () => {
    const expected: Array<[string, string]> = [
      ['SELECT 1; SELECT 2', 'INVALID_ARGUMENTS'],
      ['SELECT 1 -- ; DELETE FROM t', 'ok'],
      ['SELECT 1 /* ; */; ;', 'ok'],
      [`ATTACH DATABASE '${ATTACH_TARGETS[0]}' AS fz`, 'DRIVER_ERROR'],
      [`VACUUM INTO '${ATTACH_TARGETS[1]}'`, 'DRIVER_ERROR'],
      ['DETACH DATABASE fz', 'DRIVER_ERROR'],
      ["SELECT load_extension('fuzz-nothing')", 'DRIVER_ERROR'],
      ['SELECT 1 AS "__proto__", 2 AS "constructor", 3 AS "prototype"', 'ok'],
      ['WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150000) SELECT x FROM c', 'QUERY_RESULT_TOO_LARGE'],
      ['SELECT hex(zeroblob(10000000)) AS h, hex(zeroblob(10000000)) AS i', 'QUERY_RESULT_TOO_LARGE'],
    ]
    for (const [statement, code] of expected) assert.equal(await outcome('database::query', { sql: statement }), code, statement)
    for (const file of ATTACH_TARGETS) for (const dir of [process.cwd(), t.dataDir]) assert.equal(existsSync(join(dir, file)), false, `${file} was created in ${dir}`)
    await stillAnswers()
  })

  it('refuses two statements in one sql wherever the separator and comments fall, and runs neither (fast-check)', async () => {
    const statement = fc.constantFrom('SELECT 1 AS a', "SELECT ';' AS b", 'INSERT INTO t VALUES (7, 7)', 'DELETE FROM t', "SELECT '--' AS c", 'UPDATE t SET a = 8')
    const gap = fc.constantFrom(';', ' ;', ';\n', '; -- x\n', ';/* ; */', '/* c */ ;  \t')
    // The random payloads above may have timed out a running statement on `primary`, an in-memory
    // database: its thread was replaced (sqlite/index.ts), and with it the database and table t.
    await t.engine.inject({ function_id: 'database::execute', data: { sql: 'CREATE TABLE IF NOT EXISTS t (a, b)' } })
    await fc.assert(
      fc.asyncProperty(statement, gap, statement, fc.constantFrom('', ';', ' -- end', ' /* end */'), async (first, between, second, end) => {
        const before = (await t.engine.inject({ function_id: 'database::query', data: { sql: 'SELECT count(*) AS n FROM t' } })) as { rows: Array<{ n: number }> }
        assert.equal(await outcome('database::execute', { sql: `${first}${between}${second}${end}` }), 'INVALID_ARGUMENTS')
        const after = (await t.engine.inject({ function_id: 'database::query', data: { sql: 'SELECT count(*) AS n FROM t' } })) as { rows: Array<{ n: number }> }
        assert.equal(after.rows[0]!.n, before.rows[0]!.n)
      }),
      { numRuns: 100 },
    )
    await stillAnswers()
  })

  it('refuses parameters nested too deeply to write as JSON', async () => {
    let deep: unknown = []
    for (let i = 0; i < 200_000; i++) deep = [deep]
    assert.equal(await outcome('database::query', { sql: 'SELECT ? AS v', params: [deep] }), 'INVALID_ARGUMENTS')
    await stillAnswers()
  })

  it('takes huge parameters and many of them', async () => {
    const big = 'x'.repeat(8 * 1024 * 1024)
    const result = (await t.engine.inject({ function_id: 'database::query', data: { sql: 'SELECT length(?) AS n', params: [big] } })) as { rows: Array<{ n: number }> }
    assert.equal(result.rows[0]!.n, big.length)
    const many = Array.from({ length: 50_000 }, (_, i) => i)
    assert.ok(['ok', 'DRIVER_ERROR'].includes(await outcome('database::query', { sql: `SELECT ${many.map(() => '?').join(' + ')} AS total`, params: many })))
    assert.equal(await outcome('database::query', { sql: 'SELECT ? AS v', params: many }), 'DRIVER_ERROR')
    await stillAnswers()
  })

  it('stores lone surrogates as replacement characters', async () => {
    const result = (await t.engine.inject({ function_id: 'database::query', data: { sql: 'SELECT ? AS v', params: ['a\ud800b'] } })) as { rows: Array<{ v: string }> }
    assert.equal(result.rows[0]!.v, 'a\ufffdb')
  })

  it('never throws anything but a settings error from parseDatabaseSettings (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          hostile,
          fc.record(
            {
              databases: fc.oneof(
                hostile,
                fc.dictionary(
                  fc.oneof(fc.string(), fc.constantFrom(...RESERVED, 'toString', 'primary')),
                  fc.record({ url: fc.oneof(hostile, fc.constant('sqlite::memory:')), pool: hostile, tls: hostile, statement_timeout_ms: hostile, max_rows: hostile, max_result_bytes: hostile, allow_attach: hostile }, { requiredKeys: [] }),
                ),
              ),
            },
            { requiredKeys: [] },
          ),
        ),
        (value) => {
          // As the configuration worker hands it over: JSON text read back, so `__proto__` is an own key.
          const parsed = JSON.parse(JSON.stringify(value) ?? 'null')
          try {
            const settings = parseDatabaseSettings(parsed)
            for (const name of RESERVED) assert.ok(!Object.hasOwn(settings.databases, name), `${name} accepted as a database name`)
            assert.equal(Object.getPrototypeOf(settings.databases), Object.prototype)
          } catch (error) {
            assert.ok(['INVALID_ARGUMENTS', 'CONFIG_ERROR'].includes((error as { code?: string }).code ?? ''), String(error))
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
