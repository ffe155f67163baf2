import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { TriggerAction } from '../src/index.ts'
import {
  DEFAULT_ENGINE_URL,
  backoffDelay,
  buildAnnounce,
  resolveAddress,
  resolveOptions,
  SDK_VERSION,
} from '../src/options.ts'
import { registerWorker } from '../src/index.ts'

describe('address resolution (protocol.md §2, issue 19 §3)', () => {
  it('prefers the argument, then SVC_URL, then the IPv4 loopback default', () => {
    assert.deepEqual(resolveAddress('ws://engine:1/', { SVC_URL: 'ws://env:2' }), ['ws://engine:1/'])
    assert.deepEqual(resolveAddress(undefined, { SVC_URL: 'wss://env:2/path' }), ['wss://env:2/path'])
    assert.deepEqual(resolveAddress(undefined, { SVC_URL: '' }), ['ws://127.0.0.1:49134'])
    assert.deepEqual(resolveAddress(undefined, {}), [DEFAULT_ENGINE_URL])
    assert.equal(DEFAULT_ENGINE_URL, 'ws://127.0.0.1:49134')
  })

  it('accepts only ws: and wss: URLs, and never shows an address\'s credentials in the error', () => {
    assert.throws(() => resolveAddress('http://127.0.0.1:49134', {}), /ws:\/\/ or wss:\/\//)
    assert.throws(() => resolveAddress('not a url', {}), TypeError)
    assert.throws(() => registerWorker('https://example.com'), TypeError)
    assert.throws(() => resolveAddress('https://user:hunter2@svc.example/?token=s3cret', {}), (err: Error) => err.message.includes('https://svc.example/') && !/hunter2|s3cret/.test(err.message))
    assert.throws(() => resolveAddress(undefined, { SVC_URL: 'http://svc.example/?token=s3cret' }), (err: Error) => /^SVC_URL must be/.test(err.message) && !err.message.includes('s3cret'))
  })

  it('takes a list of engines, and SVC_URL as a comma-separated list, in order', () => {
    assert.deepEqual(resolveAddress(['ws://a:1/', 'wss://b/x?token=t'], { SVC_URL: 'ws://env:2' }), ['ws://a:1/', 'wss://b/x?token=t'])
    assert.deepEqual(resolveAddress(undefined, { SVC_URL: 'ws://a:1, ws://b:2/ ,wss://c/?token=x%2Cy' }), ['ws://a:1', 'ws://b:2/', 'wss://c/?token=x%2Cy'])
    assert.throws(() => resolveAddress(undefined, { SVC_URL: 'ws://a:1,,ws://b:2' }), /SVC_URL 2 of 3 is empty/)
    assert.throws(() => resolveAddress(undefined, { SVC_URL: 'ws://a:1,' }), /SVC_URL 2 of 2 is empty/)
    assert.throws(() => resolveAddress(undefined, { SVC_URL: 'ws://a:1,http://b:2' }), /SVC_URL 2 of 2 must be a ws:\/\/ or wss:\/\/ URL, got http:/)
    assert.throws(() => resolveAddress([], {}), /engine address list is empty/)
    assert.throws(() => registerWorker(['ws://a:1', ''], { otel: { enabled: false } }), /engine address 2 of 2 is empty/)
  })

  it('reads any SVC_URL as the list of its comma-separated entries, or refuses it with a TypeError without its credentials (fast-check)', () => {
    const secret = fc.string({ minLength: 1, maxLength: 8 }).map((s) => `SECRET${encodeURIComponent(s)}X`)
    const entry = fc.oneof(
      fc.tuple(fc.constantFrom('ws', 'wss', 'http', 'file', 'javascript'), fc.constantFrom('a:1', '[::1]:2', 'h.example'), fc.option(secret), fc.option(secret)).map(
        ([scheme, host, user, token]) => `${scheme}://${user === null ? '' : `u:${user}@`}${host}/${token === null ? '' : `?token=${token}`}`,
      ),
      fc.constantFrom('', ' ', 'ws://', 'not a url', 'ws://h/?a=%2C'),
    )
    const padding = fc.constantFrom('', ' ', '  ', '\t')
    fc.assert(
      fc.property(fc.array(fc.tuple(padding, entry, padding), { minLength: 1, maxLength: 6 }), (parts) => {
        const value = parts.map(([l, e, r]) => `${l}${e}${r}`).join(',')
        let list: readonly string[]
        try {
          list = resolveAddress(undefined, { SVC_URL: value })
        } catch (err) {
          assert.ok(err instanceof TypeError, String(err))
          assert.ok(!err.message.includes('SECRET'), err.message)
          return
        }
        if (value === '') return // unset: the default
        assert.deepEqual(list, parts.map(([, e]) => e.trim()))
      }),
      { numRuns: 500 },
    )
  })
})

describe('options (sdk.md §2)', () => {
  it('applies the documented defaults', () => {
    const o = resolveOptions({}, {})
    assert.equal(o.workerName, `${hostname()}:${process.pid}`)
    assert.equal(o.namespace, undefined)
    assert.equal(o.invocationTimeoutMs, 30000)
    assert.deepEqual(o.reconnection, {
      initialDelayMs: 1000,
      maxDelayMs: 30000,
      backoffMultiplier: 2,
      jitterFactor: 0.3,
      maxRetries: -1,
    })
  })

  it('reads SVC_WORKER_NAME and SVC_NAMESPACE, empty counting as unset', () => {
    const o = resolveOptions({}, { SVC_WORKER_NAME: 'billing', SVC_NAMESPACE: 'prod' })
    assert.equal(o.workerName, 'billing')
    assert.equal(o.namespace, 'prod')
    assert.equal(resolveOptions({}, { SVC_NAMESPACE: '' }).namespace, undefined)
    assert.equal(resolveOptions({ workerName: 'x', namespace: 'ns' }, { SVC_WORKER_NAME: 'y', SVC_NAMESPACE: 'z' }).namespace, 'ns')
  })

  it('throws for a blank namespace', () => {
    assert.throws(() => resolveOptions({ namespace: '' }, {}), /namespace is empty/)
    assert.throws(() => resolveOptions({ namespace: '  ' }, {}), /namespace is empty/)
    assert.throws(() => registerWorker('ws://127.0.0.1:1', { namespace: ' ' }), TypeError)
  })

  it('throws for header names or values HTTP cannot carry', () => {
    assert.throws(() => resolveOptions({ headers: { 'bad name': 'x' } }, {}), TypeError)
    assert.throws(() => resolveOptions({ headers: { 'x-ok': 'line\nbreak' } }, {}), TypeError)
    assert.deepEqual(resolveOptions({ headers: { authorization: 'Bearer t' } }, {}).headers, { authorization: 'Bearer t' })
  })

  it('merges a partial reconnection config over the defaults', () => {
    const o = resolveOptions({ reconnectionConfig: { maxRetries: 3, initialDelayMs: 10 } }, {})
    assert.deepEqual(o.reconnection, {
      initialDelayMs: 10,
      maxDelayMs: 30000,
      backoffMultiplier: 2,
      jitterFactor: 0.3,
      maxRetries: 3,
    })
    assert.throws(() => resolveOptions({ reconnectionConfig: { jitterFactor: 2 } }, {}), /jitterFactor/)
  })
})

describe('backoff (sdk.md §2)', () => {
  const config = { initialDelayMs: 1000, maxDelayMs: 30000, backoffMultiplier: 2, jitterFactor: 0.3, maxRetries: -1 }

  it('grows exponentially up to the cap without jitter at random = 0.5', () => {
    const delays = [0, 1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, config, () => 0.5))
    assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000])
  })

  it('spreads the delay by ±jitterFactor', () => {
    assert.equal(backoffDelay(0, config, () => 0), 700)
    assert.equal(backoffDelay(0, config, () => 1), 1300)
    assert.equal(backoffDelay(10, config, () => 0), 21000)
    assert.equal(backoffDelay(1, config, () => 0.25), 1700) // floor(2000 + 2000 × 0.3 × −0.5)
  })
})

describe('announce (sdk.md §2, protocol.md §3.2)', () => {
  it('carries runtime, version, name, os, pid, isolation, namespace and telemetry', () => {
    const announce = buildAnnounce(
      resolveOptions({ workerName: 'w', workerDescription: 'does things', namespace: 'prod' }, {}),
      { SVC_ISOLATION: 'process' },
    )
    assert.equal(announce.runtime, 'node')
    assert.equal(announce.version, SDK_VERSION)
    assert.equal(announce.name, 'w')
    assert.equal(announce.description, 'does things')
    assert.match(announce.os ?? '', /^\S+ \S+ \(\S+\)$/)
    assert.equal(announce.pid, process.pid)
    assert.equal(announce.isolation, 'process')
    assert.equal(announce.namespace, 'prod')
    assert.equal(announce.telemetry?.framework, 'svc-node')
    assert.equal(typeof announce.telemetry?.project_name, 'string')
  })

  it('sends isolation null and no namespace when unset', () => {
    const announce = buildAnnounce(resolveOptions({ telemetry: { project_name: 'p', language: 'ts' } }, {}), {})
    assert.equal(announce.isolation, null)
    assert.equal('namespace' in announce, false)
    assert.deepEqual(announce.telemetry, { language: 'ts', project_name: 'p', framework: 'svc-node' })
  })
})

describe('TriggerAction (sdk.md §6)', () => {
  it('builds the wire shapes', () => {
    assert.deepEqual(TriggerAction.Void(), { type: 'void' })
    assert.deepEqual(TriggerAction.Enqueue({ queue: 'payments' }), { type: 'enqueue', queue: 'payments' })
    assert.deepEqual(TriggerAction.Enqueue({ queue: 'q', delayMs: 500, idempotencyKey: 'k1' }), {
      type: 'enqueue',
      queue: 'q',
      delay_ms: 500,
      idempotency_key: 'k1',
    })
  })
})
