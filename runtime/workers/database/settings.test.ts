import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import { parseDatabaseSettings } from './settings.ts'

function rejects(value: unknown, code: string, message: string | RegExp) {
  assert.throws(
    () => parseDatabaseSettings(value),
    (err: unknown) => err instanceof SvcError && err.code === code && (typeof message === 'string' ? err.message === message : message.test(err.message)),
  )
}

describe('parseDatabaseSettings (builtins.md §10.1)', () => {
  it('gives no databases for an absent, null or empty value', () => {
    for (const value of [undefined, null, {}, { databases: null }, { databases: {} }]) assert.deepEqual(parseDatabaseSettings(value), { databases: {} })
  })

  it('applies the defaults, and the TLS mode by host', () => {
    const { databases } = parseDatabaseSettings({
      databases: {
        primary: { url: 'sqlite:./app.db' },
        local: { url: 'postgres://u:p@localhost/app' },
        remote: { url: 'postgresql://u:p@db.internal:5432/app', pool: { max: 20 }, tls: { ca_file: '/etc/ca.pem' } },
        shop: { url: 'mysql://127.0.0.1/shop', statement_timeout_ms: 100, tls: { mode: 'verify-full' } },
      },
    })
    assert.deepEqual(databases.primary, {
      url: 'sqlite:./app.db',
      driver: 'sqlite',
      pool: { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 },
      statement_timeout_ms: 30000,
      tls: { mode: 'disable' },
      max_rows: 100000,
      max_result_bytes: 33554432,
      allow_attach: false,
    })
    assert.equal(databases.local!.tls.mode, 'disable')
    assert.deepEqual(databases.remote!.tls, { mode: 'require', ca_file: '/etc/ca.pem' })
    assert.equal(databases.remote!.pool.max, 20)
    assert.equal(databases.remote!.driver, 'postgres')
    assert.equal(databases.shop!.driver, 'mysql')
    assert.equal(databases.shop!.statement_timeout_ms, 100)
    assert.equal(databases.shop!.tls.mode, 'verify-full')
  })

  it('names the offending key', () => {
    rejects('x', 'INVALID_ARGUMENTS', 'database settings must be an object')
    rejects({ databases: [] }, 'INVALID_ARGUMENTS', 'databases must be an object')
    rejects({ databases: { 'a b': { url: 'sqlite::memory:' } } }, 'INVALID_ARGUMENTS', /^databases\.a b is not a valid name/)
    rejects({ databases: { a: { url: '' } } }, 'INVALID_ARGUMENTS', 'databases.a.url must be a non-empty string')
    rejects({ databases: { a: { url: 'redis://x' } } }, 'CONFIG_ERROR', /^databases\.a\.url has an unsupported scheme/)
    rejects({ databases: { a: { url: 'sqlite::memory:', pool: { max: 1001 } } } }, 'INVALID_ARGUMENTS', 'databases.a.pool.max must be an integer from 1 to 1000, got 1001')
    rejects({ databases: { a: { url: 'sqlite::memory:', pool: { acquire_timeout_ms: 0 } } } }, 'INVALID_ARGUMENTS', /^databases\.a\.pool\.acquire_timeout_ms must be/)
    rejects({ databases: { a: { url: 'sqlite::memory:', pool: { idle_timeout_ms: -1 } } } }, 'INVALID_ARGUMENTS', /^databases\.a\.pool\.idle_timeout_ms must be/)
    rejects({ databases: { a: { url: 'sqlite::memory:', statement_timeout_ms: 1.5 } } }, 'INVALID_ARGUMENTS', /^databases\.a\.statement_timeout_ms must be/)
    rejects({ databases: { a: { url: 'sqlite::memory:', tls: { mode: 'on' } } } }, 'INVALID_ARGUMENTS', 'databases.a.tls.mode must be one of disable, require, verify-full')
    rejects({ databases: { a: { url: 'sqlite::memory:', max_rows: 0 } } }, 'INVALID_ARGUMENTS', 'databases.a.max_rows must be an integer from 1 to 10000000, got 0')
    rejects({ databases: { a: { url: 'sqlite::memory:', max_result_bytes: 2 ** 31 } } }, 'INVALID_ARGUMENTS', /^databases\.a\.max_result_bytes must be an integer from 1 to 1073741824/)
    rejects({ databases: { a: { url: 'sqlite::memory:', allow_attach: 1 } } }, 'INVALID_ARGUMENTS', 'databases.a.allow_attach must be a boolean')
    rejects({ databases: { a: { url: 'postgres://localhost/x', allow_attach: true } } }, 'INVALID_ARGUMENTS', 'databases.a.allow_attach applies to SQLite databases only')
  })

  it('takes max_rows, max_result_bytes and allow_attach', () => {
    const { databases } = parseDatabaseSettings({ databases: { a: { url: 'sqlite::memory:', max_rows: 5, max_result_bytes: 1024, allow_attach: true } } })
    assert.deepEqual([databases.a!.max_rows, databases.a!.max_result_bytes, databases.a!.allow_attach], [5, 1024, true])
  })

  it('refuses __proto__, constructor and prototype as database names, and keeps the other databases', () => {
    for (const name of ['__proto__', 'constructor', 'prototype']) {
      // JSON.parse makes `__proto__` an own key, as the configuration worker's values have.
      const value = JSON.parse(`{"databases": {"primary": {"url": "sqlite::memory:"}, "${name}": {"url": "sqlite::memory:"}}}`)
      rejects(value, 'INVALID_ARGUMENTS', `databases.${name} is a reserved name: __proto__, constructor and prototype cannot name a database`)
    }
    assert.deepEqual(Object.keys(parseDatabaseSettings({ databases: { toString: { url: 'sqlite::memory:' } } }).databases), ['toString'])
  })
})
