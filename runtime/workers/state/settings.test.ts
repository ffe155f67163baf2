import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseStateSettings } from './settings.ts'

describe('svc-state settings (builtins.md §4.1)', () => {
  it('applies the defaults to undefined, null, {} and null-valued keys', () => {
    const defaults = { adapter: { name: 'builtin', config: {} }, triggers_enabled: true, max_value_bytes: null }
    assert.deepEqual(parseStateSettings(undefined), defaults)
    assert.deepEqual(parseStateSettings(null), defaults)
    assert.deepEqual(parseStateSettings({}), defaults)
    assert.deepEqual(parseStateSettings({ adapter: null, triggers_enabled: null, max_value_bytes: null }), defaults)
  })

  it('resolves the adapter aliases of §13.1', () => {
    for (const name of ['builtin', 'kv', 'file_based', 'local']) {
      assert.equal(parseStateSettings({ adapter: { name } }).adapter.name, 'builtin')
    }
    for (const name of ['memory', 'in_memory']) {
      assert.equal(parseStateSettings({ adapter: { name } }).adapter.name, 'memory')
    }
  })

  it('keeps the builtin path and the other keys', () => {
    assert.deepEqual(
      parseStateSettings({ adapter: { name: 'kv', config: { path: 'x.db' } }, triggers_enabled: false, max_value_bytes: 1 }),
      { adapter: { name: 'builtin', config: { path: 'x.db' } }, triggers_enabled: false, max_value_bytes: 1 },
    )
  })

  it('ignores unknown top-level keys, like the other built-ins', () => {
    assert.equal(parseStateSettings({ something_else: 1 }).triggers_enabled, true)
  })

  it('says that redis is not available yet', () => {
    assert.throws(() => parseStateSettings({ adapter: { name: 'redis', config: { url: 'redis://x' } } }), {
      code: 'INVALID_ARGUMENTS',
      message: 'adapter redis is not available yet in this version of svc; use builtin or memory',
    })
  })

  it('refuses a max_value_bytes that is not an integer >= 1', () => {
    for (const value of [0, -1, 1.5, '10', true]) {
      assert.throws(() => parseStateSettings({ max_value_bytes: value }), { code: 'INVALID_ARGUMENTS' })
    }
  })

  it('refuses an adapter entry that is not an object or lacks a string name', () => {
    assert.throws(() => parseStateSettings({ adapter: 'builtin' }), { message: /^adapter must be an object/ })
    assert.throws(() => parseStateSettings({ adapter: { name: 3 } }), { message: 'adapter.name must be a string' })
    assert.throws(() => parseStateSettings({ adapter: { name: 'builtin', config: [] } }), {
      message: 'adapter.config must be an object',
    })
  })
})
