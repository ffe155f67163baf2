import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseStateSettings, STATE_SETTINGS_SCHEMA } from './settings.ts'

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

  it('accepts redis with its defaults, redis_url for url, and refuses bad redis config (§13.1, §13.4)', () => {
    assert.deepEqual(parseStateSettings({ adapter: { name: 'redis' } }).adapter, {
      name: 'redis',
      config: { url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' },
    })
    assert.deepEqual(
      parseStateSettings({ adapter: { name: 'redis', config: { redis_url: 'rediss://cache:6380', key_prefix: 'app:' } } }).adapter,
      { name: 'redis', config: { url: 'rediss://cache:6380', key_prefix: 'app:' } },
    )
    assert.throws(() => parseStateSettings({ adapter: { name: 'redis', config: { url: 'cache:6379' } } }), {
      code: 'INVALID_ARGUMENTS',
      message: 'adapter.config.url must be a redis:// or rediss:// URL',
    })
    assert.throws(() => parseStateSettings({ adapter: { name: 'redis', config: { path: 'x.db' } } }), {
      code: 'INVALID_ARGUMENTS',
      message: 'adapter.config.path is not a redis adapter option (known: url, key_prefix)',
    })
    assert.throws(() => parseStateSettings({ adapter: { name: 'builtin', config: { url: 'redis://x' } } }), {
      code: 'INVALID_ARGUMENTS',
      message: /adapter\.config\.url is not a builtin adapter option/,
    })
  })

  it('lists every accepted adapter name in its JSON schema', () => {
    assert.deepEqual(
      [...(STATE_SETTINGS_SCHEMA.properties.adapter.properties?.name?.enum ?? [])].sort(),
      ['builtin', 'file_based', 'in_memory', 'kv', 'local', 'memory', 'redis'],
    )
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
