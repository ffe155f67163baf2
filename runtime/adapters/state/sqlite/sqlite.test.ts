import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, it } from 'node:test'
import { runStateAdapterConformance } from '../conformance.ts'
import { parseSqliteStateConfig, SqliteStateAdapter } from './sqlite.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-state-sqlite-'))
after(() => rmSync(root, { recursive: true, force: true }))
let counter = 0
/** A fresh data directory per case. */
const freshDir = () => join(root, `case-${++counter}`)

runStateAdapterConformance('builtin (SQLite)', () => SqliteStateAdapter.open({}, { dataDir: freshDir() }))

describe('builtin (SQLite) state adapter', () => {
  it('creates <dataDir>/state.db by default, and the directory if needed', async () => {
    const dataDir = join(freshDir(), 'nested', 'data')
    const adapter = SqliteStateAdapter.open({}, { dataDir })
    await adapter.set('s', 'k', 1)
    await adapter.close()
    assert.equal(adapter.path, join(dataDir, 'state.db'))
    assert.ok(existsSync(adapter.path))
  })

  it('uses config.path, resolved against the data directory when relative', async () => {
    const dataDir = freshDir()
    const relative = SqliteStateAdapter.open({ path: 'sub/custom.db' }, { dataDir })
    assert.equal(relative.path, join(dataDir, 'sub', 'custom.db'))
    await relative.close()
    const absolutePath = join(freshDir(), 'abs.db')
    const absolute = SqliteStateAdapter.open({ path: absolutePath }, { dataDir })
    assert.equal(absolute.path, absolutePath)
    await absolute.close()
  })

  it('keeps committed data when reopened on the same file', async () => {
    const dataDir = freshDir()
    const first = SqliteStateAdapter.open({}, { dataDir })
    await first.set('users', 'u1', { name: 'Alice' })
    await first.update('counters', 'visits', [{ type: 'set', value: 7 }])
    await first.set('users', 'gone', 1)
    await first.delete('users', 'gone')
    await first.close()
    const second = SqliteStateAdapter.open({}, { dataDir })
    assert.deepEqual(await second.get('users', 'u1'), { name: 'Alice' })
    assert.equal(await second.get('counters', 'visits'), 7)
    assert.equal(await second.get('users', 'gone'), undefined)
    await second.close()
  })

  it('makes each write visible to another connection as soon as it resolves (committed, not pending)', async () => {
    const dataDir = freshDir()
    const adapter = SqliteStateAdapter.open({}, { dataDir })
    await adapter.set('s', 'k', { v: 1 })
    await adapter.update('s', 'n', [{ type: 'increment' }])
    const reader = new DatabaseSync(adapter.path, { readOnly: true })
    const rows = reader.prepare('SELECT key, value FROM state_values ORDER BY key').all()
    assert.deepEqual(
      rows.map((row) => ({ ...row })),
      [
        { key: 'k', value: '{"v":1}' },
        { key: 'n', value: '1' },
      ],
    )
    reader.close()
    await adapter.close()
  })

  it('runs in WAL mode with synchronous=NORMAL', async () => {
    const adapter = SqliteStateAdapter.open({}, { dataDir: freshDir() })
    await adapter.set('s', 'k', 1)
    const probe = new DatabaseSync(adapter.path)
    assert.equal((probe.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'wal')
    probe.close()
    assert.ok(existsSync(`${adapter.path}-wal`))
    await adapter.close()
  })

  it('fails to open a file that is not a database, with the SQLite error', () => {
    const dataDir = freshDir()
    const path = join(root, `garbage-${counter}.db`)
    writeFileSync(path, 'this is not a database, just some text that is long enough to have a header'.repeat(20))
    assert.throws(() => SqliteStateAdapter.open({ path }, { dataDir }), /not a database/)
  })

  it('validates its config block', () => {
    assert.deepEqual(parseSqliteStateConfig({}), {})
    assert.deepEqual(parseSqliteStateConfig({ path: 'a.db' }), { path: 'a.db' })
    assert.deepEqual(parseSqliteStateConfig({ path: null }), {})
    assert.throws(() => parseSqliteStateConfig({ path: '' }), /adapter\.config\.path must be a non-empty string/)
    assert.throws(() => parseSqliteStateConfig({ path: 3 }), /adapter\.config\.path must be a non-empty string/)
    assert.throws(() => parseSqliteStateConfig({ url: 'x' }), /adapter\.config\.url is not a builtin adapter option/)
  })
})
