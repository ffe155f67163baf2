/** The PostgreSQL driver against a real server (test/support/postgres.ts): the conformance suite and more. */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { startTestPostgres } from '../../../../test/support/postgres.ts'
import { freePort } from '../../../../test/support/redis.ts'
import { runDatabaseDriverConformance } from '../conformance.ts'
import { openDatabaseDriver } from '../index.ts'
import type { ResultLimits } from '../limits.ts'
import type { PoolSettings } from '../types.ts'

const server = await startTestPostgres()
after(() => server.close())
const POOL: PoolSettings = { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 }
const open = (pool?: Partial<PoolSettings>, url = server.url, limits?: ResultLimits) =>
  openDatabaseDriver({ name: 'test', url, pool: { ...POOL, ...pool }, tls: { mode: 'disable' }, ...(limits ? { limits } : {}) }, '/nonexistent')

runDatabaseDriverConformance('postgres', (pool, limits) => open(pool, undefined, limits), {
  param: (n) => `$${n}`,
  autoId: 'SERIAL PRIMARY KEY',
  types: { bigint: 'BIGINT', decimal: 'NUMERIC(10,2)', bytes: 'BYTEA', timestamp: 'TIMESTAMP', date: 'DATE', text: 'TEXT', longText: 'TEXT' },
  sleep: (seconds) => `SELECT pg_sleep(${seconds})`,
  returning: true,
  booleansAsIntegers: false,
  series: (n) => `SELECT x FROM generate_series(1, ${n}) AS x`,
})

describe('postgres driver', () => {
  const once = async (sql: string, params: unknown[] = []) => {
    const db = await open()
    try {
      return await db.query({ sql, params: params as never }, { timeoutMs: 5000 })
    } finally {
      await db.close()
    }
  }

  it('maps json, timestamptz, booleans, arrays and type names', async () => {
    const result = await once(
      `SELECT '{"a":1}'::jsonb AS doc, '2024-01-02 03:04:05+02'::timestamptz AS at, true AS yes, ARRAY[1, 9007199254740993]::int8[] AS ids, 'x'::varchar AS v, 1.5::numeric AS n, '04:05:06'::time AS t`,
    )
    const row = result.rows[0]!
    assert.deepEqual(row.doc, { a: 1 })
    assert.equal(new Date(String(row.at)).toISOString(), '2024-01-02T01:04:05.000Z')
    assert.match(String(row.at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/)
    assert.equal(row.yes, true)
    assert.deepEqual(row.ids, [1, '9007199254740993'])
    assert.equal(row.n, '1.5')
    assert.equal(row.t, '04:05:06')
    assert.deepEqual(result.columns.map((c) => c.type), ['jsonb', 'timestamptz', 'bool', '_int8', 'varchar', 'numeric', 'time'])
  })

  it('reports a server without TLS as CONNECTION_FAILED (tls) when tls.mode requires it', async () => {
    const db = await openDatabaseDriver({ name: 'test', url: server.url, pool: POOL, tls: { mode: 'require' } }, '/nonexistent')
    await assert.rejects(db.query({ sql: 'SELECT 1', params: [] }, { timeoutMs: 5000 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'CONNECTION_FAILED')
      assert.match(error.message, /\(tls\)/)
      return true
    })
    await db.close()
  })

  it('refuses several statements in one call', async () => {
    await assert.rejects(once('SELECT 1; SELECT 2'), { code: 'DRIVER_ERROR' })
  })

  it('reports an unreachable server as CONNECTION_FAILED (network) and bad credentials as (auth)', async () => {
    const port = await freePort()
    const db = await open(undefined, `postgres://svc@127.0.0.1:${port}/postgres`)
    await assert.rejects(db.query({ sql: 'SELECT 1', params: [] }, { timeoutMs: 5000 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'CONNECTION_FAILED')
      assert.match(error.message, /\(network\)/)
      return true
    })
    await db.close()
    const nobody = await open(undefined, server.url.replace('svc@', 'nobody@'))
    await assert.rejects(nobody.query({ sql: 'SELECT 1', params: [] }, { timeoutMs: 5000 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'CONNECTION_FAILED')
      assert.match(error.message, /\(auth\)/)
      return true
    })
    await nobody.close()
  })
})
