import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SvcError } from 'svc-protocol/errors'
import { HTTP_SETTINGS_DEFAULTS, parseHttpSettings } from './settings.ts'

function rejects(value: unknown, message: string) {
  assert.throws(
    () => parseHttpSettings(value),
    (err: unknown) => err instanceof SvcError && err.code === 'INVALID_ARGUMENTS' && err.message === message,
  )
}

describe('parseHttpSettings (builtins.md §3.1)', () => {
  it('applies every default for an absent, null or empty value', () => {
    const expected = {
      port: 3111,
      host: '127.0.0.1',
      default_timeout: 30000,
      concurrency_request_limit: 1024,
      max_body_bytes: 10485760,
      cors: null,
      middleware: [],
    }
    assert.deepEqual(parseHttpSettings(undefined), expected)
    assert.deepEqual(parseHttpSettings(null), expected)
    assert.deepEqual(parseHttpSettings({}), expected)
    assert.deepEqual(parseHttpSettings({ port: null, unknown_key: 1 }), expected)
    assert.deepEqual({ ...HTTP_SETTINGS_DEFAULTS }, expected)
  })

  it('fills CORS defaults and upper-cases methods', () => {
    assert.deepEqual(parseHttpSettings({ cors: { allowed_origins: ['https://a.test'], allowed_methods: ['get'] } }).cors, {
      allowed_origins: ['https://a.test'],
      allowed_methods: ['GET'],
      allowed_headers: [],
      allow_credentials: false,
      max_age_seconds: 600,
    })
  })

  it('fills middleware defaults', () => {
    assert.deepEqual(parseHttpSettings({ middleware: [{ function_id: 'auth::check' }] }).middleware, [
      { function_id: 'auth::check', phase: 'preHandler', priority: 0 },
    ])
  })

  it('names the offending key', () => {
    rejects('x', 'svc-http settings must be an object')
    rejects({ port: 70000 }, 'port must be an integer from 0 to 65535, got 70000')
    rejects({ port: '3111' }, 'port must be an integer from 0 to 65535, got "3111"')
    rejects({ host: '' }, 'host must be a non-empty string')
    rejects({ default_timeout: 0 }, 'default_timeout must be an integer from 1 to 2147483647, got 0')
    rejects({ concurrency_request_limit: 1.5 }, 'concurrency_request_limit must be an integer >= 1, got 1.5')
    rejects({ max_body_bytes: -1 }, 'max_body_bytes must be an integer >= 1, got -1')
    rejects({ cors: [] }, 'cors must be an object or null')
    rejects({ cors: { allowed_origins: 'x' } }, 'cors.allowed_origins must be an array of non-empty strings')
    rejects({ cors: { allow_credentials: 'yes' } }, 'cors.allow_credentials must be a boolean')
    rejects({ cors: { max_age_seconds: -1 } }, 'cors.max_age_seconds must be an integer >= 0, got -1')
    rejects({ middleware: {} }, 'middleware must be an array')
    rejects({ middleware: [{ function_id: '' }] }, 'middleware[0].function_id must be a non-empty string')
    rejects({ middleware: [{ function_id: 'a', priority: 'high' }] }, 'middleware[0].priority must be a number')
  })
})
