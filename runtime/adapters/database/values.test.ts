import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isLocalUrl, redactUrl, sqlitePath } from './url.ts'
import { firstKeyword, fromColumn, isoDateTime, toParameter } from './values.ts'

describe('database value mapping (builtins.md §10.3)', () => {
  it('maps parameters', () => {
    const dialect = { booleansAsIntegers: false }
    assert.equal(toParameter(null, dialect), null)
    assert.equal(toParameter(true, dialect), true)
    assert.equal(toParameter(false, { booleansAsIntegers: true }), 0)
    assert.equal(toParameter(42, dialect), 42n)
    assert.equal(toParameter(1.5, dialect), 1.5)
    assert.equal(toParameter(2 ** 60, dialect), 2 ** 60)
    assert.equal(toParameter('x', dialect), 'x')
    assert.equal(toParameter({ a: [1] }, dialect), '{"a":[1]}')
    assert.equal(toParameter([1, 'x'], dialect), '[1,"x"]')
  })

  it('maps columns', () => {
    assert.equal(fromColumn(42n), 42)
    assert.equal(fromColumn(2n ** 53n), '9007199254740992')
    assert.equal(fromColumn(-(2n ** 53n) + 1n), -(2 ** 53) + 1)
    assert.equal(fromColumn(new Uint8Array([0, 255])), 'AP8=')
    assert.equal(fromColumn(new Date('2024-01-02T03:04:05Z')), '2024-01-02T03:04:05.000Z')
    assert.equal(fromColumn(Number.NaN), 'NaN')
    assert.equal(fromColumn(undefined), null)
    assert.deepEqual(fromColumn([1n, null, Buffer.from('a')]), [1, null, 'YQ=='])
    assert.deepEqual(fromColumn({ a: 1 }), { a: 1 })
  })

  it('writes SQL date-times as ISO 8601 / RFC 3339', () => {
    assert.equal(isoDateTime('2024-01-02 03:04:05'), '2024-01-02T03:04:05')
    assert.equal(isoDateTime('2024-01-02 03:04:05.123+00'), '2024-01-02T03:04:05.123Z')
    assert.equal(isoDateTime('2024-01-02 03:04:05+05:30'), '2024-01-02T03:04:05+05:30')
    assert.equal(isoDateTime('2024-01-02 03:04:05-08'), '2024-01-02T03:04:05-08:00')
    assert.equal(isoDateTime('infinity'), 'infinity')
    assert.equal(isoDateTime('2024-01-02'), '2024-01-02')
  })

  it('finds the first keyword after comments', () => {
    assert.equal(firstKeyword('  select 1'), 'SELECT')
    assert.equal(firstKeyword('-- c\n/* x */ begin'), 'BEGIN')
    assert.equal(firstKeyword('# mysql\nCOMMIT'), 'COMMIT')
    assert.equal(firstKeyword('/* open'), '')
    assert.equal(firstKeyword(''), '')
  })
})

describe('database URLs (builtins.md §10.1)', () => {
  it('resolves SQLite paths', () => {
    assert.equal(sqlitePath('sqlite:./app.db', '/srv/p'), '/srv/p/app.db')
    assert.equal(sqlitePath('sqlite:data/app.db', '/srv/p'), '/srv/p/data/app.db')
    assert.equal(sqlitePath('sqlite:///var/db/app.db', '/srv/p'), '/var/db/app.db')
    assert.equal(sqlitePath('sqlite::memory:', '/srv/p'), ':memory:')
    assert.throws(() => sqlitePath('sqlite:', '/srv/p'), { code: 'CONFIG_ERROR' })
  })

  it('removes credentials and recognises local hosts', () => {
    assert.equal(redactUrl('postgres://app:secret@db.internal:5432/reports'), 'postgres://db.internal:5432/reports')
    assert.equal(redactUrl('mysql://db/shop'), 'mysql://db/shop')
    assert.equal(redactUrl('sqlite:./a.db'), 'sqlite:./a.db')
    assert.ok(isLocalUrl('postgres://localhost/x'))
    assert.ok(isLocalUrl('mysql://127.0.0.1:3306/x'))
    assert.ok(isLocalUrl('postgres://[::1]/x'))
    assert.ok(!isLocalUrl('postgres://db.internal/x'))
  })
})
