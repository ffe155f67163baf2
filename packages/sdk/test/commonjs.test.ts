/**
 * CommonJS consumers (sdk.md §1): on Node ≥ 22.12 `require()` loads the ESM build directly, so
 * `require('svc-sdk')` and its subpaths give the same exports as `import`.
 */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import * as esm from 'svc-sdk'

const require = createRequire(import.meta.url)

describe('CommonJS entry', () => {
  it('require() gives the same public API as import', () => {
    const cjs = require('svc-sdk') as typeof esm
    assert.equal(typeof cjs.registerWorker, 'function')
    assert.equal(cjs.DEFAULT_ENGINE_URL, 'ws://127.0.0.1:49134')
    assert.deepEqual(cjs.TriggerAction.Void(), { type: 'void' })
    assert.equal(cjs.InvocationError, esm.InvocationError)
    const errors = require('svc-sdk/errors') as typeof import('svc-sdk/errors')
    assert.equal(new errors.InvocationError({ code: 'X', message: 'y' }).message, 'X: y')
    assert.equal(typeof (require('svc-sdk/engine') as typeof import('svc-sdk/engine')).EngineFunctions, 'object')
    const channel = require('svc-sdk/channel') as typeof import('svc-sdk/channel')
    assert.equal(channel.ChannelReader, esm.ChannelReader)
    assert.equal(channel.ChannelError, esm.ChannelError)
    const helpers = require('svc-sdk/helpers') as typeof import('svc-sdk/helpers')
    assert.equal(typeof helpers.createChannel, 'function')
    assert.equal(helpers.isChannelRef({ channel_id: 'c', access_key: 'k', direction: 'read' }), true)
    assert.deepEqual(helpers.ChannelItem.Text('t'), { type: 'text', text: 't' })
    const internal = require('svc-sdk/internal') as typeof import('svc-sdk/internal')
    assert.equal(typeof internal.WorkerClient, 'function')
    assert.equal(typeof internal.resolveOptions, 'function')
  })
})
