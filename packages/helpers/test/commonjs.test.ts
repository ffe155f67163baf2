/** svc-helpers subpaths load through `require()` as through `import` (sdk.md §15, ESM and CommonJS). */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import * as esm from 'svc-helpers/observability'

const require = createRequire(import.meta.url)

describe('svc-helpers CommonJS entry', () => {
  it('require() gives the same observability exports as import; there is no root export', () => {
    const cjs = require('svc-helpers/observability') as typeof esm
    assert.equal(cjs.redact, esm.redact)
    assert.equal(cjs.REDACTED_PLACEHOLDER, '[REDACTED]')
    assert.equal(typeof cjs.initOtel, 'function')
    const internal = require('svc-helpers/observability/internal') as typeof import('svc-helpers/observability/internal')
    assert.equal(typeof internal.getTracer, 'function')
    for (const sub of ['http', 'queue', 'stream', 'rbac']) assert.equal(typeof require(`svc-helpers/${sub}`), 'object')
    assert.throws(() => require('svc-helpers'), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' })
  })
})
