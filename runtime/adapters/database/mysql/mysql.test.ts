/** The MySQL driver against a real MariaDB server (test/support/mysql.ts): the conformance suite and more. */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { startTestMysql } from '../../../../test/support/mysql.ts'
import { freePort } from '../../../../test/support/redis.ts'
import { runDatabaseDriverConformance } from '../conformance.ts'
import { openDatabaseDriver } from '../index.ts'
import type { ResultLimits } from '../limits.ts'
import type { PoolSettings } from '../types.ts'

const server = await startTestMysql()
after(() => server.close())
const POOL: PoolSettings = { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 }
const open = (pool?: Partial<PoolSettings>, url = server.url, limits?: ResultLimits) =>
  openDatabaseDriver({ name: 'test', url, pool: { ...POOL, ...pool }, tls: { mode: 'disable' }, ...(limits ? { limits } : {}) }, '/nonexistent')

runDatabaseDriverConformance('mysql', (pool, limits) => open(pool, undefined, limits), {
  param: () => '?',
  autoId: 'INT AUTO_INCREMENT PRIMARY KEY',
  types: { bigint: 'BIGINT', decimal: 'DECIMAL(10,2)', bytes: 'BLOB', timestamp: 'DATETIME', date: 'DATE', text: 'VARCHAR(255)', longText: 'LONGTEXT' },
  sleep: (seconds) => `SELECT SLEEP(${seconds}) AS slept`,
  returning: true,
  booleansAsIntegers: false,
  series: (n) => `SELECT seq AS x FROM seq_1_to_${n}`,
})

describe('mysql driver', () => {
  it('reports an unreachable server as CONNECTION_FAILED (network) and bad credentials as (auth)', async () => {
    const port = await freePort()
    const db = await open(undefined, `mysql://root@127.0.0.1:${port}/svc_test`)
    await assert.rejects(db.query({ sql: 'SELECT 1', params: [] }, { timeoutMs: 5000 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'CONNECTION_FAILED')
      assert.match(error.message, /\(network\)/)
      return true
    })
    await db.close()
    const nobody = await open(undefined, server.url.replace('root@', 'nobody:wrong@'))
    await assert.rejects(nobody.query({ sql: 'SELECT 1', params: [] }, { timeoutMs: 5000 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'CONNECTION_FAILED')
      assert.match(error.message, /\(auth\)/)
      return true
    })
    await nobody.close()
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

  it('reports the type names mysql2 gives', async () => {
    const db = await open()
    const result = await db.query({ sql: 'SELECT CAST(1 AS SIGNED) AS i, CAST(1.5 AS DECIMAL(4,2)) AS d, NOW() AS t', params: [] }, { timeoutMs: 5000 })
    assert.match(String(result.columns[0]!.type), /^LONG/)
    assert.deepEqual(result.columns.slice(1).map((c) => c.type), ['NEWDECIMAL', 'DATETIME'])
    assert.match(String(result.rows[0]!.t), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/)
    await db.close()
  })
})
